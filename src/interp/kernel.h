// The tier-0 kernel interface: every reference kernel is a free function
// `Status kernel(KernelContext&)` registered for one OpKind (registry.h). A kernel reads its
// inputs, checks them (bad input -> Status naming the node and input, never a crash), computes
// output shapes from the concrete input shapes, allocates outputs through the context (which
// enforces the memory limit) and fills them. Shape-generic; numerics follow the ONNX spec of the
// node's opset (node().opset()).
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "ir/graph.h"
#include "support/status.h"
#include "tierjit/tensor.h"

namespace tierjit::interp {

/// Options every kernel may consult.
struct ExecOptions {
  int intra_op_threads = 1;                        ///< OpenMP threads for one kernel
  int64_t memory_limit_bytes = int64_t{16} << 30;  ///< largest single tensor (bytes)
  /// Largest total of the values run_graph / GraphRunner hold computed and not yet freed, per
  /// graph (bytes; 0 = no limit): kResourceExhausted after the node that passes it. Views (e.g.
  /// Reshape's output) count as their own bytes, so the total is an upper bound.
  int64_t arena_limit_bytes = 0;
  /// Set by interp::under_current_load once it has lowered intra_op_threads for the machine's
  /// current load: run_nodes and run_graph then take the options as they are (a Plan decides
  /// once per call instead of once per region; each decision reads the clock).
  bool load_applied = false;
  /// Set for a Session's warm-up run (SessionOptions::warm_up: zeros, symbolic dims 1, outputs
  /// dropped): kernels may skip work made only for dims that requests will not have, giving
  /// outputs of the right shape and any values. A Conv whose input's spatial dims the graph
  /// leaves symbolic writes zeros instead of creating oneDNN primitives for 1x1 images (resnet18's
  /// warm-up made 20 of them: session creation +19 ms for 14 ms off the first 224x224 call).
  bool warm_up = false;
};

/// Runs a subgraph (If/Loop/Scan body) with the given inputs; outer-scope reads of the subgraph
/// resolve against the calling frame. Returns the subgraph's outputs in order.
using SubgraphRunner =
    std::function<Expected<std::vector<Tensor>>(const ir::Graph&, std::vector<Tensor>)>;

class KernelContext {
 public:
  KernelContext(const ir::Node& node, std::span<const Tensor* const> inputs,
                std::vector<Tensor>& outputs, const ExecOptions& options,
                const SubgraphRunner* run_subgraph)
      : node_(node), inputs_(inputs), outputs_(outputs), options_(options),
        run_subgraph_(run_subgraph) {}

  const ir::Node& node() const { return node_; }
  const ExecOptions& options() const { return options_; }

  /// Number of input slots (including omitted optional ones at the end).
  size_t num_inputs() const { return inputs_.size(); }
  /// Input i, or nullptr if omitted or past the end.
  const Tensor* input(size_t i) const {
    return i < inputs_.size() && inputs_[i] && inputs_[i]->defined() ? inputs_[i] : nullptr;
  }
  /// Input i; a Status "input i is required" if absent.
  Expected<const Tensor*> required_input(size_t i) const;
  /// Number of output slots the node declares.
  size_t num_outputs() const { return outputs_.size(); }
  /// True if output i is consumed (present in the node); kernels may skip optional outputs.
  bool wants_output(size_t i) const { return i < outputs_.size() && node_.output(i) != nullptr; }

  /// Allocates output i (uninitialized) after checking its size against the memory limit.
  /// If the executor preset output i to a tensor of this dtype and shape (an activation run in
  /// place on a Conv's output, executor.cc), returns that tensor instead.
  Expected<Tensor*> output(size_t i, DType dtype, Shape shape);
  /// Sets output i to an existing tensor (e.g. a view of an input: Reshape, Identity).
  void set_output(size_t i, Tensor t) { outputs_[i] = std::move(t); }

  /// Checks that a tensor of `shape` x `dtype` fits the memory limit.
  Status check_size(DType dtype, const Shape& shape) const;

  /// Error "node 'n' (Op): <message>" with code kInvalidArgument.
  template <class... Args>
  Status fail(fmt::format_string<Args...> f, Args&&... args) const {
    return invalid_argument("{}: {}", node_.describe(), fmt::format(f, std::forward<Args>(args)...));
  }
  /// Error with code kUnsupported, same format.
  template <class... Args>
  Status unsupported_here(fmt::format_string<Args...> f, Args&&... args) const {
    return unsupported("{}: {}", node_.describe(), fmt::format(f, std::forward<Args>(args)...));
  }

  /// Runs a subgraph attribute; only control-flow kernels use it.
  Expected<std::vector<Tensor>> run_subgraph(const ir::Graph& g, std::vector<Tensor> inputs) const;

 private:
  const ir::Node& node_;
  std::span<const Tensor* const> inputs_;
  std::vector<Tensor>& outputs_;
  const ExecOptions& options_;
  const SubgraphRunner* run_subgraph_;
};

using KernelFn = Status (*)(KernelContext&);

}  // namespace tierjit::interp
