// depthwise_conv_rows_f32 (kernels/conv_tiles.h) against a float64 reference of one channel's
// convolution (taps in the padding skipped), over kernel sizes 1-5, strides 1-3, dilations 1-2,
// pads 0-2, maps from 1x1 to 33x30, row ranges that start and stop inside the map, and rows
// written with a row pitch wider than the output. The input plane ends where a PROT_NONE page
// begins (x_avail = h * w, as for the last plane of a tensor): any read past it faults; the
// output keeps the documented slack and nothing past it is written. Under TIERJIT_ISA=avx2 the
// same cases run the 8-lane path (CTest avx2_kernels).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "kernels/conv_tiles.h"

namespace tierjit::kernels {
namespace {

// `n` floats whose end touches an inaccessible page.
class GuardedFloats {
 public:
  explicit GuardedFloats(int64_t n) {
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t bytes = static_cast<size_t>(n) * sizeof(float);
    data_pages_ = (bytes + page_ - 1) / page_;
    base_ = mmap(nullptr, (data_pages_ + 1) * page_, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(base_, MAP_FAILED);
    mprotect(static_cast<char*>(base_) + data_pages_ * page_, page_, PROT_NONE);
    data_ = reinterpret_cast<float*>(static_cast<char*>(base_) + data_pages_ * page_ - bytes);
  }
  ~GuardedFloats() { munmap(base_, (data_pages_ + 1) * page_); }
  float* data() { return data_; }

 private:
  size_t page_ = 0, data_pages_ = 0;
  void* base_ = nullptr;
  float* data_ = nullptr;
};

struct Geometry {
  int64_t h, w, k, s, p, d;
};

TEST(DepthwiseTiles, MatchReferenceWithoutReadingPastThePlane) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  int checked = 0;
  for (Geometry g : {Geometry{1, 1, 1, 1, 0, 1}, {1, 1, 3, 1, 1, 1}, {2, 3, 3, 2, 1, 1},
                     {5, 5, 3, 1, 1, 1}, {7, 9, 5, 2, 2, 1}, {14, 14, 3, 1, 1, 1},
                     {28, 28, 5, 2, 2, 1}, {28, 28, 3, 2, 1, 1}, {33, 30, 3, 3, 1, 1},
                     {17, 40, 3, 1, 2, 2}, {16, 16, 5, 1, 2, 1}, {9, 70, 5, 2, 2, 2},
                     {12, 12, 1, 2, 0, 1}}) {
    const int64_t oh = (g.h + 2 * g.p - g.d * (g.k - 1) - 1) / g.s + 1;
    const int64_t ow = (g.w + 2 * g.p - g.d * (g.k - 1) - 1) / g.s + 1;
    if (oh < 1 || ow < 1) continue;
    GuardedFloats x(g.h * g.w);
    for (int64_t i = 0; i < g.h * g.w; ++i) x.data()[i] = u(rng);
    std::vector<float> wt(static_cast<size_t>(g.k * g.k));
    for (float& v : wt) v = u(rng);
    for (auto [oh0, oh1, pitch] : {std::tuple<int64_t, int64_t, int64_t>{0, oh, ow},
                                   {oh / 2, oh, ow + 3}, {0, (oh + 1) / 2, ow}}) {
      if (oh1 <= oh0) continue;
      const float poison = std::numeric_limits<float>::quiet_NaN();
      std::vector<float> y(static_cast<size_t>((oh1 - oh0 - 1) * pitch + ow + kDepthwiseRowSlack + 8),
                           poison);
      depthwise_conv_rows_f32(x.data(), wt.data(), y.data(), g.h, g.w, g.k, g.k, g.s, g.s, g.p,
                              g.p, g.d, g.d, ow, oh0, oh1, pitch, g.h * g.w);
      for (int64_t oy = oh0; oy < oh1; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          double want = 0;
          for (int64_t ky = 0; ky < g.k; ++ky)
            for (int64_t kx = 0; kx < g.k; ++kx) {
              const int64_t iy = oy * g.s - g.p + ky * g.d, ix = ox * g.s - g.p + kx * g.d;
              if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w)
                want += double(wt[ky * g.k + kx]) * x.data()[iy * g.w + ix];
            }
          const float got = y[(oy - oh0) * pitch + ox];
          ASSERT_NEAR(got, want, 1e-5 * (1 + std::fabs(want)))
              << "h " << g.h << " w " << g.w << " k " << g.k << " s " << g.s << " p " << g.p
              << " d " << g.d << " rows " << oh0 << ".." << oh1 << " at " << oy << "," << ox;
        }
      // Nothing past the documented slack.
      for (size_t i = y.size() - 8; i < y.size(); ++i) EXPECT_TRUE(std::isnan(y[i])) << i;
      ++checked;
    }
  }
  EXPECT_GT(checked, 30);
}

// depthwise_conv_flat_f32 (stride 1, output as wide as the input): nc channels against the
// float64 reference (taps in the padding skipped), maps 1x1 to 13x17 and 3x40, kernels 1-5 with
// dilations 1-2 and begin pads from 0 to all of the reach, row ranges, a channel pitch past the
// slack; the input ends at a PROT_NONE page. A channel with a NaN weight equals the reference
// that skips padded taps (the per-row tile computes it); the others are unaffected.
TEST(DepthwiseTiles, FlatMatchesReferenceAndSkipsPaddedTapsForNonFiniteWeights) {
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  struct Flat {
    int64_t nc, h, w, kh, kw, ph, pw, dh, dw;
  };
  int checked = 0;
  for (Flat g : {Flat{1, 1, 1, 1, 1, 0, 0, 1, 1}, {3, 7, 7, 5, 5, 2, 2, 1, 1},
                 {17, 8, 8, 3, 3, 1, 1, 1, 1}, {2, 14, 14, 5, 5, 2, 2, 1, 1},
                 {4, 13, 17, 3, 3, 2, 0, 2, 1}, {5, 5, 9, 3, 5, 1, 4, 1, 2},
                 {3, 3, 40, 3, 3, 1, 2, 1, 1}, {2, 6, 5, 3, 3, 0, 1, 1, 1}}) {
    const int64_t oh = g.h + 2 * g.ph - g.dh * (g.kh - 1);
    if (oh < 1) continue;
    const int64_t taps = g.kh * g.kw, plane = g.h * g.w;
    GuardedFloats x(g.nc * plane);
    for (int64_t i = 0; i < g.nc * plane; ++i) x.data()[i] = u(rng);
    std::vector<float> wt(static_cast<size_t>(g.nc * taps));
    for (float& v : wt) v = u(rng);
    if (g.nc >= 3) wt[static_cast<size_t>(taps + 0)] = std::numeric_limits<float>::quiet_NaN();
    // A short item first, then the whole map (the kernel's per-thread masks grow), then a
    // shorter one again (a prefix of them).
    for (auto [oh0, oh1] : {std::pair<int64_t, int64_t>{oh / 2, oh}, {0, oh}, {0, (oh + 1) / 2}}) {
      if (oh1 <= oh0) continue;
      const int64_t ldy = (oh1 - oh0) * g.w + kDepthwiseFlatSlack + 3;
      std::vector<float> y(static_cast<size_t>(g.nc * ldy + 8), -7.f);
      depthwise_conv_flat_f32(x.data(), wt.data(), y.data(), g.nc, g.h, g.w, g.kh, g.kw, g.ph, g.pw,
                              g.dh, g.dw, oh0, oh1, ldy, g.nc * plane);
      for (int64_t c = 0; c < g.nc; ++c)
        for (int64_t oy = oh0; oy < oh1; ++oy)
          for (int64_t ox = 0; ox < g.w; ++ox) {
            double want = 0;
            for (int64_t ky = 0; ky < g.kh; ++ky)
              for (int64_t kx = 0; kx < g.kw; ++kx) {
                const int64_t iy = oy - g.ph + ky * g.dh, ix = ox - g.pw + kx * g.dw;
                if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w)
                  want += double(wt[c * taps + ky * g.kw + kx]) * x.data()[c * plane + iy * g.w + ix];
              }
            const float got = y[c * ldy + (oy - oh0) * g.w + ox];
            if (std::isnan(want)) {
              EXPECT_TRUE(std::isnan(got)) << c << " " << oy << "," << ox;
              continue;
            }
            ASSERT_NEAR(got, want, 1e-5 * (1 + std::fabs(want)))
                << "nc " << g.nc << " " << g.h << "x" << g.w << " k " << g.kh << "x" << g.kw
                << " pads " << g.ph << "," << g.pw << " d " << g.dh << "," << g.dw << " rows "
                << oh0 << ".." << oh1 << " at channel " << c << " " << oy << "," << ox;
          }
      // Past each channel's slack, and past the last channel: untouched.
      for (int64_t c = 0; c < g.nc; ++c)
        for (int64_t i = (oh1 - oh0) * g.w + kDepthwiseFlatSlack; i < ldy; ++i)
          EXPECT_EQ(y[c * ldy + i], -7.f) << c << " " << i;
      for (size_t i = y.size() - 8; i < y.size(); ++i) EXPECT_EQ(y[i], -7.f) << i;
      ++checked;
    }
  }
  EXPECT_GT(checked, 15);
}

// A NaN weight whose tap row lies in the padding for an output row does not reach that row (the
// tap is skipped there), and reaches every row where it reads the image; on narrow maps (one
// vector per row, rows summed together) as on wide ones.
TEST(DepthwiseTiles, NaNWeightOnlyReachesRowsWhereItsTapReadsTheImage) {
  for (int64_t w : {5, 40}) {
    const int64_t h = 5;
    std::vector<float> x(static_cast<size_t>(h * w), 1.f);
    std::vector<float> wt(9, 0.5f);
    wt[1] = std::numeric_limits<float>::quiet_NaN();  // tap (ky 0, kx 1): row above the output's
    std::vector<float> y(static_cast<size_t>(h * w + kDepthwiseRowSlack), 0.f);
    depthwise_conv_rows_f32(x.data(), wt.data(), y.data(), h, w, 3, 3, 1, 1, 1, 1, 1, 1, w, 0, h,
                            w, h * w);
    for (int64_t ox = 0; ox < w; ++ox) {
      EXPECT_FALSE(std::isnan(y[ox])) << "w " << w << " row 0 col " << ox;
      for (int64_t oy = 1; oy < h; ++oy)
        EXPECT_TRUE(std::isnan(y[oy * w + ox])) << "w " << w << " row " << oy << " col " << ox;
    }
    // Row 0, an interior column: taps of rows 0 and 1, 6 x 0.5.
    EXPECT_FLOAT_EQ(y[2], 3.f) << "w " << w;
  }
}

// depthwise_conv_cblock_f32: nc channels at once (1, 3, a full block, and nc past the block,
// which is clamped to it), the same geometries as above, row ranges inside the map and a row
// pitch wider than the rows. The last channel's plane ends at a PROT_NONE page; exactly the
// channels' rows are written (the floats between and after them keep their poison).
TEST(DepthwiseTiles, ChannelBlockMatchesReferenceAndWritesOnlyItsRows) {
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  const int64_t block = depthwise_channel_block();
  ASSERT_TRUE(block == 8 || block == 16);
  int checked = 0;
  for (Geometry g : {Geometry{1, 1, 1, 1, 0, 1}, {1, 1, 3, 1, 1, 1}, {2, 3, 3, 2, 1, 1},
                     {5, 5, 3, 1, 1, 1}, {7, 7, 5, 1, 2, 1}, {7, 9, 5, 2, 2, 1},
                     {14, 14, 3, 1, 1, 1}, {14, 14, 5, 2, 2, 1}, {17, 20, 3, 3, 1, 1},
                     {10, 11, 3, 1, 2, 2}, {12, 12, 1, 2, 0, 1}}) {
    const int64_t oh = (g.h + 2 * g.p - g.d * (g.k - 1) - 1) / g.s + 1;
    const int64_t ow = (g.w + 2 * g.p - g.d * (g.k - 1) - 1) / g.s + 1;
    if (oh < 1 || ow < 1) continue;
    for (int64_t nc : {int64_t{1}, int64_t{3}, block, block + 5}) {
      const int64_t used = std::min(nc, block);
      GuardedFloats x(used * g.h * g.w);
      for (int64_t i = 0; i < used * g.h * g.w; ++i) x.data()[i] = u(rng);
      std::vector<float> wt(static_cast<size_t>(used * g.k * g.k));
      for (float& v : wt) v = u(rng);
      // A short item first, then the whole map (the kernel's per-thread masks grow), then a
    // shorter one again (a prefix of them).
    for (auto [oh0, oh1] : {std::pair<int64_t, int64_t>{oh / 2, oh}, {0, oh}, {0, (oh + 1) / 2}}) {
        if (oh1 <= oh0) continue;
        const int64_t ldy = (oh1 - oh0) * ow + 3;
        const float poison = std::numeric_limits<float>::quiet_NaN();
        std::vector<float> y(static_cast<size_t>(used * ldy + 8), poison);
        depthwise_conv_cblock_f32(x.data(), wt.data(), y.data(), nc, g.h, g.w, g.k, g.k, g.s, g.s,
                                  g.p, g.p, g.d, g.d, ow, oh0, oh1, ldy);
        for (int64_t c = 0; c < used; ++c) {
          const float* xc = x.data() + c * g.h * g.w;
          const float* wc = wt.data() + c * g.k * g.k;
          for (int64_t oy = oh0; oy < oh1; ++oy)
            for (int64_t ox = 0; ox < ow; ++ox) {
              double want = 0;
              for (int64_t ky = 0; ky < g.k; ++ky)
                for (int64_t kx = 0; kx < g.k; ++kx) {
                  const int64_t iy = oy * g.s - g.p + ky * g.d, ix = ox * g.s - g.p + kx * g.d;
                  if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w)
                    want += double(wc[ky * g.k + kx]) * xc[iy * g.w + ix];
                }
              const float got = y[static_cast<size_t>(c * ldy + (oy - oh0) * ow + ox)];
              ASSERT_NEAR(got, want, 1e-5 * (1 + std::fabs(want)))
                  << "nc " << nc << " c " << c << " h " << g.h << " w " << g.w << " k " << g.k
                  << " s " << g.s << " p " << g.p << " d " << g.d << " rows " << oh0 << ".."
                  << oh1 << " at " << oy << "," << ox;
            }
          for (int64_t i = (oh1 - oh0) * ow; i < ldy; ++i)
            EXPECT_TRUE(std::isnan(y[static_cast<size_t>(c * ldy + i)])) << "c " << c << " " << i;
        }
        for (size_t i = static_cast<size_t>(used * ldy); i < y.size(); ++i)
          EXPECT_TRUE(std::isnan(y[i])) << i;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 80);
}

// The channel block with a NaN weight in one channel: it reaches that channel's rows where its
// tap reads the image and no other channel (lanes are independent); a padded tap is skipped.
TEST(DepthwiseTiles, ChannelBlockNaNWeightStaysInItsChannelAndOffThePadding) {
  const int64_t h = 5, w = 5, nc = 3;
  std::vector<float> x(static_cast<size_t>(nc * h * w), 1.f);
  std::vector<float> wt(static_cast<size_t>(nc * 9), 0.5f);
  wt[9 + 1] = std::numeric_limits<float>::quiet_NaN();  // channel 1, tap (ky 0, kx 1)
  std::vector<float> y(static_cast<size_t>(nc * h * w), 0.f);
  depthwise_conv_cblock_f32(x.data(), wt.data(), y.data(), nc, h, w, 3, 3, 1, 1, 1, 1, 1, 1, w, 0,
                            h, h * w);
  for (int64_t c = 0; c < nc; ++c)
    for (int64_t oy = 0; oy < h; ++oy)
      for (int64_t ox = 0; ox < w; ++ox) {
        const float v = y[static_cast<size_t>(c * h * w + oy * w + ox)];
        EXPECT_EQ(std::isnan(v), c == 1 && oy > 0) << "c " << c << " row " << oy << " col " << ox;
      }
  EXPECT_FLOAT_EQ(y[2], 3.f);  // channel 0, row 0, an interior column: 6 taps x 0.5
}

}  // namespace
}  // namespace tierjit::kernels
