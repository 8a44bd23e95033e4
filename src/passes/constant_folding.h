// Constant folding pass: evaluates, once at load time, every node whose inputs are all constants
// (initializers or values folded before it) and turns its outputs into constant values. Runs after
// canonicalization (which has turned Constant nodes into constants) and before CSE/DCE (which
// clean up what folding leaves unused). Requires PassContext::evaluate_node (the runtime sets it
// from the tier-0 kernels); without it the pass does nothing.
#pragma once

#include "ir/graph.h"
#include "passes/pipeline.h"
#include "support/status.h"

namespace tierjit::passes {

/// Folds the top-level graph in topological order (subgraph bodies are not folded). A node is
/// folded when: its inputs are all constants (omitted optionals allowed); it is not a random op
/// (RandomNormal(Like), RandomUniform(Like), Bernoulli, Multinomial), holds no subgraph and is
/// not a sequence/optional op; and each output fits min(ctx.max_folded_bytes, default 64 MiB;
/// ctx.memory_limit_bytes) — checked from the static shape before evaluating when the shape is
/// fully known, and on the result otherwise. The outputs keep their Value (name, users, graph-
/// output slot); their types get the concrete shape. The folded node is removed.
/// A node whose evaluation fails is left in place (its error then surfaces at run time, the
/// behaviour of an unfolded model), so the pass itself never fails.
Status fold_constants(ir::Graph& graph, const PassContext& ctx);

}  // namespace tierjit::passes
