// AVX-512F row steps of tier 0's float32 LayerNormalization (layer_norm_rows.h): 16 float lanes
// for the affine step; for the statistics, two rows per 8-double register
// (lanes 0-3 the 4 partial sums of one row, 4-7 the next row's), so each add does the work of two
// AVX2 adds in the same order. Compiled for AVX-512F per function; dispatched at run time.
#include "kernels/layer_norm_rows.h"

#include <immintrin.h>

#include <atomic>
#include <cmath>

#include "kernels/cpu_features.h"

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*() (a self-initialized variable),
// which -W(maybe-)uninitialized reports once inlined: a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#define TJ_AVX512 __attribute__((target("avx512f,fma")))

namespace tierjit::kernels::ln_rows {
namespace {

constexpr int kPairs = kRows / 2;

// Elements [i, i + 8) of rows a and b, widened: lo = [a0..a3, b0..b3], hi = [a4..a7, b4..b7].
TJ_AVX512 inline void load_pair8(const float* a, const float* b, __m512d* lo, __m512d* hi) {
  const __m256 va = _mm256_loadu_ps(a), vb = _mm256_loadu_ps(b);
  *lo = _mm512_cvtps_pd(_mm256_permute2f128_ps(va, vb, 0x20));
  *hi = _mm512_cvtps_pd(_mm256_permute2f128_ps(va, vb, 0x31));
}

// Elements [i, i + 4) of rows a and b, widened: [a0..a3, b0..b3].
TJ_AVX512 inline __m512d load_pair4(const float* a, const float* b) {
  return _mm512_cvtps_pd(
      _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(a)), _mm_loadu_ps(b), 1));
}

// Where both operands of a multiply or fma are NaN, x86 returns the one in the first source
// slot, and GCC may swap the operands of commutative intrinsics: these two pin the slots the
// AVX2 loops of normalization.cc compiled to ((x - mean) * inv; vfmadd132 with the product in
// the first slot and B in the second), so NaN payloads match too.
TJ_AVX512 inline __m512 mul_ab(__m512 a, __m512 b) {  // a * b, a in the first slot
  __m512 r;
  asm("vmulps %2, %1, %0" : "=v"(r) : "v"(a), "v"(b));
  return r;
}
TJ_AVX512 inline __m512 fma_usb(__m512 u, __m512 s, __m512 b) {  // u * s + b: slots u, b, s
  asm("vfmadd132ps %2, %1, %0" : "+v"(u) : "v"(b), "v"(s));
  return u;
}

// The statistics' double steps with pinned slots, as rows_stats_f32<4> compiled (every row of a
// full 8-row block was in a full 4-row block before): accumulator + value, fma with the
// accumulator first (vfmadd231), and the finish (s1 + s0) + (s2 + s3), s0 the tail-extended sum.
inline double add_sd(double a, double b) {
  double r;
  asm("vaddsd %2, %1, %0" : "=x"(r) : "x"(a), "x"(b));
  return r;
}
inline double fma_acc_sd(double acc, double d) {  // acc + d * d
  asm("vfmadd231sd %1, %1, %0" : "+x"(acc) : "x"(d));
  return acc;
}
TJ_AVX512 inline __m512d add_pd(__m512d a, __m512d b) {
  __m512d r;
  asm("vaddpd %2, %1, %0" : "=v"(r) : "v"(a), "v"(b));
  return r;
}
TJ_AVX512 inline __m512d fma_acc_pd(__m512d acc, __m512d d) {  // acc + d * d
  asm("vfmadd231pd %1, %1, %0" : "+v"(acc) : "v"(d));
  return acc;
}
inline double finish(const double* p, double s0, double n) {
  return add_sd(add_sd(p[1], s0), add_sd(p[2], p[3])) / n;
}

}  // namespace

namespace {
std::atomic<bool> g_force_avx2{false};
}  // namespace

bool has_avx512() {
  return cpu_has_avx512f() && !g_force_avx2.load(std::memory_order_relaxed);
}

void force_avx2_for_testing(bool force) { g_force_avx2.store(force); }

// stats8 with the widened pairs of the first pass kept in `buf` (kBuf; len / 4 * 8 doubles per
// pair) for the second, which then only subtracts and accumulates.
template <bool kBuf>
TJ_AVX512 void stats8_impl(const float* x, int64_t len, double* mean, double* var, double* buf) {
  const double n = static_cast<double>(len);
  const int64_t body8 = len / 8 * 8, body = len / 4 * 4;
  auto row = [x, len](int k) { return x + k * len; };
  __m512d acc[kPairs];
  alignas(64) double p[8];
#pragma GCC unroll 4
  for (int q = 0; q < kPairs; ++q) acc[q] = _mm512_setzero_pd();
  for (int64_t i = 0; i < body8; i += 8)
#pragma GCC unroll 4
    for (int q = 0; q < kPairs; ++q) {
      __m512d lo, hi;
      load_pair8(row(2 * q) + i, row(2 * q + 1) + i, &lo, &hi);
      if constexpr (kBuf) {
        _mm512_store_pd(buf + (q * body + i) * 2, lo);
        _mm512_store_pd(buf + (q * body + i) * 2 + 8, hi);
      }
      acc[q] = add_pd(acc[q], lo);
      acc[q] = add_pd(acc[q], hi);
    }
  if (body > body8)
#pragma GCC unroll 4
    for (int q = 0; q < kPairs; ++q) {
      const __m512d v = load_pair4(row(2 * q) + body8, row(2 * q + 1) + body8);
      if constexpr (kBuf) _mm512_store_pd(buf + (q * body + body8) * 2, v);
      acc[q] = add_pd(acc[q], v);
    }
  __m512d mu[kPairs];
  for (int q = 0; q < kPairs; ++q) {
    _mm512_store_pd(p, acc[q]);
    for (int h = 0; h < 2; ++h) {
      const int k = 2 * q + h;
      double s0 = p[4 * h];
      for (int64_t i = body; i < len; ++i) s0 = add_sd(s0, static_cast<double>(row(k)[i]));
      mean[k] = finish(p + 4 * h, s0, n);
    }
    mu[q] = _mm512_insertf64x4(_mm512_set1_pd(mean[2 * q]), _mm256_set1_pd(mean[2 * q + 1]), 1);
    acc[q] = _mm512_setzero_pd();
  }
  for (int64_t i = 0; i < body8; i += 8)
#pragma GCC unroll 4
    for (int q = 0; q < kPairs; ++q) {
      __m512d lo, hi;
      if constexpr (kBuf) {
        lo = _mm512_load_pd(buf + (q * body + i) * 2);
        hi = _mm512_load_pd(buf + (q * body + i) * 2 + 8);
      } else {
        load_pair8(row(2 * q) + i, row(2 * q + 1) + i, &lo, &hi);
      }
      acc[q] = fma_acc_pd(acc[q], _mm512_sub_pd(lo, mu[q]));
      acc[q] = fma_acc_pd(acc[q], _mm512_sub_pd(hi, mu[q]));
    }
  if (body > body8)
#pragma GCC unroll 4
    for (int q = 0; q < kPairs; ++q) {
      const __m512d v = kBuf ? _mm512_load_pd(buf + (q * body + body8) * 2)
                             : load_pair4(row(2 * q) + body8, row(2 * q + 1) + body8);
      acc[q] = fma_acc_pd(acc[q], _mm512_sub_pd(v, mu[q]));
    }
  for (int q = 0; q < kPairs; ++q) {
    _mm512_store_pd(p, acc[q]);
    for (int h = 0; h < 2; ++h) {
      const int k = 2 * q + h;
      double s0 = p[4 * h];
      for (int64_t i = body; i < len; ++i) {
        const double d = static_cast<double>(row(k)[i]) - mean[k];
        s0 = fma_acc_sd(s0, d);
      }
      var[k] = finish(p + 4 * h, s0, n);
    }
  }
}

TJ_AVX512 void stats8(const float* x, int64_t len, double* mean, double* var) {
  constexpr int64_t kBufLen = 256;  // rows up to this long: 4 pairs x 256 x 2 doubles, 16 KiB
  if (len <= kBufLen) {
    alignas(64) double buf[kPairs * kBufLen * 2];
    stats8_impl<true>(x, len, mean, var, buf);
  } else {
    stats8_impl<false>(x, len, mean, var, nullptr);
  }
}

TJ_AVX512 void normalize_row(const float* x, float* y, int64_t len, float mean, float inv,
                             const float* s, const float* b) {
  const __m512 vm = _mm512_set1_ps(mean), vi = _mm512_set1_ps(inv);
  int64_t i = 0;
  for (; i + 16 <= len; i += 16) {
    const __m512 t = mul_ab(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm), vi);
    _mm512_storeu_ps(y + i, fma_usb(t, _mm512_loadu_ps(s + i), _mm512_loadu_ps(b + i)));
  }
  if (i < len) {
    const __mmask16 m = static_cast<__mmask16>((1u << (len - i)) - 1u);
    const __m512 t = mul_ab(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), vm), vi);
    _mm512_mask_storeu_ps(
        y + i, m, fma_usb(t, _mm512_maskz_loadu_ps(m, s + i), _mm512_maskz_loadu_ps(m, b + i)));
  }
}

}  // namespace tierjit::kernels::ln_rows
