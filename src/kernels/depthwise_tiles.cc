// depthwise_conv_rows_f32 (conv_tiles.h): the input rows an item needs are copied once,
// zero-padded and split by the stride into phases (so every tap reads a contiguous run), then
// blocks of output rows x 1-4 vectors of columns are summed in registers over every tap, each
// input row loaded once per block and column tap. One
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

// Output rows are summed R at a time: each input row a block of R output rows reads is loaded
// once per column tap and multiplied into every output row it reaches (tap row ky = (j - r sh) /
// dh for output row r of the block, input row j), so a 3x3 stride-1 block of 4 rows loads 6 rows,
// not 12, and the weight broadcasts and the vector loads together stay under one per fused
// multiply-add (one output row at a time took 1.5 loads per multiply-add, bound by the loads
// rather than the multiply-adds on Zen 4). Per output value the taps are summed in order, (ky,
// kx) row-major, in one accumulator; input rows in the vertical padding are skipped (a NaN or
// infinite weight must not meet them), columns in the horizontal padding read the phase rows'
// zeros.
//
// The tap table of a block of R rows: per input row j of the block, which output rows it reaches
// (bit r of mask[j]) and the offset of their tap row in the weights (wrow[j * R + r] = ky kw).
struct BlockTaps {
  std::vector<uint32_t> mask;
  std::vector<int32_t> wrow;
  int64_t rows = 0;  // input rows of the block: (R - 1) sh + (kh - 1) dh + 1
  void build(int64_t r_count, int64_t kh, int64_t kw, int64_t sh, int64_t dh) {
    rows = (r_count - 1) * sh + (kh - 1) * dh + 1;
    mask.assign(static_cast<size_t>(rows), 0);
    wrow.assign(static_cast<size_t>(rows * r_count), 0);
    for (int64_t r = 0; r < r_count; ++r)
      for (int64_t ky = 0; ky < kh; ++ky) {
        const int64_t j = r * sh + ky * dh;
        mask[j] |= 1u << r;
        wrow[j * r_count + r] = static_cast<int32_t>(ky * kw);
      }
  }
};

// One block: output rows [0, R) of `y` (pitch ldy), columns [ox, ox + NV L), input rows [j0, j1)
// of the block (the others are vertical padding) from `rows` (input row j at rows + j *
// row_pitch; column tap kx at x_off[kx]).
template <int L, int R, int NV>
inline __attribute__((always_inline)) void depthwise_block(const float* rows, int64_t row_pitch,
                                                           const int64_t* x_off, const float* wt,
                                                           int64_t kw, const BlockTaps& taps,
                                                           int64_t j0, int64_t j1, float* y,
                                                           int64_t ldy, int64_t ox) {
  using V = typename VecF<L>::type;
  V acc[R][NV] = {};
  for (int64_t j = j0; j < j1; ++j) {
    const uint32_t m = taps.mask[j];
    const int32_t* wr = taps.wrow.data() + j * R;
    const float* src = rows + j * row_pitch + ox;
    for (int64_t kx = 0; kx < kw; ++kx) {
      V in[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) in[v] = loadu<L>(src + x_off[kx] + v * L);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r)
        if (m >> r & 1u) {
          const float wv = wt[wr[r] + kx];
#pragma GCC unroll 4
          for (int v = 0; v < NV; ++v) acc[r][v] += wv * in[v];
        }
    }
  }
  // Whole vectors: the last column step's floats past a row land in the next row's first
  // columns, which the caller's first column step (done after it) writes again, or in y's slack.
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) storeu<L>(y + r * ldy + ox + v * L, acc[r][v]);
}

// Output rows [oh0, oh1) of one channel from its phase rows (row 0 = input row oh0 sh - ph), in
// blocks of R rows (the last block smaller) and column steps of NV vectors, last step first.
template <int L, int R, int NV>
inline __attribute__((always_inline)) void depthwise_rows(const PhaseRows& p, const float* wt,
                                                          float* y, int64_t h, int64_t kh,
                                                          int64_t kw, int64_t sh, int64_t ph,
                                                          int64_t dh, int64_t dw, int64_t ow,
                                                          int64_t oh0, int64_t oh1, int64_t ldy) {
  constexpr int64_t kStep = L * NV;
  const int64_t sw = p.sw, row_pitch = sw * p.cols;
  // Column tap kx reads phase (kx dw) % sw at column (kx dw) / sw (stepped, no division).
  thread_local std::vector<int64_t> x_off;
  x_off.resize(static_cast<size_t>(kw));
  for (int64_t kx = 0, phase = 0, col = 0; kx < kw; ++kx) {
    x_off[kx] = phase * p.cols + col;
    phase += dw;
    while (phase >= sw) {
      phase -= sw;
      ++col;
    }
  }
  thread_local BlockTaps full, tail;
  full.build(R, kh, kw, sh, dh);
  const int64_t iy0 = oh0 * sh - ph;
  const int64_t last_step = (ow - 1) / kStep * kStep;
  for (int64_t oy = oh0; oy < oh1; oy += R) {
    const int64_t n = std::min<int64_t>(R, oh1 - oy);
    const BlockTaps& taps = n == R ? full : (tail.build(n, kh, kw, sh, dh), tail);
    const int64_t first = (oy - oh0) * sh;  // the block's first input row, in the phase rows
    const int64_t j0 = std::clamp<int64_t>(-(iy0 + first), 0, taps.rows);
    const int64_t j1 = std::clamp<int64_t>(h - (iy0 + first), j0, taps.rows);
    const float* rows = p.row(first, 0);
    float* yb = y + (oy - oh0) * ldy;
    for (int64_t ox = last_step; ox >= 0; ox -= kStep) {
      switch (n) {
#define TJ_DW_BLOCK(N)                                                                            \
  case N:                                                                                         \
    if constexpr (N <= R)                                                                         \
      depthwise_block<L, N, NV>(rows, row_pitch, x_off.data(), wt, kw, taps, j0, j1, yb, ldy, ox); \
    break;
        TJ_DW_BLOCK(1)
        TJ_DW_BLOCK(2)
        TJ_DW_BLOCK(3)
        TJ_DW_BLOCK(4)
        TJ_DW_BLOCK(5)
        TJ_DW_BLOCK(6)
        TJ_DW_BLOCK(7)
        TJ_DW_BLOCK(8)
#undef TJ_DW_BLOCK
        default:
          break;
      }
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
#define TJ_DW_ROWS(R, NV)                                                                        \
  depthwise_rows<L, R, NV>(phases, a.wt, a.y, a.h, a.kh, a.kw, a.sh, a.ph, a.dh, a.dw, a.ow, a.oh0, \
                           a.oh1, a.ldy)
  // R x NV accumulators with NV loaded vectors and a weight beside them: at most 16 of the 32
  // AVX-512 registers, 8-9 of the 16 AVX2 ones.
  constexpr bool kWide = L == 16;
  switch (nv) {
    case 1:
      TJ_DW_ROWS(8, 1);
      break;
    case 2:
      TJ_DW_ROWS(kWide ? 8 : 4, 2);
      break;
    case 3:
      TJ_DW_ROWS(kWide ? 5 : 3, 3);
      break;
    default:
      TJ_DW_ROWS(kWide ? 4 : 2, 4);
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
