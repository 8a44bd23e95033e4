// The masked ends of vec_lanes.h's whole-vector runs, compiled for their instruction sets.
#include <immintrin.h>

#include "kernels/vec_lanes.h"

namespace tierjit::kernels {

namespace {

// The first min(max(k, 0), lanes) lanes set.
inline __mmask16 first16(int64_t k) {
  return static_cast<__mmask16>(k <= 0 ? 0u : k >= 16 ? 0xffffu : (1u << k) - 1u);
}

}  // namespace

__attribute__((target("avx512f"))) void stride2_tail16(float* dst, const float* src, int64_t n,
                                                       int64_t avail) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  for (int64_t t = 0; t < n; t += 16) {
    const int64_t left = avail - 2 * t;
    const __m512 a = _mm512_maskz_loadu_ps(first16(left), src + 2 * t);
    const __m512 b = _mm512_maskz_loadu_ps(first16(left - 16), src + 2 * t + 16);
    _mm512_storeu_ps(dst + t, _mm512_permutex2var_ps(a, even, b));
  }
}

__attribute__((target("avx2"))) void stride2_tail8(float* dst, const float* src, int64_t n,
                                                   int64_t avail) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  auto first = [&](int64_t k) {
    const int c = static_cast<int>(k <= 0 ? 0 : k >= 8 ? 8 : k);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(c), lane);
  };
  for (int64_t t = 0; t < n; t += 8) {
    const int64_t left = avail - 2 * t;
    const __m256 a = _mm256_maskload_ps(src + 2 * t, first(left));
    const __m256 b = _mm256_maskload_ps(src + 2 * t + 8, first(left - 8));
    // Even lanes of a then of b: shuffle within 128-bit halves, then order the 64-bit quarters.
    const __m256 e = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));  // a0 a2 b0 b2 | a4 a6 b4 b6
    _mm256_storeu_ps(dst + t, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e),
                                                                      _MM_SHUFFLE(3, 1, 2, 0))));
  }
}

}  // namespace tierjit::kernels
