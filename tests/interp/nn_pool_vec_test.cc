// Tier-0 2-D float32 MaxPool / AveragePool with window width 2 or 3 and stride 1 or 2 (the AVX2
// register path of pool.cc) against a plain scalar reference written here: taps folded in
// row-major order (max: v when v > best or v is NaN, so a NaN anywhere in a window gives NaN; average:
// a float sum from 0 divided by the tap count, or by the taps inside the padded image with
// count_include_pad). Bit for bit, over odd widths (8-lane, 4-lane and overlapping tails), pads,
// ceil_mode, kernel heights 1-3, NaN and signed zeros.
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

struct Geo {
  int64_t h, w, kh, kw, sh, sw, pad;
  bool ceil;
};

Tensor image(int64_t n, int64_t c, int64_t h, int64_t w, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  std::vector<float> v(static_cast<size_t>(n * c * h * w));
  for (float& x : v) x = u(rng);
  for (size_t i = 5; i < v.size(); i += 13) v[i] = std::numeric_limits<float>::quiet_NaN();
  for (size_t i = 2; i < v.size(); i += 9) v[i] = (i % 2) ? -0.f : 0.f;
  return Tensor::from_vector<float>({n, c, h, w}, v);
}

// The scalar reference for output shape `out` (taken from the kernel; shapes are tested elsewhere).
Tensor reference(const Tensor& x, const Geo& g, bool is_max, bool include_pad, const Shape& out) {
  const int64_t planes = x.dim(0) * x.dim(1), ih = x.dim(2), iw = x.dim(3);
  const int64_t oh = out[2], ow = out[3];
  Tensor y = Tensor::empty(DType::kFloat32, out);
  auto padded_taps = [&](int64_t start, int64_t k, int64_t in) {  // taps in [-pad, in + pad)
    int64_t n = 0;
    for (int64_t t = 0; t < k; ++t) n += (start + t < in + g.pad) ? 1 : 0;
    return n;
  };
  for (int64_t p = 0; p < planes; ++p) {
    const float* xp = x.data<float>() + p * ih * iw;
    float* yp = y.data<float>() + p * oh * ow;
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        const int64_t r0 = i * g.sh - g.pad, c0 = j * g.sw - g.pad;
        float best = std::numeric_limits<float>::lowest(), sum = 0;
        int64_t count = 0;
        for (int64_t r = r0; r < r0 + g.kh; ++r)
          for (int64_t c = c0; c < c0 + g.kw; ++c) {
            if (r < 0 || r >= ih || c < 0 || c >= iw) continue;
            const float v = xp[r * iw + c];
            if (count == 0 || v > best || (std::isnan(v) && !std::isnan(best))) best = v;
            sum += v;
            ++count;
          }
        const int64_t n = include_pad ? padded_taps(r0, g.kh, ih) * padded_taps(c0, g.kw, iw) : count;
        yp[i * ow + j] = is_max ? best : (n > 0 ? sum / static_cast<float>(n) : 0.f);
      }
  }
  return y;
}

void check(const Geo& g, bool is_max, bool include_pad, uint32_t seed) {
  const Tensor x = image(2, 3, g.h, g.w, seed);
  Attrs a = {{"kernel_shape", attr_ints({g.kh, g.kw})}, {"strides", attr_ints({g.sh, g.sw})},
             {"pads", attr_ints({g.pad, g.pad, g.pad, g.pad})}, {"ceil_mode", attr_int(g.ceil)}};
  if (!is_max) a.push_back({"count_include_pad", attr_int(include_pad ? 1 : 0)});
  auto y = run(is_max ? OpKind::MaxPool : OpKind::AveragePool, {x}, 1, a);
  ASSERT_TRUE(y.ok()) << y.status().message();
  const Tensor& got = (*y)[0];
  const Tensor want = reference(x, g, is_max, include_pad, got.shape());
  const std::string what = ::testing::PrintToString(std::vector<int64_t>{
      g.h, g.w, g.kh, g.kw, g.sh, g.sw, g.pad, g.ceil, is_max, include_pad});
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), want.nbytes()), 0) << what;
}

TEST(NnPoolVec, MatchesScalarReferenceBitwise) {
  uint32_t seed = 1;
  int cases = 0;
  for (int64_t w : {1, 2, 5, 7, 9, 10, 13, 17, 30, 67})
    for (int64_t k : {2, 3})
      for (int64_t s : {1, 2})
        for (int64_t pad : {0, 1})
          for (bool ceil : {false, true}) {
            if (pad >= k) continue;  // ONNX: pads smaller than the kernel
            for (int64_t kh : {int64_t{1}, k}) {
              if (pad >= kh) continue;
              const Geo g{7, w, kh, k, s, s, pad, ceil};
              if (w + 2 * pad < k || 7 + 2 * pad < kh) continue;
              check(g, true, false, seed++);
              check(g, false, false, seed++);
              check(g, false, true, seed++);
              cases += 3;
            }
          }
  EXPECT_GT(cases, 300);
}

TEST(NnPoolVec, CnnShapes) {
  // convnet_small (2x2 s2 on 28 and 14), resnet18's stem (3x3 s2 pad 1 on 112), mobilenet-like.
  check(Geo{28, 28, 2, 2, 2, 2, 0, false}, true, false, 7);
  check(Geo{14, 14, 2, 2, 2, 2, 0, false}, true, false, 8);
  check(Geo{112, 112, 3, 3, 2, 2, 1, false}, true, false, 9);
  check(Geo{15, 15, 3, 3, 1, 1, 1, false}, false, true, 10);
  check(Geo{15, 15, 3, 3, 1, 1, 1, true}, false, false, 11);
}

TEST(NnPoolVec, NaNAnywhereInAWindowPropagates) {
  // One 2x2 stride-1 window row over 9 columns (8-lane group plus overlap): every window holding
  // a NaN gives NaN, wherever the NaN is in it (as numpy's max in the ONNX reference, PyTorch and
  // tier 0's ReduceMax).
  std::vector<float> v(2 * 10, 1.0f);
  v[0] = std::numeric_limits<float>::quiet_NaN();  // first tap of output 0
  v[5] = std::numeric_limits<float>::quiet_NaN();  // second tap of output 4, first of output 5
  v[12] = 3.0f;                                    // second row, column 2: outputs 1 and 2
  auto y = run(OpKind::MaxPool, {Tensor::from_vector<float>({1, 1, 2, 10}, v)}, 1,
               {{"kernel_shape", attr_ints({2, 2})}, {"strides", attr_ints({1, 1})}});
  ASSERT_TRUE(y.ok()) << y.status().message();
  const float* p = (*y)[0].data<float>();
  ASSERT_EQ((*y)[0].numel(), 9);
  EXPECT_TRUE(std::isnan(p[0]));
  EXPECT_EQ(p[1], 3.0f);
  EXPECT_EQ(p[2], 3.0f);
  EXPECT_TRUE(std::isnan(p[4]));  // the NaN is this window's second tap
  EXPECT_TRUE(std::isnan(p[5]));
  for (int j : {3, 6, 7, 8}) EXPECT_EQ(p[j], 1.0f) << j;
}

}  // namespace
}  // namespace tierjit::testing
