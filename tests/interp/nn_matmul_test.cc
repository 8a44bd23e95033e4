// Tier-0 MatMul / Gemm / MatMulInteger / QLinearMatMul: hand-computed cases, numpy promotion and
// batch broadcasting, size-0 dims, C broadcasting on every axis, and bad-input errors.
#include <gtest/gtest.h>

#include "nn_test_util.h"
#include "node_runner.h"

namespace tierjit::testing {
namespace {

using ir::OpKind;
using nn_test::f32;
using nn_test::run;

// Row-major reference product for the broadcast tests.
std::vector<float> iota(int64_t n, float scale = 1.f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>((i % 7) - 3) * scale;
  return v;
}

TEST(NnMatMul, TwoByThreeTimesThreeByTwo) {
  // [1 2 3; 4 5 6] @ [7 8; 9 10; 11 12] = [1*7+2*9+3*11, 1*8+2*10+3*12; ...] = [58 64; 139 154]
  auto out = run(OpKind::MatMul, {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3, 2}, {7, 8, 9, 10, 11, 12})});
  ASSERT_TRUE(out.ok()) << out.status().message();
  expect_tensor_near((*out)[0], f32({2, 2}, {58, 64, 139, 154}));
}

TEST(NnMatMul, Float64AndInt64) {
  auto d = run(OpKind::MatMul, {Tensor::from_vector<double>({2, 3}, {1, 2, 3, 4, 5, 6}),
                                      Tensor::from_vector<double>({3, 2}, {7, 8, 9, 10, 11, 12})});
  ASSERT_TRUE(d.ok()) << d.status().message();
  expect_tensor_near((*d)[0], Tensor::from_vector<double>({2, 2}, {58, 64, 139, 154}));
  auto i = run(OpKind::MatMul, {Tensor::from_vector<int64_t>({1, 2}, {3, -4}),
                                      Tensor::from_vector<int64_t>({2, 1}, {5, 6})});
  ASSERT_TRUE(i.ok()) << i.status().message();
  expect_tensor_near((*i)[0], Tensor::from_vector<int64_t>({1, 1}, {3 * 5 - 4 * 6}));
}

TEST(NnMatMul, OneDOperands) {
  // [1 2 3] @ [[1 0],[0 1],[1 1]] = [1+3, 2+3] = [4 5]; shape [2]
  auto a = run(OpKind::MatMul, {f32({3}, {1, 2, 3}), f32({3, 2}, {1, 0, 0, 1, 1, 1})});
  ASSERT_TRUE(a.ok()) << a.status().message();
  expect_tensor_near((*a)[0], f32({2}, {4, 5}));
  // [[1 2 3],[4 5 6]] @ [1 1 1] = [6 15]; shape [2]
  auto b = run(OpKind::MatMul, {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3}, {1, 1, 1})});
  ASSERT_TRUE(b.ok()) << b.status().message();
  expect_tensor_near((*b)[0], f32({2}, {6, 15}));
  // vector . vector = scalar: 1*4 + 2*5 + 3*6 = 32
  auto c = run(OpKind::MatMul, {f32({3}, {1, 2, 3}), f32({3}, {4, 5, 6})});
  ASSERT_TRUE(c.ok()) << c.status().message();
  expect_tensor_near((*c)[0], f32({}, {32}));
}

TEST(NnMatMul, BatchBroadcast) {
  // [2,1,3,4] @ [5,4,2] -> [2,5,3,2]; checked against a direct triple loop.
  std::vector<float> av = iota(2 * 3 * 4, 0.5f), bv = iota(5 * 4 * 2, 0.25f);
  auto out = run(OpKind::MatMul, {f32({2, 1, 3, 4}, av), f32({5, 4, 2}, bv)});
  ASSERT_TRUE(out.ok()) << out.status().message();
  std::vector<float> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 5; ++j)
      for (int m = 0; m < 3; ++m)
        for (int n = 0; n < 2; ++n) {
          float s = 0;
          for (int k = 0; k < 4; ++k) s += av[(i * 3 + m) * 4 + k] * bv[(j * 4 + k) * 2 + n];
          want.push_back(s);
        }
  expect_tensor_near((*out)[0], f32({2, 5, 3, 2}, want));
}

TEST(NnMatMul, SharedRightOperandFoldsBatch) {
  // [3,2,2] @ [2,2] with B = identity*2: result is 2*A.
  std::vector<float> av = iota(12);
  std::vector<float> want(av);
  for (float& v : want) v *= 2;
  auto out = run(OpKind::MatMul, {f32({3, 2, 2}, av), f32({2, 2}, {2, 0, 0, 2})});
  ASSERT_TRUE(out.ok()) << out.status().message();
  expect_tensor_near((*out)[0], f32({3, 2, 2}, want));
}

TEST(NnMatMul, SizeZeroDims) {
  // K = 0: the product is all zeros of shape [2, 3].
  auto k0 = run(OpKind::MatMul, {f32({2, 0}, {}), f32({0, 3}, {})});
  ASSERT_TRUE(k0.ok()) << k0.status().message();
  expect_tensor_near((*k0)[0], f32({2, 3}, {0, 0, 0, 0, 0, 0}));
  auto m0 = run(OpKind::MatMul, {f32({0, 4}, {}), f32({4, 3}, iota(12))});
  ASSERT_TRUE(m0.ok()) << m0.status().message();
  EXPECT_EQ((*m0)[0].shape(), (Shape{0, 3}));
  auto b0 = run(OpKind::MatMul, {f32({0, 1, 2}, {}), f32({2, 1}, {1, 1})});
  ASSERT_TRUE(b0.ok()) << b0.status().message();
  EXPECT_EQ((*b0)[0].shape(), (Shape{0, 1, 1}));
}

TEST(NnMatMul, Errors) {
  auto bad_k = run(OpKind::MatMul, {f32({2, 3}, iota(6)), f32({2, 2}, iota(4))});
  ASSERT_FALSE(bad_k.ok());
  EXPECT_NE(bad_k.status().message().find("inner dims"), std::string::npos) << bad_k.status().message();
  auto bad_batch = run(OpKind::MatMul, {f32({2, 1, 1}, iota(2)), f32({3, 1, 1}, iota(3))});
  EXPECT_FALSE(bad_batch.ok());
  auto bad_type = run(OpKind::MatMul, {f32({1, 1}, {1}), Tensor::from_vector<double>({1, 1}, {1})});
  EXPECT_FALSE(bad_type.ok());
  auto scalar = run(OpKind::MatMul, {f32({}, {1}), f32({1}, {1})});
  EXPECT_FALSE(scalar.ok());
}

// ---- Gemm ----

TEST(NnGemm, AllAttributes) {
  // A^T with A = [[1,2],[3,4],[5,6]] (K=3, M=2) -> op(A) = [[1,3,5],[2,4,6]];
  // B^T with B = [[1,1,1],[0,1,2]] (N=2, K=3) -> op(B) = [[1,0],[1,1],[1,2]].
  // op(A) op(B) = [[9, 13], [12, 16]]; alpha 0.5 -> [[4.5, 6.5], [6, 8]];
  // C = [10, 20] broadcast over rows, beta 2 -> + [20, 40] = [[24.5, 46.5], [26, 48]].
  auto out = run(OpKind::Gemm,
                       {f32({3, 2}, {1, 2, 3, 4, 5, 6}), f32({2, 3}, {1, 1, 1, 0, 1, 2}), f32({2}, {10, 20})},
                       1,
                       {{"transA", attr_int(1)}, {"transB", attr_int(1)}, {"alpha", attr_float(0.5f)},
                        {"beta", attr_float(2.f)}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  expect_tensor_near((*out)[0], f32({2, 2}, {24.5f, 46.5f, 26, 48}));
}

TEST(NnGemm, CBroadcastOnEachAxis) {
  // A = I2, B = [[1,2],[3,4]] -> AB = B.
  Tensor a = f32({2, 2}, {1, 0, 0, 1}), b = f32({2, 2}, {1, 2, 3, 4});
  struct Case { Tensor c; std::vector<float> want; };
  std::vector<Case> cases = {
      {f32({}, {1}), {2, 3, 4, 5}},               // scalar
      {f32({1}, {1}), {2, 3, 4, 5}},              // [1]
      {f32({2}, {1, 2}), {2, 4, 4, 6}},           // [N] along columns
      {f32({2, 1}, {1, 2}), {2, 3, 5, 6}},        // [M, 1] along rows
      {f32({1, 2}, {1, 2}), {2, 4, 4, 6}},        // [1, N]
      {f32({2, 2}, {1, 2, 3, 4}), {2, 4, 6, 8}},  // full
  };
  for (auto& c : cases) {
    auto out = run(OpKind::Gemm, {a, b, c.c});
    ASSERT_TRUE(out.ok()) << out.status().message();
    expect_tensor_near((*out)[0], f32({2, 2}, c.want));
  }
  auto no_c = run(OpKind::Gemm, {a, b});
  ASSERT_TRUE(no_c.ok()) << no_c.status().message();
  expect_tensor_near((*no_c)[0], b);
  auto bad_c = run(OpKind::Gemm, {a, b, f32({3}, {1, 2, 3})});
  EXPECT_FALSE(bad_c.ok());
  auto bad_k = run(OpKind::Gemm, {f32({2, 3}, iota(6)), b});
  EXPECT_FALSE(bad_k.ok());
}

TEST(NnGemm, Float64AndZeroK) {
  auto d = run(OpKind::Gemm, {Tensor::from_vector<double>({1, 2}, {1, 2}),
                                    Tensor::from_vector<double>({2, 1}, {3, 4}),
                                    Tensor::from_vector<double>({1}, {0.5})},
                     1, {{"beta", attr_float(2.f)}});
  ASSERT_TRUE(d.ok()) << d.status().message();
  expect_tensor_near((*d)[0], Tensor::from_vector<double>({1, 1}, {1 * 3 + 2 * 4 + 1.0}));
  // K = 0: Y = beta * C = 3 everywhere.
  auto z = run(OpKind::Gemm, {f32({2, 0}, {}), f32({0, 2}, {}), f32({}, {3})});
  ASSERT_TRUE(z.ok()) << z.status().message();
  expect_tensor_near((*z)[0], f32({2, 2}, {3, 3, 3, 3}));
}

// ---- integer / quantized ----

TEST(NnMatMulInteger, ZeroPoints) {
  // A = [[11, 7], [3, 5]] - a_zp 1 = [[10, 6], [2, 4]]; B = [[1, 2], [3, 4]] - b_zp [1, 0]
  // = [[0, 2], [2, 4]]; product = [[12, 44], [8, 20]].
  auto out = run(OpKind::MatMulInteger,
                       {Tensor::from_vector<uint8_t>({2, 2}, {11, 7, 3, 5}),
                        Tensor::from_vector<uint8_t>({2, 2}, {1, 2, 3, 4}), Tensor::scalar<uint8_t>(1),
                        Tensor::from_vector<uint8_t>({2}, {1, 0})});
  ASSERT_TRUE(out.ok()) << out.status().message();
  expect_tensor_near((*out)[0], Tensor::from_vector<int32_t>({2, 2}, {12, 44, 8, 20}));
}

TEST(NnQLinearMatMul, Requantizes) {
  // a = [2, 4] (zp 0, scale 0.5) -> real [1, 2]; b = [[3],[1]] (zp 1, scale 1) -> [[2],[0]].
  // real product = 2; y_scale 0.25, y_zp 10 -> 2 / 0.25 + 10 = 18.
  auto out = run(OpKind::QLinearMatMul,
                       {Tensor::from_vector<uint8_t>({1, 2}, {2, 4}), Tensor::scalar<float>(0.5f),
                        Tensor::scalar<uint8_t>(0), Tensor::from_vector<uint8_t>({2, 1}, {3, 1}),
                        Tensor::scalar<float>(1.f), Tensor::scalar<uint8_t>(1), Tensor::scalar<float>(0.25f),
                        Tensor::scalar<uint8_t>(10)});
  ASSERT_TRUE(out.ok()) << out.status().message();
  expect_tensor_near((*out)[0], Tensor::from_vector<uint8_t>({1, 1}, {18}));
}

}  // namespace
}  // namespace tierjit::testing
