// Common-subexpression elimination: merges nodes that compute the same thing (same op, domain,
// opset, attributes and input values) and equal small constants, so shape arithmetic that an
// exporter repeats per layer (Shape -> Gather -> Unsqueeze, repeated Constant [0]) is computed
// once. Runs after constant folding (so folded constants merge too) and before DCE.
#pragma once

#include "ir/graph.h"
#include "passes/pipeline.h"
#include "support/status.h"

namespace tierjit::passes {

/// On the top-level graph:
///  1. Constant values that are not graph inputs or outputs, have the same dtype, shape and
///     contents and are at most 64 KiB each are merged into the first one (users are rewired).
///  2. Nodes, in topological order: a node equal to an earlier one (op, domain, opset, the same
///     input Values position by position, equal attributes, the same output slots present) has
///     its outputs' uses rewired to the earlier node's outputs and is removed.
/// Never merged: random ops, nodes holding subgraphs, nodes with an output that is a graph output
/// (graph outputs keep their names). Never fails.
Status eliminate_common_subexpressions(ir::Graph& graph, const PassContext& ctx);

}  // namespace tierjit::passes
