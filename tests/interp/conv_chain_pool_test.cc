// The conv chains' channels-last MaxPool (interp/kernels/conv_chain_pool.h) against tier 0's
// MaxPool kernel, bit for bit (NaN matches any NaN: the kernel's own scalar and vector paths
// keep different NaN taps), on both instruction sets (AVX2; AVX-512F where the CPU has it) at
// 1 and 2 threads: channel counts around the 8- and 16-lane vectors, 1-D / 2-D / 3-D, pads,
// strides, dilations, ceil_mode, windows with no in-bounds tap, NaN in every tap position,
// -0 / +0 ties, size-1 dims, kernels of more taps than the stack buffer.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "interp/kernels/conv_chain_pool.h"
#include "interp/kernels/nn_common.h"
#include "node_runner.h"

namespace tierjit::testing {
namespace {

using Attrs = std::vector<std::pair<std::string, ir::Attribute>>;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Values with many ties: small integers, -0 and +0, +-inf; a NaN every `nan_every` elements.
Tensor tie_heavy(const Shape& s, uint32_t seed, int64_t nan_every = 0) {
  Tensor t = Tensor::empty(DType::kFloat32, s);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(0, 11);
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const float table[12] = {-0.0f, 0.0f, -0.0f, 0.0f, 1.0f, -1.0f, 2.0f, -2.0f, 0.5f, -kInf, kInf, 3.0f};
  float* v = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = table[d(rng)];
  if (nan_every > 0)
    for (int64_t i = seed % nan_every; i < t.numel(); i += nan_every) v[i] = kNaN;
  return t;
}

std::vector<int64_t> ints_or(const Attrs& a, const std::string& name, std::vector<int64_t> def) {
  for (const auto& [k, v] : a)
    if (k == name) return v.ints;
  return def;
}

// [N, C, S...] <-> [N, S..., C].
std::vector<float> to_channels_last(const Tensor& t) {
  const int64_t n = t.dim(0), c = t.dim(1), s = t.numel() / std::max<int64_t>(1, n * c);
  std::vector<float> out(static_cast<size_t>(t.numel()));
  const float* x = t.data<float>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j)
      for (int64_t k = 0; k < s; ++k) out[(i * s + k) * c + j] = x[(i * c + j) * s + k];
  return out;
}

bool same(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// Runs tier 0's MaxPool on x with `attrs` and the channels-last pool on both instruction sets and
// 1 and 2 threads; expects equal results. Returns the reference (NCHW...).
Tensor check(const Tensor& x, const Attrs& attrs) {
  auto ref = run_node({ir::OpKind::MaxPool, {x}, 1, attrs, 12});
  EXPECT_TRUE(ref.ok()) << ref.status().message();
  if (!ref.ok()) return Tensor();
  const Tensor& want = (*ref)[0];
  const size_t r = x.rank() - 2;
  interp::nn::Window w;
  w.kernel = ints_or(attrs, "kernel_shape", {});
  w.strides = ints_or(attrs, "strides", std::vector<int64_t>(r, 1));
  w.dilations = ints_or(attrs, "dilations", std::vector<int64_t>(r, 1));
  const std::vector<int64_t> pads = ints_or(attrs, "pads", std::vector<int64_t>(2 * r, 0));
  w.pad_begin.assign(pads.begin(), pads.begin() + static_cast<int64_t>(r));
  w.pad_end.assign(pads.begin() + static_cast<int64_t>(r), pads.end());
  w.out.assign(want.shape().begin() + 2, want.shape().end());
  const std::vector<float> xc = to_channels_last(x), wc = to_channels_last(want);
  for (bool avx512 : {false, true})
    for (int threads : {1, 2}) {
      std::vector<float> y(wc.size(), 12345.0f);
      const bool ran512 = interp::max_pool_channels_last_isa(avx512, w, x.shape(), xc.data(), y.data(), threads);
      if (avx512 && !ran512) continue;  // no AVX-512F here: the AVX2 run covered it
      int64_t bad = 0;
      for (size_t i = 0; i < y.size(); ++i)
        if (!same(y[i], wc[i]) && bad++ < 3)
          ADD_FAILURE() << shape_to_string(x.shape()) << (avx512 ? " avx512" : " avx2") << " threads "
                        << threads << ": element " << i << " (channels-last) is " << y[i] << ", tier 0 has "
                        << wc[i];
      EXPECT_EQ(bad, 0);
    }
  return want;
}

Attrs pool(std::vector<int64_t> kernel, std::vector<int64_t> strides = {}, std::vector<int64_t> pads = {},
           std::vector<int64_t> dilations = {}, bool ceil_mode = false) {
  Attrs a{{"kernel_shape", attr_ints(kernel)}};
  if (!strides.empty()) a.push_back({"strides", attr_ints(strides)});
  if (!pads.empty()) a.push_back({"pads", attr_ints(pads)});
  if (!dilations.empty()) a.push_back({"dilations", attr_ints(dilations)});
  if (ceil_mode) a.push_back({"ceil_mode", attr_int(1)});
  return a;
}

constexpr int64_t kChannels[] = {1, 3, 8, 15, 16, 17, 32, 33, 64};

TEST(ChainPool, TwoDimensionalChannelCounts) {
  uint32_t seed = 1;
  for (int64_t c : kChannels) {
    check(tie_heavy({2, c, 7, 9}, seed++, 13), pool({2, 2}, {2, 2}));
    check(tie_heavy({1, c, 9, 8}, seed++, 17), pool({3, 3}, {2, 2}, {1, 1, 1, 1}));
    check(tie_heavy({2, c, 6, 7}, seed++), pool({3, 2}, {1, 2}, {1, 0, 2, 1}));
    check(tie_heavy({1, c, 8, 8}, seed++, 7), pool({5, 5}, {1, 1}, {2, 2, 2, 2}));  // 25 taps
  }
}

TEST(ChainPool, OneAndThreeDimensions) {
  uint32_t seed = 50;
  for (int64_t c : kChannels) {
    check(tie_heavy({3, c, 11}, seed++, 5), pool({3}, {2}, {1, 1}));
    check(tie_heavy({1, c, 10}, seed++), pool({2}, {2}));
    check(tie_heavy({1, c, 4, 5, 6}, seed++, 11), pool({2, 3, 2}, {1, 2, 2}, {1, 1, 0, 0, 1, 1}));
    check(tie_heavy({2, c, 3, 4, 4}, seed++, 19), pool({2, 2, 2}, {2, 2, 2}));
  }
}

TEST(ChainPool, DilationsAndCeilMode) {
  uint32_t seed = 100;
  for (int64_t c : {1, 8, 17, 33}) {
    check(tie_heavy({2, c, 9, 10}, seed++, 9), pool({2, 2}, {1, 1}, {1, 1, 1, 1}, {2, 3}));
    check(tie_heavy({1, c, 6, 6}, seed++, 9), pool({3, 3}, {2, 2}, {}, {}, true));
    check(tie_heavy({1, c, 7, 8}, seed++, 4), pool({3, 2}, {2, 3}, {2, 1, 1, 0}, {2, 2}, true));
    check(tie_heavy({1, c, 5, 6, 7}, seed++, 23), pool({2, 3, 2}, {2, 2, 3}, {1, 0, 1, 0, 1, 1}, {2, 1, 2}, true));
    check(tie_heavy({2, c, 13}, seed++, 3), pool({3}, {3}, {2, 1}, {2}, true));
  }
}

// Pads smaller than the kernel with a dilation can still leave a window no in-bounds tap: taps
// at -1 and 2 of an axis of size 2. Tier 0 gives the lowest float there.
TEST(ChainPool, WindowsOnlyInThePadding) {
  for (int64_t c : {1, 16, 17}) {
    Tensor y1 = check(tie_heavy({1, c, 2}, 7), pool({2}, {1}, {1, 1}, {3}));
    ASSERT_TRUE(y1.defined());
    ASSERT_EQ(y1.dim(2), 1);
    EXPECT_EQ(y1.data<float>()[0], std::numeric_limits<float>::lowest());
    Tensor y2 = check(tie_heavy({2, c, 5, 2}, 8, 3), pool({2, 2}, {1, 1}, {0, 1, 0, 1}, {1, 3}));
    ASSERT_TRUE(y2.defined());
    EXPECT_EQ(y2.data<float>()[0], std::numeric_limits<float>::lowest());
    check(tie_heavy({1, c, 2, 5, 2}, 9), pool({2, 1, 2}, {1, 2, 1}, {1, 0, 1, 1, 0, 1}, {3, 1, 3}));
  }
}

// A single NaN at each position of the image in turn: every window holding it gives NaN,
// whichever tap of the window it is.
TEST(ChainPool, NaNInEveryTap) {
  for (int64_t c : {1, 16, 17}) {
    for (int64_t pos = 0; pos < 5 * 6; ++pos) {
      Tensor x = tie_heavy({1, c, 5, 6}, 20 + static_cast<uint32_t>(pos));
      for (int64_t ch = 0; ch < c; ch += 2) x.data<float>()[ch * 30 + pos] = kNaN;
      Tensor y = check(x, pool({3, 3}, {1, 1}, {1, 1, 1, 1}));
      ASSERT_TRUE(y.defined());
      const int64_t h = pos / 6, w = pos % 6;
      for (int64_t oh = std::max<int64_t>(0, h - 1); oh <= std::min<int64_t>(4, h + 1); ++oh)
        for (int64_t ow = std::max<int64_t>(0, w - 1); ow <= std::min<int64_t>(5, w + 1); ++ow)
          EXPECT_TRUE(std::isnan(y.data<float>()[oh * 6 + ow])) << pos << " " << oh << " " << ow;
    }
  }
}

// Ties of -0 and +0: the first tap in row-major order wins (fold keeps the running value unless
// the tap is greater), in both orders.
TEST(ChainPool, SignedZeroTies) {
  for (int64_t c : {1, 8, 16, 17}) {
    Tensor x = Tensor::empty(DType::kFloat32, {1, c, 2, 2});
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < 4; ++i) x.data<float>()[ch * 4 + i] = ((ch + i) % 2) ? 0.0f : -0.0f;
    Tensor y = check(x, pool({2, 2}));
    ASSERT_TRUE(y.defined());
    for (int64_t ch = 0; ch < c; ++ch) EXPECT_EQ(std::signbit(y.data<float>()[ch]), ch % 2 == 0) << ch;
  }
}

TEST(ChainPool, SizeOneDims) {
  for (int64_t c : {1, 3, 16, 17}) {
    check(tie_heavy({1, c, 1, 1}, 30), pool({1, 1}));
    check(tie_heavy({1, c, 1, 7}, 31, 4), pool({1, 3}, {1, 2}, {0, 1, 0, 1}));
    check(tie_heavy({3, c, 7, 1}, 32, 4), pool({2, 1}, {1, 1}));
    check(tie_heavy({1, c, 1}, 33), pool({1}));
    check(tie_heavy({1, c, 1, 1, 5}, 34, 6), pool({1, 1, 2}));
    check(tie_heavy({1, c, 6, 5}, 35, 6), pool({1, 1}, {2, 3}));
  }
}

// More taps than the stack buffer (7 x 7 x 7 = 343) and a batch large enough for 2 threads.
TEST(ChainPool, LargeKernelsAndBatches) {
  check(tie_heavy({1, 3, 8, 8, 8}, 40, 101), pool({7, 7, 7}, {1, 1, 1}, {3, 3, 3, 3, 3, 3}));
  check(tie_heavy({1, 17, 9, 9, 9}, 41, 211), pool({7, 7, 7}, {2, 2, 2}));
  check(tie_heavy({8, 16, 28, 28}, 42, 997), pool({2, 2}, {2, 2}));
  check(tie_heavy({2, 64, 56, 56}, 43, 1999), pool({3, 3}, {2, 2}, {1, 1, 1, 1}));
}

}  // namespace
}  // namespace tierjit::testing
