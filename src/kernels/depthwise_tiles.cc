// depthwise_conv_rows_f32 (conv_tiles.h): the input rows an item needs are copied once,
// zero-padded and split by the stride into phases (so every tap reads a contiguous run), then
// each output row is summed 1-4 vectors of columns at a time in registers over every tap. One
// template over the vector's lanes, instantiated for AVX-512 (16) and AVX2 (8) (vec_lanes.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/conv_tiles.h"
#include "kernels/cpu_features.h"
#include "kernels/phase_rows.h"
#include "kernels/vec_lanes.h"

namespace tierjit::kernels {

namespace {

// Output rows [oh0, oh1) of one channel from its phase rows (row 0 = input row oh0 sh - ph), NV
// vectors of L columns at a time. The taps of the rows inside the image are one flat run (tap t
// at a fixed offset from the output row's base), summed into independent chains so that the
// fused multiply-adds do not wait on each other: 4 chains of one vector, 2 of two.
template <int L, int NV>
inline __attribute__((always_inline)) void depthwise_rows(const PhaseRows& p, const float* wt,
                                                          float* y, int64_t h, int64_t kh,
                                                          int64_t kw, int64_t sh, int64_t ph,
                                                          int64_t dh, int64_t dw, int64_t ow,
                                                          int64_t oh0, int64_t oh1, int64_t ldy) {
  constexpr int64_t kStep = L * NV;
  constexpr int kChains = NV == 1 ? 4 : NV == 2 ? 2 : 1;
  const int64_t sw = p.sw;
  // Tap (ky, kx) reads phase row ky dh (of the output row's first input row), phase (kx dw) % sw,
  // column (kx dw) / sw: an offset computed once per call, not per row, and stepped per column
  // tap without a division (on an 8 x 8 map the divisions took longer than the taps' sums).
  thread_local std::vector<int64_t> off;
  off.resize(static_cast<size_t>(kh * kw));
  for (int64_t kx = 0, phase = 0, col = 0; kx < kw; ++kx) {
    const int64_t x_off = phase * p.cols + col;
    for (int64_t ky = 0; ky < kh; ++ky) off[ky * kw + kx] = ky * dh * sw * p.cols + x_off;
    phase += dw;  // (kx dw) % sw and (kx dw) / sw for the next kx
    while (phase >= sw) {
      phase -= sw;
      ++col;
    }
  }
  const float* data = p.row(0, 0);
  for (int64_t oy = oh0; oy < oh1; ++oy) {
    float* yr = y + (oy - oh0) * ldy;
    // Rows in the padding hold zeros: their taps are skipped (a NaN or infinite weight there
    // must not reach the output).
    const int64_t ky0 = std::clamp<int64_t>(ceil_div(ph - oy * sh, dh), 0, kh);
    const int64_t ky1 = std::clamp<int64_t>(floor_div(h - 1 + ph - oy * sh, dh) + 1, ky0, kh);
    const int64_t t0 = ky0 * kw, t1 = ky1 * kw;
    const float* row = data + (oy - oh0) * sh * sw * p.cols;
    for (int64_t ox = 0; ox < ow; ox += kStep) {
      typename VecF<L>::type acc[kChains][NV] = {};
      const float* b = row + ox;
      int64_t t = t0;
      for (; t + kChains <= t1; t += kChains) {
#pragma GCC unroll 4
        for (int c = 0; c < kChains; ++c) {
          const float wv = wt[t + c];
          const float* src = b + off[t + c];
#pragma GCC unroll 4
          for (int v = 0; v < NV; ++v) acc[c][v] += wv * loadu<L>(src + L * v);
        }
      }
      for (; t < t1; ++t) {
        const float wv = wt[t];
        const float* src = b + off[t];
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[0][v] += wv * loadu<L>(src + L * v);
      }
#pragma GCC unroll 4
      for (int c = 1; c < kChains; ++c)
        for (int v = 0; v < NV; ++v) acc[0][v] += acc[c][v];
      // Whole vectors: up to kStep - 1 floats past the row land in the next row (written after
      // this one) or in the room past y's last row (conv_tiles.h).
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) storeu<L>(yr + ox + L * v, acc[0][v]);
    }
  }
}

// Output rows [r0, r0 + R) of a map at most L columns wide (one vector per row) in registers:
// per tap, one weight broadcast and offset serve all R rows (the row-at-a-time loop above
// reloads both per row and tap: on 8 x 8 maps its loads, not its multiply-adds, were the cost).
// kSkipPadding: a tap whose input row lies in the padding is skipped for that output row (a NaN
// or infinite weight times a padded 0 must not reach the output); without it every tap is
// summed: with finite weights a padded 0 adds exactly 0.
template <int L, int R, bool kSkipPadding>
inline __attribute__((always_inline)) void depthwise_narrow_block(
    const float* rows, int64_t row_pitch, int64_t tap_row_pitch, const int64_t* x_off,
    const float* wt, float* y, int64_t r0, int64_t h, int64_t kh, int64_t kw, int64_t sh,
    int64_t ph, int64_t dh, int64_t ldy) {
  typename VecF<L>::type acc[R] = {};
  for (int64_t ky = 0; ky < kh; ++ky) {
    unsigned valid = (1u << R) - 1;  // bit r: output row r0 + r reads an image row at tap row ky
    if constexpr (kSkipPadding) {
      valid = 0;
      for (int r = 0; r < R; ++r) {
        const int64_t iy = (r0 + r) * sh - ph + ky * dh;
        if (iy >= 0 && iy < h) valid |= 1u << r;
      }
      if (valid == 0) continue;
    }
    const float* base = rows + ky * tap_row_pitch;
    const float* w = wt + ky * kw;
    for (int64_t kx = 0; kx < kw; ++kx) {
      const float wv = w[kx];
      const float* b = base + x_off[kx];
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r)
        if (!kSkipPadding || (valid >> r & 1u)) acc[r] += wv * loadu<L>(b + r * row_pitch);
    }
  }
  // Whole vectors, as depthwise_rows: past the row lands in the next row or y's slack.
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) storeu<L>(y + r * ldy, acc[r]);
}

// Output rows [oh0, oh1) of a map at most L columns wide, 8 rows at a time.
template <int L>
inline __attribute__((always_inline)) void depthwise_narrow_rows(
    const PhaseRows& p, const float* wt, float* y, int64_t h, int64_t kh, int64_t kw, int64_t sh,
    int64_t ph, int64_t dh, int64_t dw, int64_t oh0, int64_t oh1, int64_t ldy) {
  const int64_t sw = p.sw, row_pitch = sh * sw * p.cols, tap_row_pitch = dh * sw * p.cols;
  // Column tap kx reads phase (kx dw) % sw at column (kx dw) / sw (stepped, no division).
  int64_t x_off[64];
  for (int64_t kx = 0, phase = 0, col = 0; kx < kw; ++kx) {
    x_off[kx] = phase * p.cols + col;
    phase += dw;
    while (phase >= sw) {
      phase -= sw;
      ++col;
    }
  }
  bool finite = true;
  for (int64_t t = 0; t < kh * kw; ++t) finite &= std::isfinite(wt[t]);
  for (int64_t r0 = oh0; r0 < oh1; r0 += 8) {
    const float* rows = p.row(0, 0) + (r0 - oh0) * row_pitch;
    float* yr = y + (r0 - oh0) * ldy;
#define TJ_DW_NARROW(R)                                                                          \
  case R:                                                                                        \
    if (finite)                                                                                  \
      depthwise_narrow_block<L, R, false>(rows, row_pitch, tap_row_pitch, x_off, wt, yr, r0, h, kh, \
                                          kw, sh, ph, dh, ldy);                                  \
    else                                                                                         \
      depthwise_narrow_block<L, R, true>(rows, row_pitch, tap_row_pitch, x_off, wt, yr, r0, h, kh, \
                                         kw, sh, ph, dh, ldy);                                   \
    break;
    switch (std::min<int64_t>(8, oh1 - r0)) {
      TJ_DW_NARROW(1)
      TJ_DW_NARROW(2)
      TJ_DW_NARROW(3)
      TJ_DW_NARROW(4)
      TJ_DW_NARROW(5)
      TJ_DW_NARROW(6)
      TJ_DW_NARROW(7)
      default:
        TJ_DW_NARROW(8)
    }
#undef TJ_DW_NARROW
  }
}

struct DwArgs {
  const float* x;
  const float* wt;
  float* y;
  int64_t h, w, kh, kw, sh, sw, ph, pw, dh, dw, ow, oh0, oh1, ldy, x_avail;
};

template <int L>
inline __attribute__((always_inline)) void depthwise_call(const DwArgs& a) {
  thread_local PhaseRows phases;
  const int nv = static_cast<int>(std::clamp<int64_t>((a.ow + L - 1) / L, 1, 4));
  const int64_t iy0 = a.oh0 * a.sh - a.ph,
                rows = (a.oh1 - 1 - a.oh0) * a.sh + (a.kh - 1) * a.dh + 1;
  const int64_t step = L * nv;
  const int64_t cols = (a.ow + step - 1) / step * step + ((a.kw - 1) * a.dw) / a.sw + 1;
  fill_phases<L>(phases, a.x, a.x + a.x_avail, a.h, a.w, iy0, rows, a.sw, a.pw, cols);
  if (a.ow <= L && a.kw <= 64) {
    depthwise_narrow_rows<L>(phases, a.wt, a.y, a.h, a.kh, a.kw, a.sh, a.ph, a.dh, a.dw, a.oh0,
                             a.oh1, a.ldy);
    return;
  }
#define TJ_DW_ROWS(NV)                                                                           \
  depthwise_rows<L, NV>(phases, a.wt, a.y, a.h, a.kh, a.kw, a.sh, a.ph, a.dh, a.dw, a.ow, a.oh0, \
                        a.oh1, a.ldy)
  switch (nv) {
    case 1:
      TJ_DW_ROWS(1);
      break;
    case 2:
      TJ_DW_ROWS(2);
      break;
    case 3:
      TJ_DW_ROWS(3);
      break;
    default:
      TJ_DW_ROWS(4);
      break;
  }
#undef TJ_DW_ROWS
}

__attribute__((target("avx512f,fma"))) void depthwise_avx512(const DwArgs& a) {
  depthwise_call<16>(a);
}
__attribute__((target("avx2,fma"))) void depthwise_avx2(const DwArgs& a) { depthwise_call<8>(a); }

const bool kHasAvx512 = cpu_has_avx512f();

}  // namespace

void depthwise_conv_rows_f32(const float* x, const float* wt, float* y, int64_t h, int64_t w,
                             int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                             int64_t dh, int64_t dw, int64_t ow, int64_t oh0, int64_t oh1,
                             int64_t ldy, int64_t x_avail) {
  if (oh1 <= oh0 || ow <= 0) return;
  const DwArgs a{x, wt, y, h, w, kh, kw, sh, sw, ph, pw, dh, dw, ow, oh0, oh1, ldy,
                 std::max(x_avail, h * w)};
  if (kHasAvx512)
    depthwise_avx512(a);
  else
    depthwise_avx2(a);
}

}  // namespace tierjit::kernels
