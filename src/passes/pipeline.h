// The pass pipeline: the order of graph passes, one line per pass in pipeline.cc with the reason
// it sits there. Passes are free functions `Status pass_name(ir::Graph&, const PassContext&)`.
#pragma once

#include "ir/graph.h"
#include "support/status.h"

namespace tierjit::passes {

struct PassContext {
  bool verify_between_passes = false;  ///< run the IR verifier after each pass (debug)
  bool time_passes = false;            ///< log each pass's wall time at info level
  int64_t memory_limit_bytes = int64_t{16} << 30;  ///< largest tensor a pass may materialize
};

/// Passes run before tier-0 execution: shape inference (types and symbolic shapes for every
/// value). Errors name the node whose shapes or types are inconsistent.
Status run_tier0_pipeline(ir::Graph& graph, const PassContext& ctx);

}  // namespace tierjit::passes
