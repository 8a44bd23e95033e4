// Dead-code elimination: removes nodes none of whose outputs reach a graph output, and releases
// constants nothing reads any more. Last cleanup pass of the pipeline (after canonicalization,
// folding and CSE have bypassed or merged nodes).
#pragma once

#include "ir/graph.h"
#include "passes/pipeline.h"
#include "support/status.h"

namespace tierjit::passes {

/// On the top-level graph: a node is live when one of its outputs is a graph output or is read by
/// a live node — as an input or through a capture of one of the live node's subgraphs. Every
/// other node is removed (nodes holding subgraphs included: ONNX ops have no side effects).
/// Constant values that are neither graph inputs nor graph outputs and that no remaining node
/// reads or captures are cleared (their memory is released). Never fails.
Status eliminate_dead_code(ir::Graph& graph, const PassContext& ctx);

}  // namespace tierjit::passes
