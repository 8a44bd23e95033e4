// Tier 0's direct convolution (interp/kernels/direct_conv.h) against a float64 loop over ONNX
// Conv's definition: plain inputs of 1-5 channels and blocked ones of 8-136 (several chunks of
// input channels, a last one partial), 8-72 output channels (a last group of one block), kernels
// 1x1 to 5x5 and non-square, strides 2-3 and dilations 2, pads of 0-2 on either side, images
// from 1x1 to 29x31 (pixel counts not a multiple of the 6-pixel tile, rows narrower than a
// tile), batches of 1-3, one and two threads, Relu / Clip post-ops and the residual sum, no
// bias, NaN and infinities; what it declines; and weights fed per call.
#include "interp/kernels/direct_conv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu_features.h"
#include "support/cpu_load.h"

namespace tierjit::testing {
namespace {

using interp::nn::ActLayout;
using interp::nn::ConvGeometry;
using interp::nn::ConvPostOp;

struct Case {
  int64_t n = 1, c = 1, o = 16, h = 7, w = 9, kh = 3, kw = 3;
  int64_t pt = 1, pl = 1, pb = 1, pr = 1;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  bool blocked = false, bias = true;
  ConvPostOp post;
  int threads = 1;
};

ConvGeometry geometry(const Case& k) {
  ConvGeometry g;
  g.batch = k.n;
  g.in_channels = k.c;
  g.out_channels = k.o;
  g.in_spatial = {k.h, k.w};
  g.kernel = {k.kh, k.kw};
  g.strides = {k.sh, k.sw};
  g.dilations = {k.dh, k.dw};
  g.pad_begin = {k.pt, k.pl};
  g.pad_end = {k.pb, k.pr};
  g.out_spatial = {(k.h + k.pt + k.pb - k.dh * (k.kh - 1) - 1) / k.sh + 1,
                   (k.w + k.pl + k.pr - k.dw * (k.kw - 1) - 1) / k.sw + 1};
  return g;
}

std::vector<float> random_vec(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& f : v) f = u(rng);
  return v;
}

// Plain [N, C, H, W] -> [N, C / 8, H, W, 8].
std::vector<float> to_blocked(const std::vector<float>& x, int64_t n, int64_t c, int64_t hw) {
  std::vector<float> y(x.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p) y[static_cast<size_t>(((i * (c / 8) + ch / 8) * hw + p) * 8 + ch % 8)] = x[static_cast<size_t>((i * c + ch) * hw + p)];
  return y;
}

// y[n, o, oh, ow] = post(bias[o] + sum over c, kh, kw of x[n, c, oh * sh + kh * dh - pt, ow * sw
// + kw * dw - pl] * w[o, c, kh, kw] (+ residual[n, o, oh, ow] with post.sum)) in float64 (taps in
// the padding read 0), as ONNX Conv defines it. mag: the sum of the terms' magnitudes (the scale
// of a float32 sum's rounding error).
std::vector<double> reference(const Case& k, const std::vector<float>& x, const std::vector<float>& w,
                              const std::vector<float>& bias, const std::vector<float>& residual,
                              std::vector<double>& mag) {
  const ConvGeometry g = geometry(k);
  const int64_t OH = g.out_spatial[0], OW = g.out_spatial[1];
  std::vector<double> y(static_cast<size_t>(k.n * k.o * OH * OW));
  mag.assign(y.size(), 0.0);
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t o = 0; o < k.o; ++o)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double s = k.bias ? bias[static_cast<size_t>(o)] : 0.0, m = std::fabs(s);
          for (int64_t c = 0; c < k.c; ++c)
            for (int64_t i = 0; i < k.kh; ++i)
              for (int64_t j = 0; j < k.kw; ++j) {
                const int64_t ih = oh * k.sh + i * k.dh - k.pt, iw = ow * k.sw + j * k.dw - k.pl;
                if (ih < 0 || ih >= k.h || iw < 0 || iw >= k.w) continue;
                const double t = static_cast<double>(x[static_cast<size_t>(((n * k.c + c) * k.h + ih) * k.w + iw)]) *
                                 w[static_cast<size_t>(((o * k.c + c) * k.kh + i) * k.kw + j)];
                s += t;
                m += std::fabs(t);
              }
          if (k.post.sum) s += residual[static_cast<size_t>(((n * k.o + o) * OH + oh) * OW + ow)];
          if (k.post.kind == ConvPostOp::Kind::kClip)
            s = std::isnan(s) ? k.post.alpha : std::min<double>(std::max<double>(s, k.post.alpha), k.post.beta);
          y[static_cast<size_t>(((n * k.o + o) * OH + oh) * OW + ow)] = s;
          mag[static_cast<size_t>(((n * k.o + o) * OH + oh) * OW + ow)] = m;
        }
  return y;
}

// Runs the case (inputs from `x`, or random with NaN / inf every `special` elements) and compares
// with the reference: |got - want| <= 1e-5 * (1 + |want|) + 1e-6 * (the terms' magnitudes), NaN
// where the reference has NaN.
void check(const Case& k, int64_t special = 0, const std::vector<float>* fixed_x = nullptr) {
  const ConvGeometry g = geometry(k);
  const ActLayout xl = k.blocked ? ActLayout::kBlocked8 : ActLayout::kPlain;
  ASSERT_TRUE(interp::nn::direct_conv_supports(g, xl, ActLayout::kBlocked8, k.post));
  const int64_t hw = k.h * k.w, OH = g.out_spatial[0], OW = g.out_spatial[1];
  std::vector<float> x = fixed_x ? *fixed_x : random_vec(static_cast<size_t>(k.n * k.c * hw), 11, 1.f);
  if (special > 0)
    for (size_t i = 3; i < x.size(); i += static_cast<size_t>(special))
      x[i] = i % 3 == 0 ? std::numeric_limits<float>::quiet_NaN()
                        : (i % 2 ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity());
  const std::vector<float> w = random_vec(static_cast<size_t>(k.o * k.c * k.kh * k.kw), 12, 0.5f);
  const std::vector<float> bias = random_vec(static_cast<size_t>(k.o), 13, 1.f);
  const std::vector<float> xin = k.blocked ? to_blocked(x, k.n, k.c, hw) : x;
  // With post.sum, y starts as the residual (random, in y's blocked layout).
  const std::vector<float> residual = random_vec(static_cast<size_t>(k.n * k.o * OH * OW), 14, 1.f);
  std::vector<float> y = k.post.sum ? to_blocked(residual, k.n, k.o, OH * OW)
                                    : std::vector<float>(residual.size(), -1234.f);
  const uint64_t runs = interp::nn::direct_conv_runs();
  interp::nn::direct_conv_f32(g, xin.data(), xl, w.data(), nullptr, k.bias ? bias.data() : nullptr,
                              y.data(), k.threads, k.post);
  EXPECT_EQ(interp::nn::direct_conv_runs(), runs + 1);
  std::vector<double> mag;
  const std::vector<double> want = reference(k, x, w, bias, residual, mag);
  const std::vector<float>& got = y;  // [N, O / 8, OH, OW, 8]
  int bad = 0;
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t o = 0; o < k.o; ++o)
      for (int64_t p = 0; p < OH * OW; ++p) {
        const double r = want[static_cast<size_t>((n * k.o + o) * OH * OW + p)];
        const double m0 = mag[static_cast<size_t>((n * k.o + o) * OH * OW + p)];
        const double m = std::isfinite(m0) ? m0 : 0.0;  // (NaN or inf terms: exact comparisons)
        const float v = got[static_cast<size_t>(((n * (k.o / 8) + o / 8) * OH * OW + p) * 8 + o % 8)];
        const bool ok = std::isnan(r) ? std::isnan(v)
                        : std::isinf(r) ? v == r
                                        : std::fabs(v - r) <= 1e-5 * (1 + std::fabs(r)) + 1e-6 * m;
        if (!ok && ++bad <= 5)
          ADD_FAILURE() << "image " << n << " channel " << o << " pixel " << p << ": got " << v
                        << ", want " << r;
      }
}

class DirectConv : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kernels::cpu_has_avx512f()) GTEST_SKIP() << "AVX2 CPUs only (AVX-512 chains run channels-last)";
    support::override_foreign_busy_cores(0);
  }
  void TearDown() override { support::override_foreign_busy_cores(-1); }
};

TEST_F(DirectConv, PlainInputsOfFewChannels) {
  for (int64_t c : {1, 3, 5})
    for (int64_t o : {8, 16, 24, 64}) {
      Case k;
      k.c = c;
      k.o = o;
      k.n = 2;
      k.h = 28 - c;
      k.w = 29 + c;
      SCOPED_TRACE("C " + std::to_string(c) + " O " + std::to_string(o));
      check(k);
    }
}

TEST_F(DirectConv, BlockedInputs) {
  for (int64_t c : {8, 16})
    for (int64_t o : {8, 32, 40}) {
      Case k;
      k.c = c;
      k.o = o;
      k.blocked = true;
      k.n = 3;
      k.h = 14;
      k.w = 13;
      SCOPED_TRACE("C " + std::to_string(c) + " O " + std::to_string(o));
      check(k);
    }
}

// Input channels summed a chunk at a time (3x3: chunks of 3 blocks; 5x5: one block), the last
// chunk partial; output groups of 16 and a last one of 8.
TEST_F(DirectConv, WideBlockedInputsInChunks) {
  for (int64_t c : {24, 64, 136})
    for (int64_t o : {16, 72})
      for (int64_t kk : {3, 5}) {
        Case k;
        k.c = c;
        k.o = o;
        k.kh = k.kw = kk;
        k.pt = k.pl = k.pb = k.pr = kk / 2;
        k.blocked = true;
        k.n = 2;
        k.h = 9;
        k.w = 10;
        k.threads = c == 64 ? 2 : 1;
        SCOPED_TRACE("C " + std::to_string(c) + " O " + std::to_string(o) + " kernel " + std::to_string(kk));
        check(k);
      }
}

TEST_F(DirectConv, StridesAndDilations) {
  struct G { int64_t h, w, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr; };
  const G shapes[] = {{13, 11, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1}, {14, 14, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
                      {7, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},   {1, 1, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
                      {12, 10, 2, 3, 3, 2, 1, 1, 0, 1, 2, 0}, {9, 16, 3, 3, 2, 1, 1, 1, 0, 0, 0, 0},
                      {11, 12, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2}, {10, 9, 3, 2, 1, 1, 1, 2, 1, 0, 0, 1},
                      {15, 13, 3, 3, 2, 2, 2, 2, 1, 2, 2, 1}};
  for (int64_t c : {16, 40})
    for (const G& s : shapes) {
      Case k;
      k.h = s.h; k.w = s.w; k.kh = s.kh; k.kw = s.kw; k.sh = s.sh; k.sw = s.sw; k.dh = s.dh; k.dw = s.dw;
      k.pt = s.pt; k.pl = s.pl; k.pb = s.pb; k.pr = s.pr;
      k.blocked = true;
      k.c = c;
      k.o = 24;
      k.n = 2;
      SCOPED_TRACE(std::to_string(s.h) + "x" + std::to_string(s.w) + " kernel " + std::to_string(s.kh) +
                   "x" + std::to_string(s.kw) + " strides " + std::to_string(s.sh) + "," +
                   std::to_string(s.sw) + " dilations " + std::to_string(s.dh) + "," +
                   std::to_string(s.dw) + " C " + std::to_string(c));
      check(k);
    }
}

// post.sum adds the residual y holds to the finished convolution in one float32 addition (then
// the Clip): the bits of tier 0's Conv then Add then Clip; a Clip post-op gives the clipped
// bits of the convolution alone.
TEST_F(DirectConv, ResidualSumAndClipKeepTheConvolutionsBits) {
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t c : {8, 64})
    for (const ConvPostOp& act : {ConvPostOp{}, ConvPostOp{ConvPostOp::Kind::kClip, 0.f, inf},
                                  ConvPostOp{ConvPostOp::Kind::kClip, -0.25f, 0.5f}}) {
      Case k;
      k.c = c;
      k.o = 24;
      k.blocked = true;
      k.n = 3;
      k.h = 8;
      k.w = 7;
      k.post = act;
      k.post.sum = true;
      k.threads = 2;
      SCOPED_TRACE("C " + std::to_string(c) + " clip " + std::to_string(act.kind == ConvPostOp::Kind::kClip));
      check(k, c == 8 ? 23 : 0);  // against the float64 reference
      // Bit for bit: conv alone, then + residual in float32, then the clip.
      const ConvGeometry g = geometry(k);
      const size_t out = static_cast<size_t>(k.n * k.o * 56);
      const std::vector<float> x = random_vec(static_cast<size_t>(k.n * c * 56), 31, 1.f);
      const std::vector<float> w = random_vec(static_cast<size_t>(k.o * c * 9), 32, 0.5f);
      const std::vector<float> r = random_vec(out, 33, 2.f);
      std::vector<float> alone(out), clipped(out), summed = r;
      interp::nn::direct_conv_f32(g, x.data(), ActLayout::kBlocked8, w.data(), nullptr, nullptr, alone.data(), 2, {});
      ConvPostOp only_act = act;
      interp::nn::direct_conv_f32(g, x.data(), ActLayout::kBlocked8, w.data(), nullptr, nullptr, clipped.data(), 1, only_act);
      interp::nn::direct_conv_f32(g, x.data(), ActLayout::kBlocked8, w.data(), nullptr, nullptr, summed.data(), 2, k.post);
      auto apply = [&](float v) {
        return act.kind == ConvPostOp::Kind::kClip ? std::min(std::max(v, act.alpha), act.beta) : v;
      };
      int bad = 0;
      for (size_t i = 0; i < out; ++i) {
        if (clipped[i] != apply(alone[i]) && ++bad <= 3) ADD_FAILURE() << "clip at " << i;
        if (summed[i] != apply(alone[i] + r[i]) && ++bad <= 3) ADD_FAILURE() << "sum at " << i;
      }
    }
}

TEST_F(DirectConv, KernelsPadsAndImageSizes) {
  struct G { int64_t h, w, kh, kw, pt, pl, pb, pr; };
  const G shapes[] = {{1, 1, 1, 1, 0, 0, 0, 0}, {1, 1, 3, 3, 1, 1, 1, 1}, {2, 7, 3, 3, 1, 1, 1, 1},
                      {5, 5, 5, 5, 2, 2, 2, 2}, {9, 4, 2, 3, 0, 1, 1, 1}, {6, 11, 3, 1, 2, 0, 0, 0},
                      {29, 31, 3, 3, 0, 0, 0, 0}, {3, 3, 3, 3, 0, 0, 0, 0}, {4, 5, 1, 5, 0, 2, 0, 2},
                      {7, 6, 3, 3, 0, 2, 1, 0}, {5, 8, 2, 2, 1, 0, 0, 1}};  // pads differing by side
  for (bool blocked : {false, true})
    for (const G& s : shapes) {
      Case k;
      k.h = s.h; k.w = s.w; k.kh = s.kh; k.kw = s.kw;
      k.pt = s.pt; k.pl = s.pl; k.pb = s.pb; k.pr = s.pr;
      k.blocked = blocked;
      k.c = blocked ? 8 : 2;
      k.o = 24;
      SCOPED_TRACE(std::to_string(s.h) + "x" + std::to_string(s.w) + " kernel " + std::to_string(s.kh) +
                   "x" + std::to_string(s.kw) + (blocked ? " blocked" : " plain"));
      check(k);
    }
}

// One input channel and nine taps (convnet_small's first layer) run a tile whose tap loop is
// unrolled whole: 3x3, 1x9 and 9x1 kernels, a last group of one block (24) and two groups (32),
// rows narrower than a tile and rows ending mid-tile, padded and not, a batch split over threads.
TEST_F(DirectConv, OneChannelNineTaps) {
  struct G { int64_t h, w, kh, kw, pad; };
  const G shapes[] = {{28, 28, 3, 3, 1}, {3, 5, 3, 3, 1}, {1, 1, 3, 3, 1}, {9, 13, 3, 3, 0},
                      {4, 17, 1, 9, 4}, {12, 2, 9, 1, 4}, {11, 9, 1, 9, 0}};
  for (const G& s : shapes)
    for (int64_t o : {16, 24, 32}) {
      Case k;
      k.n = 3;
      k.h = s.h; k.w = s.w; k.kh = s.kh; k.kw = s.kw;
      k.pt = k.pb = s.kh > 1 ? s.pad : 0;
      k.pl = k.pr = s.kw > 1 ? s.pad : 0;
      k.o = o;
      k.threads = o == 32 ? 2 : 1;
      k.post = {ConvPostOp::Kind::kClip, 0.f, std::numeric_limits<float>::infinity()};
      SCOPED_TRACE(std::to_string(s.h) + "x" + std::to_string(s.w) + " kernel " + std::to_string(s.kh) +
                   "x" + std::to_string(s.kw) + " to " + std::to_string(o));
      check(k);
    }
}

TEST_F(DirectConv, PostOpsBiasAndSpecialValues) {
  for (int variant = 0; variant < 4; ++variant) {
    Case k;
    k.c = variant % 2 ? 16 : 1;
    k.blocked = variant % 2 == 1;
    k.o = 16;
    k.h = 10;
    k.w = 11;
    k.bias = variant != 2;
    if (variant == 1) k.post = {ConvPostOp::Kind::kClip, 0.f, std::numeric_limits<float>::infinity()};  // Relu
    if (variant == 3) k.post = {ConvPostOp::Kind::kClip, -0.25f, 0.5f};
    SCOPED_TRACE("variant " + std::to_string(variant));
    check(k, 17);
  }
  // Relu maps NaN to +0 and -0 to +0, as tier 0's Relu.
  Case k;
  k.c = 1;
  k.o = 8;
  k.h = 1;
  k.w = 1;
  k.kh = k.kw = 1;
  k.pt = k.pl = k.pb = k.pr = 0;
  k.bias = false;
  k.post = {ConvPostOp::Kind::kClip, 0.f, std::numeric_limits<float>::infinity()};
  for (float v : {std::numeric_limits<float>::quiet_NaN(), -0.f}) {
    const ConvGeometry g = geometry(k);
    const std::vector<float> x{v};
    const std::vector<float> w(8, 1.f);
    std::vector<float> y(8, 7.f);
    interp::nn::direct_conv_f32(g, x.data(), ActLayout::kPlain, w.data(), nullptr, nullptr, y.data(), 1, k.post);
    for (float f : y) {
      EXPECT_EQ(f, 0.f);
      EXPECT_FALSE(std::signbit(f));
    }
  }
}

TEST_F(DirectConv, TwoThreadsGiveTheSameBits) {
  for (int64_t n : {1, 2, 3}) {
    Case k;
    k.n = n;
    k.c = 16;
    k.blocked = true;
    k.o = 32;
    k.h = 30;
    k.w = 30;
    const ConvGeometry g = geometry(k);
    const std::vector<float> x = random_vec(static_cast<size_t>(n * 16 * 900), 5, 1.f);
    const std::vector<float> w = random_vec(static_cast<size_t>(32 * 16 * 9), 6, 0.5f);
    const size_t out = static_cast<size_t>(n * 32 * 900);
    std::vector<float> y1(out), y2(out);
    interp::nn::direct_conv_f32(g, x.data(), ActLayout::kBlocked8, w.data(), nullptr, nullptr, y1.data(), 1, {});
    interp::nn::direct_conv_f32(g, x.data(), ActLayout::kBlocked8, w.data(), nullptr, nullptr, y2.data(), 2, {});
    EXPECT_EQ(y1, y2);
    Case t = k;
    t.n = n;
    t.threads = 2;
    check(t);
  }
}

TEST_F(DirectConv, DeclinesWhatItDoesNotCompute) {
  Case k;
  k.c = 8;
  const ConvGeometry ok = geometry(k);
  const ConvPostOp none;
  EXPECT_TRUE(interp::nn::direct_conv_supports(ok, ActLayout::kBlocked8, ActLayout::kBlocked8, none));
  EXPECT_TRUE(interp::nn::direct_conv_supports(ok, ActLayout::kPlain, ActLayout::kBlocked8, none));
  EXPECT_FALSE(interp::nn::direct_conv_supports(ok, ActLayout::kChannelsLast, ActLayout::kBlocked8, none));
  EXPECT_FALSE(interp::nn::direct_conv_supports(ok, ActLayout::kBlocked8, ActLayout::kPlain, none));
  auto with = [&](auto change) {
    ConvGeometry g = ok;
    change(g);
    return interp::nn::direct_conv_supports(g, ActLayout::kPlain, ActLayout::kBlocked8, none);
  };
  // Plain inputs: few channels at stride and dilation 1 only; blocked ones any stride.
  EXPECT_FALSE(with([](ConvGeometry& g) { g.strides = {2, 2}; g.out_spatial = {4, 5}; }));
  EXPECT_FALSE(with([](ConvGeometry& g) { g.dilations = {1, 2}; g.out_spatial = {7, 7}; }));
  ConvGeometry strided = ok;
  strided.strides = {2, 2};
  strided.out_spatial = {4, 5};
  EXPECT_TRUE(interp::nn::direct_conv_supports(strided, ActLayout::kBlocked8, ActLayout::kBlocked8, none));
  strided.out_spatial = {4, 4};  // not ONNX's floor((9 + 2 - 3) / 2) + 1 = 5
  EXPECT_FALSE(interp::nn::direct_conv_supports(strided, ActLayout::kBlocked8, ActLayout::kBlocked8, none));
  strided.out_spatial = {4, 5};
  strided.strides = {0, 2};
  EXPECT_FALSE(interp::nn::direct_conv_supports(strided, ActLayout::kBlocked8, ActLayout::kBlocked8, none));
  ConvGeometry dilated = ok;
  dilated.dilations = {2, 2};
  dilated.out_spatial = {5, 7};
  EXPECT_TRUE(interp::nn::direct_conv_supports(dilated, ActLayout::kBlocked8, ActLayout::kBlocked8, none));
  EXPECT_FALSE(with([](ConvGeometry& g) { g.group = 2; }));
  EXPECT_FALSE(with([](ConvGeometry& g) { g.out_channels = 12; }));
  EXPECT_TRUE(with([](ConvGeometry& g) { g.out_channels = 72; }));
  EXPECT_FALSE(with([](ConvGeometry& g) { g.in_channels = 17; }));
  EXPECT_FALSE(with([](ConvGeometry& g) { g.in_channels = 0; }));
  EXPECT_FALSE(with([](ConvGeometry& g) {  // a kernel larger than the padded image: no output
    g.kernel = {3, 13}; g.out_spatial = {7, -1};
  }));
  EXPECT_FALSE(with([](ConvGeometry& g) { g.kernel = {3, 12}; g.out_spatial = {7, 0}; }));
  EXPECT_FALSE(with([](ConvGeometry& g) {  // 1-D
    g.in_spatial = {9}; g.kernel = {3}; g.pad_begin = {1}; g.pad_end = {1}; g.out_spatial = {9};
  }));
  ConvGeometry blocked_odd = ok;
  blocked_odd.in_channels = 12;
  EXPECT_FALSE(interp::nn::direct_conv_supports(blocked_odd, ActLayout::kBlocked8, ActLayout::kBlocked8, none));
  ConvGeometry wide = ok;
  wide.in_channels = 512;
  EXPECT_TRUE(interp::nn::direct_conv_supports(wide, ActLayout::kBlocked8, ActLayout::kBlocked8, none));
  EXPECT_FALSE(interp::nn::direct_conv_supports(wide, ActLayout::kPlain, ActLayout::kBlocked8, none));
  // 1x1 kernels: few channels only.
  ConvGeometry one = ok;
  one.kernel = {1, 1};
  one.pad_begin = one.pad_end = {0, 0};
  one.in_channels = 16;
  EXPECT_TRUE(interp::nn::direct_conv_supports(one, ActLayout::kBlocked8, ActLayout::kBlocked8, none));
  one.in_channels = 24;
  EXPECT_FALSE(interp::nn::direct_conv_supports(one, ActLayout::kBlocked8, ActLayout::kBlocked8, none));
  ConvPostOp sum;
  sum.sum = true;
  EXPECT_TRUE(interp::nn::direct_conv_supports(ok, ActLayout::kPlain, ActLayout::kBlocked8, sum));
  ConvPostOp leaky{ConvPostOp::Kind::kLeakyRelu, 0.1f, 0.f};
  EXPECT_FALSE(interp::nn::direct_conv_supports(ok, ActLayout::kPlain, ActLayout::kBlocked8, leaky));
  interp::nn::set_direct_conv_enabled(false);
  EXPECT_FALSE(interp::nn::direct_conv_supports(ok, ActLayout::kPlain, ActLayout::kBlocked8, none));
  interp::nn::set_direct_conv_enabled(true);
}

TEST_F(DirectConv, BatchZeroWritesNothing) {
  Case k;
  k.n = 0;
  const ConvGeometry g = geometry(k);
  ASSERT_TRUE(interp::nn::direct_conv_supports(g, ActLayout::kPlain, ActLayout::kBlocked8, {}));
  const std::vector<float> w(16 * 9, 1.f);
  float sentinel = 3.f;
  interp::nn::direct_conv_f32(g, nullptr, ActLayout::kPlain, w.data(), nullptr, nullptr, &sentinel, 2, {});
  EXPECT_EQ(sentinel, 3.f);
}

// Constant weights are packed once and cached by the tensor; weights fed per call (no tensor)
// are packed per call: a second call with other weights at the same address gives their values.
TEST_F(DirectConv, ConstantAndFedWeights) {
  Case k;
  k.c = 3;
  k.o = 16;
  const ConvGeometry g = geometry(k);
  const std::vector<float> x = random_vec(static_cast<size_t>(3 * 63), 21, 1.f);
  Tensor wt = Tensor::empty(DType::kFloat32, {16, 3, 3, 3});
  const std::vector<float> w1 = random_vec(16 * 27, 22, 0.5f), w2 = random_vec(16 * 27, 23, 0.5f);
  std::vector<float> a(16 * 63), b(16 * 63), c(16 * 63);
  std::copy(w1.begin(), w1.end(), wt.data<float>());
  interp::nn::direct_conv_f32(g, x.data(), ActLayout::kPlain, wt.data<float>(), &wt, nullptr, a.data(), 1, {});
  interp::nn::direct_conv_f32(g, x.data(), ActLayout::kPlain, w1.data(), nullptr, nullptr, b.data(), 1, {});
  EXPECT_EQ(a, b);
  std::vector<float> fed = w1;
  interp::nn::direct_conv_f32(g, x.data(), ActLayout::kPlain, fed.data(), nullptr, nullptr, b.data(), 1, {});
  std::copy(w2.begin(), w2.end(), fed.begin());
  interp::nn::direct_conv_f32(g, x.data(), ActLayout::kPlain, fed.data(), nullptr, nullptr, c.data(), 1, {});
  EXPECT_NE(b, c);
  interp::nn::direct_conv_f32(g, x.data(), ActLayout::kPlain, w2.data(), nullptr, nullptr, b.data(), 1, {});
  EXPECT_EQ(b, c);
}

}  // namespace
}  // namespace tierjit::testing
