// The GEMM microkernels compiled code calls (packed_gemm.h): a K split at multiples of 256 and
// accumulated gives one call's bits; rows and columns at the panel's edges; both instruction
// sets; the panel-columns tile (gemm_panel_cols_f32) against a float64 reference and the row tile
// it replaces, NaN included.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>
#include <vector>

#include "kernels/line_buffer.h"
#include "kernels/packed_gemm.h"

namespace tierjit::kernels {
namespace {

TEST(GemmMicrokernel, AccumulatedKBlocksGiveOneCallsBits) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (bool avx2 : {false, true}) {
    set_packed_matmul_force_avx2(avx2);
    for (int64_t n : {10, 64, 100}) {
      const int64_t k = 600, m = 9, width = gemm_panel_width(n);
      std::vector<float> a(m * k), b(k * n);
      for (float& v : a) v = dist(rng);
      for (float& v : b) v = dist(rng);
      const int64_t cols = std::min(width, n);
      // One call over all of K, against three calls over K blocks [0, 256), [256, 512), [512, 600)
      // each packed on its own and accumulated.
      LineBuffer whole;
      whole.resize(static_cast<size_t>(gemm_packed_floats(n, k)));
      gemm_pack_b_f32(b.data(), whole.data(), n, k, 0);
      std::vector<float> y1(m * width, 0.f), y2(m * width, -3.f);
      gemm_panel_rows_f32(a.data(), whole.data(), y1.data(), m, k, k, width, cols, width, 0);
      for (int64_t k0 = 0; k0 < k; k0 += 256) {
        const int64_t kc = std::min<int64_t>(256, k - k0);
        LineBuffer part;
        part.resize(static_cast<size_t>(gemm_packed_floats(n, kc)));
        gemm_pack_b_f32(b.data() + k0 * n, part.data(), n, kc, 0);
        gemm_panel_rows_f32(a.data() + k0, part.data(), y2.data(), m, kc, k, width, cols, width,
                            k0 > 0);
      }
      for (int64_t r = 0; r < m; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          ASSERT_EQ(y1[r * width + c], y2[r * width + c]) << "avx2 " << avx2 << " n " << n;
          double want = 0;
          for (int64_t kk = 0; kk < k; ++kk) want += double{a[r * k + kk]} * b[kk * n + c];
          ASSERT_NEAR(y1[r * width + c], want, 1e-4 * (1 + std::abs(want)));
        }
    }
  }
  set_packed_matmul_force_avx2(false);
}

TEST(GemmMicrokernel, InPlaceRowsGiveThePackedPanelsBits) {
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (bool avx2 : {false, true}) {
    set_packed_matmul_force_avx2(avx2);
    for (auto [m, k, n, ldb] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{7, 16, 64, 100},
                                {13, 300, 50, 50},
                                {1, 3, 16, 17},
                                {6, 0, 64, 64},
                                {25, 64, 9, 9}}) {
      const int64_t width = n > 16 ? 64 : 16;
      std::vector<float> a(m * k + 1), b(k * ldb + 1);
      for (float& v : a) v = dist(rng);
      for (float& v : b) v = dist(rng);
      // The packed form of B's first n columns.
      std::vector<float> dense(k * n + 1);
      for (int64_t kk = 0; kk < k; ++kk)
        for (int64_t c = 0; c < n; ++c) dense[kk * n + c] = b[kk * ldb + c];
      LineBuffer packed;
      packed.resize(static_cast<size_t>(gemm_packed_floats(n, k)) + 16);
      gemm_pack_b_f32(dense.data(), packed.data(), n, k, 0);
      const int64_t pw = gemm_panel_width(n);
      std::vector<float> y1(m * 64, -1.f), y2(m * 64, -2.f);
      gemm_panel_rows_f32(a.data(), packed.data(), y1.data(), m, k, k, pw, std::min(pw, n), 64, 0);
      gemm_rows_in_place_f32(a.data(), b.data(), y2.data(), m, k, k, ldb, width, std::min(width, n),
                             64, 0);
      for (int64_t r = 0; r < m; ++r)
        for (int64_t c = 0; c < std::min({pw, width, n}); ++c)
          ASSERT_EQ(y1[r * 64 + c], y2[r * 64 + c]) << "avx2 " << avx2 << " m " << m << " k " << k;
      for (int64_t r = 0; r < m; ++r)  // nothing past cols written
        for (int64_t c = std::min(width, n); c < 64; ++c) ASSERT_EQ(y2[r * 64 + c], -2.f);
    }
  }
  set_packed_matmul_force_avx2(false);
}

// y[c][r] = sum_k x[k][r] W[c][k] with W packed transposed: every panel of n output channels
// (widths 64 and 16, partial last panels), x's columns 1 to 49 (blocks of 4-7 columns and their
// tails), K = 0, K past one block of 256, x rows wider than m (ldx > m); against float64 and the
// row tile on the same operands (W's rows broadcast, x's columns as vectors); nothing written
// past m columns or cols rows; a NaN in x reaches exactly its column. Under TIERJIT_ISA=avx2
// (the avx2_kernels test) the AVX2 tile runs on sliced panels.
TEST(GemmMicrokernel, PanelColumnsMatchTheRowTileAndFloat64) {
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (auto [m, k, n, ldx] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{49, 320, 70, 49},
                              {1, 5, 16, 3},
                              {9, 0, 64, 9},
                              {25, 600, 130, 30},
                              {7, 33, 10, 7},
                              {13, 64, 200, 17}}) {
    SCOPED_TRACE("m " + std::to_string(m) + " k " + std::to_string(k) + " n " + std::to_string(n));
    std::vector<float> x(k * ldx + 1), w(n * k + 1);
    for (float& v : x) v = dist(rng);
    for (float& v : w) v = dist(rng);
    if (k > 3 && m > 2) x[3 * ldx + 2] = std::nanf("");
    LineBuffer packed;
    packed.resize(static_cast<size_t>(gemm_packed_floats(n, k)) + 16);
    gemm_pack_b_f32(w.data(), packed.data(), n, k, 1);
    const int64_t width = gemm_panel_width(n), ldy = m + 3;
    for (int64_t c0 = 0; c0 < n; c0 += width) {
      const int64_t cols = std::min(width, n - c0);
      std::vector<float> y(width * ldy + 1, -5.f), rows(cols * 64, -6.f);
      gemm_panel_cols_f32(x.data(), packed.data() + c0 * k, y.data(), m, k, ldx, width, cols, ldy);
      for (int64_t r0 = 0; r0 < m; r0 += 64)  // the row tile: W's rows x x's columns in place
        gemm_rows_in_place_f32(w.data() + c0 * k, x.data() + r0, rows.data(), cols, k, k, ldx, 64,
                               std::min<int64_t>(64, m - r0), 64, 0);
      for (int64_t c = 0; c < width; ++c)
        for (int64_t r = 0; r < ldy; ++r) {
          const float got = y[c * ldy + r];
          if (c >= cols || r >= m) {
            ASSERT_EQ(got, -5.f) << "written past the block: c " << c << " r " << r;
            continue;
          }
          double want = 0, mag = 0;
          for (int64_t kk = 0; kk < k; ++kk) {
            want += double{x[kk * ldx + r]} * w[(c0 + c) * k + kk];
            mag += std::abs(double{x[kk * ldx + r]} * w[(c0 + c) * k + kk]);
          }
          if (std::isnan(want)) {
            ASSERT_TRUE(std::isnan(got)) << "c " << c << " r " << r;
            continue;
          }
          ASSERT_NEAR(got, want, 1e-6 * (1 + mag)) << "c " << c << " r " << r;
          if (m <= 64) ASSERT_NEAR(got, rows[c * 64 + r], 1e-6 * (1 + mag)) << "c " << c << " r " << r;
        }
    }
  }
}

}  // namespace
}  // namespace tierjit::kernels
