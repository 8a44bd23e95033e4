// gemm_panel_cols_f32 (packed_gemm.h): one packed weight panel times the columns of a matrix read
// in place, with the vectors running over the panel's columns (the weight's N) and up to 7 of
// x's columns broadcast from registers: a 1x1 convolution on a map of few pixels (49 on 7 x 7)
// fills every lane, where the row tile (vectors over the pixels) fills 49 of 64. Each block of R
// columns x V vectors sums its K in blocks of 256 in registers, the blocks' sums added in a stack
// tile, which is then written transposed into y (y's rows are the panel's columns). One template
// over the lanes (vec_lanes.h): AVX-512 16 (4 vectors: a 64-wide panel in one pass), AVX2 8 (2
// vectors: 16 columns per pass).
#include <algorithm>
#include <cstring>

#include "kernels/cpu_features.h"
#include "kernels/packed_gemm.h"
#include "kernels/vec_lanes.h"

namespace tierjit::kernels {

namespace {

// As packed_gemm.cc's blocks: one float32 chain over a long K loses accuracy.
constexpr int64_t kKBlock = 256;

struct ColsArgs {
  const float* x;
  const float* panel;
  float* y;
  int64_t m, k, ldx, width, cols, ldy;
  int64_t row_stride, slice_stride;  // the panel's layout (packed_gemm.cc's SliceLayout)
};

// Columns [r0, r0 + R) of x times panel columns [c0, c0 + V L): y[c * ldy + r] for the valid c.
template <int L, int R, int V>
inline __attribute__((always_inline)) void cols_block(const ColsArgs& a, int64_t r0, int64_t c0) {
  using F = typename VecF<L>::type;
  constexpr int64_t kW = int64_t{V} * L;
  float t[R * kW];  // [r][column]: the blocks' sums
  const float* w[V];
#pragma GCC unroll 4
  for (int v = 0; v < V; ++v) {
    const int64_t col = c0 + int64_t{v} * L;
    w[v] = a.panel + col / 16 * a.slice_stride + col % 16;
  }
  const float* x = a.x + r0;
  if (a.k == 0) std::fill(t, t + R * kW, 0.f);
  for (int64_t k0 = 0; k0 < a.k; k0 += kKBlock) {
    const int64_t k1 = std::min(a.k, k0 + kKBlock);
    F acc[R][V] = {};
    for (int64_t kk = k0; kk < k1; ++kk) {
      F wv[V];
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) wv[v] = loadu<L>(w[v] + kk * a.row_stride);
      const float* xk = x + kk * a.ldx;
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const float xv = xk[r];
#pragma GCC unroll 4
        for (int v = 0; v < V; ++v) acc[r][v] += xv * wv[v];
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) {
        float* tv = t + r * kW + v * L;
        storeu<L>(tv, k0 == 0 ? acc[r][v] : loadu<L>(tv) + acc[r][v]);
      }
  }
  const int64_t n = std::min<int64_t>(kW, a.cols - c0);
  float* y = a.y + c0 * a.ldy + r0;
  for (int64_t c = 0; c < n; ++c)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) y[c * a.ldy + r] = t[r * kW + c];
}

// Columns of x per block: the R in [4, kMaxR] that leaves the fewest idle rows in the last block
// (49 -> 7, 196 -> 7, 16 -> 4, 40 -> 5), the larger on a tie.
template <int kMaxR>
int64_t rows_per_block(int64_t m) {
  int64_t best = kMaxR, best_cost = (m + kMaxR - 1) / kMaxR * kMaxR;
  for (int64_t r = kMaxR - 1; r >= 4; --r) {
    const int64_t cost = (m + r - 1) / r * r;
    if (cost < best_cost) best = r, best_cost = cost;
  }
  return best;
}

template <int L, int V, int kMaxR>
inline __attribute__((always_inline)) void cols_group(const ColsArgs& a, int64_t c0) {
  const int64_t rb = rows_per_block<kMaxR>(a.m);
  for (int64_t r0 = 0; r0 < a.m; r0 += rb) {
    switch (std::min(rb, a.m - r0)) {
#define TJ_COLS_BLOCK(R)                                    \
  case R:                                                   \
    if constexpr (R <= kMaxR) cols_block<L, R, V>(a, r0, c0); \
    break;
      TJ_COLS_BLOCK(1)
      TJ_COLS_BLOCK(2)
      TJ_COLS_BLOCK(3)
      TJ_COLS_BLOCK(4)
      TJ_COLS_BLOCK(5)
      TJ_COLS_BLOCK(6)
      TJ_COLS_BLOCK(7)
#undef TJ_COLS_BLOCK
      default:
        break;
    }
  }
}

// AVX-512: a 64-wide panel as 4 vectors and up to 7 columns of x (28 accumulators, 4 weight
// vectors: the broadcast folds into the multiply-add); a 16-wide one as 1 vector.
__attribute__((target("avx512f,fma"))) void cols_avx512(const ColsArgs& a) {
  if (a.width == 64)
    cols_group<16, 4, 7>(a, 0);
  else
    cols_group<16, 1, 7>(a, 0);
}
// AVX2: 16 columns (2 vectors) per pass and up to 6 columns of x (12 of the 16 registers).
__attribute__((target("avx2,fma"))) void cols_avx2(const ColsArgs& a) {
  for (int64_t c0 = 0; c0 < a.cols; c0 += 16) cols_group<8, 2, 6>(a, c0);
}

const bool kHasAvx512 = cpu_has_avx512f();

}  // namespace

void gemm_panel_cols_f32(const float* x, const float* panel, float* y, int64_t m, int64_t k,
                         int64_t ldx, int64_t width, int64_t cols, int64_t ldy) {
  if (m <= 0 || cols <= 0) return;
  const bool sliced = gemm_panels_sliced();
  ColsArgs a{x, panel, y, m, k, ldx, width, std::min(cols, width), ldy,
             sliced ? 16 : width, sliced ? 16 * k : 16};
  if (kHasAvx512 && !sliced)
    cols_avx512(a);
  else
    cols_avx2(a);
}

}  // namespace tierjit::kernels
