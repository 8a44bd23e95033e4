// Tier-0 fusion of an Add with the LayerNormalization reading it (a transformer's residual
// "Add & Norm", and BERT's embedding sum): each row of X + residual is summed into the output and
// normalized in place, one pass fewer over the activations and one temporary fewer. The sums
// are the Add kernel's float additions and the normalization reads the same values, so the
// result equals the two kernels' bit for bit. ONNX Runtime fuses the same pair
// (SkipLayerNormalization). Source: ONNX Add-14, LayerNormalization-17.
#pragma once

#include <optional>

#include "interp/kernel.h"
#include "ir/graph.h"

namespace tierjit::interp {

/// The LayerNormalization node fused with Add node `add`, or nullopt. Requires: the Add's output
/// has exactly one user, a LayerNormalization reading it as X (input 0) only, and is not a graph
/// output; the LayerNormalization has one output (no Mean / InvStdDev). Static: dtypes and
/// shapes are checked when it runs (run_add_layer_norm).
std::optional<const ir::Node*> layer_norm_after_add(const ir::Node& add, const ir::Graph& g);

/// Runs LayerNormalization node ctx.node() on X = a + b, where ctx's input 0 is the Add operand
/// `a` of the full shape and `b` the other operand, when both are float32 and b repeats over a:
/// b's shape (without leading 1s) is a trailing part of a's and its element count is a multiple
/// of the normalized row length. Returns whether it ran; when false nothing is written (the
/// caller runs the two nodes). Errors: as the LayerNormalization kernel.
Expected<bool> run_add_layer_norm(KernelContext& ctx, const Tensor& b);

}  // namespace tierjit::interp
