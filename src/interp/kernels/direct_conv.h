// Tier 0's own direct convolution for the conv chains' blocked layout (nChw8c,
// ActLayout::kBlocked8) on AVX2 CPUs: float32 2-D Conv, group 1, any stride and dilation.
// Written first for few channels (convnet_small's 1 -> 16 and 16 -> 32 3x3 layers), where
// oneDNN's AVX2 direct kernel is fast but its driver calls the generated kernel once per output
// row and block group, zeroing a 528-byte argument struct each time (13% of convnet_small's
// samples; 1.25-1.35x ONNX Runtime's time per call); then widened to the 3x3 layers of 64-512
// channels (resnet18), where oneDNN ran 58-75 GFLOP/s on one core and its batch-1 calls were
// 1.2-1.45x ONNX Runtime's. Output pixels are taken 6 at a time in row-major order (a tile may
// cross rows: each pixel has its own input pointer into a zero-padded copy of the image), 16
// output channels per tile (12 accumulators of the 16 registers, 8 loads per 12 fused
// multiply-adds); the input channels are summed a chunk at a time (partial sums in a per-thread
// buffer) so that a chunk's weights stay in L1 across the tiles of a work item.
// Semantics: ONNX Conv (opset 1-22), with ConvPostOp (kNone, kClip; sum) applied as dnnl_conv_f32
// and dnnl_conv_f32_accumulate do; sums run in order of (input channel block, kh, kw, channel
// within the block) from the bias, so results may differ from oneDNN's in the last bits, and
// are the same with a post-op as without it.
#pragma once

#include <cstdint>

#include "interp/kernels/dnnl_util.h"
#include "tierjit/tensor.h"

namespace tierjit::interp::nn {

/// Input channels up to which plain inputs and 1x1 kernels are taken (beyond, oneDNN's kernels
/// were as fast: direct_conv_supports).
inline constexpr int64_t kDirectConvMaxFewChannels = 16;

/// Whether direct_conv_f32 computes `g` reading x in `x_layout` and writing y in `y_layout`
/// with `post`: a 2-D convolution (4-D tensors), group 1, y_layout kBlocked8 with out_channels
/// a multiple of 8, every output position's taps inside the padded input (ONNX's floor
/// rounding), post.kind kNone or kClip (post.sum allowed), a CPU without AVX-512F (where the
/// chains run channels-last; conv_chain.h), set_direct_conv_enabled(true), and x either
/// kBlocked8 (in_channels a multiple of 8; a 1x1 kernel only up to kDirectConvMaxFewChannels)
/// or kPlain with 1 <= in_channels <= kDirectConvMaxFewChannels, strides and dilations 1.
bool direct_conv_supports(const ConvGeometry& g, ActLayout x_layout, ActLayout y_layout,
                          const ConvPostOp& post);

/// A max pool the convolution's output goes through before it is stored (direct_conv_f32):
/// windows of kh x kw at strides kh x kw, no padding, dilation 1, floor-sized (ONNX MaxPool,
/// opset 1-22, ceil_mode 0 or windows that fit either way): output [N, O, OH / kh, OW / kw].
/// Output rows past the last whole window are not computed (the pool never reads them).
struct MaxPoolAfter {
  int64_t kh = 1, kw = 1;
};

/// y = post(conv(x, w) + bias) (bias [out_channels] or null), x [N, C, H, W] as x_layout, w
/// ONNX's [O, C, KH, KW] plain (packed on the first call and cached while `constant_w`, the
/// weight tensor, is alive; packed per call when constant_w is null), y [N, O, OH, OW] as
/// kBlocked8; with post.sum, y = post(conv(x, w) + bias + y) (the finished convolution plus y's
/// prior contents in one float32 addition, as tier 0's Add; x must not share y's storage).
/// With `pool` (post.sum false; nothing written when OH < kh or OW < kw):
/// y = MaxPool(post(conv(x, w) + bias)), [N, O, OH / kh, OW / kw] as kBlocked8, equal bit for
/// bit to tier 0's MaxPool on the
/// unpooled y (the same taps folded in the same order, NaN propagated); the convolution's values
/// pass through a per-thread buffer of a few pooled rows (L1-sized), never memory.
/// Runs on up to `threads` threads (whole images when they share evenly, else 16-channel groups
/// and pixel ranges). Requires direct_conv_supports(g, x_layout, ActLayout::kBlocked8, post);
/// batch 0 writes nothing. Never fails.
void direct_conv_f32(const ConvGeometry& g, const float* x, ActLayout x_layout, const float* w,
                     const Tensor* constant_w, const float* bias, float* y, int threads,
                     const ConvPostOp& post, const MaxPoolAfter* pool = nullptr);

/// Process-wide switch (default on): tests run the chains on oneDNN's convolution to compare.
void set_direct_conv_enabled(bool enabled);
bool direct_conv_enabled();
/// Convolutions direct_conv_f32 has run in this process, and those of them with a max pool after
/// (tests check the routing).
uint64_t direct_conv_runs();
uint64_t direct_conv_pool_runs();

}  // namespace tierjit::interp::nn
