// Tier-0 oneDNN matrix products on a team of threads: products of 32 rows and more run as one
// one-thread primitive per share of rows (dnnl_matmul.cc). Values against a float64 reference
// for odd row counts around the split points, with and without bias, constant (packed) and
// per-call weights, transposed and not; and equal to the one-thread result. MatMuls with equal
// batch dims (attention) run as one batched primitive: values against float64 on 3-D and 4-D
// operands, around the size where the batched path starts, with NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "interp/kernels/dnnl_util.h"
#include "nn_test_util.h"
#include "node_runner.h"
#include "support/cpu_load.h"

namespace tierjit::testing {
namespace {

using nn_test::pseudo;

using interp::nn::MatMulGeometry;

// The machine's load decides whether kernels use the team; tests pin it to "idle".
class NnMatMulSplit : public ::testing::Test {
 protected:
  void SetUp() override { support::override_foreign_busy_cores(0); }
  void TearDown() override { support::override_foreign_busy_cores(-1); }
};

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

TEST_F(NnMatMulSplit, EqualBatchDimsMatchReference) {
  struct Case { Shape a, b; };
  const std::vector<Case> cases = {
      {{6, 33, 40}, {6, 40, 17}},      // 134,640 multiply-adds: one batched primitive
      {{2, 3, 31, 64}, {2, 3, 64, 31}},  // attention-like 4-D (N, heads, S, d) x (N, heads, d, S)
      {{2, 4, 8, 8}, {2, 4, 8, 8}},    // 4,096: below the batched path (per-batch products)
      {{5, 1, 300}, {5, 300, 70}},     // one row per batch
  };
  for (int threads : {1, 2})
    for (const Case& c : cases) {
      SCOPED_TRACE(shape_to_string(c.a) + " x " + shape_to_string(c.b) + " threads " +
                   std::to_string(threads));
      const int64_t r = static_cast<int64_t>(c.a.size());
      const int64_t m = c.a[r - 2], k = c.a[r - 1], n = c.b[r - 1];
      int64_t nb = 1;
      for (int64_t d = 0; d + 2 < r; ++d) nb *= c.a[d];
      std::vector<float> av = pseudo(nb * m * k, 6), bv = pseudo(nb * k * n, 7);
      av[static_cast<size_t>(m * k + 2)] = std::nanf("");  // batch 1, row 0
      interp::ExecOptions options;
      options.intra_op_threads = threads;
      auto out = run_node(NodeSpec{ir::OpKind::MatMul,
                                   {Tensor::from_vector<float>(c.a, av), Tensor::from_vector<float>(c.b, bv)},
                                   1, {}, 17},
                          options);
      ASSERT_TRUE(out.ok()) << out.status().message();
      const Tensor& y = (*out)[0];
      Shape want_shape = c.a;
      want_shape.back() = n;
      ASSERT_EQ(y.shape(), want_shape);
      const float* yp = y.data<float>();
      for (int64_t t = 0; t < nb; ++t)
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            const float got = yp[(t * m + i) * n + j];
            if (t == 1 && i == 0) {
              EXPECT_TRUE(std::isnan(got)) << "NaN row, col " << j;
              continue;
            }
            double want = 0;
            for (int64_t p = 0; p < k; ++p)
              want += double{av[(t * m + i) * k + p]} * bv[(t * k + p) * n + j];
            ASSERT_NEAR(got, want, 2e-4) << "batch " << t << " row " << i << " col " << j;
          }
    }
}

}  // namespace
}  // namespace tierjit::testing
