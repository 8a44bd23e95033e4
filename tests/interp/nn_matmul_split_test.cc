// Tier-0 oneDNN matrix products on a team of threads: products of 32 rows and more run as one
// one-thread primitive per share of rows (dnnl_matmul.cc). Values against a float64 reference
// for odd row counts around the split points, with and without bias, constant (packed) and
// per-call weights, transposed and not; and equal to the one-thread result.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "interp/kernels/dnnl_util.h"
#include "support/cpu_load.h"

namespace tierjit::testing {
namespace {

using interp::nn::MatMulGeometry;

// The machine's load decides whether kernels use the team; tests pin it to "idle".
class NnMatMulSplit : public ::testing::Test {
 protected:
  void SetUp() override { support::override_foreign_busy_cores(0); }
  void TearDown() override { support::override_foreign_busy_cores(-1); }
};

std::vector<float> pseudo(int64_t n, int seed) {
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t s = 2654435761u * static_cast<uint32_t>(seed + 1);
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>((s >> 8) & 0xffff) / 32768.f - 1.f;
  }
  return v;
}

TEST_F(NnMatMulSplit, RowSharesMatchReferenceAndOneThread) {
  const int64_t k = 70, n = 45;
  for (int64_t m : {31, 32, 33, 47, 64, 97, 130}) {
    for (bool trans_b : {false, true}) {
      for (bool with_bias : {false, true}) {
        for (bool constant : {false, true}) {
          SCOPED_TRACE(::testing::Message() << "m=" << m << " trans_b=" << trans_b
                                            << " bias=" << with_bias << " constant=" << constant);
          const std::vector<float> a = pseudo(m * k, 1), bias = pseudo(n, 3);
          Tensor b = Tensor::from_vector<float>(trans_b ? Shape{n, k} : Shape{k, n},
                                                pseudo(k * n, 2));
          const float* bp = b.data<float>();
          const MatMulGeometry g{m, n, k, trans_b};
          std::vector<float> y1(static_cast<size_t>(m * n)), y2(y1.size());
          ASSERT_TRUE(interp::nn::dnnl_matmul_f32(g, a.data(), bp, constant ? &b : nullptr,
                                                  with_bias ? bias.data() : nullptr, y1.data(), 1)
                          .ok());
          ASSERT_TRUE(interp::nn::dnnl_matmul_f32(g, a.data(), bp, constant ? &b : nullptr,
                                                  with_bias ? bias.data() : nullptr, y2.data(), 2)
                          .ok());
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              double want = with_bias ? bias[j] : 0.0;
              for (int64_t p = 0; p < k; ++p)
                want += double{a[i * k + p]} * (trans_b ? bp[j * k + p] : bp[p * n + j]);
              // float32 accumulation of 70 products of magnitude <= 1: well within 1e-4.
              ASSERT_NEAR(y2[i * n + j], want, 1e-4) << "row " << i << " col " << j;
              ASSERT_NEAR(y2[i * n + j], y1[i * n + j], 1e-5) << "row " << i << " col " << j;
            }
        }
      }
    }
  }
}

TEST_F(NnMatMulSplit, NaNStaysInItsRow) {
  const int64_t m = 64, k = 40, n = 33;
  std::vector<float> a = pseudo(m * k, 4);
  a[40 * k + 3] = std::nanf("");
  Tensor b = Tensor::from_vector<float>({k, n}, pseudo(k * n, 5));
  std::vector<float> y(static_cast<size_t>(m * n));
  ASSERT_TRUE(interp::nn::dnnl_matmul_f32({m, n, k, false}, a.data(), b.data<float>(), &b,
                                          nullptr, y.data(), 2)
                  .ok());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) EXPECT_EQ(std::isnan(y[i * n + j]), i == 40) << i << "," << j;
}

}  // namespace
}  // namespace tierjit::testing
