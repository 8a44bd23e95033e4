// Products by constant weights on packed panels (kernels/packed_gemm.h): values against a
// float64 reference for row counts 1-9, 13, 37 and 100 (threads splitting panels and rows),
// column counts around the 16- and 64-wide panels (1-300 and 520), K = 0, 1, odd and long, B
// plain and transposed, with and without bias, on 1, 2 and 3 threads; nothing written
// outside y; NaN stays in its row (from A) or its column (from B); nn::dnnl_matmul_f32 routes
// constant weights here (not per-call weights) and agrees with oneDNN's primitive; each weight
// tensor keeps its own panels.
#include "kernels/packed_gemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "interp/kernels/dnnl_util.h"
#include "nn_test_util.h"
#include "support/cpu_load.h"

namespace tierjit::testing {
namespace {

using nn_test::pseudo;

using interp::nn::MatMulGeometry;

class PackedGemm : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(kernels::packed_matmul_available()) << "enabled on every CPU by default";
    support::override_foreign_busy_cores(0);  // the team is used as on an idle machine
  }
  void TearDown() override {
    kernels::set_packed_matmul_enabled(true);
    kernels::set_packed_matmul_force_avx2(false);
    support::override_foreign_busy_cores(-1);
  }
};

double reference(const std::vector<float>& a, const float* b, const float* bias, int64_t n,
                 int64_t k, bool trans_b, int64_t i, int64_t j) {
  double want = bias ? bias[j] : 0.0;
  for (int64_t p = 0; p < k; ++p)
    want += double{a[static_cast<size_t>(i * k + p)]} * (trans_b ? b[j * k + p] : b[p * n + j]);
  return want;
}

TEST_F(PackedGemm, MatchesReferenceAroundPanelEdges) {
  constexpr float kGuard = 12345.f;
  for (int64_t k : {0, 1, 7, 300})
    for (int64_t n : {1, 15, 16, 17, 52, 63, 64, 65, 130, 200, 260, 300, 520})
      for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 17, 37, 100})
        for (bool trans_b : {false, true})
          for (bool with_bias : {false, true})
            for (int threads : {1, 2, 3}) {
              SCOPED_TRACE(::testing::Message() << "m=" << m << " n=" << n << " k=" << k
                                                << " trans_b=" << trans_b << " bias=" << with_bias
                                                << " threads=" << threads);
              const std::vector<float> a = pseudo(m * k, 1), bias = pseudo(n, 3);
              const Tensor b = Tensor::from_vector<float>(trans_b ? Shape{n, k} : Shape{k, n},
                                                          pseudo(k * n, 2));
              std::vector<float> y(static_cast<size_t>(m * n + 64), kGuard);
              ASSERT_TRUE(kernels::packed_matmul_f32(m, n, k, trans_b, a.data(),
                                                        b.data<float>(), b,
                                                        with_bias ? bias.data() : nullptr,
                                                        y.data(), threads));
              for (int64_t i = 0; i < m; ++i)
                for (int64_t j = 0; j < n; ++j) {
                  const double want = reference(a, b.data<float>(), with_bias ? bias.data() : nullptr,
                                                n, k, trans_b, i, j);
                  // float32 sums of <= 300 products of magnitude <= 1.
                  ASSERT_NEAR(y[static_cast<size_t>(i * n + j)], want, 2e-4)
                      << "row " << i << " col " << j;
                }
              for (size_t t = static_cast<size_t>(m * n); t < y.size(); ++t)
                ASSERT_EQ(y[t], kGuard) << "written past y at " << t;
            }
}

// Batched products with B new every call (attention): each slice gives bit for bit what
// kernels::packed_matmul_f32 gives for it (same panels, same sums), for panel widths 16 and 64, B of one
// full 64-wide panel used in place or (misaligned) packed, K = 0, on 1-3 threads; a NaN stays in
// its slice; nothing written outside y.
TEST_F(PackedGemm, BatchedSlicesMatchOneProductEach) {
  constexpr float kGuard = 12345.f;
  for (int64_t batch : {1, 3, 5})
    for (int64_t k : {0, 1, 17, 64, 256})
      for (int64_t n : {1, 10, 16, 33, 64, 65, 256})
        for (int64_t m : {1, 7, 16, 33})
          for (int threads : {1, 2, 3})
            for (int64_t misalign : {0, 1}) {
              SCOPED_TRACE(::testing::Message() << "batch=" << batch << " m=" << m << " n=" << n << " k=" << k
                                                << " threads=" << threads << " misalign=" << misalign);
              std::vector<float> a = pseudo(batch * m * k, 31);
              // b at a 64-byte boundary (+ one float when misaligned) inside a kernels::LineBuffer-like vector.
              std::vector<float> b_store(static_cast<size_t>(batch * k * n + 32));
              float* b = b_store.data();
              while (reinterpret_cast<uintptr_t>(b) % 64 != 0) ++b;
              b += misalign;
              const std::vector<float> bv = pseudo(batch * k * n, 32);
              std::copy(bv.begin(), bv.end(), b);
              if (batch > 1 && m * k > 0) a[static_cast<size_t>(m * k)] = std::nanf("");  // slice 1, row 0
              std::vector<float> y(static_cast<size_t>(batch * m * n + 64), kGuard);
              ASSERT_TRUE(kernels::packed_batched_matmul_f32(batch, m, n, k, a.data(), b, y.data(), threads));
              for (int64_t t = 0; t < batch; ++t) {
                const Tensor bt = Tensor::from_vector<float>(
                    {k, n}, std::vector<float>(b + t * k * n, b + (t + 1) * k * n));
                std::vector<float> want(static_cast<size_t>(m * n));
                ASSERT_TRUE(kernels::packed_matmul_f32(m, n, k, false, a.data() + t * m * k, bt.data<float>(),
                                                          bt, nullptr, want.data(), 1));
                ASSERT_EQ(std::memcmp(y.data() + t * m * n, want.data(), want.size() * sizeof(float)), 0)
                    << "slice " << t;
                for (int64_t i = 0; i < m; ++i)
                  for (int64_t j = 0; j < n; ++j)
                    ASSERT_EQ(std::isnan(y[static_cast<size_t>((t * m + i) * n + j)]), t == 1 && i == 0 && k > 0)
                        << "slice " << t << " row " << i << " col " << j;
              }
              for (size_t i = static_cast<size_t>(batch * m * n); i < y.size(); ++i)
                ASSERT_EQ(y[i], kGuard) << "written past y at " << i;
            }
}

// Enough rows that a's rows go in blocks (128 KiB of them each: 109 rows at K = 300, 32 at
// K = 1000), each block passing over every panel: the values of one thread's whole-panel loop,
// bit for bit, on 1-3 threads; nothing written outside y. N = 300 (5 panels) takes the AVX2
// code's packed row groups (pack_row_groups), N = 17 and 130 its in-place rows.
TEST_F(PackedGemm, RowBlocksGiveTheSameBitsAsOnePass) {
  constexpr float kGuard = 12345.f;
  for (int64_t k : {300, 1000})
    for (int64_t n : {17, 130, 300})
      for (int64_t m : {110, 301, 1024})
        for (bool trans_b : {false, true}) {
          SCOPED_TRACE(::testing::Message() << "m=" << m << " n=" << n << " k=" << k << " trans_b=" << trans_b);
          const std::vector<float> a = pseudo(m * k, 21), bias = pseudo(n, 22);
          const Tensor b = Tensor::from_vector<float>(trans_b ? Shape{n, k} : Shape{k, n}, pseudo(k * n, 23));
          // One pass: the same product row by row (each row is below any block size).
          std::vector<float> want(static_cast<size_t>(m * n));
          for (int64_t i = 0; i < m; ++i)
            ASSERT_TRUE(kernels::packed_matmul_f32(1, n, k, trans_b, a.data() + i * k, b.data<float>(), b,
                                                      bias.data(), want.data() + i * n, 1));
          for (int threads : {1, 2, 3}) {
            std::vector<float> y(static_cast<size_t>(m * n + 64), kGuard);
            ASSERT_TRUE(kernels::packed_matmul_f32(m, n, k, trans_b, a.data(), b.data<float>(), b,
                                                      bias.data(), y.data(), threads));
            for (size_t t = 0; t < want.size(); ++t) ASSERT_EQ(y[t], want[t]) << "threads " << threads << " at " << t;
            for (size_t t = want.size(); t < y.size(); ++t) ASSERT_EQ(y[t], kGuard) << "written past y at " << t;
          }
        }
}

// The AVX2 code's packed row groups belong to one call: a second product over the same a
// (same address, new values) and the same weights packs a's rows again. At 200 rows (two blocks
// of 108) on 2 threads each thread's share is one block, the same one every call.
TEST_F(PackedGemm, PackedRowsAreNotReusedAcrossCalls) {
  constexpr int64_t n = 300, k = 300;
  const Tensor b = Tensor::from_vector<float>(Shape{k, n}, pseudo(k * n, 31));
  for (int64_t m : {200, 1024})
    for (int threads : {1, 2}) {
      std::vector<float> a = pseudo(m * k, 32);
      for (int round = 0; round < 3; ++round) {
        SCOPED_TRACE(::testing::Message() << "m " << m << " threads " << threads << " round " << round);
        for (float& v : a) v = -v + 0.25f * static_cast<float>(round);
        std::vector<float> want(static_cast<size_t>(m * n)), y(want.size());
        for (int64_t i = 0; i < m; ++i)
          ASSERT_TRUE(kernels::packed_matmul_f32(1, n, k, false, a.data() + i * k, b.data<float>(), b,
                                                    nullptr, want.data() + i * n, 1));
        ASSERT_TRUE(kernels::packed_matmul_f32(m, n, k, false, a.data(), b.data<float>(), b, nullptr,
                                                  y.data(), threads));
        ASSERT_EQ(y, want);
      }
    }
}

// The AVX2 code (the only one on a CPU without AVX-512F, forced on one with it) gives the
// AVX-512 code's bits: the same operations per element in the same order. Partial column groups,
// two k-blocks (K = 300), 1-9 rows, both panel widths.
TEST_F(PackedGemm, Avx2VersionGivesTheSameBits) {
  for (int64_t k : {7, 300})
    for (int64_t n : {10, 16, 37, 64, 100, 130})
      for (int64_t m : {1, 3, 4, 5, 8, 9})
        for (bool trans_b : {false, true}) {
          SCOPED_TRACE(::testing::Message() << "m=" << m << " n=" << n << " k=" << k << " trans_b=" << trans_b);
          const std::vector<float> a = pseudo(m * k, 7), bias = pseudo(n, 8);
          const Tensor b = Tensor::from_vector<float>(trans_b ? Shape{n, k} : Shape{k, n}, pseudo(k * n, 9));
          std::vector<float> best(static_cast<size_t>(m * n)), avx2(best.size());
          ASSERT_TRUE(kernels::packed_matmul_f32(m, n, k, trans_b, a.data(), b.data<float>(), b,
                                                    bias.data(), best.data(), 1));
          kernels::set_packed_matmul_force_avx2(true);
          ASSERT_TRUE(kernels::packed_matmul_f32(m, n, k, trans_b, a.data(), b.data<float>(), b,
                                                    bias.data(), avx2.data(), 1));
          kernels::set_packed_matmul_force_avx2(false);
          EXPECT_EQ(best, avx2);
        }
}

// Any row count runs here (the AVX2 code once declined past 1,024 rows): rows in several blocks of
// kRowBlockBytes, a last block of odd rows, every panel inside each block, 1-3 threads; both
// the AVX-512 and the forced AVX2 code where the CPU has AVX-512.
TEST_F(PackedGemm, ManyRowsMatchTheReference) {
  for (int64_t m : {1025, 2053, 4100})
    for (int64_t n : {10, 70, 128})
      for (int64_t k : {3, 300}) {
        const std::vector<float> a = pseudo(m * k, 10), bias = pseudo(n, 12);
        const Tensor b = Tensor::from_vector<float>(Shape{n, k}, pseudo(k * n, 11));
        std::vector<double> want(static_cast<size_t>(m * n));
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j)
            want[static_cast<size_t>(i * n + j)] = reference(a, b.data<float>(), bias.data(), n, k, true, i, j);
        for (bool force_avx2 : {false, true})
          for (int threads : {1, 2, 3}) {
            SCOPED_TRACE(::testing::Message() << "m=" << m << " n=" << n << " k=" << k
                                              << " avx2=" << force_avx2 << " threads=" << threads);
            std::vector<float> y(static_cast<size_t>(m * n + 16), 12345.f);
            kernels::set_packed_matmul_force_avx2(force_avx2);
            const bool ran = kernels::packed_matmul_f32(m, n, k, true, a.data(), b.data<float>(), b,
                                                           bias.data(), y.data(), threads);
            kernels::set_packed_matmul_force_avx2(false);
            ASSERT_TRUE(ran);
            for (size_t i = 0; i < want.size(); ++i)  // float32 sums of <= 300 products <= 1
              ASSERT_NEAR(y[i], want[i], 2e-4) << "row " << i / n << " col " << i % n;
            for (size_t i = static_cast<size_t>(m * n); i < y.size(); ++i) ASSERT_EQ(y[i], 12345.f);
          }
      }
}

TEST_F(PackedGemm, NaNStaysInItsRowOrColumn) {
  const int64_t m = 5, n = 70, k = 33;
  std::vector<float> a = pseudo(m * k, 4);
  a[static_cast<size_t>(3 * k + 5)] = std::nanf("");  // row 3
  std::vector<float> bv = pseudo(n * k, 5);
  bv[static_cast<size_t>(66 * k + 2)] = std::nanf("");  // column 66 (B transposed: [N, K])
  bv[static_cast<size_t>(10 * k + 1)] = INFINITY;       // column 10: inf * finite
  const Tensor b = Tensor::from_vector<float>({n, k}, bv);
  std::vector<float> y(static_cast<size_t>(m * n));
  for (int threads : {1, 2}) {
    ASSERT_TRUE(kernels::packed_matmul_f32(m, n, k, true, a.data(), b.data<float>(), b,
                                              nullptr, y.data(), threads));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const float got = y[static_cast<size_t>(i * n + j)];
        if (i == 3 || j == 66) EXPECT_TRUE(std::isnan(got)) << i << "," << j;
        else if (j == 10) EXPECT_TRUE(std::isinf(got)) << i << "," << j;
        else EXPECT_TRUE(std::isfinite(got)) << i << "," << j;
      }
  }
}

TEST_F(PackedGemm, MatMulRoutesConstantWeightsAndAgreesWithOneDnn) {
  const int64_t k = 256, n = 512;
  const Tensor b = Tensor::from_vector<float>({n, k}, pseudo(n * k, 6));
  const std::vector<float> bias = pseudo(n, 7);
  for (int64_t m : {1, 3, 8, 9, 64, 200}) {
    SCOPED_TRACE(::testing::Message() << "m=" << m);
    const std::vector<float> a = pseudo(m * k, 8);
    const MatMulGeometry g{m, n, k, true};
    std::vector<float> ours(static_cast<size_t>(m * n)), dnnl(ours.size()), plain(ours.size());
    uint64_t before = kernels::packed_matmul_runs();
    ASSERT_TRUE(interp::nn::dnnl_matmul_f32(g, a.data(), b.data<float>(), &b, bias.data(),
                                            ours.data(), 2).ok());
    EXPECT_EQ(kernels::packed_matmul_runs() - before, 1u);
    before = kernels::packed_matmul_runs();
    ASSERT_TRUE(interp::nn::dnnl_matmul_f32(g, a.data(), b.data<float>(), nullptr, bias.data(),
                                            plain.data(), 2).ok());  // weights not constant
    EXPECT_EQ(kernels::packed_matmul_runs(), before);
    kernels::set_packed_matmul_enabled(false);
    ASSERT_TRUE(interp::nn::dnnl_matmul_f32(g, a.data(), b.data<float>(), &b, bias.data(),
                                            dnnl.data(), 2).ok());
    kernels::set_packed_matmul_enabled(true);
    EXPECT_EQ(kernels::packed_matmul_runs(), before);
    for (size_t t = 0; t < ours.size(); ++t) {
      ASSERT_NEAR(ours[t], dnnl[t], 1e-4) << t;
      ASSERT_NEAR(ours[t], plain[t], 1e-4) << t;
    }
  }
}

TEST_F(PackedGemm, EachWeightTensorKeepsItsOwnPanels) {
  const int64_t m = 2, n = 64, k = 40;
  const std::vector<float> a = pseudo(m * k, 9);
  for (int round = 0; round < 2; ++round)  // the second round reads the cached panels
    for (int seed : {10, 11}) {
      const Tensor b = Tensor::from_vector<float>({k, n}, pseudo(k * n, seed));
      std::vector<float> y(static_cast<size_t>(m * n));
      ASSERT_TRUE(kernels::packed_matmul_f32(m, n, k, false, a.data(), b.data<float>(), b,
                                                nullptr, y.data(), 2));
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j)
          ASSERT_NEAR(y[static_cast<size_t>(i * n + j)],
                      reference(a, b.data<float>(), nullptr, n, k, false, i, j), 1e-4)
              << "seed " << seed << " round " << round << " row " << i << " col " << j;
    }
}

// A weight nothing else holds any more (its model was dropped) loses its panels at the next
// packing: a service loading and dropping models keeps only the live ones' panels.
TEST_F(PackedGemm, PanelsOfDroppedWeightsAreFreed) {
  const int64_t m = 1, n = 512, k = 300;
  const std::vector<float> a = pseudo(m * k, 12);
  std::vector<float> y(static_cast<size_t>(m * n));
  const size_t b_bytes = static_cast<size_t>(k * n) * 4, c_bytes = static_cast<size_t>(k * 64) * 4;
  size_t with_b = 0;
  {
    const Tensor b = Tensor::from_vector<float>({k, n}, pseudo(k * n, 13));
    ASSERT_TRUE(kernels::packed_matmul_f32(m, n, k, false, a.data(), b.data<float>(), b,
                                              nullptr, y.data(), 1));
    with_b = kernels::packed_panel_bytes();
    EXPECT_GE(with_b, b_bytes);
  }
  const Tensor c = Tensor::from_vector<float>({k, 64}, pseudo(k * 64, 14));  // kept
  ASSERT_TRUE(kernels::packed_matmul_f32(m, 64, k, false, a.data(), c.data<float>(), c,
                                            nullptr, y.data(), 1));
  // b's panels are gone, c's are in (each entry has up to 64 bytes of alignment slack).
  EXPECT_LE(kernels::packed_panel_bytes(), with_b - b_bytes + c_bytes + 128);
  EXPECT_GE(kernels::packed_panel_bytes(), c_bytes);
}

// Long sums are added in blocks (K = 20000, values of one sign so nothing cancels): within 1e-6
// of float64 relative, where one float32 chain over all of K drifts to 4.3e-6.
TEST_F(PackedGemm, LongSumsStayCloseToFloat64) {
  const int64_t m = 3, n = 64, k = 20000;
  std::vector<float> a(static_cast<size_t>(m * k)), bv(static_cast<size_t>(k * n));
  for (size_t i = 0; i < a.size(); ++i) a[i] = 0.5f + 0.25f * static_cast<float>(i % 7) / 7.f;
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = 0.3f + 0.5f * static_cast<float>(i % 11) / 11.f;
  const Tensor b = Tensor::from_vector<float>({k, n}, bv);
  std::vector<float> y(static_cast<size_t>(m * n));
  ASSERT_TRUE(kernels::packed_matmul_f32(m, n, k, false, a.data(), b.data<float>(), b, nullptr,
                                            y.data(), 2));
  double worst = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const double want = reference(a, b.data<float>(), nullptr, n, k, false, i, j);
      worst = std::max(worst, std::fabs(y[static_cast<size_t>(i * n + j)] - want) / want);
    }
  EXPECT_LT(worst, 1e-6);  // blocks of 256: 1.9e-7; one chain over all of K: 4.3e-6
}

}  // namespace
}  // namespace tierjit::testing
