// Tier 0's own direct convolution for the conv chains' blocked layout (nChw8c,
// ActLayout::kBlocked8) on AVX2 CPUs, for few channels: float32 2-D Conv, stride 1, dilation
// 1, group 1, at most kDirectConvMaxInChannels input and kDirectConvMaxOutChannels output
// channels (convnet_small's 1 -> 16 and 16 -> 32 3x3 layers). There oneDNN's AVX2 direct
// kernel is fast, but its driver calls the generated kernel once per output row and block
// group, zeroing a 528-byte argument struct each time (`rep stos`, 4% of convnet_small's
// samples; the driver 13% in all) and convnet_small ran 1.25-1.35x ONNX Runtime's time per call
// at every batch size. Output pixels are taken 6 at a time in row-major order (a tile may cross
// rows: each pixel has its own input pointer into a zero-padded copy of the image), 16 output
// channels per tile (12 accumulators of the 16 registers, 8 loads per 12 fused multiply-adds).
// Semantics: ONNX Conv (opset 1-22), with the activation of ConvPostOp (kNone, kClip) applied as
// dnnl_conv_f32 does; sums run in order of (input channel block, kh, kw, channel within the
// block), so results may differ from oneDNN's in the last bits.
#pragma once

#include <cstdint>

#include "interp/kernels/dnnl_util.h"
#include "tierjit/tensor.h"

namespace tierjit::interp::nn {

inline constexpr int64_t kDirectConvMaxInChannels = 16;
inline constexpr int64_t kDirectConvMaxOutChannels = 64;

/// Whether direct_conv_f32 computes `g` reading x in `x_layout` and writing y in `y_layout`
/// with `post`: a 2-D convolution (4-D tensors), group 1, strides and dilations 1, y_layout
/// kBlocked8 with out_channels a multiple of 8 (<= kDirectConvMaxOutChannels), x either
/// kBlocked8 with in_channels a multiple of 8 or kPlain (any count), 1 <= in_channels <=
/// kDirectConvMaxInChannels, input and output spatial dims >= 1, post.kind kNone or kClip without sum, and a CPU without AVX-512F
/// (where the chains run channels-last; conv_chain.h) and set_direct_conv_enabled(true).
bool direct_conv_supports(const ConvGeometry& g, ActLayout x_layout, ActLayout y_layout,
                          const ConvPostOp& post);

/// y = post(conv(x, w) + bias) (bias [out_channels] or null), x [N, C, H, W] as x_layout, w
/// ONNX's [O, C, KH, KW] plain (packed on the first call and cached while `constant_w`, the
/// weight tensor, is alive; packed per call when constant_w is null), y [N, O, OH, OW] as
/// kBlocked8. Runs on up to `threads` threads (images, then 16-channel groups and pixels). Requires
/// direct_conv_supports(g, x_layout, ActLayout::kBlocked8, post); batch 0 writes nothing. Never
/// fails.
void direct_conv_f32(const ConvGeometry& g, const float* x, ActLayout x_layout, const float* w,
                     const Tensor* constant_w, const float* bias, float* y, int threads,
                     const ConvPostOp& post);

/// Process-wide switch (default on): tests run the chains on oneDNN's convolution to compare.
void set_direct_conv_enabled(bool enabled);
bool direct_conv_enabled();
/// Convolutions direct_conv_f32 has run in this process (tests check the routing).
uint64_t direct_conv_runs();

}  // namespace tierjit::interp::nn
