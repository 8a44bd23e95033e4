// depthwise_conv_rows_f32 (conv_tiles.h): the input rows an item needs are copied once,
// zero-padded and split by the stride into phases (so every tap reads a contiguous run), then
// each output row is summed 1-4 vectors of columns at a time in registers over every tap. One
// template over the vector's lanes, instantiated for AVX-512 (16) and AVX2 (8) (vec_lanes.h).
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/conv_tiles.h"
#include "kernels/cpu_features.h"
#include "kernels/vec_lanes.h"

namespace tierjit::kernels {

namespace {

// The input rows [iy0, iy0 + rows) of one channel, zero-padded and split into `sw` phases:
// phase q, column t holds x[iy, t * sw + q - pw] (0 outside the image), so that tap kx of output
// column ox reads phase (kx dw) % sw at column ox + (kx dw) / sw: contiguous in ox whatever the
// stride. `cols` columns per phase (the output columns rounded up to whole steps, plus the taps).
struct PhaseRows {
  std::vector<float> data;  // rows x sw x cols, plus one vector of slack (whole-vector copies)
  int64_t cols = 0, sw = 1;
  const float* row(int64_t r, int64_t q) const { return data.data() + (r * sw + q) * cols; }
};

template <int L>
inline __attribute__((always_inline)) void fill_phases(PhaseRows& p, const float* x,
                                                       const float* x_end, int64_t h, int64_t w,
                                                       int64_t iy0, int64_t rows, int64_t sw,
                                                       int64_t pw, int64_t cols) {
  p.sw = sw;
  p.cols = cols;
  p.data.resize(static_cast<size_t>(rows * sw * cols + L));
  // Per phase q, the columns t with t * sw + q - pw in [0, w): [t0[q], t1[q]) (the same for every
  // row: two divisions per row and phase were a third of a 14x14 map's time).
  thread_local std::vector<int64_t> t0s, t1s;
  t0s.resize(static_cast<size_t>(sw));
  t1s.resize(static_cast<size_t>(sw));
  for (int64_t q = 0; q < sw; ++q) {
    t0s[q] = std::clamp<int64_t>(ceil_div(pw - q, sw), 0, cols);
    t1s[q] = std::clamp<int64_t>(floor_div(w - 1 + pw - q, sw) + 1, t0s[q], cols);
  }
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t iy = iy0 + r;
    for (int64_t q = 0; q < sw; ++q) {
      float* dst = p.data.data() + (r * sw + q) * cols;
      if (iy < 0 || iy >= h) {
        zero_run<L>(dst, cols);
        continue;
      }
      const int64_t t0 = t0s[q], t1 = t1s[q];
      zero_run<L>(dst, t0);
      const float* src = x + iy * w + q - pw;  // column t reads src[t * sw]
      // The whole-vector copies may write past t1: the zeros after the run come next, and a
      // write past the row lands in a later row (filled after this one) or the slack.
      if (sw == 1) {
        if (x_end - (src + t0) >= (t1 - t0 + L - 1) / L * L) copy_run_over<L>(dst + t0, src + t0, t1 - t0);
        else copy_run<L>(dst + t0, src + t0, t1 - t0);
      } else if (sw == 2) {
        copy_run_stride2_over<L>(dst + t0, src + 2 * t0, t1 - t0, x_end - (src + 2 * t0));
      } else {
        for (int64_t t = t0; t < t1; ++t) dst[t] = src[t * sw];
      }
      zero_run<L>(dst + t1, cols - t1);
    }
  }
}

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
  // column (kx dw) / sw: an offset computed once per call, not per row (divisions).
  thread_local std::vector<int64_t> off;
  off.resize(static_cast<size_t>(kh * kw));
  for (int64_t ky = 0; ky < kh; ++ky)
    for (int64_t kx = 0; kx < kw; ++kx)
      off[ky * kw + kx] = (ky * dh * sw + (kx * dw) % sw) * p.cols + (kx * dw) / sw;
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
