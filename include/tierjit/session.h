// tierjit::Session — the public C++ API: load an ONNX model once, then run it on feeds.
//   tierjit::Session session("model.onnx", options);
//   auto outputs = session.run({{"x", x}});
// Each call runs the Plan of its input signature: regions at tier 0 (the interpreter) or as
// compiled code (SessionOptions::mode).
// Errors throw tierjit::Error with a one-line message (file, node, input and what is wrong).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tierjit/error.h"
#include "tierjit/tensor.h"

namespace tierjit {

/// How a Session chooses the tier of each region (DESIGN.md "Tier", "Observability").
enum class ExecutionMode {
  kAdaptive,       ///< start at tier 0, compile what runs hot (TierPolicy)
  kInterpretOnly,  ///< every call at tier 0 through the interpreter (the reference)
  kPinnedTier,     ///< every region that has a lowering at `pinned_tier`, compiled synchronously
                   ///< the first time a signature is seen; the others stay on tier 0
};

/// Largest intra_op_threads and compile_threads a Session accepts (larger values are errors:
/// a kernel never runs more threads than the usable cores anyway, see docs/runtime.md).
inline constexpr int kMaxIntraOpThreads = 1024;
inline constexpr int kMaxCompileThreads = 256;

struct SessionOptions {
  /// Threads one kernel may use (OpenMP / oneDNN), 0..kMaxIntraOpThreads; 0 = all cores. A call
  /// runs min(this, usable cores) of them while the cores are free, else one.
  int intra_op_threads = 1;
  /// Largest single tensor accepted (bytes, >= 1): every tensor of the model, every tensor a
  /// kernel computes and every feed (Session::run; the CLI checks a feed file's declared size
  /// before reading its data). Over it: Error(kResourceExhausted) naming the tensor.
  int64_t memory_limit_bytes = int64_t{16} << 30;
  /// Largest total of the intermediates alive at once during a run (bytes; 0 = no limit), at
  /// every tier: the peak, over the steps of a call, of the bytes of the values computed and not
  /// yet freed (graph outputs included, feeds and model constants not). Checked when the Plan of
  /// a new input signature is made (its recording tier-0 run stops as soon as the peak passes
  /// the limit; the plan's arena and compiled workspaces count too) and, without plans
  /// (kInterpretOnly), node by node. Over it: Error(kResourceExhausted) naming the model, the
  /// signature, the bytes needed and the limit; the session goes on serving other signatures.
  int64_t arena_limit_bytes = 0;
  /// For a model given as bytes (Session::from_bytes), which has no folder of its own: the folder
  /// its external data files are relative to and must lie in after resolving symbolic links
  /// (ONNX Runtime's config session.model_external_initializers_file_folder_path). Empty
  /// (default): such a model that uses external data is refused (kInvalidModel). Ignored for a
  /// model loaded from a path, whose data lie in its own folder (docs/runtime.md "External data").
  std::string external_data_folder;
  /// Tier choice; see ExecutionMode.
  ExecutionMode mode = ExecutionMode::kAdaptive;
  /// With kPinnedTier: 1 (generic code, cheap compile), 2 (exact shapes, optimized) or 3 (exact,
  /// kernel selection: every tuning candidate and the tier-0 library path measured on the first
  /// call of each shape, the fastest kept).
  int pinned_tier = 2;
  /// Adaptive mode: a call that triggers a compile waits for it (tests, reproducible runs).
  bool synchronous_compilation = false;
  /// Check each new compiled version against tier 0 on its first call (rtol 1e-3, atol 1e-4 for
  /// floats, exact otherwise); a mismatch discards it and the region stays on the tier below
  /// (decision log). Costs one tier-0 run per new version.
  bool verify = false;
  /// Background compile threads, 0..kMaxCompileThreads; 0 = max(1, floor(0.2 * cores)).
  int compile_threads = 0;
  /// TierPolicy: theta0 (calls before the first promotion) and gamma (theta_i = theta0 * gamma^i).
  double theta0 = 2;
  double gamma = 10;
  /// Compiled versions per region, generic included (VersionTable cap).
  int version_cap = 8;
  /// Share (0..1) of a region's recent calls a shape needs to get an exact version.
  double theta_spec = 0.1;
  /// Byte budget of compiled code and Plans held in memory (bytes); least recently used first out.
  int64_t code_cache_bytes = int64_t{256} << 20;
  /// Plans (one per model-input signature) kept at most.
  int max_plans = 64;
  /// Adaptive policy (DESIGN.md "Promotion", "Demotion"; docs/runtime.md "The adaptive policy").
  /// N_expected, the calls a compile is expected to serve, is the region's calls per window of 64
  /// model calls (EWMA) times at least this many windows (DESIGN: 1). Larger values assume a
  /// long-running session and compile earlier; below 1 (down to 0: no compile ever pays unless
  /// the Lindy horizon grows it) compiles later. Negative, NaN or infinite: Session throws
  /// Error(kInvalidArgument).
  double benefit_horizon_windows = 1;
  /// Lindy horizon: N_expected grows with the session's age (windows of 64 model calls seen so
  /// far), so a region declined early that keeps running is weighed again (with backoff) and
  /// promoted once its compile pays. false: the horizon stays benefit_horizon_windows.
  bool lindy_horizon = true;
  /// Demotion (epsilon): a region whose guard-failure rate over its last 64 calls exceeds this
  /// (0..1) drops its exact versions and marks the drifting dims dynamic. A guard failure is a
  /// call that leaves the region's specialized code on a dim that was static when that code was
  /// chosen.
  double demotion_epsilon = 0.3;
  /// Demotion of cold versions: an exact or shape-class version not run by the last this many
  /// calls of its region is removed and its code freed (its slot under version_cap reopens).
  /// 0 disables.
  int demotion_cold_calls = 256;
  /// Never slower: a new tier whose payoff trial (the time-weighted median of its calls' µs over
  /// the same shapes' µs at the replaced tier, 8-32 calls; docs/runtime.md) puts it more than
  /// this fraction above the best lower tier is removed again (the lower tier's code serves the
  /// region, which is weighed for promotion again when its calls reach 4^k x the count at its
  /// k-th eviction).
  /// Negative: never removed (tests that must not depend on timing).
  double slower_margin = 0.1;
  /// Whole-plan compilation (docs/runtime.md "Whole-plan compilation"): in a plan (one
  /// model-input signature), each run of consecutive regions that all run exact compiled code of
  /// tier >= 2 is compiled into one function after this many calls of the plan, when its steps
  /// took at most whole_plan_max_us together (small shapes, where per-region dispatch shows;
  /// adaptive mode compiles in the background, a pinned tier on that call). 0 disables;
  /// negative: Session throws Error(kInvalidArgument).
  int whole_plan_calls = 64;
  double whole_plan_max_us = 2000;  ///< µs per call (adaptive mode; pinned tiers do not time)
  /// One seed of the speedup model (docs/runtime.md, "Speedup estimates"): the expected
  /// t_i / t_{i+1} of the step from tier `from_tier` (0..2) to the next for regions of `kind`
  /// ("elementwise", "matmul_epilogue", "reduction", "recurrent", "conv" (convolutions other than
  /// the next three), "conv_pointwise" (1x1, one group), "conv_depthwise" or "conv_pool" (a
  /// Conv region ending in its MaxPool/AveragePool)), replacing the
  /// default (its measurements are in src/runtime/tier_policy.cc). Every payoff the session
  /// measures is still folded in (geometric mean). A step seeded at or below 1 is skipped when
  /// promoting.
  struct SpeedupSeed {
    std::string kind;
    int from_tier = 0;
    double speedup = 1;  ///< in [1e-6, 1e6] (a payoff beyond that is no measurement)
  };
  /// Seeds, each replacing the default of its kind and step only (the others keep theirs), in
  /// order (a later one for the same kind and step wins). An
  /// unknown kind, a from_tier outside 0..2 or a speedup outside [1e-6, 1e6]: Session throws
  /// Error(kInvalidArgument) naming the seed.
  std::vector<SpeedupSeed> speedup_seeds;
  /// Measuring tools (`tierjit bench --json`): count, per region, the calls that ran its compiled
  /// code (RegionReport::compiled_calls, Session::region_compiled_calls()). Costs one relaxed
  /// atomic increment per compiled region per call.
  bool count_region_calls = false;
  /// Measuring tools: time every region's step in every call (RegionReport::time_us and
  /// timed_calls). In kInterpretOnly mode the calls then run through per-signature Plans with
  /// every region at tier 0 (the same kernels, region by region) instead of the whole-graph
  /// interpreter, so that each region's time can be read; the first call of each signature (the
  /// recording run) and calls that fall back to the whole-graph interpreter are not timed. Costs
  /// two clock reads per region per call: not for serving.
  bool time_regions = false;
  /// Cold start (docs/runtime.md "Warm-up at session creation"): the constructor runs the model
  /// once at tier 0 on zeros, every symbolic or unknown input dim taken as 1, so that the first
  /// call's shape-independent work is done before the first request: constant weights packed
  /// into the layouts the kernels read, the intra-op thread team started, oneDNN and the load
  /// sampler initialized. Costs about one first call of session-creation time (mlp: ~0.7 ms);
  /// nothing is cached for that signature (no Plan, no profile). When that run fails (a model
  /// whose dims cannot be 1, an input without a declared shape, a non-numeric input) it is
  /// skipped with the reason in the decision log, and the session serves as without it.
  bool warm_up = true;
};

/// Checks every field of `options` against its range (docs/runtime.md, "Modes"); the Session
/// constructor and the Python SessionOptions call it. Throws Error(kInvalidArgument) with one line
/// naming the first bad field, its allowed range and its value, e.g. "theta_spec must be a number
/// in [0, 1], got 2"; NaN is refused wherever a number is expected.
void validate(const SessionOptions& options);

/// Counters of one Session (the adaptive runtime's detail is in metrics_json()).
struct SessionStats {
  uint64_t calls = 0;               ///< run() calls that returned outputs
  uint64_t plan_hits = 0;           ///< calls whose signature had a cached Plan
  uint64_t plan_misses = 0;         ///< calls that built a Plan (first call of a signature)
  uint64_t interpreted_calls = 0;   ///< calls run by the interpreter alone (run_graph)
  uint64_t plans_evicted = 0;
  uint64_t compiled_regions = 0;    ///< versions compiled (all tiers)
  uint64_t compile_failures = 0;    ///< lowering/codegen failures and verify mismatches
  size_t plans_cached = 0;
  size_t plan_bytes = 0;            ///< bytes the cached Plans hold (code included)
  size_t regions = 0;               ///< regions of the partitioned graph
  /// Wall time of the warm-up run at session creation (ms; SessionOptions::warm_up), -1 when
  /// none ran (turned off or skipped: the decision log says why).
  double warm_up_ms = -1;
};

/// One region of a Session's partition and the code it runs (Session::region_reports()).
struct RegionReport {
  int id = -1;                    ///< position in the partition (a topological order)
  std::string name;               ///< "gemm_0", "elementwise_3", ...
  std::string kind;               ///< "matmul_epilogue", "reduction", "elementwise", "shape_only", "opaque"
  std::vector<std::string> ops;   ///< ONNX op types of its nodes, in graph order ("Gemm", "Relu")
  int tier = 0;                   ///< highest tier among the versions installed now (0: interpreter)
  uint64_t calls = 0;             ///< run() calls that ran the region (every region runs once per call)
  /// One line per installed version, most specialized first, e.g.
  /// "tier 2 exact float32[8,256] guard: input 0 dim 0 == 8, input 0 dim 1 == 256".
  std::vector<std::string> versions;
  /// The guard of each version (same order as `versions`): "input 0 dim 0 == 8",
  /// "input 0 dim 0 in 65..128", "dtypes and ranks only".
  std::vector<std::string> guards;
  bool megamorphic = false;       ///< the region reached its version cap (SessionOptions::version_cap)
  /// Calls that ran the region's compiled code (0 unless SessionOptions::count_region_calls).
  uint64_t compiled_calls = 0;
  /// Calls whose region step was timed, and their total wall time in µs (0 unless
  /// SessionOptions::time_regions).
  uint64_t timed_calls = 0;
  double time_us = 0;
  /// Adaptive mode: the speedup of the code of `tier` over tier 0 that the runtime measured
  /// after promoting the region to it (tier-0 time over the new tier's, at the region's mean
  /// bytes per call; the new tier's from its payoff trial: the time-weighted median of its calls
  /// against the same shapes at the tier it replaced, docs/runtime.md "Payoff"); -1 when none was
  /// measured (tier 0, pinned tiers, a payoff not measured yet or dropped).
  double payoff = -1;
};

/// Declared input or output: name, dtype and shape; symbolic dims are -1 with their name in
/// `dim_names` (empty string for a constant dim or an unnamed unknown dim).
struct TensorInfo {
  std::string name;
  DType dtype = DType::kUndefined;
  std::vector<int64_t> shape;
  std::vector<std::string> dim_names;
  bool has_shape = false;  ///< false when the model declares no shape (rank unknown)
};

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Session {
 public:
  /// Loads `model_path` (ONNX, opset <= 17). Throws tierjit::Error: kNotFound (no file, no
  /// external data file), kInvalidModel (not ONNX, truncated, inconsistent, a loop-carried value
  /// whose dtype the body changes, external data outside the model's folder after resolving
  /// symbolic links or shorter than declared: docs/runtime.md "Loading: external data and
  /// bounds"), kUnsupported (op/opset/dtype; a file over 2 GiB - 1 bytes, refused from its size
  /// before it is read), kResourceExhausted (tensor over memory_limit_bytes).
  explicit Session(const std::string& model_path, SessionOptions options = {});
  /// Loads a model from its serialized bytes (a .onnx file's contents); messages and
  /// model_path() name it "<model bytes>". External data is read from
  /// options.external_data_folder and refused (kInvalidModel) when that is empty. Throws as the
  /// path constructor, and kUnsupported for more than 2 GiB - 1 bytes (protobuf's limit).
  static Session from_bytes(const std::string& model_bytes, SessionOptions options = {});
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  /// Runs the model. `feeds` names every non-initializer input once; outputs come back in the
  /// model's output order with their names. Throws tierjit::Error(kInvalidArgument) for a
  /// missing, unknown or duplicated feed (a feed for an initializer the model also lists among
  /// its inputs is refused, naming it), or a wrong dtype, rank or constant dim; errors raised
  /// by a kernel name the node. Thread-safe: run may be called from many threads at once.
  NamedTensors run(const NamedTensors& feeds) const;

  /// Counters (plan hits, compiles, ...); thread-safe.
  SessionStats stats() const;
  /// The decision log (every compile, failure and tier decision with its reason) as a JSON array.
  std::string decision_log_json() const;
  /// The runtime's metrics as one JSON object.
  std::string metrics_json() const;
  /// Blocks until the background compile queue is empty and no compile is running, for at most
  /// `timeout_ms` milliseconds (< 0: no limit). Returns true when idle, false on timeout. Sessions
  /// without background compiles (interpret-only, pinned tier, synchronous compilation) return
  /// true at once. A call to run() from another thread meanwhile may queue new compiles. For
  /// reports and tests; run() itself never waits for a compile.
  bool wait_for_compiles(int64_t timeout_ms = -1) const;

  const std::vector<TensorInfo>& inputs() const;
  const std::vector<TensorInfo>& outputs() const;
  const std::string& model_path() const;
  /// Every region of the partition with its tier, versions and guards, in region order; empty
  /// when the session does not partition (kInterpretOnly without time_regions, or the partition
  /// failed: decision log). Pinned-tier sessions list the versions the decision log still holds.
  /// Thread-safe.
  std::vector<RegionReport> region_reports() const;
  /// Per region (region order), RegionReport::compiled_calls so far: one relaxed load per region,
  /// cheap enough to read between two calls of a timed loop. Empty unless
  /// SessionOptions::count_region_calls and the session partitions. Thread-safe.
  std::vector<uint64_t> region_compiled_calls() const;

  struct Impl;

 private:
  Session();
  /// Loads the model (from `model_bytes` when not null, else from the file `model_path`).
  void init(const std::string& model_path, const std::string* model_bytes, SessionOptions options);

  std::unique_ptr<Impl> impl_;
};

/// "0.1.0 (git abc1234)"
std::string version_string();

}  // namespace tierjit
