// kernels::small_sgemm (kernels/small_gemm.h) against a double-precision triple loop: every
// transposition, sizes 0, 1, odd and past the 16- and 64-column blocks, padded leading dims,
// alpha / beta (beta = 0 ignores NaN in C, as BLAS), K = 0, NaN and infinity in A.
// Tolerance: 2e-6 * sum |a||b| per element (float32 sums of up to 1,024 terms in another order).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/small_gemm.h"

namespace tierjit::testing {
namespace {

struct Case {
  bool ta, tb;
  int64_t m, n, k;
  float alpha = 1.f, beta = 0.f;
};

void check(const Case& cs, uint32_t seed, float a_special = 0.f, bool special = false) {
  SCOPED_TRACE(::testing::Message() << "ta " << cs.ta << " tb " << cs.tb << " m " << cs.m << " n "
                                    << cs.n << " k " << cs.k << " alpha " << cs.alpha << " beta "
                                    << cs.beta);
  const int64_t pad = 3;
  const int64_t ar = cs.ta ? cs.k : cs.m, ac = cs.ta ? cs.m : cs.k;
  const int64_t br = cs.tb ? cs.n : cs.k, bc = cs.tb ? cs.k : cs.n;
  const int64_t lda = ac + pad, ldb = bc + pad, ldc = cs.n + pad;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> a(static_cast<size_t>(std::max<int64_t>(1, ar * lda))),
      b(static_cast<size_t>(std::max<int64_t>(1, br * ldb))),
      c(static_cast<size_t>(std::max<int64_t>(1, cs.m * ldc)));
  for (float& x : a) x = d(rng);
  for (float& x : b) x = d(rng);
  for (float& x : c) x = cs.beta == 0.f ? std::numeric_limits<float>::quiet_NaN() : d(rng);
  if (special && ar * ac > 0) a[0] = a_special;  // A(0, 0)
  const std::vector<float> c0 = c;
  kernels::small_sgemm(cs.ta, cs.tb, cs.m, cs.n, cs.k, cs.alpha, a.data(), lda, b.data(), ldb, cs.beta,
                  c.data(), ldc);
  for (int64_t i = 0; i < cs.m; ++i)
    for (int64_t j = 0; j < cs.n; ++j) {
      double sum = 0, mag = 0;
      for (int64_t p = 0; p < cs.k; ++p) {
        const double x = cs.ta ? a[p * lda + i] : a[i * lda + p];
        const double y = cs.tb ? b[j * ldb + p] : b[p * ldb + j];
        sum += x * y;
        mag += std::fabs(x * y);
      }
      double want = cs.alpha * sum;
      if (cs.beta != 0.f) want += cs.beta * static_cast<double>(c0[i * ldc + j]);
      const float got = c[i * ldc + j];
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << "at " << i << "," << j;
      } else if (std::isinf(want)) {
        EXPECT_EQ(got, static_cast<float>(want)) << "at " << i << "," << j;
      } else {
        EXPECT_NEAR(got, want, 2e-6 * (std::fabs(cs.alpha) * mag + std::fabs(want)) + 1e-30)
            << "at " << i << "," << j;
      }
    }
  // Padding columns of C are never written.
  for (int64_t i = 0; i < cs.m; ++i)
    for (int64_t j = cs.n; j < ldc; ++j) {
      const float was = c0[i * ldc + j], now = c[i * ldc + j];
      EXPECT_TRUE(was == now || (std::isnan(was) && std::isnan(now)));
    }
}

TEST(SmallGemm, EveryTranspositionAndSize) {
  uint32_t seed = 1;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t m : {0, 1, 2, 3, 4, 5, 9})
        for (int64_t n : {0, 1, 15, 16, 17, 63, 64, 65, 130})
          for (int64_t k : {0, 1, 7, 16, 33, 512}) check({ta, tb, m, n, k}, seed++);
}

TEST(SmallGemm, AlphaBeta) {
  uint32_t seed = 100;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (float alpha : {1.f, -0.5f, 0.f})
        for (float beta : {0.f, 1.f, 2.5f}) check({ta, tb, 5, 37, 21, alpha, beta}, seed++);
}

TEST(SmallGemm, NaNAndInfinityInA) {
  const float kNaN = std::numeric_limits<float>::quiet_NaN();
  const float kInf = std::numeric_limits<float>::infinity();
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      check({ta, tb, 3, 20, 18}, 7, kNaN, true);   // row 0 of C all NaN
      check({ta, tb, 3, 20, 18}, 8, kInf, true);   // row 0 +-inf (or NaN where b is 0: none)
    }
}

}  // namespace
}  // namespace tierjit::testing
