// Convolution microkernels for compiled code (microkernels.def): the packing of
// a convolution's input into GEMM panels (im2col of 64 output pixels at a time,
// for gemm_panel_rows_f32 with the weights as its rows), and the depthwise
// convolution of one channel's output rows. Both are single-threaded; the
// generated code around them chooses the items, runs them in parallel and
// applies the bias and epilogue. Semantics: ONNX Conv (opset 1-22), 2-D, NCHW;
// taps in the padding read 0.
#pragma once

#include <cstdint>

namespace tierjit::kernels {

/// Packs rows [k0, k0 + kc) of the im2col matrix of one image's Cg = `c`
/// channels (x: [c, h, w] floats) for output pixels [pix0, pix0 + npix) (npix
/// <= width) into one GEMM panel of `width` = 64 or 16 columns
/// (`panel`: kc x 64 floats, 64-byte aligned, in gemm_pack_b_f32's layout on
/// this CPU; columns past npix are 0; with AVX-512F the 16 floats after the
/// panel may be written too: give the panel that room). Row k is (channel k /
/// (kh kw), tap row (k / kw) % kh, tap column k % kw): panel[k - k0][j] = x[ci,
/// oy * sh - ph + ky * dh, ox * sw - pw + kx * dw] for pixel pix0 + j = oy * ow
/// + ox, or 0 outside the image. All sizes >= 1 except pads >= 0.
void conv_pack_panel_f32(const float* x, float* panel, int64_t c, int64_t h, int64_t w, int64_t kh,
                         int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh,
                         int64_t dw, int64_t ow, int64_t pix0, int64_t npix, int64_t k0, int64_t kc,
                         int64_t width);

/// Depthwise convolution of one channel: y[(oy - oh0) * ldy + ox] = sum over
/// (ky, kx) in order of wt[ky * kw + kx] * x[oy * sh - ph + ky * dh, ox * sw -
/// pw + kx * dw] (taps in the padding skipped; fused multiply-adds inside the
/// image, separate ones at its edges) for output rows oh0 <= oy < oh1 and 0 <=
/// ox < ow; x: one channel [h, w]; no bias. 16 columns at a time in registers
/// with AVX-512F, else 8. `x_avail` (>= h * w): floats readable from x (to the end of the
/// input tensor): rows are copied in whole vectors where that stays inside it, by masked loads
/// where it would not. Rows of y are written in whole vectors: y needs room for
/// kDepthwiseRowSlack floats past its last row (oh1 - oh0 - 1) * ldy + ow.
inline constexpr int64_t kDepthwiseRowSlack = 64;
void depthwise_conv_rows_f32(const float* x, const float* wt, float* y, int64_t h, int64_t w,
                             int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                             int64_t dh, int64_t dw, int64_t ow, int64_t oh0, int64_t oh1,
                             int64_t ldy, int64_t x_avail);

/// Channels at once, one per vector lane: the depthwise convolution of `nc` channels (1 <= nc <=
/// depthwise_channel_block()), channel c's plane at x + c * h * w and its taps at wt + c * kh *
/// kw, into y[c * ldy + (oy - oh0) * ow + ox] for oh0 <= oy < oh1, 0 <= ox < ow: the same sums
/// as depthwise_conv_rows_f32 (taps in order, padding taps skipped; with finite weights every
/// tap is summed, a padded 0 adding exactly 0). Writes exactly those floats (no slack). For maps
/// narrower than a vector, where one channel's row fills few lanes. Single-threaded.
void depthwise_conv_cblock_f32(const float* x, const float* wt, float* y, int64_t nc, int64_t h,
                               int64_t w, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                               int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t ow,
                               int64_t oh0, int64_t oh1, int64_t ldy);
/// Direct convolution of one image and group: output channels [0, m) (weights `wt`: [m, c, kh,
/// kw], the group's rows of W) and output rows oh0 <= oy < oh1 of x (the group's `c` channels,
/// [c, h, w]) into y[j * ldy + (oy - oh0) * ow + ox] for output channel j; no bias. The rows an
/// item needs are copied once (every channel), then register tiles of output channels x vectors
/// of output pixels (AVX-512: 6 x 4 vectors of 16, else 6 x 2 of 8) sum every (channel, tap)
/// product; taps in the padding add weight x 0. With stride 1 and ow == w
/// (direct_conv_flat) the vectors run over the item's pixels back to back (column taps in the
/// padding masked), so every lane holds a pixel whatever the width; otherwise each output row
/// takes whole vectors. y's rows are written in whole vectors: each channel needs
/// kDirectConvSlack floats of room past (oh1 - oh0) * ow (ldy >= that). `x_avail` (>= c * h *
/// w): floats readable from x. Sizes >= 1 except pads >= 0. Single-threaded. Semantics: ONNX
/// Conv (opset 1-22), 2-D, NCHW.
inline constexpr int64_t kDirectConvSlack = 16;
void direct_conv_rows_f32(const float* x, const float* wt, float* y, int64_t c, int64_t h,
                          int64_t w, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                          int64_t pw, int64_t dh, int64_t dw, int64_t ow, int64_t oh0, int64_t oh1,
                          int64_t m, int64_t ldy, int64_t x_avail);
/// Depthwise convolution of `nc` channels with stride 1 and an output as wide as the input (ow
/// == w): channel c's plane at x + c * h * w, its taps at wt + c * kh * kw, output rows oh0 <= oy
/// < oh1 into y[c * ldy + (oy - oh0) * w + ox]. Vectors run over the pixels back to back (taps in
/// the horizontal padding masked, vertical padding as zero rows), so a map narrower than a vector
/// fills most lanes: 49 of 64 on 7 x 7. Same sums as depthwise_conv_rows_f32 with finite weights
/// (every tap summed, a padded 0 adding exactly 0); a channel with a non-finite weight sums only
/// the taps inside the image, like oneDNN (tier 0). Each channel's rows are written in whole
/// vectors: ldy >= (oh1 - oh0) * w + kDepthwiseFlatSlack. `x_avail` (>= nc * h * w): floats
/// readable from x. Sizes >= 1 except pads >= 0. Single-threaded.
inline constexpr int64_t kDepthwiseFlatSlack = 16;
void depthwise_conv_flat_f32(const float* x, const float* wt, float* y, int64_t nc, int64_t h,
                             int64_t w, int64_t kh, int64_t kw, int64_t ph, int64_t pw,
                             int64_t dh, int64_t dw, int64_t oh0, int64_t oh1, int64_t ldy,
                             int64_t x_avail);

/// Lanes per vector of direct_conv_rows_f32 (16 with AVX-512F, else 8).
int64_t direct_conv_lanes();
/// True when direct_conv_rows_f32 runs its vectors over the pixels back to back (stride 1, the
/// output as wide as the input); otherwise each output row takes ceil(ow / lanes) vectors.
bool direct_conv_flat(int64_t sh, int64_t sw, int64_t w, int64_t ow);

/// Channels per depthwise_conv_cblock_f32 call: the vector's lanes (16 with AVX-512F, else 8).
int64_t depthwise_channel_block();

}  // namespace tierjit::kernels
