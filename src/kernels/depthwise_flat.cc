// depthwise_conv_flat_f32 (conv_tiles.h): stride 1 and an output as wide as the input. Each
// channel's rows are copied once (one contiguous run of the plane) with zero rows for the
// vertical padding, back to back at the map's width, and vectors run over the output pixels back to back: tap (ky, kx) of a vector is
// one load at a fixed offset with the lanes whose column falls in the horizontal padding masked
// to 0, so a 7 x 7 map fills 49 of 64 lanes (the per-row tile: 7 of 16) and an 8 x 8 map all of
// them, with no transposes (the channel-block tile's cost). Up to 4 vectors in registers per
// pass over the taps. A channel whose weights are not all finite is summed tap by tap over the
// taps inside the image (a NaN or infinite weight times a padded 0 must not reach the output). One template over the lanes (vec_lanes.h): AVX-512 16, AVX2 8.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/conv_tiles.h"
#include "kernels/cpu_features.h"
#include "kernels/vec_lanes.h"

namespace tierjit::kernels {

namespace {

struct FlatArgs {
  const float* x;
  const float* wt;
  float* y;
  int64_t nc, h, w, kh, kw, ph, pw, dh, dw, oh0, oh1, ldy, x_avail;
};

// Per-thread tables of a geometry: per vector and column tap, the lanes whose column is inside
// the image; per tap, its offset from the vector's pixel in the copied rows.
struct FlatTables {
  std::array<int64_t, 9> key{};
  int64_t nvec = 0;            // vectors the masks cover
  std::vector<int32_t> masks;  // nvec x kw x L
  std::vector<int64_t> off;    // kh x kw
  std::vector<float> rows;     // one channel's copied rows plus slack
};

// Vectors [v0, v0 + P) of one channel: every tap, lanes outside the image's columns masked. Two
// sets of accumulators (even and odd tap rows) so that 2 P fused multiply-adds are independent.
template <int L, int P>
inline __attribute__((always_inline)) void flat_vectors(const float* rows, const float* wt,
                                                        const int32_t* masks, const int64_t* off,
                                                        int64_t kh, int64_t kw, int64_t v0,
                                                        float* y) {
  using V = typename VecF<L>::type;
  using VI = typename VecI<L>::type;
  V acc[2][P] = {};
  const float* base = rows + v0 * L;
  for (int64_t kx = 0; kx < kw; ++kx) {
    VI m[P];
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) std::memcpy(&m[p], masks + ((v0 + p) * kw + kx) * L, sizeof m[p]);
    int64_t ky = 0;
    for (; ky + 2 <= kh; ky += 2) {
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const float wv = wt[(ky + h) * kw + kx];
        const float* src = base + off[(ky + h) * kw + kx];
#pragma GCC unroll 4
        for (int p = 0; p < P; ++p) acc[h][p] += wv * (V)((VI)loadu<L>(src + p * L) & m[p]);
      }
    }
    if (ky < kh) {
      const float wv = wt[ky * kw + kx];
      const float* src = base + off[ky * kw + kx];
#pragma GCC unroll 4
      for (int p = 0; p < P; ++p) acc[0][p] += wv * (V)((VI)loadu<L>(src + p * L) & m[p]);
    }
  }
#pragma GCC unroll 4
  for (int p = 0; p < P; ++p) storeu<L>(y + (v0 + p) * L, acc[0][p] + acc[1][p]);
}

// True when every weight is finite: no exponent field all ones (L lanes at a time).
template <int L>
inline __attribute__((always_inline)) bool all_finite(const float* wt, int64_t n) {
  using VI = typename VecI<L>::type;
  const VI exp_mask = VI{} + 0x7f800000;
  VI bad = {};
  int64_t k = 0;
  for (; k + L <= n; k += L) {
    VI bits;
    std::memcpy(&bits, wt + k, sizeof bits);
    bad |= (bits & exp_mask) == exp_mask;
  }
  int32_t any = 0;
  for (int i = 0; i < L; ++i) any |= bad[i];
  for (; k < n; ++k) {
    int32_t bits;
    std::memcpy(&bits, wt + k, sizeof bits);
    any |= (bits & 0x7f800000) == 0x7f800000;
  }
  return any == 0;
}

// One channel with a non-finite weight: each output sums only the taps inside the image, in
// order (a NaN or infinite weight must not meet a padded 0). Scalar: a rare case.
inline void exact_channel(const float* x, const float* wt, float* y, const FlatArgs& a) {
  for (int64_t oy = a.oh0; oy < a.oh1; ++oy)
    for (int64_t ox = 0; ox < a.w; ++ox) {
      float sum = 0.f;
      for (int64_t ky = 0; ky < a.kh; ++ky) {
        const int64_t iy = oy - a.ph + ky * a.dh;
        if (iy < 0 || iy >= a.h) continue;
        for (int64_t kx = 0; kx < a.kw; ++kx) {
          const int64_t ix = ox - a.pw + kx * a.dw;
          if (ix >= 0 && ix < a.w) sum += wt[ky * a.kw + kx] * x[iy * a.w + ix];
        }
      }
      y[(oy - a.oh0) * a.w + ox] = sum;
    }
}

template <int L>
inline __attribute__((always_inline)) void flat_call(const FlatArgs& a) {
  thread_local FlatTables t;
  const int64_t w = a.w, rows_out = a.oh1 - a.oh0, rows_in = rows_out + (a.kh - 1) * a.dh;
  const int64_t npix = rows_out * w, nvec = (npix + L - 1) / L;
  // Room before the rows (column taps reach pw floats before a row) and after them (the last
  // vector's tail and the taps reach past the last row).
  const int64_t front = (a.pw + L) / L * L, back = nvec * L - npix + (a.kw - 1) * a.dw + 2 * L;
  // The masks of vector v depend on the geometry only (an item's rows start at a row's first
  // pixel): computed once per geometry for the most vectors asked so far, whatever an item's row
  // count (items of different heights alternate on the same thread).
  const std::array<int64_t, 9> key = {a.h, w, a.kh, a.kw, a.ph, a.pw, a.dh, a.dw, L};
  if (key != t.key || t.nvec < nvec) {
    t.key = key;
    t.nvec = nvec;
    t.masks.resize(static_cast<size_t>(nvec * a.kw * L));
    for (int64_t v = 0, ox = 0; v < nvec; ++v)
      for (int64_t i = 0; i < L; ++i, ox = ox + 1 == w ? 0 : ox + 1)
        for (int64_t kx = 0; kx < a.kw; ++kx) {
          const int64_t ix = ox + kx * a.dw - a.pw;
          t.masks[(v * a.kw + kx) * L + i] = ix >= 0 && ix < w ? -1 : 0;
        }
    t.off.resize(static_cast<size_t>(a.kh * a.kw));
    for (int64_t ky = 0; ky < a.kh; ++ky)
      for (int64_t kx = 0; kx < a.kw; ++kx)
        t.off[ky * a.kw + kx] = ky * a.dh * w + kx * a.dw - a.pw;
  }
  // Only masked lanes and lanes past the last pixel read the room around the rows.
  const size_t need = static_cast<size_t>(front + rows_in * w + back);
  if (t.rows.size() < need) t.rows.resize(need);
  float* rows = t.rows.data() + front;
  const int64_t iy0 = a.oh0 - a.ph;
  const int64_t taps = a.kh * a.kw;
  const bool finite = all_finite<L>(a.wt, a.nc * taps);  // else checked per channel
  // Whole-vector copies while the plane's rows plus a vector stay readable.
  const float* x_end = a.x + a.x_avail;
  for (int64_t c = 0; c < a.nc; ++c) {
    const float* x = a.x + c * a.h * w;
    const float* wt = a.wt + c * taps;
    float* y = a.y + c * a.ldy;
    if (!finite && !all_finite<L>(wt, taps)) {
      exact_channel(x, wt, y, a);
      continue;
    }
    // The rows [iy0, iy0 + rows_in) at the map's width, zero outside the image: the image's
    // rows are one contiguous run of x.
    const int64_t r0 = std::clamp<int64_t>(-iy0, 0, rows_in);
    const int64_t r1 = std::clamp<int64_t>(a.h - iy0, r0, rows_in);
    // Whole-vector runs may write up to L - 1 floats past their end: into the next run (written
    // after) or the slack.
    const float* src = x + (iy0 + r0) * w;
    const int64_t n = (r1 - r0) * w;
    zero_run_over<L>(rows, r0 * w);
    if (x_end - src >= (n + L - 1) / L * L)
      copy_run_over<L>(rows + r0 * w, src, n);
    else
      copy_run<L>(rows + r0 * w, src, n);
    zero_run_over<L>(rows + r1 * w, (rows_in - r1) * w);
    int64_t v0 = 0;
    for (; v0 + 4 <= nvec; v0 += 4)
      flat_vectors<L, 4>(rows, wt, t.masks.data(), t.off.data(), a.kh, a.kw, v0, y);
    switch (nvec - v0) {
      case 3:
        flat_vectors<L, 3>(rows, wt, t.masks.data(), t.off.data(), a.kh, a.kw, v0, y);
        break;
      case 2:
        flat_vectors<L, 2>(rows, wt, t.masks.data(), t.off.data(), a.kh, a.kw, v0, y);
        break;
      case 1:
        flat_vectors<L, 1>(rows, wt, t.masks.data(), t.off.data(), a.kh, a.kw, v0, y);
        break;
      default:
        break;
    }
  }
}

__attribute__((target("avx512f,fma"))) void flat_avx512(const FlatArgs& a) { flat_call<16>(a); }
__attribute__((target("avx2,fma"))) void flat_avx2(const FlatArgs& a) { flat_call<8>(a); }

const bool kHasAvx512 = cpu_has_avx512f();

}  // namespace

void depthwise_conv_flat_f32(const float* x, const float* wt, float* y, int64_t nc, int64_t h,
                             int64_t w, int64_t kh, int64_t kw, int64_t ph, int64_t pw,
                             int64_t dh, int64_t dw, int64_t oh0, int64_t oh1, int64_t ldy,
                             int64_t x_avail) {
  if (oh1 <= oh0 || w <= 0 || nc <= 0) return;
  const FlatArgs a{x,  wt, y,  nc,  h,   w,   kh, kw, ph,
                   pw, dh, dw, oh0, oh1, ldy, std::max(x_avail, nc * h * w)};
  if (kHasAvx512)
    flat_avx512(a);
  else
    flat_avx2(a);
}

}  // namespace tierjit::kernels
