// Profile: what the runtime measured about one Region (DESIGN.md "Profile / hotness"): call count,
// time (µs) per tier, the shape histogram and static/dynamic dims (DimTracker), guard failures
// over the last 64 calls, bytes moved and FLOPs, and N_expected — an EWMA (α = 0.9) of the
// region's calls per window of 64 model calls. Thread-safe (one mutex; record_call is O(dims)).
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/dim_tracker.h"
#include "runtime/metrics.h"
#include "runtime/signature.h"

namespace tierjit::runtime {

struct ProfileOptions {
  size_t call_window = 64;   ///< calls in the shape histogram and the guard-failure window
  size_t model_window = 64;  ///< model calls (Session::run) per N_expected window
  double ewma_alpha = 0.9;   ///< N ← α·N + (1−α)·calls_in_window
};

class Profile {
 public:
  explicit Profile(ProfileOptions options = {});

  /// One call of the region: its signature, wall time in µs, the tier that ran it (0..3), bytes it
  /// read and wrote, FLOPs, and whether it deoptimized (a guard failed; `failed_flat_dim` is the
  /// drifting dim from Guard::failing_flat_dim, or -1).
  void record_call(const Signature& sig, double time_us, int tier, double bytes, double flops,
                   bool guard_failed = false, int failed_flat_dim = -1);
  /// One model call finished (call once per Session::run for every region's profile); every
  /// model_window model calls close an N_expected window.
  void on_model_call();
  /// record_call then on_model_call under one lock (the runtime's per-call path), with
  /// `exact_key` = sig.exact_key() (PlanStep::region_key: not hashed again per call); returns
  /// calls() after it.
  /// `quiet`: no background compile shared the cores while the call ran (support/cpu_load.h);
  /// shape_time prefers such calls.
  uint64_t record_model_call(const Signature& sig, uint64_t exact_key, double time_us, int tier,
                             double bytes, double flops, bool guard_failed = false,
                             int failed_flat_dim = -1, bool quiet = true);
  /// Marks a dim dynamic (demotion).
  void mark_dynamic(size_t flat);
  /// Forgets the guard-failure window (after a demotion, so the profile can settle again).
  void clear_guard_failures();

  uint64_t calls() const;
  uint64_t calls_at_tier(int tier) const;
  double total_time_us() const;
  /// Mean µs per call at `tier`; -1 when the tier never ran.
  double mean_time_us(int tier) const;
  double bytes_moved() const;  ///< total bytes, all calls
  /// Bytes read and written by the calls at `tier` (0 when it never ran).
  double bytes_at_tier(int tier) const;
  /// Mean µs per byte at `tier` (time over bytes of its calls): a tier's speed independent of
  /// the mix of shapes its calls happened to have; -1 when the tier never ran or moved no bytes.
  double us_per_byte(int tier) const;
  double flops() const;        ///< total FLOPs, all calls
  /// Guard failures among the last call_window calls.
  size_t recent_guard_failures() const;
  /// recent_guard_failures() / call_window (the denominator is the full window, so a handful of
  /// early failures never reads as a high rate).
  double guard_failure_rate() const;
  /// Flat dims that failed a guard within the window, ascending, no duplicates.
  std::vector<int> drifting_dims() const;
  /// N_expected: calls per window of model_window model calls. Before the first window closes:
  /// this window's calls scaled to a full window (calls · model_window / model calls so far), or
  /// this window's calls when no model call was counted.
  double expected_calls() const;
  uint64_t model_calls() const;
  /// Model calls per N_expected window (ProfileOptions::model_window).
  size_t model_window() const { return options_.model_window; }
  /// Share of the last call_window calls with signature `sig` (0 before any call).
  double recent_share(const Signature& sig) const { return recent_share(sig.exact_key()); }
  /// The same by the signature's exact key.
  double recent_share(uint64_t exact_key) const;
  /// The same calls timed at two tiers, shape by shape: over the signatures with calls at both
  /// `from` and `to` (a signature's first call at each tier not counted: it pays for first-touch
  /// and per-shape setup), (Σ n_to(s) · mean_from(s), Σ n_to(s) · mean_to(s)) in µs, i.e. the
  /// time `to`'s calls took and would have taken at `from`. nullopt when no signature ran at
  /// both. Tracks the first kMaxTimedSignatures signatures.
  std::optional<std::pair<double, double>> same_shape_times(int from, int to) const;
  static constexpr size_t kMaxTimedSignatures = 1024;
  /// One signature's calls at one tier: all of them (`seen`, the first included) and the mean µs
  /// of `timed` of those after the first (-1 when there are none): of the quiet ones when there
  /// are two or more (`quiet` true), else of all. {0, 0, -1, false} for a signature not tracked.
  struct ShapeTierTime {
    uint64_t seen = 0, timed = 0;
    double mean_us = -1;
    bool quiet = false;
  };
  ShapeTierTime shape_time(uint64_t exact_key, int tier) const;

  /// A copy of the dim tracker (taken under the lock).
  DimTracker dims() const;

 private:
  void record_locked(const Signature& sig, uint64_t exact_key, double time_us, int tier,
                     double bytes, double flops, bool guard_failed, int failed_flat_dim,
                     bool quiet);  // mu_ held
  void model_call_locked();                                     // mu_ held
  ProfileOptions options_;
  mutable std::mutex mu_;
  uint64_t calls_ = 0;
  std::array<uint64_t, kNumTiers> tier_calls_{};
  std::array<double, kNumTiers> tier_time_us_{};
  std::array<double, kNumTiers> tier_bytes_{};
  double total_time_us_ = 0, bytes_ = 0, flops_ = 0;
  DimTracker dims_;
  struct ShapeTimes {
    std::array<uint64_t, kNumTiers> seen{};   // calls, the first included
    std::array<uint64_t, kNumTiers> timed{};  // calls after the first
    std::array<double, kNumTiers> time_us{};  // their time
    std::array<uint64_t, kNumTiers> quiet_timed{};  // of those, calls with no compile running
    std::array<double, kNumTiers> quiet_time_us{};
  };
  std::unordered_map<uint64_t, ShapeTimes> shape_times_;  // by exact key
  std::vector<int> failed_dim_ring_;  // per recent call: -2 no failure, -1 failure w/o dim, else dim
  size_t ring_pos_ = 0;
  uint64_t model_calls_ = 0;
  uint64_t window_model_calls_ = 0;
  uint64_t window_calls_ = 0;
  double n_expected_ = 0;
  bool have_window_ = false;
};

}  // namespace tierjit::runtime
