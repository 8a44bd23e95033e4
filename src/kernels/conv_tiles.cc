// Convolution microkernels (conv_tiles.h). Plain C++ over contiguous runs (the compiler
// vectorizes the copies and the stride-1 tap loops); the padding is resolved per run, not per
// element.
#include "kernels/conv_tiles.h"

#include <algorithm>
#include <cstring>

#include <immintrin.h>

#include "kernels/cpu_features.h"
#include "kernels/packed_gemm.h"

namespace tierjit::kernels {

namespace {

constexpr int64_t kPanel = 64;

// Floor and ceiling of a / b for b > 0.
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

}  // namespace

void conv_pack_panel_f32(const float* x, float* panel, int64_t c, int64_t h, int64_t w,
                         int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                         int64_t dh, int64_t dw, int64_t ow, int64_t pix0, int64_t npix,
                         int64_t k0, int64_t kc) {
  (void)c;
  const bool sliced = gemm_panels_sliced();
  const int64_t taps = kh * kw;
  alignas(64) float row[kPanel];
  for (int64_t q = 0; q < kc; ++q) {
    const int64_t k = k0 + q, ci = k / taps, ky = (k % taps) / kw, kx = k % kw;
    const float* xc = x + ci * h * w;
    const int64_t off = kx * dw - pw;  // ix = ox * sw + off
    for (int64_t j = 0, pix = pix0; j < npix;) {
      const int64_t oy = pix / ow, ox0 = pix % ow, seg = std::min(npix - j, ow - ox0);
      const int64_t iy = oy * sh - ph + ky * dh;
      float* dst = row + j;
      if (iy < 0 || iy >= h) {
        std::fill(dst, dst + seg, 0.f);
      } else {
        const float* xr = xc + iy * w;
        // Pixels ox0 + t with 0 <= (ox0 + t) * sw + off < w.
        const int64_t lo = std::clamp(ceil_div(-off, sw) - ox0, int64_t{0}, seg);
        const int64_t hi = std::clamp(floor_div(w - 1 - off, sw) + 1 - ox0, lo, seg);
        std::fill(dst, dst + lo, 0.f);
        if (sw == 1) {
          std::memcpy(dst + lo, xr + ox0 + lo + off, static_cast<size_t>(hi - lo) * sizeof(float));
        } else {
          for (int64_t t = lo; t < hi; ++t) dst[t] = xr[(ox0 + t) * sw + off];
        }
        std::fill(dst + hi, dst + seg, 0.f);
      }
      j += seg;
      pix += seg;
    }
    std::fill(row + npix, row + kPanel, 0.f);
    if (sliced) {
      for (int64_t s = 0; s < kPanel / 16; ++s)
        std::memcpy(panel + s * 16 * kc + q * 16, row + 16 * s, 16 * sizeof(float));
    } else {
      std::memcpy(panel + q * kPanel, row, sizeof(row));
    }
  }
}

// depthwise_row<Avx512> passes __m512 values between inlined helpers; every use is inlined into
// row_avx512 (target avx512f), so no call crosses an ABI boundary: gcc's -Wpsabi note is moot.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace {

// One output row of a depthwise convolution: y[ox] = sum over the valid taps of wt * x. The
// columns whose taps all lie inside the image ([lo, hi)) are done `L` at a time with the sum in
// a register across every tap (V: the vector type's operations); the edge columns one by one.
struct Avx512 {
  static constexpr int L = 16;
  using V = __m512;
  __attribute__((target("avx512f"))) static V zero() { return _mm512_setzero_ps(); }
  __attribute__((target("avx512f"))) static V set1(float f) { return _mm512_set1_ps(f); }
  __attribute__((target("avx512f"))) static V load(const float* p) { return _mm512_loadu_ps(p); }
  // x[0], x[s], ..., x[(L - 1) s]
  __attribute__((target("avx512f"))) static V load_strided(const float* p, int64_t s) {
    if (s == 2) {
      const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
      return _mm512_permutex2var_ps(_mm512_loadu_ps(p), even, _mm512_loadu_ps(p + 16));
    }
    const __m512i idx = _mm512_mullo_epi32(
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
        _mm512_set1_epi32(static_cast<int>(s)));
    return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), 0xffff, idx, p, 4);
  }
  __attribute__((target("avx512f,fma"))) static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  __attribute__((target("avx512f"))) static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
};
struct Avx2 {
  static constexpr int L = 8;
  using V = __m256;
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float f) { return _mm256_set1_ps(f); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V load_strided(const float* p, int64_t s) {
    const __m256i idx = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                           _mm256_set1_epi32(static_cast<int>(s)));
    return _mm256_mask_i32gather_ps(_mm256_setzero_ps(), p, idx,
                                    _mm256_castsi256_ps(_mm256_set1_epi32(-1)), 4);
  }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
};

// Inlined into row_avx512 / row_avx2, whose target attributes decide the instructions.
template <class S>
inline __attribute__((always_inline)) void depthwise_row(const float* x, const float* wt,
                                                         float* yr, int64_t oy, int64_t h,
                                                         int64_t w, int64_t kh, int64_t kw,
                                                         int64_t sh, int64_t sw, int64_t ph,
                                                         int64_t pw, int64_t dh, int64_t dw,
                                                         int64_t ow) {
  // Columns where every tap column lies inside the row: ox * sw - pw >= 0 and
  // ox * sw - pw + (kw - 1) * dw <= w - 1 (the last vector also reads up to sw * L floats on).
  const int64_t lo = std::clamp<int64_t>(ceil_div(pw, sw), 0, ow);
  const int64_t hi = std::clamp<int64_t>(floor_div(w - 1 - (kw - 1) * dw + pw, sw) + 1, lo, ow);
  auto scalar = [&](int64_t ox) {
    float acc = 0.f;
    for (int64_t ky = 0; ky < kh; ++ky) {
      const int64_t iy = oy * sh - ph + ky * dh;
      if (iy < 0 || iy >= h) continue;
      for (int64_t kx = 0; kx < kw; ++kx) {
        const int64_t ix = ox * sw - pw + kx * dw;
        if (ix >= 0 && ix < w) acc += wt[ky * kw + kx] * x[iy * w + ix];
      }
    }
    yr[ox] = acc;
  };
  for (int64_t ox = 0; ox < lo; ++ox) scalar(ox);
  int64_t ox = lo;
  // A vector of L columns reads x up to (ox + L - 1) * sw - pw + (kw - 1) * dw, and the stride-2
  // permute up to 2 L - 1 floats past its first: stay inside the row.
  const int64_t span = sw == 2 ? 2 * S::L - 1 : (S::L - 1) * sw;
  for (; ox + S::L <= hi && ox * sw - pw + (kw - 1) * dw + span < w; ox += S::L) {
    typename S::V acc = S::zero();
    for (int64_t ky = 0; ky < kh; ++ky) {
      const int64_t iy = oy * sh - ph + ky * dh;
      if (iy < 0 || iy >= h) continue;
      const float* xr = x + iy * w + ox * sw - pw;
      for (int64_t kx = 0; kx < kw; ++kx) {
        const typename S::V xv = sw == 1 ? S::load(xr + kx * dw) : S::load_strided(xr + kx * dw, sw);
        acc = S::fma(S::set1(wt[ky * kw + kx]), xv, acc);
      }
    }
    S::store(yr + ox, acc);
  }
  for (; ox < ow; ++ox) scalar(ox);
}

__attribute__((target("avx512f,fma"))) void row_avx512(const float* x, const float* wt, float* yr,
                                                      int64_t oy, int64_t h, int64_t w, int64_t kh,
                                                      int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                                                      int64_t pw, int64_t dh, int64_t dw, int64_t ow) {
  depthwise_row<Avx512>(x, wt, yr, oy, h, w, kh, kw, sh, sw, ph, pw, dh, dw, ow);
}
void row_avx2(const float* x, const float* wt, float* yr, int64_t oy, int64_t h, int64_t w,
              int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh,
              int64_t dw, int64_t ow) {
  depthwise_row<Avx2>(x, wt, yr, oy, h, w, kh, kw, sh, sw, ph, pw, dh, dw, ow);
}

const bool kHasAvx512 = cpu_has_avx512f();

}  // namespace

void depthwise_conv_rows_f32(const float* x, const float* wt, float* y, int64_t h, int64_t w,
                             int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                             int64_t pw, int64_t dh, int64_t dw, int64_t ow, int64_t oh0,
                             int64_t oh1, int64_t ldy) {
  for (int64_t oy = oh0; oy < oh1; ++oy) {
    float* yr = y + (oy - oh0) * ldy;
    if (kHasAvx512)
      row_avx512(x, wt, yr, oy, h, w, kh, kw, sh, sw, ph, pw, dh, dw, ow);
    else
      row_avx2(x, wt, yr, oy, h, w, kh, kw, sh, sw, ph, pw, dh, dw, ow);
  }
}

}  // namespace tierjit::kernels
