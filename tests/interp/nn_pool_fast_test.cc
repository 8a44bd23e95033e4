// Tier-0 2-D MaxPool / AveragePool fast path (interior columns reduced a whole row at a time,
// 2x2 stride-2 MaxPool on AVX2):
// against the generic paths on random images with NaN, over kernels, strides, pads, dilations,
// ceil_mode, count_include_pad and odd sizes. MaxPool without Indices (fast path) must equal
// MaxPool with Indices (per-column path) bit for bit, NaN placement included; both pools must
// match the N-D path (the same image as [N, C, 1, H, W]).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "nn_test_util.h"
#include "node_runner.h"

namespace tierjit::testing {
namespace {

using ir::OpKind;
using nn_test::Attrs;
using nn_test::run;

struct Case {
  int64_t n, c, h, w, kh, kw, sh, sw, dh, dw, pad;
  bool ceil;
};

Tensor random_image(const Case& k, uint32_t seed, bool with_nan) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(static_cast<size_t>(k.n * k.c * k.h * k.w));
  for (float& x : v) x = u(rng);
  if (with_nan) {  // a sprinkling of NaN, -0 and +0 (ties between zeros keep the first)
    for (size_t i = 0; i < v.size(); i += 7) v[i] = std::numeric_limits<float>::quiet_NaN();
    for (size_t i = 3; i < v.size(); i += 11) v[i] = (i % 2) ? -0.f : 0.f;
  }
  return Tensor::from_vector<float>({k.n, k.c, k.h, k.w}, v);
}

Attrs attrs_2d(const Case& k) {
  Attrs a = {{"kernel_shape", attr_ints({k.kh, k.kw})}, {"strides", attr_ints({k.sh, k.sw})},
             {"pads", attr_ints({k.pad, k.pad, k.pad, k.pad})},
             {"ceil_mode", attr_int(k.ceil ? 1 : 0)}};
  return a;
}

Attrs attrs_3d(const Case& k) {  // the same pooling with a leading spatial dim of 1
  return {{"kernel_shape", attr_ints({1, k.kh, k.kw})}, {"strides", attr_ints({1, k.sh, k.sw})},
          {"pads", attr_ints({0, k.pad, k.pad, 0, k.pad, k.pad})},
          {"ceil_mode", attr_int(k.ceil ? 1 : 0)}};
}

void expect_bitwise_equal(const Tensor& a, const Tensor& b, const char* what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  ASSERT_EQ(a.nbytes(), b.nbytes()) << what;
  EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0) << what;
}

const Case kCases[] = {
    // n c  h   w  kh kw sh sw dh dw pad ceil
    {2, 3, 28, 28, 2, 2, 2, 2, 1, 1, 0, false},  // the CNN case
    {1, 2, 17, 19, 3, 3, 1, 1, 1, 1, 1, false},  // odd sizes, padding: edges use the slow path
    {1, 1, 9, 13, 3, 2, 2, 3, 1, 1, 1, true},
    {1, 2, 11, 10, 2, 3, 1, 2, 2, 2, 0, false},  // dilations
    {3, 1, 5, 5, 5, 5, 1, 1, 1, 1, 2, false},    // kernel as wide as the image
    {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, false},    // size 1
    {1, 1, 4, 40, 2, 2, 2, 2, 1, 1, 1, true},    // long rows, padding on both sides
    {2, 2, 6, 67, 2, 2, 2, 2, 1, 1, 0, false},   // 2x2 stride 2: 8-column AVX2 chunks + tail
    {1, 3, 5, 51, 2, 2, 2, 2, 1, 1, 1, true},
    {1, 2, 14, 14, 2, 2, 2, 2, 1, 1, 0, false},  // 7 output columns: 4 lanes, overlapping
    {1, 1, 4, 11, 2, 2, 2, 2, 1, 1, 0, false},   // 5
    {1, 1, 4, 6, 2, 2, 2, 2, 1, 1, 0, false},    // 3: scalar
    {1, 2, 3, 18, 2, 2, 2, 2, 1, 1, 0, true},    // 9: 8 lanes, overlapping
};

TEST(NnPoolFast, MaxPoolEqualsPerColumnPathBitwise) {
  uint32_t seed = 1;
  for (const Case& k : kCases) {
    for (bool nan : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "case h=" << k.h << " w=" << k.w << " k=" << k.kh << "x"
                                        << k.kw << " nan=" << nan);
      Tensor x = random_image(k, seed++, nan);
      Attrs a = attrs_2d(k);
      a.push_back({"dilations", attr_ints({k.dh, k.dw})});
      auto fast = run(OpKind::MaxPool, {x}, 1, a);
      auto slow = run(OpKind::MaxPool, {x}, 2, a);  // Indices requested: per-column loop
      ASSERT_TRUE(fast.ok()) << fast.status().message();
      ASSERT_TRUE(slow.ok()) << slow.status().message();
      expect_bitwise_equal((*fast)[0], (*slow)[0], "MaxPool fast vs per-column");
      Attrs a3 = attrs_3d(k);
      a3.push_back({"dilations", attr_ints({1, k.dh, k.dw})});
      auto nd = run(OpKind::MaxPool, {x.reshaped({k.n, k.c, 1, k.h, k.w})}, 1, a3);
      ASSERT_TRUE(nd.ok()) << nd.status().message();
      expect_bitwise_equal((*fast)[0], (*nd)[0].reshaped((*fast)[0].shape()), "MaxPool vs N-D");
    }
  }
}

TEST(NnPoolFast, AveragePoolMatchesNdPath) {
  uint32_t seed = 100;
  for (const Case& k : kCases) {
    if (k.dh != 1 || k.dw != 1) continue;  // AveragePool has no dilations before opset 19
    for (int include_pad : {0, 1}) {
      for (bool nan : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "case h=" << k.h << " w=" << k.w << " include_pad="
                                          << include_pad << " nan=" << nan);
        Tensor x = random_image(k, seed++, nan);
        Attrs a = attrs_2d(k), a3 = attrs_3d(k);
        a.push_back({"count_include_pad", attr_int(include_pad)});
        a3.push_back({"count_include_pad", attr_int(include_pad)});
        auto fast = run(OpKind::AveragePool, {x}, 1, a);
        auto nd = run(OpKind::AveragePool, {x.reshaped({k.n, k.c, 1, k.h, k.w})}, 1, a3);
        ASSERT_TRUE(fast.ok()) << fast.status().message();
        ASSERT_TRUE(nd.ok()) << nd.status().message();
        // float sums (2-D path) vs double sums (N-D path): a few float roundings apart.
        expect_tensor_near((*fast)[0], (*nd)[0].reshaped((*fast)[0].shape()), 1e-5, 1e-6);
      }
    }
  }
}

TEST(NnPoolFast, SignedZerosAndNanAnywhereInWindow) {
  // Window [[-0, +0], [+0, -0]]: the first tap wins ties -> -0. Windows [[NaN, 5], [1, 2]] and
  // [[1, NaN], [0, 5]]: a NaN first or later gives NaN (numpy's max, the ONNX reference's).
  Tensor x = nn_test::f32({1, 3, 2, 2}, {-0.f, 0.f, 0.f, -0.f, std::nanf(""), 5, 1, 2, 1,
                                         std::nanf(""), 0, 5});
  auto y = run(OpKind::MaxPool, {x}, 1, {{"kernel_shape", attr_ints({2, 2})}});
  ASSERT_TRUE(y.ok()) << y.status().message();
  const float* v = (*y)[0].data<float>();
  EXPECT_TRUE(v[0] == 0.f && std::signbit(v[0]));
  EXPECT_TRUE(std::isnan(v[1]));
  EXPECT_TRUE(std::isnan(v[2]));
}

}  // namespace
}  // namespace tierjit::testing
