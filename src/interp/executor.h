// Tier-0 executor: runs a Graph node by node with the plain kernels of the op registry, each
// node through its own kernel, one at a time (fusion is the compiled tiers' job: DESIGN.md,
// "Tier"). Frees each intermediate after its last use. Subgraphs (If/Loop/Scan bodies) run
// through the same function with the calling frame as parent, so their outer-scope reads resolve.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

#include "interp/kernel.h"
#include "ir/graph.h"

namespace tierjit::interp {

/// Values of one running graph, indexed by Value::id(); parent is the frame of the enclosing
/// graph (for captures), nullptr at the top level.
struct Frame {
  const ir::Graph* graph = nullptr;
  std::vector<Tensor> values;
  const Frame* parent = nullptr;
  /// run_nodes' scratch (a kernel's input pointers and output slots), kept with the frame so the
  /// calls of a reused frame (a Plan's pooled call state) allocate nothing for them. Between
  /// nodes out_scratch holds only undefined tensors.
  std::vector<const Tensor*> in_scratch;
  std::vector<Tensor> out_scratch;
};

/// Checks that tier 0 has a kernel for every node of `graph` and its subgraphs.
/// Error (kUnsupported): "node 'n' (Op): no tier-0 kernel".
Status check_kernels(const ir::Graph& graph);

/// Checks feeds against the graph's declared inputs: count, dtype, rank and constant dims.
/// `feeds[i]` belongs to graph.feed_inputs()[i]. Error (kInvalidArgument) names the input and
/// what is wrong, e.g. "input 'x': expected dtype float32, got int64".
Status validate_feeds(const ir::Graph& graph, const std::vector<Tensor>& feeds);

/// Sizes `frame` for the top-level `graph` (frame.graph = &graph, no parent) and binds its
/// constants; every other value is undefined.
void init_frame(Frame& frame, const ir::Graph& graph);

/// `options` with intra_op_threads lowered to 1 unless that many threads can run now without
/// displacing other processes or this one's background compiles (support::spare_cores_for):
/// a team whose second thread waits for a core held by another process makes a kernel up to
/// 4x slower than one thread. run_nodes and run_graph apply it on entry, so every tier-0
/// kernel (elementwise, reductions, pooling, oneDNN calls) sees the thread count it may use.
/// The result has load_applied set; options that have it already are returned unchanged (a
/// caller running many node lists in one call, e.g. Plan::run, decides once).
ExecOptions under_current_load(const ExecOptions& options);

/// Runs `nodes` (nodes of frame.graph's top level, in topological order; e.g. one Region's) on
/// `frame`: each node reads its inputs from frame.values (set by the caller or an earlier node)
/// and stores its outputs there. Frees nothing: the caller releases values it no longer needs.
/// Subgraph bodies run with `frame` as their parent. Errors carry the failing node's description.
Status run_nodes(std::span<const ir::Node* const> nodes, Frame& frame, const ExecOptions& options);

/// Test hook: when set, called with each node whose kernel run_nodes / run_graph / GraphRunner
/// ran successfully, right after it ran (tests count the kernels tier 0 runs per node). Set it
/// only while no interpreter call is running; nullptr turns it off.
using KernelObserver = void (*)(const ir::Node& node);
void set_kernel_observer_for_testing(KernelObserver observer);

/// Runs `graph`. `inputs` are for graph.inputs() that are not constants (feed_inputs order).
/// Returns graph.outputs() in order. Errors carry the failing node's description.
Expected<std::vector<Tensor>> run_graph(const ir::Graph& graph, std::vector<Tensor> inputs,
                                        const ExecOptions& options, const Frame* parent = nullptr);

/// run_graph for calling one top-level graph (no parent, no captures) many times, e.g. a
/// Session's interpret-only mode: what run_graph works out per call (each value's last use) is
/// found once here, and each call takes a frame with the constants already bound from
/// a small pool (a new one when all are busy; at most `pool_cap` kept). Same results and errors
/// as run_graph. Thread-safe: concurrent calls use different frames. `graph` must outlive it and
/// not change.
class GraphRunner {
 public:
  explicit GraphRunner(const ir::Graph& graph, size_t pool_cap = 8);
  ~GraphRunner();
  GraphRunner(const GraphRunner&) = delete;
  GraphRunner& operator=(const GraphRunner&) = delete;
  /// run_graph(graph, inputs, options).
  Expected<std::vector<Tensor>> run(std::vector<Tensor> inputs, const ExecOptions& options) const;

 private:
  struct Prepared;
  const ir::Graph* graph_;
  std::unique_ptr<Prepared> prep_;
  std::vector<uint32_t> dynamic_ids_;  ///< every non-constant value, reset after a call
  size_t pool_cap_;
  mutable std::mutex mu_;
  mutable std::vector<std::unique_ptr<Frame>> pool_;
};

}  // namespace tierjit::interp
