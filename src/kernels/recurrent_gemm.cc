// The recurrent gate GEMM of recurrent_gemm.h: AVX-512 code for one row over pairs of 64-column
// panels; everything else (several rows, 16-column panels, CPUs without AVX-512 and their sliced
// panels) through gemm_panel_rows_f32.
#include "kernels/recurrent_gemm.h"

#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu_features.h"
#include "kernels/packed_gemm.h"

namespace tierjit::kernels {
namespace {

constexpr int64_t kWidth = 64;  // the AVX-512 panels' columns: 4 vectors of 16

const bool kHasAvx512 = cpu_has_avx512f();

__attribute__((target("avx512f"))) inline __mmask16 lanes(int64_t cols, int v) {
  const int64_t valid = std::clamp<int64_t>(cols - 16 * v, 0, 16);
  return static_cast<__mmask16>((uint32_t{1} << valid) - 1);
}

// One row times panels w0 and w1 ([k][64] each): 8 accumulators.
__attribute__((target("avx512f,fma"))) void row_two_panels(const float* a, const float* w0,
                                                           const float* w1, int64_t k,
                                                           int64_t cols0, int64_t cols1, float* y0,
                                                           float* y1) {
  __m512 acc[8];
#pragma GCC unroll 8
  for (int v = 0; v < 8; ++v) acc[v] = _mm512_setzero_ps();
  for (int64_t kk = 0; kk < k; ++kk) {
    const __m512 av = _mm512_set1_ps(a[kk]);
    const float* r0 = w0 + kk * kWidth;
    const float* r1 = w1 + kk * kWidth;
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) {
      acc[v] = _mm512_fmadd_ps(av, _mm512_load_ps(r0 + 16 * v), acc[v]);
      acc[4 + v] = _mm512_fmadd_ps(av, _mm512_load_ps(r1 + 16 * v), acc[4 + v]);
    }
  }
#pragma GCC unroll 4
  for (int v = 0; v < 4; ++v) {
    _mm512_mask_storeu_ps(y0 + 16 * v, lanes(cols0, v), acc[v]);
    _mm512_mask_storeu_ps(y1 + 16 * v, lanes(cols1, v), acc[4 + v]);
  }
}

// One row times one panel, k in two halves (8 accumulators), the halves added.
__attribute__((target("avx512f,fma"))) void row_one_panel(const float* a, const float* w, int64_t k,
                                                          int64_t cols, float* y) {
  __m512 acc[8];
#pragma GCC unroll 8
  for (int v = 0; v < 8; ++v) acc[v] = _mm512_setzero_ps();
  const int64_t half = k / 2;
  for (int64_t kk = 0; kk < half; ++kk) {
    const __m512 a0 = _mm512_set1_ps(a[kk]), a1 = _mm512_set1_ps(a[half + kk]);
    const float* r0 = w + kk * kWidth;
    const float* r1 = w + (half + kk) * kWidth;
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) {
      acc[v] = _mm512_fmadd_ps(a0, _mm512_load_ps(r0 + 16 * v), acc[v]);
      acc[4 + v] = _mm512_fmadd_ps(a1, _mm512_load_ps(r1 + 16 * v), acc[4 + v]);
    }
  }
  if (k % 2) {  // the last k joins the second half
    const __m512 av = _mm512_set1_ps(a[k - 1]);
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v)
      acc[4 + v] = _mm512_fmadd_ps(av, _mm512_load_ps(w + (k - 1) * kWidth + 16 * v), acc[4 + v]);
  }
#pragma GCC unroll 4
  for (int v = 0; v < 4; ++v)
    _mm512_mask_storeu_ps(y + 16 * v, lanes(cols, v), _mm512_add_ps(acc[v], acc[4 + v]));
}

}  // namespace

void recurrent_gates_f32(const float* a, const float* packed, float* y, int64_t m, int64_t k,
                         int64_t lda, int64_t n, int64_t p0, int64_t p1, int64_t ldy) {
  if (m <= 0 || p1 <= p0) return;
  const int64_t width = gemm_panel_width(n);
  auto cols = [&](int64_t p) { return std::min(width, n - p * width); };
  if (m > 1 || width != kWidth || !kHasAvx512) {
    for (int64_t p = p0; p < p1; ++p)
      gemm_panel_rows_f32(a, packed + p * k * width, y + (p - p0) * width, m, k, lda, width,
                          cols(p), ldy, 0);
    return;
  }
  int64_t p = p0;
  for (; p + 2 <= p1; p += 2)
    row_two_panels(a, packed + p * k * width, packed + (p + 1) * k * width, k, cols(p), cols(p + 1),
                   y + (p - p0) * width, y + (p + 1 - p0) * width);
  if (p < p1) row_one_panel(a, packed + p * k * width, k, cols(p), y + (p - p0) * width);
}

}  // namespace tierjit::kernels
