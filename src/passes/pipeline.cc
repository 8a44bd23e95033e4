// Pass order, one line per pass with why it sits there.
#include "passes/pipeline.h"

#include "passes/shape_inference.h"

namespace tierjit::passes {

Status run_tier0_pipeline(ir::Graph& graph, const PassContext& ctx) {
  // First: every later pass, the partitioner and the Plan read value types and symbolic shapes.
  TJ_RETURN_IF_ERROR(infer_shapes(graph, ctx));
  return Status();
}

}  // namespace tierjit::passes
