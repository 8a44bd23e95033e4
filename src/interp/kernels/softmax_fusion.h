// Tier-0 fusion of an elementwise prologue into the Softmax reading it, as attention layers
// export it: BERT's Softmax(Add(Div(Q K^T, sqrt(d)), mask)) (PyTorch's
// nn.MultiheadAttention and Hugging Face's BertSelfAttention). Run node by node that is three
// kernel dispatches, two [N, heads, S, S] temporaries and three passes over the scores; fused,
// each row of the scores is scaled, masked and normalized while it is in the L1 cache. ONNX
// Runtime folds the same chain (its FusedMatMul takes the scale, its attention fusions the mask).
//
// The prologue is 1 to kMaxSoftmaxPrologue binary nodes (Add, Sub, Mul, Div), each reading the
// previous one's output (its only use) and any one other operand that broadcasts to the scores'
// shape without widening it: a scalar, a per-row value, a mask over the last axis, a full tensor.
// The fused kernel performs the nodes' float32 operations in their order on each element and
// then the Softmax kernel's row function (kernels::softmax_rows_f32) on the row, so results equal the
// kernels run one at a time bit for bit (NaN and infinities included).
// Source: ONNX Add-14, Sub-14, Mul-14, Div-14, Softmax-13 (and Softmax-1/11 over the last axis).
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "interp/kernel.h"
#include "ir/graph.h"

namespace tierjit::interp {

/// Longest prologue matched (BERT's is 2: Div, Add).
inline constexpr int kMaxSoftmaxPrologue = 4;

/// A matched chain: the binary prologue nodes in order, then the Softmax.
struct SoftmaxChain {
  std::vector<const ir::Node*> ops;  ///< 1..kMaxSoftmaxPrologue Add / Sub / Mul / Div nodes
  const ir::Node* softmax = nullptr;
};

/// The chain whose first prologue node is `first`, or nullopt. Requires: every prologue node a
/// two-input Add, Sub, Mul or Div; each node's output (the Softmax's input included) read only
/// by the next node, once, and not a graph output; the Softmax reading the last one as input 0.
/// Static only: dtypes, shapes and the Softmax axis are checked when it runs (run_softmax_chain).
std::optional<SoftmaxChain> match_softmax_chain(const ir::Node& first, const ir::Graph& g);

/// The tensors a chain reads, in order: the first node's two inputs (as the node lists them),
/// then the other operand of each later node. Their values, by ir::Value.
std::vector<const ir::Value*> softmax_chain_operands(const SoftmaxChain& c);

/// Runs the chain on `operands` (softmax_chain_operands order): y of the first node's full-shape
/// input's shape [..., R], float32. Returns nullopt, computing nothing, where the fused kernel
/// does not apply and the caller runs the nodes one by one (which also reports any error): a
/// dtype other than float32, an operand that would widen the shape (neither first input of the
/// full shape, a later operand of higher rank or a dim other than 1 or the scores'), a Softmax
/// axis other than the last, or no elements. Threads: `threads` OpenMP threads from ~8 us of
/// one-thread work (kernels::worth_parallel), chunks of ~2,048 elements shared by stealing.
std::optional<Tensor> run_softmax_chain(const SoftmaxChain& c, std::span<const Tensor* const> operands,
                                        int threads);

}  // namespace tierjit::interp
