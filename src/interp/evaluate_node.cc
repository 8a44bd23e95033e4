// One node's tier-0 kernel on concrete inputs (constant folding's evaluator; evaluate_node.h).
#include "interp/evaluate_node.h"

#include "interp/registry.h"

namespace tierjit::interp {

Expected<std::vector<Tensor>> evaluate_node(const ir::Node& node, const std::vector<Tensor>& inputs,
                                            const ExecOptions& options) {
  KernelFn fn = KernelRegistry::global().find(node.op());
  if (!fn) return unsupported("{}: no tier-0 kernel", node.describe());
  for (const auto& [name, a] : node.attributes())
    if (a.g || !a.graphs.empty())
      return unsupported("{}: nodes with subgraphs are not evaluated alone", node.describe());
  std::vector<const Tensor*> in_ptrs;
  in_ptrs.reserve(node.num_inputs());
  for (size_t i = 0; i < node.num_inputs(); ++i)
    in_ptrs.push_back(i < inputs.size() && inputs[i].defined() ? &inputs[i] : nullptr);
  std::vector<Tensor> outs(node.num_outputs());
  KernelContext ctx(node, in_ptrs, outs, options, nullptr);
  TJ_RETURN_IF_ERROR(fn(ctx));
  for (size_t i = 0; i < node.num_outputs(); ++i)
    if (node.output(i) && !outs[i].defined())
      return internal_error("{}: kernel produced no output {}", node.describe(), i);
  return outs;
}

}  // namespace tierjit::interp
