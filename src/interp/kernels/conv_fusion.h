// Tier-0 Conv + activation fusion: which activation nodes may run inside the Conv that feeds
// them, and the Conv entry point that applies one as a oneDNN post-op. The executor
// (interp/executor.cc) finds the pairs; results equal the unfused kernels bit for bit.
#pragma once

#include <optional>

#include "interp/kernel.h"
#include "interp/kernels/dnnl_util.h"

namespace tierjit::interp {

/// How an activation node fuses with the Conv producing its input 0.
/// kPostOp: oneDNN applies `post` while storing the convolution (one pass over the output).
/// kInPlace: the activation's own tier-0 kernel runs right after the Conv, writing into the
///   Conv's output buffer (no second tensor; used where oneDNN's version of the activation
///   differs from tier 0's: Clip keeps NaN at tier 0 but oneDNN's clip maps it to min, and a
///   zero's sign may differ when a bound is 0; oneDNN's logistic and tanh use other
///   approximations and do not keep NaN), and where the post-op is not applied (1x1 kernels,
///   dtypes other than float32). Here a Clip always runs in place; inside tier 0's conv chains
///   it runs as the clip post-op on calls that prove it exact (conv_chain_bounds.h: finite
///   inputs, bounded |W| sums, biases without a zero entry, so no NaN and no -0 reach it; the
///   same oneDNN kernel with and without the post-op): mobilenet_v2 at 2 threads p50 1x 4.62 ->
///   4.30 ms, 8x 52.9 -> 48.4 ms (busy machine, docs/performance.md; the post-op makes the
///   depthwise layers 1-12 us slower, the 35 separate passes cost more).
struct ConvFusion {
  enum class Mode { kPostOp, kInPlace };
  Mode mode = Mode::kInPlace;
  nn::ConvPostOp post;
};

/// The fusion of activation node `act` into a preceding Conv, or nullopt if it has none.
/// Fusible (ONNX opsets <= 17): Relu (post-op clip [0, +inf]); LeakyRelu with alpha > 0
/// (post-op; alpha <= 0 or NaN in place); Clip (any opset, min/max absent or constants; in
/// place); Sigmoid and Tanh (in place). Every input but input 0 must be absent or a constant.
/// Static: the Conv's dtype and path are checked when it runs (run_conv_with_post_op).
std::optional<ConvFusion> conv_fusion_for(const ir::Node& act);

namespace nn {

/// Runs the Conv node ctx.node() (as its tier-0 kernel does) with `post` applied to the output
/// when the convolution runs on oneDNN with float32 data and a kernel that fuses post-ops
/// (nn::dnnl_conv_fuses_post_ops: not 1x1); returns whether `post` was applied.
/// When false, output 0 holds the plain convolution and the caller runs the activation.
/// Errors: as the Conv kernel.
Expected<bool> run_conv_with_post_op(KernelContext& ctx, const ConvPostOp& post);

/// The geometry of the Conv node ctx.node() for an X of plain shape `x`, with W and B read from
/// ctx.input(1) / ctx.input(2), checked as the Conv kernel checks them; float32 W and B and a
/// convolution that runs on oneDNN (spatial rank 1-3, no zero-sized dim) only (tier 0's conv
/// chains, conv_chain.h). Errors: the Conv kernel's, or kUnsupported for other cases.
Expected<ConvGeometry> conv_chain_geometry(const KernelContext& ctx, const Shape& x);

}  // namespace nn
}  // namespace tierjit::interp
