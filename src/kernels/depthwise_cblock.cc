// depthwise_conv_cblock_f32 (conv_tiles.h): a block of channels at once, one channel per vector
// lane. The input rows an item needs are transposed once into [row][column][lane] with the
// padding as zeros, each output row is summed up to 8 pixels at a time in registers (one weight
// vector per tap serves all of them), and the sums are transposed back into the channels' rows
// (both transposes L x L blocks in registers).
// On maps narrower than a vector every lane does work, where the per-channel rows of
// depthwise_tiles.cc fill 7 of 16 lanes on a 7 x 7 map.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/conv_tiles.h"
#include "kernels/cpu_features.h"
#include "kernels/vec_lanes.h"

namespace tierjit::kernels {

namespace {

struct CbArgs {
  const float* x;
  const float* wt;
  float* y;
  int64_t nc, h, w, kh, kw, sh, sw, ph, pw, dh, dw, ow, oh0, oh1, ldy;
};

// N output pixels (ox0 .. ox0 + N - 1 of one row) of all lanes: every tap summed (finite
// weights: a padded 0 adds exactly 0).
template <int L, int N>
inline __attribute__((always_inline)) void pixels(const float* rows, const float* wv, float* out,
                                                  int64_t row_floats, int64_t kh, int64_t kw,
                                                  int64_t sw, int64_t dh, int64_t dw) {
  typename VecF<L>::type acc[N] = {};
  for (int64_t ky = 0; ky < kh; ++ky) {
    const float* r = rows + ky * dh * row_floats;
    for (int64_t kx = 0; kx < kw; ++kx) {
      const typename VecF<L>::type wk = loadu<L>(wv + (ky * kw + kx) * L);
      const float* p = r + kx * dw * L;
#pragma GCC unroll 8
      for (int b = 0; b < N; ++b) acc[b] += wk * loadu<L>(p + b * sw * L);
    }
  }
#pragma GCC unroll 8
  for (int b = 0; b < N; ++b) storeu<L>(out + b * L, acc[b]);
}

// One butterfly stage of an L x L transpose: rows i and i + D (i & D = 0) trade their blocks of
// D lanes, which swaps bit D of every element's row and column index; the stages D = 1, 2, 4
// (, 8) together transpose (each is one two-source permute per row).
template <int L, int D, int... I>
inline __attribute__((always_inline)) typename VecF<L>::type butterfly_lo(
    typename VecF<L>::type a, typename VecF<L>::type b, std::integer_sequence<int, I...>) {
  return __builtin_shufflevector(a, b, ((I % (2 * D)) < D ? I : L + I - D)...);
}
template <int L, int D, int... I>
inline __attribute__((always_inline)) typename VecF<L>::type butterfly_hi(
    typename VecF<L>::type a, typename VecF<L>::type b, std::integer_sequence<int, I...>) {
  return __builtin_shufflevector(a, b, ((I % (2 * D)) < D ? I + D : L + I)...);
}
template <int L, int D>
inline __attribute__((always_inline)) void butterfly(typename VecF<L>::type (&r)[L]) {
  constexpr auto lanes = std::make_integer_sequence<int, L>{};
#pragma GCC unroll 16
  for (int i = 0; i < L; ++i) {
    if (i & D) continue;
    const typename VecF<L>::type lo = butterfly_lo<L, D>(r[i], r[i + D], lanes);
    r[i + D] = butterfly_hi<L, D>(r[i], r[i + D], lanes);
    r[i] = lo;
  }
}
// r[i][j] <- r[j][i].
template <int L>
inline __attribute__((always_inline)) void transpose(typename VecF<L>::type (&r)[L]) {
  butterfly<L, 1>(r);
  butterfly<L, 2>(r);
  butterfly<L, 4>(r);
  if constexpr (L == 16) butterfly<L, 8>(r);
}

// Input row iy of the nc channels (channel c's columns at src + c * plane + j, valid for j in
// [j0, j1)) into dst[j * L + c]: L x L blocks transposed in registers; lanes past nc are 0.
template <int L>
inline __attribute__((always_inline)) void lanes_from_planes(const float* src, float* dst,
                                                             int64_t nc, int64_t plane, int64_t j0,
                                                             int64_t j1) {
  for (int64_t j = j0; j < j1; j += L) {
    const int64_t n = std::min<int64_t>(L, j1 - j);
    typename VecF<L>::type r[L];
#pragma GCC unroll 16
    for (int c = 0; c < L; ++c) {
      r[c] = typename VecF<L>::type{};
      if (c >= nc) continue;
      if (n == L) {
        r[c] = loadu<L>(src + c * plane + j);
      } else {
        std::memcpy(&r[c], src + c * plane + j, static_cast<size_t>(n) * sizeof(float));
      }
    }
    transpose<L>(r);
    for (int64_t k = 0; k < n; ++k) storeu<L>(dst + (j + k) * L, r[k]);
  }
}

// y[c * ldy + p] = out[p * L + c] for c < nc, p < npix (out holds whole blocks of L pixels).
template <int L>
inline __attribute__((always_inline)) void planes_from_lanes(const float* out, float* y,
                                                             int64_t nc, int64_t npix, int64_t ldy) {
  for (int64_t p = 0; p < npix; p += L) {
    typename VecF<L>::type r[L];
#pragma GCC unroll 16
    for (int k = 0; k < L; ++k) r[k] = loadu<L>(out + (p + k) * L);
    transpose<L>(r);
    const int64_t n = std::min<int64_t>(L, npix - p);
    for (int64_t c = 0; c < nc; ++c) {
      if (n == L) storeu<L>(y + c * ldy + p, r[c]);
      else std::memcpy(y + c * ldy + p, &r[c], static_cast<size_t>(n) * sizeof(float));
    }
  }
}

template <int L>
inline __attribute__((always_inline)) void cblock(const CbArgs& a) {
  const int64_t taps = a.kh * a.kw;
  // Weights as [tap][lane], lanes past nc 0.
  thread_local std::vector<float> wv;
  wv.assign(static_cast<size_t>(taps * L), 0.f);
  bool finite = true;
  for (int64_t c = 0; c < a.nc; ++c)
    for (int64_t t = 0; t < taps; ++t) {
      const float v = a.wt[c * taps + t];
      wv[static_cast<size_t>(t * L + c)] = v;
      finite &= std::isfinite(v);
    }
  // Input rows [iy0, iy0 + rows) x columns [-pw, -pw + cols) x lanes; 0 outside the image.
  const int64_t iy0 = a.oh0 * a.sh - a.ph;
  const int64_t rows = (a.oh1 - 1 - a.oh0) * a.sh + (a.kh - 1) * a.dh + 1;
  const int64_t cols = (a.ow - 1) * a.sw + (a.kw - 1) * a.dw + 1;
  const int64_t row_floats = cols * L;
  thread_local std::vector<float> in;
  in.assign(static_cast<size_t>(rows * row_floats), 0.f);
  const int64_t j0 = std::clamp<int64_t>(a.pw, 0, cols), j1 = std::clamp<int64_t>(a.pw + a.w, j0, cols);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t iy = iy0 + r;
    if (iy < 0 || iy >= a.h) continue;
    // Channel c's column j: src[c * h * w + j].
    lanes_from_planes<L>(a.x + iy * a.w - a.pw, in.data() + r * row_floats, a.nc, a.h * a.w, j0,
                         j1);
  }
  // Sums per pixel [pixel][lane], then back to the channels' rows.
  const int64_t npix = (a.oh1 - a.oh0) * a.ow;
  thread_local std::vector<float> out;
  out.resize(static_cast<size_t>((npix + L - 1) / L * L * L));  // whole blocks of L pixels
  for (int64_t oy = a.oh0; oy < a.oh1; ++oy) {
    const float* r = in.data() + (oy - a.oh0) * a.sh * row_floats;
    float* o = out.data() + (oy - a.oh0) * a.ow * L;
    if (!finite) {
      // A NaN or infinite weight must not meet the padding: per pixel, only the taps inside.
      for (int64_t ox = 0; ox < a.ow; ++ox) {
        typename VecF<L>::type acc = {};
        for (int64_t ky = 0; ky < a.kh; ++ky) {
          const int64_t iy = oy * a.sh - a.ph + ky * a.dh;
          if (iy < 0 || iy >= a.h) continue;
          for (int64_t kx = 0; kx < a.kw; ++kx) {
            const int64_t ix = ox * a.sw - a.pw + kx * a.dw;
            if (ix < 0 || ix >= a.w) continue;
            acc += loadu<L>(wv.data() + (ky * a.kw + kx) * L) *
                   loadu<L>(r + ky * a.dh * row_floats + (ox * a.sw + kx * a.dw) * L);
          }
        }
        storeu<L>(o + ox * L, acc);
      }
      continue;
    }
    for (int64_t ox = 0; ox < a.ow; ox += 8) {
      const float* p = r + ox * a.sw * L;
#define TJ_DW_PIXELS(N)                                                                         \
  case N:                                                                                       \
    pixels<L, N>(p, wv.data(), o + ox * L, row_floats, a.kh, a.kw, a.sw, a.dh, a.dw);           \
    break;
      switch (std::min<int64_t>(8, a.ow - ox)) {
        TJ_DW_PIXELS(1)
        TJ_DW_PIXELS(2)
        TJ_DW_PIXELS(3)
        TJ_DW_PIXELS(4)
        TJ_DW_PIXELS(5)
        TJ_DW_PIXELS(6)
        TJ_DW_PIXELS(7)
        default:
          TJ_DW_PIXELS(8)
      }
#undef TJ_DW_PIXELS
    }
  }
  planes_from_lanes<L>(out.data(), a.y, a.nc, npix, a.ldy);
}

__attribute__((target("avx512f,fma"))) void cblock_avx512(const CbArgs& a) { cblock<16>(a); }
__attribute__((target("avx2,fma"))) void cblock_avx2(const CbArgs& a) { cblock<8>(a); }

const bool kHasAvx512 = cpu_has_avx512f();

}  // namespace

int64_t depthwise_channel_block() { return kHasAvx512 ? 16 : 8; }

void depthwise_conv_cblock_f32(const float* x, const float* wt, float* y, int64_t nc, int64_t h,
                               int64_t w, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                               int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t ow,
                               int64_t oh0, int64_t oh1, int64_t ldy) {
  if (oh1 <= oh0 || ow <= 0 || nc <= 0) return;
  const CbArgs a{x, wt, y, std::min(nc, depthwise_channel_block()), h, w, kh, kw, sh, sw, ph, pw,
                 dh, dw, ow, oh0, oh1, ldy};
  if (kHasAvx512)
    cblock_avx512(a);
  else
    cblock_avx2(a);
}

}  // namespace tierjit::kernels
