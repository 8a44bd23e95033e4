// Tier 0's direct convolution with a max pool after it (interp/kernels/direct_conv.h,
// MaxPoolAfter) against the same convolution stored whole and pooled by a scalar loop over ONNX
// MaxPool's definition with tier 0's fold (the window's taps in row-major order, `v > acc ? v :
// acc`, a NaN tap taken): bit for bit. Windows 2x2, 3x3, 2x1, 1x2 and 3x2; output rows and
// columns past the last whole window (odd sizes); images narrower and shorter than a window
// (one pooled row / column); plain inputs of 1 and 3 channels and blocked ones of 8-48 (several
// chunks of input channels); 8-40 output channels (a last group of one block); batches 1-5 on
// one and two threads; no activation, Relu and Clip (-1, 1) before the pool; NaN, infinities and
// -0 in the input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu_features.h"
#include "interp/kernels/direct_conv.h"
#include "support/cpu_load.h"

namespace tierjit::testing {
namespace {

using interp::nn::ActLayout;
using interp::nn::ConvGeometry;
using interp::nn::ConvPostOp;
using interp::nn::MaxPoolAfter;

constexpr float kInf = std::numeric_limits<float>::infinity();

struct Case {
  int64_t n = 1, c = 1, o = 16, h = 12, w = 12, k = 3, pad = 1;
  MaxPoolAfter pool{2, 2};
  ConvPostOp post;
  int threads = 1;
  bool special = false;  // NaN, +-inf and -0 among the inputs
};

ConvGeometry geometry(const Case& t) {
  ConvGeometry g;
  g.batch = t.n;
  g.in_channels = t.c;
  g.out_channels = t.o;
  g.in_spatial = {t.h, t.w};
  g.kernel = {t.k, t.k};
  g.strides = {1, 1};
  g.dilations = {1, 1};
  g.pad_begin = {t.pad, t.pad};
  g.pad_end = {t.pad, t.pad};
  g.out_spatial = {t.h + 2 * t.pad - t.k + 1, t.w + 2 * t.pad - t.k + 1};
  return g;
}

std::vector<float> random_vec(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& f : v) f = u(rng);
  return v;
}

// The pooled [N, O / 8, PH, PW, 8] of the unpooled blocked y [N, O / 8, OH, OW, 8]: ONNX MaxPool
// with windows t.pool at strides t.pool, no pads, folded as tier 0's kernel.
std::vector<float> pool_reference(const Case& t, const std::vector<float>& y, int64_t OH, int64_t OW) {
  const int64_t PH = OH / t.pool.kh, PW = OW / t.pool.kw, blocks = t.n * t.o / 8;
  std::vector<float> out(static_cast<size_t>(blocks * PH * PW * 8));
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t i = 0; i < PH; ++i)
      for (int64_t j = 0; j < PW; ++j)
        for (int64_t l = 0; l < 8; ++l) {
          float acc = 0;
          bool first = true;
          for (int64_t kh = 0; kh < t.pool.kh; ++kh)
            for (int64_t kw = 0; kw < t.pool.kw; ++kw) {
              const float v = y[static_cast<size_t>(((b * OH + i * t.pool.kh + kh) * OW + j * t.pool.kw + kw) * 8 + l)];
              acc = first || std::isnan(v) || v > acc ? v : acc;
              first = false;
            }
          out[static_cast<size_t>(((b * PH + i) * PW + j) * 8 + l)] = acc;
        }
  return out;
}

void check(const Case& t) {
  const ConvGeometry g = geometry(t);
  const ActLayout xl = t.c % 8 == 0 ? ActLayout::kBlocked8 : ActLayout::kPlain;
  ASSERT_TRUE(interp::nn::direct_conv_supports(g, xl, ActLayout::kBlocked8, t.post));
  const int64_t OH = g.out_spatial[0], OW = g.out_spatial[1];
  std::vector<float> x = random_vec(static_cast<size_t>(t.n * t.c * t.h * t.w), 21, 1.f);
  if (t.special)
    for (size_t i = 5; i < x.size(); i += 17)
      x[i] = i % 4 == 1 ? std::numeric_limits<float>::quiet_NaN() : i % 4 == 2 ? kInf : i % 4 == 3 ? -kInf : -0.f;
  std::vector<float> w = random_vec(static_cast<size_t>(t.o * t.c * t.k * t.k), 22, 0.5f);
  const std::vector<float> bias = random_vec(static_cast<size_t>(t.o), 23, 1.f);
  if (t.special) w[3] = 0.f;  // -0 sums: 0 * -x
  std::vector<float> whole(static_cast<size_t>(t.n * t.o * OH * OW), -7.f);
  interp::nn::direct_conv_f32(g, x.data(), xl, w.data(), nullptr, bias.data(), whole.data(), t.threads, t.post);
  const std::vector<float> want = pool_reference(t, whole, OH, OW);
  std::vector<float> got(want.size() + 8, -99.f);  // 8 guard floats: nothing written past the end
  const uint64_t pooled = interp::nn::direct_conv_pool_runs();
  interp::nn::direct_conv_f32(g, x.data(), xl, w.data(), nullptr, bias.data(), got.data(), t.threads, t.post, &t.pool);
  EXPECT_EQ(interp::nn::direct_conv_pool_runs(), pooled + 1);
  for (size_t i = want.size(); i < got.size(); ++i) ASSERT_EQ(got[i], -99.f) << "written past the output";
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0 && ++bad <= 5)
      ADD_FAILURE() << "element " << i << ": got " << got[i] << ", want " << want[i] << " (bits differ)";
}

class DirectConvPool : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kernels::cpu_has_avx512f()) GTEST_SKIP() << "AVX2 CPUs only (AVX-512 chains run channels-last)";
    support::override_foreign_busy_cores(0);
  }
  void TearDown() override { support::override_foreign_busy_cores(-1); }
};

const ConvPostOp kRelu{ConvPostOp::Kind::kClip, 0.f, kInf};
const ConvPostOp kClip{ConvPostOp::Kind::kClip, -1.f, 1.f};

// convnet_small's two layers (1 -> 16 at 28x28 and 16 -> 32 at 14x14, Relu, 2x2) and
// neighbours: odd sizes leave a row and a column no window reads.
TEST_F(DirectConvPool, TwoByTwoAfterRelu) {
  for (auto [c, o, h, w] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{1, 16, 28, 28}, {16, 32, 14, 14},
                            {1, 16, 27, 29}, {16, 32, 15, 13}, {8, 8, 7, 9}, {3, 24, 10, 6}}) {
    for (int threads : {1, 2})
      for (int64_t n : {1, 2, 5}) {
        Case t;
        t.c = c, t.o = o, t.h = h, t.w = w, t.n = n, t.threads = threads, t.post = kRelu;
        SCOPED_TRACE(::testing::Message() << c << " -> " << o << " at " << h << "x" << w << ", n " << n
                                          << ", threads " << threads);
        check(t);
      }
  }
}

// Without an activation the pool folds NaN, infinities and signed zeros as tier 0's MaxPool;
// after a Clip nothing is NaN (its lower bound) and -0 survives bounds below 0.
TEST_F(DirectConvPool, SpecialValuesWithAndWithoutActivations) {
  for (const ConvPostOp& post : {ConvPostOp{}, kRelu, kClip})
    for (auto [c, o] : {std::pair<int64_t, int64_t>{1, 16}, {16, 32}, {8, 40}})
      for (int threads : {1, 2}) {
        Case t;
        t.c = c, t.o = o, t.h = 13, t.w = 17, t.n = 3, t.threads = threads, t.post = post;
        t.special = true;
        SCOPED_TRACE(::testing::Message() << c << " -> " << o << ", post " << static_cast<int>(post.kind)
                                          << " [" << post.alpha << ", " << post.beta << "], threads " << threads);
        check(t);
      }
}

// Other windows that tile the output (strides equal to the kernel), windows as tall or wide
// as the output (one pooled row or column), 1x1 and 5x5 convolutions, several chunks of input
// channels (48 channels x 9 taps > the 256 channel-taps of a chunk).
TEST_F(DirectConvPool, WindowsKernelsAndChunks) {
  struct W { int64_t kh, kw; };
  for (W p : {W{3, 3}, W{2, 1}, W{1, 2}, W{3, 2}, W{1, 1}})
    for (auto [c, k, pad] : {std::tuple<int64_t, int64_t, int64_t>{16, 3, 1}, {1, 5, 2}, {8, 1, 0}, {48, 3, 1}})
      for (int threads : {1, 2}) {
        Case t;
        t.c = c, t.o = 24, t.k = k, t.pad = pad, t.h = 11, t.w = 10, t.n = 2, t.threads = threads;
        t.pool = MaxPoolAfter{p.kh, p.kw};
        t.post = kRelu;
        SCOPED_TRACE(::testing::Message() << "window " << p.kh << "x" << p.kw << ", C " << c << ", kernel "
                                          << k << ", threads " << threads);
        check(t);
      }
  for (auto [h, w] : {std::pair<int64_t, int64_t>{2, 9}, {9, 2}, {3, 3}, {2, 2}, {40, 3}}) {
    Case t;
    t.c = 8, t.o = 16, t.h = h, t.w = w, t.n = 3, t.threads = 2;
    SCOPED_TRACE(::testing::Message() << h << "x" << w);
    check(t);
  }
}

// An output shorter or narrower than the window has no whole window: nothing is written.
TEST_F(DirectConvPool, NoWholeWindowWritesNothing) {
  Case t;
  t.c = 8, t.o = 16, t.h = 1, t.w = 9;  // OH = 1 < 2
  const ConvGeometry g = geometry(t);
  const std::vector<float> x = random_vec(static_cast<size_t>(t.c * t.h * t.w), 1, 1.f);
  const std::vector<float> w = random_vec(static_cast<size_t>(t.o * t.c * 9), 2, 1.f);
  std::vector<float> y(64, -5.f);
  interp::nn::direct_conv_f32(g, x.data(), ActLayout::kBlocked8, w.data(), nullptr, nullptr, y.data(), 2,
                              kRelu, &t.pool);
  for (float v : y) ASSERT_EQ(v, -5.f);
}

}  // namespace
}  // namespace tierjit::testing
