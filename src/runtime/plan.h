// Plan (DESIGN.md "Plan"): for one model-input signature, every value's concrete shape (recorded
// from the first tier-0 run of that signature), per region the resolved version (tier 0, compiled
// code, or plan-time values of a shape-only region) and a memory plan: liveness-based offsets in
// one 64-byte-aligned arena for the intermediates that compiled regions write and only compiled
// regions read. Each call takes its own frame (and a small arena) from a small per-plan pool, a
// large arena from the process-wide buffer pool (support/buffer_pool.h), so concurrent calls
// never share one and idle plans hold no large buffers. Whole-plan compilation (WholePlan,
// plan_whole.cc) may later run runs of its compiled steps as one program each. PlanCache: the
// plans of a Session, an LRU bounded in plans and bytes.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "interp/executor.h"
#include "passes/region.h"
#include "runtime/region_exec.h"
#include "runtime/signature.h"

namespace tierjit::runtime {

/// What a Session knows about its graph independently of any signature: the partition, value ids
/// of feeds and outputs, and per region the values to free after it. Built once per Session.
struct GraphLayout {
  const ir::Graph* graph = nullptr;
  const passes::Partition* partition = nullptr;
  interp::ExecOptions exec;
  std::vector<uint32_t> feed_ids;    ///< graph.feed_inputs() order
  std::vector<uint32_t> output_ids;  ///< graph.outputs() order
  std::vector<uint32_t> dynamic_ids; ///< every non-constant top-level value (reset after a call)
  /// Per region: values dead after it (its internal values; inputs it reads last), never
  /// constants or graph outputs.
  std::vector<std::vector<uint32_t>> release;
  /// Per value: the last region reading it (-1: none), graph outputs = regions.size().
  std::vector<int> last_reader;
};
GraphLayout make_layout(const ir::Graph& graph, const passes::Partition& partition,
                        const interp::ExecOptions& exec);

/// The first tier-0 run of a signature, region by region: the shapes and dtypes of every value
/// (indexed by Value::id()), the shape-only regions' values, the outputs. With keep_all the frame
/// still holds every value at the end (for verifying compiled versions); otherwise values are
/// freed after their last reader as in run_graph.
struct Recording {
  interp::Frame frame;
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
  std::vector<std::vector<std::pair<uint32_t, Tensor>>> bound;  ///< per region (shape-only)
  std::vector<Tensor> outputs;
  /// Peak bytes of the values computed and not yet released, region by region (the tier-0 run's
  /// live intermediates; SessionOptions::arena_limit_bytes).
  int64_t peak_live_bytes = 0;
};
Status record_call(const GraphLayout& layout, const std::vector<Tensor>& feeds, bool keep_all,
                   Recording& rec);

/// Value specialization (DESIGN.md "Specialization"): per input of `region`, the value a plan
/// binds for it when a shape-only region computes it (so it is the same on every call of the
/// plan) and it is int64 with at most kMaxSpecializedValues elements; an undefined Tensor
/// elsewhere. Exact versions take these values as constants and their guards check them.
std::vector<Tensor> specialized_input_values(const passes::Region& region, const Recording& rec);

enum class StepKind : uint8_t {
  kTier0,     ///< run the region's nodes through the interpreter
  kCompiled,  ///< call the compiled kernel
  kBound,     ///< shape-only region: bind the values computed when the plan was made
};

struct PlanOperand {
  uint32_t value = 0;         ///< Value::id()
  int64_t arena_offset = -1;  ///< >= 0: in the call's arena; -1: a Tensor in the frame
};

/// A double read and written atomically (relaxed) that copies like a value (plans copy steps).
struct RelaxedDouble {
  std::atomic<double> v{0};
  RelaxedDouble() = default;
  RelaxedDouble(const RelaxedDouble& o) : v(o.v.load(std::memory_order_relaxed)) {}
  RelaxedDouble& operator=(const RelaxedDouble& o) {
    v.store(o.v.load(std::memory_order_relaxed), std::memory_order_relaxed);
    return *this;
  }
};

struct PlanStep {
  StepKind kind = StepKind::kTier0;
  int region = -1;
  std::span<const ir::Node* const> nodes;    ///< kTier0
  std::span<const uint32_t> check;           ///< kTier0: outputs whose shape must match the plan
  std::span<const uint32_t> release;         ///< values freed after the step
  std::shared_ptr<const CompiledRegion> compiled;  ///< kCompiled (keeps the code alive)
  codegen::KernelFn fn = nullptr;
  std::vector<PlanOperand> inputs, outputs;  ///< kCompiled: Region::inputs / outputs order
  std::vector<int64_t> dims;                 ///< kCompiled: kernel dims (inputs', then outputs')
  int64_t workspace_offset = -1;
  std::vector<std::pair<uint32_t, Tensor>> bound;  ///< kBound
  std::vector<uint32_t> check_ids;           ///< storage of `check`
  /// The recorded shapes of `check`, flat: rank then dims per value, next to the step (the
  /// plan's shapes_ are one heap block per value: after a large call evicted them, reading
  /// them cost bert_tiny's small calls ~10-15 us).
  std::vector<int64_t> check_dims;
  int tier = 0;                              ///< tier the step runs at
  /// Compiled kinds (elementwise, matmul epilogue, reduction): the region's call Signature under
  /// this plan, the bytes it reads and writes and its FLOPs (one per output element; the profile
  /// of the adaptive runtime).
  Signature region_sig;
  uint64_t region_key = 0;  ///< region_sig.exact_key(), computed once with the plan
  /// The adaptive runtime's estimate of this step's time under this plan (µs; 0: none yet): an
  /// EWMA over its calls, each sample capped at twice the estimate, so that one preempted call
  /// does not make the policy compile for this shape (session_adaptive.cc, after_call).
  mutable RelaxedDouble shape_us;
  double bytes = 0, flops = 0;
};

/// Whole-plan compilation (DESIGN.md "Whole-plan compilation"): each maximal run of a plan's
/// steps that are all compiled (or bound at plan time), with at least two compiled, runs as one
/// compiled program: no per-step dispatch inside it, intermediates at their arena offsets,
/// constants and prepared weights at fixed addresses. A plan with no tier-0 step is one segment
/// (the whole plan behind its own guard, its exact signature).
struct PlanSegment {
  size_t first = 0, end = 0;      ///< the steps [first, end)
  codegen::CompiledKernel kernel;
  std::vector<uint32_t> io;       ///< per io slot of the program: a value id
  std::vector<uint8_t> allocate;  ///< per io slot: 1 = produced here into a Tensor, 0 = read
  size_t regions = 0;             ///< compiled steps in the segment
};
struct WholePlan {
  std::vector<PlanSegment> segments;
  std::vector<int> segment_at;  ///< per step: the segment starting there, or -1
  size_t regions() const {
    size_t n = 0;
    for (const PlanSegment& s : segments) n += s.regions;
    return n;
  }
  size_t object_bytes() const {
    size_t n = 0;
    for (const PlanSegment& s : segments) n += s.kernel.object_bytes;
    return n;
  }
  int64_t compile_us() const {
    int64_t n = 0;
    for (const PlanSegment& s : segments) n += s.kernel.compile_us;
    return n;
  }
};

class Plan {
 public:
  /// `compiled[r]`: the version region r runs, or null for tier 0. `rec` must be the recording
  /// of `sig`. The layout must outlive the plan.
  static std::shared_ptr<Plan> make(const GraphLayout& layout, const Signature& sig,
                                    const Recording& rec,
                                    std::vector<std::shared_ptr<const CompiledRegion>> compiled,
                                    size_t pool_cap = 8);

  /// The same plan (shapes, plan-time values) with other versions per region (the adaptive
  /// runtime installed or removed code).
  static std::shared_ptr<Plan> remake(const Plan& old,
                                      std::vector<std::shared_ptr<const CompiledRegion>> compiled);

  /// Runs one call. `feeds` in feed order, matching the plan's signature. Returns the outputs;
  /// when a tier-0 region produces a shape the plan did not record (data-dependent shapes), stops
  /// and sets *shape_changed (outputs empty) — the caller reruns the call at tier 0. With
  /// `step_us` (steps().size() entries) each step's wall time in µs is stored there.
  Expected<std::vector<Tensor>> run(const std::vector<Tensor>& feeds, bool* shape_changed,
                                    double* step_us = nullptr) const;

  /// Whole-plan compilation (plan_whole.cc). True when some run of consecutive steps with no
  /// tier-0 step holds two compiled steps or more, every one exact and of tier >= 2 (so it
  /// assumes nothing the plan's signature does not fix).
  bool whole_compilable() const;
  /// Those runs as programs (codegen::compile_program at tier 2), one per run. Errors:
  /// kUnsupported when !whole_compilable() or a version kept no kernel IR; codegen's errors.
  Expected<std::shared_ptr<const WholePlan>> compile_whole() const;
  /// Installs `w`: later calls run its segments as one call each (timed as one and split over
  /// their steps in proportion to the steps' last measured times). Only the first install counts.
  void set_whole(std::shared_ptr<const WholePlan> w) const;
  const WholePlan* whole() const { return whole_.load(std::memory_order_acquire); }
  /// Counts a call of this plan; returns the count including it.
  uint64_t count_call() const { return calls_.fetch_add(1, std::memory_order_relaxed) + 1; }
  /// True for exactly one caller: it compiles the whole plan.
  bool claim_whole() const { return !whole_claimed_.exchange(true, std::memory_order_acq_rel); }

  /// Code epoch of the Session when the plan resolved its versions (adaptive mode).
  uint64_t epoch() const { return epoch_; }
  void set_epoch(uint64_t e) { epoch_ = e; }
  /// Feeds of the plan's first call, kept when the adaptive runtime must rerun it (verify).
  const std::vector<Tensor>& sample_feeds() const { return sample_feeds_; }
  void set_sample_feeds(std::vector<Tensor> f) { sample_feeds_ = std::move(f); }
  const std::vector<Shape>& shapes() const { return shapes_; }
  const std::vector<DType>& dtypes() const { return dtypes_; }

  const Signature& signature() const { return sig_; }
  uint64_t hash() const { return hash_; }
  const std::vector<PlanStep>& steps() const { return steps_; }
  size_t compiled_steps() const { return compiled_steps_; }
  int64_t arena_bytes() const { return arena_bytes_; }
  /// Live intermediates of one call (bytes): arena_bytes() plus the peak of the values a call
  /// holds as Tensors (SessionOptions::arena_limit_bytes).
  int64_t peak_live_bytes() const { return peak_live_bytes_; }
  /// Bytes this plan holds: shapes, steps, plan-time values, its code objects, and its arena when
  /// small (< support::kPooledMinBytes; a large one is borrowed from the buffer pool per call).
  size_t bytes() const { return bytes_; }
  const Shape& shape(uint32_t value) const { return shapes_[value]; }
  /// Set when a call found a data-dependent shape: the signature runs at tier 0 from then on.
  bool interpret_only() const { return interpret_only_.load(std::memory_order_relaxed); }
  /// Marks the plan interpret-only; true for the call that changed it (log once).
  bool mark_interpret_only() const { return !interpret_only_.exchange(true); }

 private:
  struct CallState;
  struct CallStateDeleter {
    void operator()(CallState* s) const;
  };
  using CallStatePtr = std::unique_ptr<CallState, CallStateDeleter>;
  CallStatePtr acquire() const;
  void release(CallStatePtr state) const;
  /// Runs segment `seg` on the call's values (binding its io slots) and frees what its steps
  /// release; with `step_us`, stores the segment's time split over its steps there.
  void run_segment(const PlanSegment& seg, std::vector<Tensor>& vals, char* arena,
                   double* step_us) const;
  /// The graph outputs from a call's values (constants and plan-time values cloned).
  Expected<std::vector<Tensor>> collect_outputs(const std::vector<Tensor>& vals) const;

  mutable std::mutex whole_mu_;
  mutable std::shared_ptr<const WholePlan> whole_owner_;  ///< guarded by whole_mu_
  mutable std::atomic<const WholePlan*> whole_{nullptr};
  mutable std::atomic<uint64_t> calls_{0};
  mutable std::atomic<bool> whole_claimed_{false};

  const GraphLayout* layout_ = nullptr;
  uint64_t epoch_ = 0;
  std::vector<Tensor> sample_feeds_;
  Signature sig_;
  uint64_t hash_ = 0;
  std::vector<Shape> shapes_;
  std::vector<DType> dtypes_;
  std::vector<PlanStep> steps_;
  std::vector<uint8_t> clone_output_;  ///< per graph output: constant or plan-time value
  size_t compiled_steps_ = 0;
  std::vector<size_t> bound_steps_;  ///< the kBound steps, bound at the start of each call
  size_t max_buffers_ = 0;
  int64_t arena_bytes_ = 0;
  int64_t peak_live_bytes_ = 0;
  size_t bytes_ = 0;
  size_t pool_cap_ = 8;
  mutable std::mutex pool_mu_;
  mutable std::vector<CallStatePtr> pool_;
  mutable std::atomic<bool> interpret_only_{false};
};

/// The plans of a Session by exact signature, least recently used evicted first once there are
/// more than max_plans or their bytes() exceed max_bytes (the newest plan always stays).
/// Thread-safe; find() allocates nothing.
class PlanCache {
 public:
  PlanCache(size_t max_plans, size_t max_bytes) : max_plans_(max_plans), max_bytes_(max_bytes) {}
  /// The plan of `sig` (marked most recently used), or null.
  std::shared_ptr<const Plan> find(const Signature& sig, uint64_t hash) const;
  /// Inserts `plan` unless its signature is cached already; returns the cached plan.
  std::shared_ptr<const Plan> insert(std::shared_ptr<const Plan> plan);
  /// Puts `plan` in the place of the cached plan of its signature (or inserts it).
  void replace(std::shared_ptr<const Plan> plan);
  size_t size() const;
  size_t bytes() const;
  uint64_t evictions() const;

 private:
  using List = std::list<std::shared_ptr<const Plan>>;
  size_t max_plans_, max_bytes_;
  mutable std::mutex mu_;
  mutable List lru_;  // front: most recently used
  std::unordered_multimap<uint64_t, List::iterator> index_;
  size_t bytes_ = 0;
  uint64_t evictions_ = 0;
};

}  // namespace tierjit::runtime
