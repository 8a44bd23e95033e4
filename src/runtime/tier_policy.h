// TierPolicy: when a Region moves up a tier, which specializations it gets, when it is demoted
// (DESIGN.md "Promotion", "Which shapes get which code", "Demotion", "Profile / hotness").
//  - promotion tier i -> i+1 when calls >= θ_i (θ_i = θ0·γ^i, adapted) AND the expected benefit
//    N_expected·(t_i − t_{i+1}) − C_{i+1} > 0 (t_{i+1} = t_i / speedup(kind, i), C from size);
//  - thresholds adapt: θ ← max(θ_min, θ − η·(R_actual − R_target)), R = (t_before − t_after)·calls
//    / t_compile, η = 0.1·θ (compiles that pay more than the target lower θ);
//  - a tier step predicted to be no faster (speedup <= 1, e.g. tier-1 generic GEMM vs tier 0's
//    oneDNN) is skipped: the region is weighed for the next tier above it;
//  - N_expected grows with the session's age (Lindy): the EWMA of calls per window times the
//    windows seen so far, so a declined region that keeps running is reconsidered (with backoff,
//    the caller's job: next_consideration) and promoted once it pays;
//  - demotion when the guard-failure rate over the last 64 calls exceeds ε.
// Every decision comes back as a DecisionRecord with its reason, for the DecisionLog.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "passes/region.h"
#include "runtime/decision_log.h"
#include "runtime/dim_tracker.h"
#include "runtime/guard.h"
#include "runtime/metrics.h"
#include "runtime/profile.h"

namespace tierjit::runtime {

using passes::RegionKind;
inline constexpr int kNumRegionKinds = 6;

/// What the SpeedupModel keys on: the region kind, with convolution regions (a matmul_epilogue
/// whose anchor is a Conv) apart from the MatMul / Gemm ones, and split by the microkernel their
/// code is built on: pointwise (1x1, one group: the image's rows multiplied in place), depthwise
/// (one input channel per group: the depthwise tile) and the rest (im2col panels x GEMM tiles).
/// Tier 0 runs oneDNN's convolutions for all of them; each family wins or loses against it on
/// its own (docs/performance.md).
enum class SpeedupClass : uint8_t {
  kElementwise,
  kMatMulEpilogue,
  kReduction,
  kShapeOnly,
  kOpaque,
  kConv,  ///< convolutions other than the two below ("conv")
  kRecurrent,  ///< LSTM / GRU regions
  kConvPointwise,  ///< 1x1 kernel, one group ("conv_pointwise")
  kConvDepthwise,  ///< one input channel per group ("conv_depthwise")
  kConvPool,       ///< a Conv region ending in its pool, Region::pool ("conv_pool")
};
inline constexpr int kNumSpeedupClasses = 10;

/// The class of a region of `kind`; `conv_anchor`: its anchor is a Conv.
SpeedupClass speedup_class(RegionKind kind, bool conv_anchor = false);

/// The class of a Conv node by its family: kConvPointwise, kConvDepthwise or kConv (group from
/// its attribute, kernel and channels per group from its constant weight [M, C/group, kH, kW], or
/// kernel_shape when the weight is not constant).
SpeedupClass conv_speedup_class(const ir::Node& conv);

/// The class a SessionOptions::SpeedupSeed names: "elementwise", "matmul_epilogue", "reduction",
/// "recurrent", "conv", "conv_pointwise", "conv_depthwise" or "conv_pool"; nullopt for anything else
/// (shape_only and opaque regions are never compiled).
std::optional<SpeedupClass> speedup_class_named(std::string_view name);

/// The seed speedups of this CPU's instruction set: per class and step (0->1, 1->2, 2->3),
/// from the measured data embedded at build time (src/runtime/speedup_seeds/<isa>.json;
/// scripts/measure_speedup_seeds.py), 1.0 for a class the data does not list.
struct MeasuredSeeds {
  std::string isa;  ///< "avx512" or "avx2"
  std::string cpu;  ///< the CPU the data was measured on
  double steps[kNumSpeedupClasses][kNumTiers - 1] = {};
  /// spread[k][t]: standard deviation over the cases of kind k of log(t_0 / t_{t+1}) (the
  /// "spread_from_tier0" field; 0 where the data has none): how far one region's speedup over
  /// tier 0 may stray from the kind's mean.
  double spread[kNumSpeedupClasses][kNumTiers - 1] = {};
  bool measured[kNumSpeedupClasses] = {};
};

/// The payoff per call of trying a version whose speedup S over the current time t is uncertain,
/// log S ~ Normal(mu, sigma^2), given that a version measured slower is dropped after its trial
/// calls (demotion): `gain` = E[max(0, 1 - 1/S)] (the fraction of t saved while it serves) and
/// `loss` = E[max(0, 1/S - 1)] (the fraction of t lost per trial call when it is slower). With
/// sigma = 0 these are max(0, 1 - 1/S) and max(0, 1/S - 1) for S = e^mu. Closed forms of the
/// log-normal's partial expectations.
struct ExpectedGain {
  double gain = 0, loss = 0;
};
ExpectedGain expected_gain(double mu, double sigma);
const MeasuredSeeds& measured_seeds();

/// Speedup t_i / t_{i+1} of one tier step per SpeedupClass (region kind). Seeded with defaults
/// (DESIGN: "seeded by the micro-benchmarks"), updated by every observed compile: the estimate is
/// the geometric mean of the seed and every observation. Thread-safe.
class SpeedupModel {
 public:
  SpeedupModel();
  /// Expected t_i / t_{i+1} for a step from tier `from_tier` (0..2); 1 for kinds never compiled.
  double speedup(SpeedupClass cls, int from_tier) const;
  void set_seed(SpeedupClass cls, int from_tier, double speedup);
  /// A compile of a `cls` region from `from_tier` took calls from t_before_us to t_after_us.
  void observe(SpeedupClass cls, int from_tier, double t_before_us, double t_after_us);
  /// Expected t_from / t_to over several steps (the product of the steps); 1 when to <= from.
  double speedup_between(SpeedupClass cls, int from_tier, int to_tier) const;
  /// A compile that went from `from_tier` straight to `to_tier` (a skipped step): the observed
  /// ratio, less the estimates of the steps below to_tier - 1, is an observation of the last step.
  void observe_span(SpeedupClass cls, int from_tier, int to_tier, double t_before_us,
                    double t_after_us);
  /// Speed of generic code (every dim a run-time value) relative to exact code of the same tier,
  /// t_exact / t_generic (<= 1: generic code is slower), per kind; the tier steps above are
  /// measured on exact code. Seeded (tier_policy.cc), not yet learned from payoffs.
  double generic_factor(SpeedupClass cls) const;
  /// The seeds' spread of log(t_0 / t_to) over regions of one kind (MeasuredSeeds::spread), for
  /// to_tier 1..3; 0 outside that range or where unmeasured.
  double spread_from_tier0(SpeedupClass cls, int to_tier) const;
  void set_spread(SpeedupClass cls, int to_tier, double sigma);

 private:
  mutable std::mutex mu_;
  std::array<std::array<double, kNumTiers - 1>, kNumSpeedupClasses> log_sum_{};  // Σ log(speedup)
  std::array<std::array<int, kNumTiers - 1>, kNumSpeedupClasses> n_{};  // seed + observations
  std::array<std::array<double, kNumTiers - 1>, kNumSpeedupClasses> spread_{};
};

/// Compile cost C_tier(size) = a + b·size in µs, size = nodes in the region; a least-squares fit
/// per tier over the observed (size, µs) pairs plus a prior of two pseudo-observations (sizes 1
/// and 10 on the default line), so it predicts before any compile and follows the data after.
class CompileCostModel {
 public:
  CompileCostModel();
  /// Predicted compile µs for tier 1..3 (>= 0).
  double predict(int tier, double size) const;
  void observe(int tier, double size, double compile_us);
  /// Replaces the prior line of `tier` (drops observations).
  void set_prior(int tier, double a_us, double b_us_per_node);

 private:
  struct Sums {
    double n = 0, x = 0, y = 0, xx = 0, xy = 0;
  };
  mutable std::mutex mu_;
  std::array<Sums, kNumTiers> sums_{};
};

struct TierPolicyOptions {
  double theta0 = 2;            ///< θ0: calls before the first promotion
  double gamma = 10;            ///< γ: θ_i = θ0·γ^i
  double theta_min = 2;         ///< θ_min (DESIGN: = θ0)
  double r_target = 2;          ///< R_target: compile payoff the thresholds aim at
  double eta_fraction = 0.1;    ///< η = eta_fraction·θ
  int max_tier = 3;
  double benefit_horizon_windows = 1;  ///< N_expected is multiplied by at least this (DESIGN: 1 window)
  /// Lindy horizon: N_expected = EWMA calls per window x max(benefit_horizon_windows, windows of
  /// model calls seen so far) — a region is expected to keep running about as long as it has.
  bool lindy_horizon = true;
  /// After a decline the policy is asked again at calls + max(reconsider_min_calls,
  /// reconsider_growth x calls) (geometric backoff: ~log_1.5(calls) decisions, not one per call).
  double reconsider_growth = 0.5;
  double reconsider_min_calls = 8;
  std::array<double, 4> hotness_weights = {1, 1, 0.5, 0.25};  ///< w1..w4
  double epsilon = 0.3;         ///< ε: demotion guard-failure rate
  /// A specialized (exact or shape-class) version not run by the last cold_calls calls of its
  /// region is demoted: removed from the table, its code freed (DESIGN gives no number: 4 windows).
  double cold_calls = 256;
  double theta_spec = 0.1;      ///< θ_spec: share of recent calls that earns an exact version
  double theta_class = 0.1;     ///< share that makes a bucket hot (DESIGN gives none: θ_spec's)
  size_t version_cap = 8;       ///< versions per region, generic included
  /// Serving time a compile costs per µs of compile time: 1 when compile threads have cores of
  /// their own; more when they take a core the intra-op team would use, which then runs its
  /// kernels on fewer threads for the compile's length (the Session sets 1 + the team's share of
  /// threads displaced, at most 2: 1.5 for 2 intra-op threads and 1 compile thread on 2 cores).
  /// Multiplies C_{i+1} in the benefit N_expected·(t_i − t_{i+1}) − C_{i+1}.
  double compile_cost_factor = 1;
  /// Calls a new version serves before its payoff is measured and a slower one is dropped (the
  /// runtime's observation window): what a trial that loses costs, in calls at the slower speed.
  double trial_calls = 8;
  /// Promotions from tier 0 weigh the spread of the kind's speedups (SpeedupModel::
  /// spread_from_tier0): a region of a kind whose mean speedup is near 1 but varies widely
  /// between shapes is tried when its expected gain, counting that a loser is dropped, pays.
  /// false: the mean alone decides (a kind whose mean is <= 1 is never compiled).
  bool weigh_spread = true;
};

/// What the policy knows about a region that is not profile: its kind and size.
struct RegionInfo {
  int id = -1;
  std::string name;
  RegionKind kind = RegionKind::kOpaque;
  double size = 1;  ///< nodes in the region (the CompileCostModel's x)
  bool conv_anchor = false;  ///< the region's anchor is a Conv (see SpeedupClass)
  SpeedupClass conv_class = SpeedupClass::kConv;  ///< with conv_anchor: its family
  SpeedupClass speedup_class() const {
    return conv_anchor && kind == RegionKind::kMatMulEpilogue ? conv_class
                                                              : runtime::speedup_class(kind, conv_anchor);
  }
};

struct PromotionDecision {
  bool promote = false;
  int from_tier = 0, to_tier = 0;
  double calls = 0, threshold = 0;
  double n_expected = 0, t_now_us = 0, t_next_us = 0, compile_us = 0;
  /// N_expected·(t_i − t_{i+1}) − C_{i+1}; with a spread (TierPolicyOptions::weigh_spread):
  /// N_expected·t_i·gain − trial_calls·t_i·loss − C_{i+1} (expected_gain)
  double benefit_us = 0;
  double density = 0;     ///< benefit_us / compile_us: the CompileQueue priority
  /// Set when the threshold was reached (kPromoted or kDeclined) or the region cannot be
  /// compiled (kDeclined); empty below the threshold (nothing decided).
  std::optional<DecisionRecord> record;
};

struct ThresholdUpdate {
  int tier = 0;  ///< θ_tier changed (the step tier -> tier+1)
  double r_actual = 0, old_theta = 0, new_theta = 0;
  std::string message;
};

struct HotnessInputs {
  double count = 0;                 ///< region calls (in the window the caller chose)
  double time_share = 0;            ///< region time / model time, 0..1
  double bandwidth_share = 0;       ///< region bytes / model bytes, 0..1
  double arithmetic_intensity = 0;  ///< FLOPs per byte
};

/// Hotness inputs of a region from its profile: count = calls, time share = its time over
/// `model_time_us`, bandwidth share = its bytes over `model_bytes`, intensity = FLOPs per byte
/// (0 where a denominator is 0).
HotnessInputs hotness_inputs(const Profile& profile, double model_time_us, double model_bytes);

struct DemotionDecision {
  double failure_rate = 0;
  std::vector<int> dims_to_mark_dynamic;  ///< flat dims that failed guards in the window
  DecisionRecord record;                  ///< kDemoted
};

/// One version the policy asks to have compiled.
struct SpecRequest {
  Specialization spec;
  Signature signature;  ///< representative call signature (for lowering and tests)
  double share = 0;     ///< share of the recent calls it serves (1 for generic)
  std::string reason;
};

class TierPolicy {
 public:
  explicit TierPolicy(TierPolicyOptions options = {});
  const TierPolicyOptions& options() const { return options_; }

  /// Current θ_tier (calls needed for tier -> tier+1); θ0·γ^tier until adapted.
  double threshold(int tier) const;
  /// N_expected for a decision: profile.expected_calls() x the horizon (benefit_horizon_windows,
  /// or with lindy_horizon the windows of model calls seen so far when more).
  double expected_calls(const Profile& profile) const;
  /// The region call count at which a declined region is weighed again.
  uint64_t next_consideration(uint64_t calls) const;
  /// The region call count at which a region whose compiled code was evicted for the
  /// `evictions`-th time (>= 1) at call `calls` is weighed for promotion again:
  /// max(calls, 1) · kRetryBackoff^evictions (saturating). A verdict taken under load, or on the
  /// shapes of that moment, is not final; a region that keeps losing is retried ever more rarely,
  /// so its compiles stay a vanishing share of its calls.
  static uint64_t retry_after_eviction(uint64_t calls, int evictions);
  static constexpr uint64_t kRetryBackoff = 4;
  /// Should the region, running at `current_tier`, be compiled at current_tier + 1? When that step
  /// is predicted no faster (speedup <= 1) it is skipped: the next tier up is weighed instead
  /// (θ of the step into it, the product of the steps' speedups); `to_tier` says which.
  PromotionDecision consider_promotion(const RegionInfo& region, const Profile& profile,
                                       int current_tier) const;
  /// A compile from `from_tier` finished: feeds the speedup and cost models and adapts
  /// θ_from_tier with R = (t_before − t_after)·calls / compile_us.
  ThresholdUpdate observe_compile(const RegionInfo& region, int from_tier, double t_before_us,
                                  double t_after_us, double calls, double compile_us);
  /// The same for a compile from `from_tier` to `to_tier` (to_tier > from_tier + 1: a skipped
  /// step; SpeedupModel::observe_span); θ_{to_tier-1} adapts.
  ThresholdUpdate observe_compile(const RegionInfo& region, int from_tier, int to_tier,
                                  double t_before_us, double t_after_us, double calls,
                                  double compile_us);
  /// w1·count + w2·time share + w3·bandwidth share + w4·arithmetic intensity.
  double hotness(const HotnessInputs& in) const;
  /// Demotion when profile.guard_failure_rate() > ε; nullopt otherwise.
  std::optional<DemotionDecision> consider_demotion(const RegionInfo& region,
                                                    const Profile& profile) const;
  /// Versions to compile at `tier`: tier <= 1 one generic version; tier >= 2 per DESIGN "Which
  /// shapes get which code": all dims static -> exact; dynamic dims -> generic, shape-class
  /// versions for buckets whose recent share (beyond the shapes given exact versions) exceeds
  /// θ_class, exact versions for shapes above θ_spec; at most version_cap in all, by share.
  std::vector<SpecRequest> choose_specializations(const DimTracker& dims, int tier) const;

  SpeedupModel& speedups() { return speedups_; }
  CompileCostModel& costs() { return costs_; }
  const SpeedupModel& speedups() const { return speedups_; }
  const CompileCostModel& costs() const { return costs_; }

 private:
  TierPolicyOptions options_;
  SpeedupModel speedups_;
  CompileCostModel costs_;
  mutable std::mutex mu_;
  std::array<double, kNumTiers> theta_{};
};

}  // namespace tierjit::runtime
