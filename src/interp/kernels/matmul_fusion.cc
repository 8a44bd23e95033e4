// MatMul + constant bias Add at tier 0 (see matmul_fusion.h): matching on the graph, and the
// fused run through the MatMul kernel's float32 path with oneDNN's bias argument.
#include "interp/kernels/matmul_fusion.h"

#include <algorithm>

#include "interp/kernels/nn_kernels.h"

namespace tierjit::interp {

std::optional<const ir::Node*> matmul_bias_add_for(const ir::Node& matmul, const ir::Graph& g) {
  if (matmul.op() != ir::OpKind::MatMul || matmul.num_outputs() != 1 || matmul.num_inputs() != 2)
    return std::nullopt;
  const ir::Value* v = matmul.output(0);
  if (!v || v->users().size() != 1) return std::nullopt;
  const ir::Node* add = v->users()[0];
  if (add->op() != ir::OpKind::Add || add->num_inputs() != 2 || add->num_outputs() != 1)
    return std::nullopt;
  const ir::Value* bias = add->input(0) == v ? add->input(1) : add->input(0);
  if (!bias || bias == v || !bias->is_constant()) return std::nullopt;
  const Tensor& c = bias->constant();
  if (c.dtype() != DType::kFloat32 || c.rank() < 1) return std::nullopt;
  for (int64_t d = 0; d + 1 < static_cast<int64_t>(c.rank()); ++d)
    if (c.shape()[d] != 1) return std::nullopt;
  if (std::find(g.outputs().begin(), g.outputs().end(), v) != g.outputs().end())
    return std::nullopt;
  return add;
}

}  // namespace tierjit::interp
