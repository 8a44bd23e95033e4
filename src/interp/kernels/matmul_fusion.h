// Tier-0 fusion of a MatMul with the Add of a constant bias that follows it, as exporters emit
// nn.Linear on inputs of rank 3 and more (every projection of a BERT layer): y = A * B + bias runs
// as one oneDNN matmul with a bias argument instead of a product and a separate pass over y.
// oneDNN adds the bias to the float32 accumulator after the whole K sum, which is the Add's
// (float)(sum) + bias: results equal the two nodes' bit for bit (checked on bert_tiny and in
// tests/interp/matmul_fusion_test.cc). ONNX Runtime fuses the same pair (MatMulAddFusion).
// Source: ONNX MatMul-13, Add-14.
#pragma once

#include <optional>

#include "interp/kernel.h"
#include "ir/graph.h"

namespace tierjit::interp {

/// The Add node fused into MatMul node `matmul`, or nullopt. Requires: the MatMul's output has
/// exactly one user, an Add reading it once, and is not a graph output; the Add's other input is
/// a graph constant of float32 with every dim 1 but the last (rank >= 1). Static: dtypes of the
/// MatMul's operands and the bias' length against N are checked when it runs.
std::optional<const ir::Node*> matmul_bias_add_for(const ir::Node& matmul, const ir::Graph& g);

namespace nn {

/// Runs the MatMul node ctx.node() with `bias` added to every row of its output when A and B
/// are float32, K > 0, and bias has N elements with rank <= the output's (so the Add does not
/// widen the shape); returns whether it did. When false, nothing is written (the caller runs
/// the two nodes). Errors: as the MatMul kernel (mismatched inner dims, batch dims that do not
/// broadcast, oneDNN failures).
Expected<bool> run_matmul_with_bias(KernelContext& ctx, const Tensor& bias);

}  // namespace nn
}  // namespace tierjit::interp
