// direct_conv_rows_f32 (kernels/conv_tiles.h) against a float64 reference of ONNX Conv over
// kernel sizes 1-5 (and 1x3 / 3x1), strides 1-3, dilations 1-2, pads 0-2, channel counts 1-13
// (24 and 40: several chunks of input channels) and output channel counts 1-15 (every remainder
// of the 6-channel tile), maps from 1x1 to 31x37, row ranges that start and stop inside the map,
// and a channel pitch wider than the rows. The input ends where a PROT_NONE page begins (x_avail = c * h * w): any read past it
// faults; nothing past each channel's documented slack is written. Under TIERJIT_ISA=avx2 the
// same cases run the 8-lane path (CTest avx2_kernels).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <limits>
#include <random>
#include <tuple>
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

struct Case {
  int64_t c, m, h, w, kh, kw, s, p, d;
};

TEST(DirectConv, MatchesReferenceWithoutReadingOrWritingPastItsRoom) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  int checked = 0;
  for (Case g : {Case{1, 1, 1, 1, 1, 1, 1, 0, 1}, {1, 16, 28, 28, 3, 3, 1, 1, 1},
                 {16, 32, 14, 14, 3, 3, 1, 1, 1}, {3, 13, 31, 37, 3, 3, 2, 1, 1},
                 {5, 7, 9, 9, 5, 5, 1, 2, 1}, {2, 6, 12, 20, 3, 3, 3, 0, 1},
                 {4, 5, 17, 19, 3, 3, 1, 2, 2}, {13, 15, 8, 33, 1, 1, 2, 0, 1},
                 {3, 4, 10, 10, 1, 3, 1, 1, 1}, {3, 9, 10, 10, 3, 1, 1, 1, 1},
                 {6, 11, 7, 7, 3, 3, 1, 1, 1}, {2, 3, 2, 3, 3, 3, 1, 1, 1},
                 {8, 12, 16, 16, 2, 2, 2, 0, 1}, {1, 2, 5, 40, 5, 5, 2, 2, 1},
                 // Input channels in several chunks (each chunk's rows within 16 KiB), flat and
                 // per-row vectors.
                 {40, 7, 30, 30, 3, 3, 1, 1, 1}, {24, 5, 31, 37, 3, 3, 2, 1, 1},
                 // Several chunks with output rows that end inside a vector (38 and 28 columns:
                 // a row's last vector reaches into the next row).
                 {16, 13, 50, 40, 3, 3, 1, 0, 1}, {40, 6, 20, 30, 3, 3, 1, 0, 1}}) {
    const int64_t oh = (g.h + 2 * g.p - g.d * (g.kh - 1) - 1) / g.s + 1;
    const int64_t ow = (g.w + 2 * g.p - g.d * (g.kw - 1) - 1) / g.s + 1;
    ASSERT_GE(oh, 1);
    ASSERT_GE(ow, 1);
    GuardedFloats x(g.c * g.h * g.w);
    for (int64_t i = 0; i < g.c * g.h * g.w; ++i) x.data()[i] = u(rng);
    const int64_t k = g.c * g.kh * g.kw;
    std::vector<float> wt(static_cast<size_t>(g.m * k));
    for (float& v : wt) v = u(rng);
    for (auto [oh0, oh1, extra] : {std::tuple<int64_t, int64_t, int64_t>{0, oh, 0},
                                   {oh / 2, oh, 5}, {0, (oh + 1) / 2, 0}}) {
      if (oh1 <= oh0) continue;
      const int64_t ldy = (oh1 - oh0) * ow + kDirectConvSlack + extra;
      const float poison = std::numeric_limits<float>::quiet_NaN();
      std::vector<float> y(static_cast<size_t>(g.m * ldy + 8), poison);
      direct_conv_rows_f32(x.data(), wt.data(), y.data(), g.c, g.h, g.w, g.kh, g.kw, g.s, g.s,
                           g.p, g.p, g.d, g.d, ow, oh0, oh1, g.m, ldy, g.c * g.h * g.w);
      for (int64_t j = 0; j < g.m; ++j)
        for (int64_t oy = oh0; oy < oh1; ++oy)
          for (int64_t ox = 0; ox < ow; ++ox) {
            double want = 0, mag = 0;
            for (int64_t ic = 0; ic < g.c; ++ic)
              for (int64_t ky = 0; ky < g.kh; ++ky)
                for (int64_t kx = 0; kx < g.kw; ++kx) {
                  const int64_t iy = oy * g.s - g.p + ky * g.d, ix = ox * g.s - g.p + kx * g.d;
                  if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
                  const double t = double(wt[((j * g.c + ic) * g.kh + ky) * g.kw + kx]) *
                                   x.data()[(ic * g.h + iy) * g.w + ix];
                  want += t;
                  mag += std::fabs(t);
                }
            const float got = y[j * ldy + (oy - oh0) * ow + ox];
            ASSERT_NEAR(got, want, 1e-6 * (1 + mag))
                << "c " << g.c << " m " << g.m << " h " << g.h << " w " << g.w << " k " << g.kh
                << "x" << g.kw << " s " << g.s << " p " << g.p << " d " << g.d << " rows " << oh0
                << ".." << oh1 << " at channel " << j << " " << oy << "," << ox;
          }
      // Past each channel's slack (the extra pitch) and past the last channel: untouched.
      for (int64_t j = 0; j < g.m; ++j)
        for (int64_t i = (oh1 - oh0) * ow + kDirectConvSlack; i < ldy; ++i)
          EXPECT_TRUE(std::isnan(y[j * ldy + i])) << "channel " << j << " float " << i;
      for (size_t i = y.size() - 8; i < y.size(); ++i) EXPECT_TRUE(std::isnan(y[i])) << i;
      ++checked;
    }
  }
  EXPECT_GT(checked, 30);
}

// NaN in the input reaches exactly the outputs whose window reads it; an infinite weight gives
// inf/NaN only where its tap meets a nonzero input of that output's window.
TEST(DirectConv, NaNInputReachesOnlyTheWindowsThatReadIt) {
  const int64_t c = 2, m = 3, h = 6, w = 20;
  std::vector<float> x(static_cast<size_t>(c * h * w), 1.f);
  x[(1 * h + 2) * w + 10] = std::numeric_limits<float>::quiet_NaN();  // channel 1, (2, 10)
  std::vector<float> wt(static_cast<size_t>(m * c * 9), 0.25f);
  const int64_t ldy = h * w + kDirectConvSlack;
  std::vector<float> y(static_cast<size_t>(m * ldy), 0.f);
  direct_conv_rows_f32(x.data(), wt.data(), y.data(), c, h, w, 3, 3, 1, 1, 1, 1, 1, 1, w, 0, h, m,
                       ldy, c * h * w);
  for (int64_t j = 0; j < m; ++j)
    for (int64_t oy = 0; oy < h; ++oy)
      for (int64_t ox = 0; ox < w; ++ox) {
        const bool reads = std::abs(oy - 2) <= 1 && std::abs(ox - 10) <= 1;
        const float got = y[j * ldy + oy * w + ox];
        EXPECT_EQ(std::isnan(got), reads) << j << " " << oy << "," << ox;
        if (!reads && oy > 0 && oy < h - 1 && ox > 0 && ox < w - 1) {
          EXPECT_FLOAT_EQ(got, 2 * 9 * 0.25f);
        }
      }
}

}  // namespace
}  // namespace tierjit::kernels
