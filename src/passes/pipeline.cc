// Pass order, one line per pass with why it sits there.
#include "passes/pipeline.h"

#include "passes/canonicalize.h"
#include "passes/common_subexpression_elimination.h"
#include "passes/constant_folding.h"
#include "passes/dead_code_elimination.h"
#include "passes/shape_inference.h"

namespace tierjit::passes {

Status run_tier0_pipeline(ir::Graph& graph, const PassContext& ctx) {
  // First: every later pass, the partitioner and the Plan read value types and symbolic shapes.
  TJ_RETURN_IF_ERROR(infer_shapes(graph, ctx));
  // Before folding: Constant nodes become constants (so folding sees them) and pass-through
  // nodes (Identity, inference Dropout, no-op Cast) disappear; it needs the inferred dtypes.
  TJ_RETURN_IF_ERROR(canonicalize(graph, ctx));
  // After canonicalize: folds initializer-only subgraphs through the tier-0 kernels.
  TJ_RETURN_IF_ERROR(fold_constants(graph, ctx));
  // After folding: folded constants that came out equal merge too, then repeated shape
  // arithmetic (exporters emit Shape/Gather/Unsqueeze per layer) collapses to one copy.
  TJ_RETURN_IF_ERROR(eliminate_common_subexpressions(graph, ctx));
  // Last: removes what the passes above left unused (folded producers, merged duplicates).
  TJ_RETURN_IF_ERROR(eliminate_dead_code(graph, ctx));
  return Status();
}

}  // namespace tierjit::passes
