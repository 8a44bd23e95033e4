// Session::Impl: what a Session owns — the model after the tier-0 pipeline, its partition into
// Regions, the GraphLayout, the PlanCache, the compiled code per region, the decision log and the
// metrics. session.cc holds the public API and the call path; session_plan.cc builds Plans
// (recording run, pinned-tier compiles, verification).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "interp/executor.h"
#include "ir/graph.h"
#include "onnx/loader.h"
#include "passes/partition.h"
#include "runtime/decision_log.h"
#include "runtime/metrics.h"
#include "runtime/plan.h"
#include "runtime/region_exec.h"
#include "tierjit/session.h"

namespace tierjit {

struct Session::Impl {
  ir::Model model;
  SessionOptions options;
  interp::ExecOptions exec;
  std::vector<TensorInfo> inputs, outputs;
  std::vector<ir::Value*> feed_values;

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

  /// Sets up partition, layout and caches after the pipeline (session.cc's constructor).
  void init_runtime();
  /// Runs `feeds` (validated, feed order) through the tier-0 executor.
  std::vector<Tensor> run_interpreted(const std::vector<Tensor>& feeds);
  /// First call of signature `sig`: records shapes at tier 0, resolves each region's version,
  /// caches the Plan and returns the call's outputs (from compiled code when the plan has any).
  std::vector<Tensor> build_plan_and_run(const runtime::Signature& sig,
                                         const std::vector<Tensor>& feeds);
  /// Runs a cached plan; falls back to tier 0 (and marks the plan) on a data-dependent shape.
  std::vector<Tensor> run_plan(const runtime::Plan& plan, const std::vector<Tensor>& feeds);

 private:
  /// The compiled version of region `r` for this recording under the pinned tier, or null (tier
  /// 0; the reason is in the decision log).
  std::shared_ptr<const runtime::CompiledRegion> pinned_version(const passes::Region& r,
                                                                runtime::Recording& rec);
  /// Tier 3: kernel selection (runtime/kernel_select.h) on the recording's data; null when the
  /// library (tier 0) won.
  Expected<std::shared_ptr<const runtime::CompiledRegion>> select_tier3(
      const passes::Region& r, const kir::LowerOptions& lo, uint64_t key, runtime::Recording& rec);
};

}  // namespace tierjit
