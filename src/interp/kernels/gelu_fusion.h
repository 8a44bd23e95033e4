// Tier-0 fusion of the erf-form GELU chain as PyTorch exports nn.GELU() (mlp, BERT feed-forward
// layers): Div(x, c1) -> Erf -> Add(c2) -> Mul(x) -> Mul(c3), i.e. y = (x * (erf(x / c1) + c2)) * c3
// with c1 = sqrt(2), c2 = 1, c3 = 0.5 in practice (any float32 scalar constants are accepted).
// Run node by node the chain costs five kernel dispatches, four temporaries and five passes
// over the data; fused, one pass in blocks. The executor (interp/executor.cc) finds chains; the
// fused kernel performs the same float32 operations in the same order, so results equal the five
// kernels' bit for bit (NaN and infinities included). Source: ONNX Div-14, Erf-13, Add-14, Mul-14.
#pragma once

#include <optional>

#include "interp/kernel.h"
#include "ir/graph.h"

namespace tierjit::interp {

/// A matched chain: its five nodes in order and the three constants.
struct GeluChain {
  const ir::Node* div = nullptr;
  const ir::Node* erf = nullptr;
  const ir::Node* add = nullptr;
  const ir::Node* mul = nullptr;    ///< x * (erf(...) + c2), x on either side
  const ir::Node* scale = nullptr;  ///< (...) * c3, the constant on either side
  float c1 = 0, c2 = 0, c3 = 0;
};

/// The chain starting at Div node `div`, or nullopt. Requires: float32 throughout (types as
/// inferred); c1, c2, c3 graph constants of one float32 element and rank <= 1; every
/// intermediate value (Div, Erf, Add, Mul outputs) with exactly that one user and not a graph
/// output; the Mul reading the Div's x. Shapes are checked when it runs (run_gelu_chain).
std::optional<GeluChain> match_gelu_chain(const ir::Node& div, const ir::Graph& g);

/// y = (x * (erf(x / c1) + c2)) * c3 elementwise for float32 x of any shape (size 0 included),
/// y a new tensor of x's shape. The constants broadcast to x's shape (rank <= 1, one element;
/// for a rank-0 x a rank-1 constant would change the shape, so the caller runs the nodes then).
/// Threads: `threads` OpenMP threads from ~8 us of one-thread work (kernels::worth_parallel, about 8K
/// elements on AVX2), blocks of 1,024 elements shared by stealing (parallel_for.h).
Tensor run_gelu_chain(const GeluChain& c, const Tensor& x, int threads);

}  // namespace tierjit::interp
