// Canonicalization pass: rewrites a graph into the plain form the later passes and the
// partitioner expect. Runs right after shape inference (it reads value types). Changes only the
// top-level graph (subgraph bodies are left as the model wrote them). Graph inputs and outputs
// keep their names and order: a node whose output is a graph output is never bypassed.
#pragma once

#include "ir/graph.h"
#include "passes/pipeline.h"
#include "support/status.h"

namespace tierjit::passes {

/// Rewrites, in node order:
///  * Constant nodes (ONNX Constant, opsets 1..13: attributes value, value_float(s), value_int(s),
///    value_string(s)) become constant values (initializers): the output value keeps its name and
///    type and the node is removed. sparse_value is left to constant folding.
///  * Identity(x) -> y: the uses of y read x directly and the node is removed.
///  * Dropout in inference (opset < 12; from opset 12 with training_mode omitted or a constant
///    false, or ratio a constant 0) whose mask output is unused: like Identity.
///  * Cast whose input already has the target dtype: like Identity.
/// A bypass is skipped when y is a graph output (its name must stay). Never fails.
Status canonicalize(ir::Graph& graph, const PassContext& ctx);

}  // namespace tierjit::passes
