// Session::Impl: what a Session owns — the model after the tier-0 pipeline, its partition into
// Regions, the GraphLayout, the PlanCache, the compiled code per region, the decision log and the
// metrics. session.cc holds the public API and the call path; session_plan.cc builds Plans
// (recording run, pinned-tier compiles, verification).
#pragma once

#include <array>
#include <atomic>
#include <limits>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_set>
#include <utility>
#include <vector>

#include "interp/executor.h"
#include "ir/graph.h"
#include "onnx/loader.h"
#include "passes/partition.h"
#include "runtime/decision_log.h"
#include "runtime/metrics.h"
#include "runtime/payoff_trial.h"
#include "runtime/plan.h"
#include "runtime/compile_queue.h"
#include "runtime/profile.h"
#include "runtime/region_exec.h"
#include "runtime/tier_policy.h"
#include "runtime/version_table.h"
#include "tierjit/session.h"

namespace tierjit {

struct Session::Impl {
  ir::Model model;
  SessionOptions options;
  interp::ExecOptions exec;
  std::vector<TensorInfo> inputs, outputs;
  std::vector<ir::Value*> feed_values;
  /// Runs the graph at tier 0 for run_interpreted (last uses found once, frames pooled;
  /// interp::GraphRunner). Made with the Session in interpret-only mode, else on the first call
  /// that needs it (interpreter_once).
  std::unique_ptr<interp::GraphRunner> interpreter;
  std::once_flag interpreter_once;

  /// False when every call goes to run_graph (interpret-only mode, or the partition failed).
  bool use_plans = false;
  passes::Partition partition;
  runtime::GraphLayout layout;
  std::unique_ptr<runtime::PlanCache> plans;
  std::unique_ptr<runtime::RegionCodeStore> code;
  runtime::Metrics metrics;
  runtime::DecisionLog log;
  std::mutex compile_mu;  ///< one synchronous compile at a time
  int vector_lanes = 8;

  std::atomic<uint64_t> calls{0}, plan_hits{0}, plan_misses{0}, interpreted_calls{0};
  std::atomic<uint64_t> compiled_regions{0}, compile_failures{0};

  /// Measuring tools (SessionOptions::count_region_calls, time_regions): per region, the calls
  /// that ran its compiled code, the calls whose step was timed and their µs. Allocated (one per
  /// region) only when one of the options is set and the session partitions.
  struct RegionCounters {
    std::atomic<uint64_t> compiled_calls{0}, timed_calls{0};
    std::atomic<double> time_us{0};
  };
  std::unique_ptr<RegionCounters[]> region_counters;
  /// Counts one call that ran `plan` (step_us: its steps' µs, or null when not timed); nothing
  /// when the plan fell back to the whole-graph interpreter.
  void count_call(const runtime::Plan& plan, const double* step_us);

  // Adaptive mode (session_adaptive.cc): per compiled-kind region its VersionTable, Profile and
  // tier; the TierPolicy; the code epoch (bumped by every install: plans re-resolve lazily).
  struct alignas(64) AdaptiveRegion {
    AdaptiveRegion(const passes::Region& r, const runtime::VersionTableOptions& vt,
                   runtime::DecisionLog* log, runtime::Metrics* metrics);
    // What every call reads (after_call, policy_step), first and together: one cache line per
    // region and call (after a large call these lines are cold; spread over the struct they were
    // several).
    std::atomic<int> tier{0};             ///< highest tier promoted to (compiled or failed)
    /// Highest tier the region may still be promoted to: lowered to the best lower tier when
    /// its compiled code proved slower than that tier's (observe_payoff), so no higher tier is
    /// compiled on the strength of the slower tier's time (bert_tiny's softmax regions: tier 1
    /// evicted as 1.5x slower than tier 0, then tier 2 compiled from tier 1's time, 2x slower).
    std::atomic<int> ceiling{std::numeric_limits<int>::max()};
    /// After an eviction, the region call count at which the ceiling is lifted and promotion is
    /// weighed again (0: none due; TierPolicy::retry_after_eviction).
    std::atomic<uint64_t> retry_at{0};
    std::atomic<int> evictions{0};
    std::atomic<bool> retrying{false};  ///< retry_at passed; the next promotion record says so
    std::atomic<bool> in_flight{false};   ///< a compile job is queued or running
    std::atomic<bool> has_pending{false};  ///< pending.pending, readable without the lock
    /// The table holds an exact or shape-class version: only then does a call need the per-call
    /// lookup (deoptimization, last use).
    std::atomic<bool> has_specialized{false};
    /// After a decline the policy is asked again only from this call count on (one window
    /// later): a region that cannot pay costs no decision (and no message) per call.
    std::atomic<uint64_t> next_consider{0};
    std::atomic<uint64_t> next_specialize{0};  ///< backoff of declined exact versions at the top tier
    runtime::VersionTable table;
    runtime::Profile profile;
    runtime::RegionInfo info;
    /// Flat dims of the region's signature its code needs as constants even in the generic
    /// version (kir::constant_dims_required; a Conv's C/H/W): pinned in that version's guard.
    std::vector<uint8_t> pinned_dims;
    std::atomic<int> declined_tier{-1};   ///< tier whose declined decision was logged last
    /// A promotion whose payoff is still to be measured (TierPolicy::observe_compile).
    struct Pending {
      bool pending = false;
      int from_tier = 0, to_tier = 0;
      double t_before_us = 0, compile_us = 0;
      uint64_t calls_at_install = 0;
      std::vector<uint64_t> keys;  ///< spec keys of the versions installed
      /// Lower-tier versions those installs replaced (same key): reinstated if the new code is
      /// slower.
      std::vector<std::shared_ptr<const runtime::Version>> replaced;
      uint64_t warm_calls = 0;   ///< calls at to_tier after the warm-up call (0: not yet)
      double warm_time_us = 0;   ///< µs at to_tier up to then
      double warm_bytes = 0;     ///< bytes moved at to_tier up to then
      uint64_t region_calls_at_install = 0;  ///< profile.calls() then (kPayoffExpiryCalls)
      /// The new code's calls against the same shapes at from_tier (payoff_trial.h).
      runtime::PayoffTrial trial;
      uint64_t last_sample_call = 0;  ///< profile.calls() at the trial's last sample
      std::unordered_set<uint64_t> first_calls;  ///< exact keys run by the new code since install
      bool sampleable = false;  ///< one of them was timed twice at from_tier (samples can come)
    };
    std::mutex pending_mu;
    Pending pending;                       ///< guarded by pending_mu
    // Policy state (session_adaptive.cc "The adaptive policy").
    std::mutex policy_mu;                  ///< one thread runs the region's policy step at a time
    /// Bit d set: flat dim d was static when the installed specialized versions were chosen; a
    /// call leaving them on such a dim is a guard failure (demotion window).
    std::atomic<uint64_t> static_mask{~uint64_t{0}};
    std::atomic<int> compiles{0};          ///< versions this region tried to compile (budget)
    /// Per tier: the measured speedup of its code over tier 0 (observe_payoff), 0 until measured
    /// (RegionReport::payoff).
    std::array<std::atomic<double>, runtime::kNumTiers> payoff_over_tier0{};
    std::atomic<bool> budget_logged{false};
  };
  bool adaptive_on = false;
  int adaptive_max_tier = 2;
  std::vector<std::unique_ptr<AdaptiveRegion>> adaptive;  ///< per region; null: never compiled
  std::unique_ptr<runtime::TierPolicy> policy;
  std::atomic<uint64_t> code_epoch{0};
  std::atomic<int> watching{0};  ///< adaptive regions (profiled every call: promotion, demotion, hot shapes)
  /// The payoff trial's fallback (no shape the new code ran was timed twice at the replaced
  /// tier): the new tier's calls after its warm-up call it waits for.
  static constexpr uint64_t kObserveCalls = 8;
  /// A payoff trial expires after this many region calls without a sample (since the install or
  /// its last sample): it is judged on what it has, or dropped unmeasured, and the policy goes on
  /// (the new versions serve shapes the region no longer gets: waiting for them blocked every
  /// later decision of the region, e.g. exact versions for the shape it now runs).
  static constexpr uint64_t kPayoffExpiryCalls = 64;
  /// A payoff trial waits at most this many region calls since the install for a clear verdict,
  /// then it is judged on what it has (PayoffTrial::verdict); it also ends after
  /// kPayoffExpiryCalls calls without a sample.
  static constexpr uint64_t kTrialExpiryCalls = 256;

  ~Impl();
  void init_adaptive();
  /// True when `st`'s region signature describes every region input (session_adaptive.cc).
  bool signed_step(const runtime::PlanStep& st) const;
  /// The versions the tables hold for `plan`'s region signatures (null: tier 0).
  std::vector<std::shared_ptr<const runtime::CompiledRegion>> resolve_versions(
      const runtime::Plan& plan);
  /// `plan` re-resolved against the current tables (after an install), replacing it in the cache.
  std::shared_ptr<const runtime::Plan> refresh_plan(const std::shared_ptr<const runtime::Plan>& plan);
  /// Profiles the call's steps (µs each) and asks the TierPolicy about each region still below
  /// the top tier; promotions go to the CompileQueue.
  /// `quiet`: no compile overlapped the call (support::BackgroundQuiet; a call that ran while a
  /// compile held a core, its team given fewer threads, is not compared against quiet ones in
  /// payoff trials).
  void after_call(const std::shared_ptr<const runtime::Plan>& plan, const double* step_us, bool quiet);
  /// Whole-plan compilation: counts a call of `plan` and, at options.whole_plan_calls calls of a
  /// plan whose steps are all compiled exact at tier >= 2 (and, when timed, took at most
  /// options.whole_plan_max_us), compiles it into one function — in the background in adaptive
  /// mode — and logs the outcome.
  void consider_whole_plan(const std::shared_ptr<const runtime::Plan>& plan);
  /// The payoff trial of a new tier's code (PayoffTrial, or its fallback; docs/runtime.md
  /// "Payoff"): TierPolicy::observe_compile (θ, speedup and cost models learn from the
  /// measured payoff), logged. New code slower than the best lower tier measured (by more than
  /// slower_margin) is removed again: the region runs that tier's code until its retry.
  /// `key`, `tier`, `us`: this call of the region (exact key, tier that ran it, µs), a trial
  /// sample when it ran the new code; `quiet`: no compile shared the cores meanwhile.
  void observe_payoff(AdaptiveRegion& a, uint64_t key, int tier, double us, bool quiet);
  /// A tier's µs per call at the same work: its µs per byte (over its own calls) times the
  /// region's mean bytes per call; `per_call` when the region moves no bytes or the tier never
  /// ran. (The calls of a tier may be of other shapes than another tier's: a Zipf mix of sizes.)
  double same_work_us(const AdaptiveRegion& a, int tier, double per_call) const;
  /// The fastest tier below `to_tier` at the same work and its µs; {-1, 0} when none ran.
  std::pair<int, double> best_lower_tier(const AdaptiveRegion& a, int to_tier) const;
  /// The ratio new / from_tier time above which code of to_tier is evicted: (1 + slower_margin)
  /// x the best lower tier's time over from_tier's; 0 when nothing is evicted (margin < 0).
  double eviction_bound(const AdaptiveRegion& a, int from_tier, int to_tier) const;
  /// Predicted t_0 / t_tier for a region of speedup class `cls`: the product of the policy's
  /// steps.
  double speedup_over_tier0(runtime::SpeedupClass cls, int tier) const;
  /// speedup_over_tier0 for generic code (SpeedupModel::generic_factor).
  double generic_speedup_over_tier0(runtime::SpeedupClass cls, int tier) const;
  /// The compile job of a promotion: versions of step `s`'s region at `to_tier`, installed.
  /// `exact_only`: one exact version of the step's shape (a newly hot shape at the top tier).
  void compile_promoted(const std::shared_ptr<const runtime::Plan>& plan, size_t s, int to_tier,
                        bool exact_only = false);
  /// Policy steps of one region after a call (session_adaptive.cc): demotion (guard failures,
  /// cold versions), promotion, exact versions for newly hot shapes at the top tier. `calls`:
  /// the region's profile count including this call.
  void policy_step(const std::shared_ptr<const runtime::Plan>& plan, size_t s, double step_us,
                   bool exact_served, uint64_t calls);
  bool demote(AdaptiveRegion& a);
  /// Highest tier among the table's versions (0: none).
  static int installed_tier(const runtime::VersionTable& table);
  /// True when `table` holds an exact or shape-class version.
  static bool any_specialized(const runtime::VersionTable& table);
  /// Logs a promotion decision of `a` at region call `calls`; the first after a retry says so.
  void log_decision(AdaptiveRegion& a, runtime::DecisionRecord r, uint64_t calls);
  void specialize(AdaptiveRegion& a, const std::shared_ptr<const runtime::Plan>& plan, size_t s,
                  double step_us);
  /// Queues (or, synchronous, runs) the compile of step `s`'s region at `to_tier`.
  void submit_compile(AdaptiveRegion& a, const std::shared_ptr<const runtime::Plan>& plan, size_t s,
                      int to_tier, double density, bool exact_only);
  /// Compiles the region may still start: version_cap + 1 plus one per kBudgetRefillCalls calls.
  bool budget_left(AdaptiveRegion& a, size_t planned);
  static constexpr uint64_t kBudgetRefillCalls = 4096;
  static constexpr uint64_t kTopTierCheckCalls = 16;  ///< demotion checks at the top tier
  static constexpr double kShapeTimeAlpha = 0.25;  ///< EWMA weight of a call (PlanStep::shape_us)

  /// Sets up partition, layout and caches after the pipeline (session.cc's constructor).
  void init_runtime();
  /// SessionOptions::warm_up (session_warm_up.cc): one tier-0 run on zeros with every symbolic
  /// input dim 1, its outputs dropped; sets warm_up_ms, or logs why it was skipped.
  void warm_up();
  double warm_up_ms = -1;  ///< SessionStats::warm_up_ms
  /// Runs `feeds` (validated, feed order) through the tier-0 executor.
  std::vector<Tensor> run_interpreted(const std::vector<Tensor>& feeds);
  /// First call of signature `sig`: records shapes at tier 0, resolves each region's version,
  /// caches the Plan and returns the call's outputs (from compiled code when the plan has any).
  std::vector<Tensor> build_plan_and_run(const runtime::Signature& sig,
                                         const std::vector<Tensor>& feeds);
  /// Runs a cached plan; falls back to tier 0 (and marks the plan) on a data-dependent shape.
  std::vector<Tensor> run_plan(const runtime::Plan& plan, const std::vector<Tensor>& feeds,
                               double* step_us = nullptr);

  /// Background compiles; the last member, so it is destroyed (jobs cancelled, running ones
  /// joined) before anything a job touches.
  std::unique_ptr<runtime::CompileQueue> queue;

 private:
  /// The compiled version of region `r` for this recording under the pinned tier, or null (tier
  /// 0; the reason is in the decision log).
  std::shared_ptr<const runtime::CompiledRegion> pinned_version(const passes::Region& r,
                                                                runtime::Recording& rec);
  /// Lowers, compiles (tier 3: kernel selection) and, with options.verify, checks against the
  /// recording's tier-0 values; shared by the code store. Null on failure (logged, remembered).
  /// Verification and tier 3 need a recording made with keep_all. `class_dims`: with
  /// kShapeClass, the flat dims read at run time (runtime::CompileRequest::class_dims).
  std::shared_ptr<const runtime::CompiledRegion> compile_version(
      const passes::Region& r, runtime::Recording& rec, int tier, kir::ShapeLevel level,
      std::span<const uint8_t> class_dims = {});
  /// True for the region kinds that are compiled (and, where cheap to tell, have a lowering).
  static bool may_compile(const passes::Region& r);
  /// Tier 3: kernel selection (runtime/kernel_select.h) on the recording's data; null when the
  /// library (tier 0) won.
  Expected<std::shared_ptr<const runtime::CompiledRegion>> select_tier3(
      const passes::Region& r, const kir::LowerOptions& lo, uint64_t key, runtime::Recording& rec);
};

}  // namespace tierjit
