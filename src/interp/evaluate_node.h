// Runs one node's tier-0 kernel on concrete inputs, outside any graph execution: what constant
// folding (passes/constant_folding.h) evaluates through PassContext::evaluate_node, which the
// runtime sets to this function (passes may not link the interpreter).
#pragma once

#include <vector>

#include "interp/kernel.h"
#include "ir/graph.h"

namespace tierjit::interp {

/// Evaluates `node` with `inputs` (one per input slot; an undefined Tensor for an omitted optional
/// input) and returns its outputs (an undefined Tensor for an omitted output slot). Nodes holding
/// subgraphs are refused (kUnsupported: no frame to run them in). Errors: kUnsupported when tier 0
/// has no kernel for the op; otherwise the kernel's own error (bad input, memory limit of
/// `options`), prefixed with the node like every kernel error.
Expected<std::vector<Tensor>> evaluate_node(const ir::Node& node, const std::vector<Tensor>& inputs,
                                            const ExecOptions& options);

}  // namespace tierjit::interp
