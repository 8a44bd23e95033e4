// kernels::recurrent_gates_f32 (recurrent_gemm.h) against a float64 product of the unpacked
// weight: one row (panel pairs and an odd last panel, k odd and even), several rows (through
// gemm_panel_rows_f32), a panel range not starting at 0, partial last panels, k = 0.
#include "kernels/recurrent_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/packed_gemm.h"

namespace tierjit::kernels {
namespace {

void check(int64_t m, int64_t k, int64_t n, int64_t p0, int64_t p1) {
  SCOPED_TRACE("m=" + std::to_string(m) + " k=" + std::to_string(k) + " n=" + std::to_string(n) +
               " panels " + std::to_string(p0) + ".." + std::to_string(p1));
  std::mt19937 rng(static_cast<uint32_t>(m * 1000 + k * 10 + n));
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  const int64_t lda = k + 3;
  std::vector<float> a(static_cast<size_t>(std::max<int64_t>(m, 1) * lda)),
      b(static_cast<size_t>(n * k));
  for (float& x : a) x = u(rng);
  for (float& x : b) x = u(rng);  // [n, k]: packed transposed, as R is
  const int64_t width = gemm_panel_width(n);
  float* packed = static_cast<float*>(
      std::aligned_alloc(64, static_cast<size_t>((gemm_packed_floats(n, k) + 16) * 4)));
  gemm_pack_b_f32(b.data(), packed, n, k, 1);
  const int64_t ldy = (p1 - p0) * width + 5;
  std::vector<float> y(static_cast<size_t>(std::max<int64_t>(m, 1) * ldy), 12345.f);
  recurrent_gates_f32(a.data(), packed, y.data(), m, k, lda, n, p0, p1, ldy);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t p = p0; p < p1; ++p)
      for (int64_t c = 0; c < width; ++c) {
        const int64_t col = p * width + c;
        const float got = y[static_cast<size_t>(r * ldy + (p - p0) * width + c)];
        if (col >= n) {
          EXPECT_EQ(got, 12345.f) << "column " << col << " past n written";
          continue;
        }
        double want = 0, mag = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
          want +=
              double(a[static_cast<size_t>(r * lda + kk)]) * b[static_cast<size_t>(col * k + kk)];
          mag += std::fabs(double(a[static_cast<size_t>(r * lda + kk)]) *
                           b[static_cast<size_t>(col * k + kk)]);
        }
        ASSERT_NEAR(got, want, 1e-6 * mag + 1e-7) << "row " << r << " column " << col;
      }
  std::free(packed);
}

TEST(RecurrentGates, OneRow) {
  for (int64_t k : {0, 1, 7, 128}) {
    check(1, k, 512, 0, 8);  // panel pairs
    check(1, k, 384, 0, 6);
    check(1, k, 320, 0, 5);  // an odd last panel
    check(1, k, 300, 2, 5);  // a range, the last panel partial
    check(1, k, 40, 0, 3);   // narrow panels
  }
}

TEST(RecurrentGates, SeveralRows) {
  for (int64_t m : {0, 2, 3, 5, 16}) {
    check(m, 64, 512, 0, 8);
    check(m, 33, 300, 1, 5);
    check(m, 20, 40, 0, 3);  // narrow (16-column) panels
  }
}

}  // namespace
}  // namespace tierjit::kernels
