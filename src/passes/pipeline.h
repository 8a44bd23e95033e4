// The pass pipeline: the order of graph passes, one line per pass in pipeline.cc with the reason
// it sits there. Passes are free functions `Status pass_name(ir::Graph&, const PassContext&)`.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "support/status.h"
#include "tierjit/tensor.h"

namespace tierjit::passes {

struct PassContext {
#ifdef NDEBUG
  bool verify_between_passes = false;  ///< run ir::verify after each pass (on in debug builds)
#else
  bool verify_between_passes = true;
#endif
  bool time_passes = false;  ///< log each pass's wall time (µs) at info level (also TIERJIT_LOG=debug)
  /// Print the graph (ir::print_graph) to stderr after the pass of this name ("all" = after
  /// every pass); empty = none. $TIERJIT_DUMP_AFTER sets it too.
  std::string dump_after;
  int64_t memory_limit_bytes = int64_t{16} << 30;  ///< largest tensor a pass may materialize
  /// Largest output (bytes) constant folding stores in the graph; a folded constant lives as long
  /// as the model, so results past this stay computed at run time (see constant_folding.h).
  int64_t max_folded_bytes = int64_t{64} << 20;
  /// Evaluates one node on concrete inputs (an omitted optional input is an undefined Tensor) and
  /// returns its outputs. Set by the runtime from the tier-0 kernels (interp::evaluate_node), since
  /// passes may not link the interpreter; when empty, constant folding does nothing.
  std::function<Expected<std::vector<Tensor>>(const ir::Node&, const std::vector<Tensor>&)> evaluate_node;
};

/// Passes run before tier-0 execution: shape inference (types and symbolic shapes for every
/// value), then canonicalization, constant folding, common-subexpression elimination and
/// dead-code elimination (docs/passes.md). Graph inputs and outputs keep their names and order.
/// Errors name the node whose shapes or types are inconsistent.
Status run_tier0_pipeline(ir::Graph& graph, const PassContext& ctx);

}  // namespace tierjit::passes
