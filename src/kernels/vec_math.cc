// Array loops over 8-lane AVX2 float functions (erf also 16 lanes on AVX-512F CPUs; see
// vec_math.h): SLEEF 3.5 (Debian libsleef-dev) Sleef_expf8_u10 and Sleef_tanhf8_u10, documented at max 1.0 ulp (its dispatcher
// picks the AVX2 code at run time), and erf as the rational approximation of the compiled tiers.
// The tail (n % 8 elements) goes through a padded 8-lane buffer: every element sees one function.
// SLEEF's expf is also copied inline (exp8 / exp16, the Softmax rows and exp_f32_inline), 16
// lanes on AVX-512F CPUs, with the same bits as the library.
#include "kernels/vec_math.h"

#include <immintrin.h>
#include <sleef.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "kernels/cpu_features.h"

namespace tierjit::kernels {
namespace {

template <class F>
inline void apply8(const float* x, float* y, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, f(_mm256_loadu_ps(x + i)));
  if (i < n) {
    alignas(32) float buf[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    const size_t rest = static_cast<size_t>(n - i);
    std::memcpy(buf, x + i, rest * sizeof(float));
    _mm256_store_ps(buf, f(_mm256_load_ps(buf)));
    std::memcpy(y + i, buf, rest * sizeof(float));
  }
}

// Adds the 8 float lanes of v to the 4 double lanes of acc.
inline __m256d add_widened(__m256d acc_lo, __m256 v, __m256d* acc_hi) {
  *acc_hi = _mm256_add_pd(*acc_hi, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
  return _mm256_add_pd(acc_lo, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
}

inline double hsum(__m256d v) {
  alignas(32) double d[4];
  _mm256_store_pd(d, v);
  return (d[0] + d[1]) + (d[2] + d[3]);
}

// Horner steps u = u * s + c for each constant c in order, written out (a loop over an
// initializer_list compiled to a stack copy of the constants and a branch per step inside every
// call: exp8 ran at 1.16 instead of 0.64 ns per element on Zen 3). Same operations, same bits.
template <class... C>
inline __m256 horner8(__m256 u, __m256 s, C... c) {
  ((u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(c))), ...);
  return u;
}
template <class... C>
__attribute__((target("avx512f,fma"))) inline __m512 horner16(__m512 u, __m512 s, C... c) {
  ((u = _mm512_fmadd_ps(u, s, _mm512_set1_ps(c))), ...);
  return u;
}

// erf(x) = x P(x^2) / Q(x^2) with x clamped to [-4, 4] (|erf| rounds to 1 beyond; NaN passes the
// clamp): the rational approximation of src/codegen/math_emit.cc (Eigen's generic_fast_erf_float),
// so tier 0 and the compiled tiers agree. SLEEF's 1-ulp erf costs ~9x more per element.
inline __m256 erf8(__m256 x) {
  const __m256 four = _mm256_set1_ps(4.f), mfour = _mm256_set1_ps(-4.f);
  __m256 xc = _mm256_blendv_ps(x, four, _mm256_cmp_ps(x, four, _CMP_GT_OQ));
  xc = _mm256_blendv_ps(xc, mfour, _mm256_cmp_ps(xc, mfour, _CMP_LT_OQ));
  const __m256 x2 = _mm256_mul_ps(xc, xc);
  const __m256 p = horner8(_mm256_set1_ps(-2.72614225801306e-10f), x2, 2.77068142495902e-08f,
                            -2.10102402082508e-06f, -5.69250639462346e-05f, -7.34990630326855e-04f,
                            -2.95459980854025e-03f, -1.60960333262415e-02f);
  const __m256 q = horner8(_mm256_set1_ps(-1.45660718464996e-05f), x2, -2.13374055278905e-04f,
                            -1.68282697438203e-03f, -7.37332916720468e-03f, -1.42647390514189e-02f);
  return _mm256_mul_ps(xc, _mm256_div_ps(p, q));  // x * (p/q): no underflow for tiny x
}

// erf8 sixteen lanes wide (AVX-512F): the same operations in the same order, so every lane's
// result equals erf8's bit for bit; run only when the CPU has AVX-512F (erf_f32 checks).
__attribute__((target("avx512f,fma"))) inline __m512 erf16(__m512 x) {
  const __m512 four = _mm512_set1_ps(4.f), mfour = _mm512_set1_ps(-4.f);
  __m512 xc = _mm512_mask_mov_ps(x, _mm512_cmp_ps_mask(x, four, _CMP_GT_OQ), four);
  xc = _mm512_mask_mov_ps(xc, _mm512_cmp_ps_mask(xc, mfour, _CMP_LT_OQ), mfour);
  const __m512 x2 = _mm512_mul_ps(xc, xc);
  const __m512 p = horner16(_mm512_set1_ps(-2.72614225801306e-10f), x2, 2.77068142495902e-08f,
                            -2.10102402082508e-06f, -5.69250639462346e-05f, -7.34990630326855e-04f,
                            -2.95459980854025e-03f, -1.60960333262415e-02f);
  const __m512 q = horner16(_mm512_set1_ps(-1.45660718464996e-05f), x2, -2.13374055278905e-04f,
                            -1.68282697438203e-03f, -7.37332916720468e-03f, -1.42647390514189e-02f);
  return _mm512_mul_ps(xc, _mm512_div_ps(p, q));
}

// The tail is a zero-filled masked load, as apply8's padded buffer: every element sees erf16.
__attribute__((target("avx512f,fma"))) void erf_f32_avx512(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, erf16(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(y + i, m, erf16(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*() (a self-initialized variable),
// which -Wmaybe-uninitialized reports once inlined into a loop: a false positive.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// SLEEF 3.5's expf u10 (finz, FMA: Sleef_expf8_u10avx2 / Sleef_finz_expf16_u10avx512f as the
// Debian libsleef3 binary computes them, read off its disassembly), operation for operation:
// q = rint(d / ln 2), s = d - q ln 2 in two fma steps, a degree-6 polynomial, scaling by 2^q in
// two halves, 0 below -104, inf above 100 (NaN passes through). Same bits as the library on all
// 2^32 inputs at both widths (checked exhaustively; the test samples it).
inline __m256 exp8(__m256 d) {
  const __m256i q = _mm256_cvtps_epi32(_mm256_mul_ps(d, _mm256_set1_ps(0x1.715476p+0f)));
  const __m256 qf = _mm256_cvtepi32_ps(q);
  __m256 s = _mm256_fmadd_ps(qf, _mm256_set1_ps(-0x1.62e4p-1f), d);
  s = _mm256_fmadd_ps(qf, _mm256_set1_ps(-0x1.7f7d1cp-20f), s);
  __m256 u = horner8(_mm256_set1_ps(0x1.a057b4p-13f), s, 0x1.6d2d92p-10f, 0x1.11114cp-7f,
                      0x1.5554f4p-5f, 0x1.555556p-3f, 0.5f);
  u = _mm256_add_ps(_mm256_fmadd_ps(_mm256_mul_ps(s, s), u, s), _mm256_set1_ps(1.f));
  const __m256i one = _mm256_set1_epi32(0x3f800000), h = _mm256_srai_epi32(q, 1);
  u = _mm256_mul_ps(u, _mm256_castsi256_ps(_mm256_add_epi32(_mm256_slli_epi32(h, 23), one)));
  u = _mm256_mul_ps(
      u, _mm256_castsi256_ps(_mm256_add_epi32(_mm256_slli_epi32(_mm256_sub_epi32(q, h), 23), one)));
  u = _mm256_andnot_ps(_mm256_cmp_ps(d, _mm256_set1_ps(-104.f), _CMP_LT_OS), u);
  return _mm256_blendv_ps(u, _mm256_set1_ps(std::numeric_limits<float>::infinity()),
                          _mm256_cmp_ps(_mm256_set1_ps(100.f), d, _CMP_LT_OS));
}

__attribute__((target("avx512f,fma"))) inline __m512 exp16(__m512 d) {
  const __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(d, _mm512_set1_ps(0x1.715476p+0f)));
  const __m512 qf = _mm512_cvtepi32_ps(q);
  __m512 s = _mm512_fmadd_ps(qf, _mm512_set1_ps(-0x1.62e4p-1f), d);
  s = _mm512_fmadd_ps(qf, _mm512_set1_ps(-0x1.7f7d1cp-20f), s);
  __m512 u = horner16(_mm512_set1_ps(0x1.a057b4p-13f), s, 0x1.6d2d92p-10f, 0x1.11114cp-7f,
                      0x1.5554f4p-5f, 0x1.555556p-3f, 0.5f);
  u = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(s, s), u, s), _mm512_set1_ps(1.f));
  const __m512i one = _mm512_set1_epi32(0x3f800000), h = _mm512_srai_epi32(q, 1);
  u = _mm512_mul_ps(u, _mm512_castsi512_ps(_mm512_add_epi32(_mm512_slli_epi32(h, 23), one)));
  u = _mm512_maskz_mul_ps(
      _mm512_cmp_ps_mask(d, _mm512_set1_ps(-104.f), _CMP_NLT_US), u,
      _mm512_castsi512_ps(_mm512_add_epi32(_mm512_slli_epi32(_mm512_sub_epi32(q, h), 23), one)));
  return _mm512_mask_mov_ps(u, _mm512_cmp_ps_mask(d, _mm512_set1_ps(100.f), _CMP_GT_OS),
                            _mm512_set1_ps(std::numeric_limits<float>::infinity()));
}

__attribute__((target("avx512f,fma"))) void exp_f32_avx512(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, exp16(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(y + i, m, exp16(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

// The final Softmax step, y *= inv with inv = float(1.0 / sum): a NaN inv (any NaN in the row)
// makes every output inv itself (the 8-lane code's inv * y returns inv's NaN whether or not y is
// NaN: x86 returns the first NaN operand), done here; returns false then.
inline bool scale_needed(float* y, int64_t n, float inv) {
  if (inv == inv) return true;
  std::fill(y, y + n, inv);
  return false;
}

// Double adds with the operands in fixed slots: x86 returns the first source's NaN when both are
// NaN, and GCC may swap the operands of a commutative intrinsic. exp_shifted_sum_f32 compiled to
// accumulator + new value, hi + lo, (t0 + t1) + (t2 + t3), sum + tail element (left operand
// first everywhere but hi + lo): the Softmax rows pin those slots, so that a row holding NaNs
// of different payloads or signs sums to the same NaN.
inline __m256d add_first(__m256d a, __m256d b) {
  __m256d r;
  asm("vaddpd %2, %1, %0" : "=x"(r) : "x"(a), "x"(b));
  return r;
}
inline double add_first(double a, double b) {
  double r;
  asm("vaddsd %2, %1, %0" : "=x"(r) : "x"(a), "x"(b));
  return r;
}
__attribute__((target("avx512f"))) inline __m512d add_first(__m512d a, __m512d b) {
  __m512d r;
  asm("vaddpd %2, %1, %0" : "=v"(r) : "v"(a), "v"(b));
  return r;
}

// Adds the 8-lane partial sums acc[k] (k = 0..7, held as 2 x 4 doubles lo, hi) as
// exp_shifted_sum_f32 does: t = hi + lo, (t0 + t1) + (t2 + t3).
inline double hsum8(__m256d lo, __m256d hi) {
  alignas(32) double t[4];
  _mm256_store_pd(t, add_first(hi, lo));
  return add_first(add_first(t[0], t[1]), add_first(t[2], t[3]));
}

void softmax_row_avx2(const float* x, float* y, int64_t n) {
  const __m256 s = _mm256_set1_ps(max_f32(x, n));
  __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), s));
    _mm256_storeu_ps(y + i, e);
    lo = add_first(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    hi = add_first(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  }
  double sum = i > 0 ? hsum8(lo, hi) : 0.0;
  if (i < n) {
    alignas(32) float buf[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    const int64_t rest = n - i;
    std::memcpy(buf, x + i, static_cast<size_t>(rest) * sizeof(float));
    _mm256_store_ps(buf, exp8(_mm256_sub_ps(_mm256_load_ps(buf), s)));
    for (int64_t k = 0; k < rest; ++k) {
      y[i + k] = buf[k];
      sum = add_first(sum, static_cast<double>(buf[k]));
    }
  }
  const float inv = static_cast<float>(1.0 / sum);
  if (!scale_needed(y, n, inv)) return;
  const __m256 f = _mm256_set1_ps(inv);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(y + j, _mm256_mul_ps(f, _mm256_loadu_ps(y + j)));
  for (; j < n; ++j) y[j] *= inv;
}

__attribute__((target("avx512f,fma"))) float max_f32_avx512(const float* x, int64_t n) {
  const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 m = ninf;
  __mmask16 nan = 0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    m = _mm512_max_ps(v, m);
  }
  if (i < n) {
    const __mmask16 k = static_cast<__mmask16>((1u << (n - i)) - 1u);
    const __m512 v = _mm512_mask_loadu_ps(ninf, k, x + i);
    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    m = _mm512_max_ps(v, m);
  }
  if (nan != 0) return std::numeric_limits<float>::quiet_NaN();
  return _mm512_reduce_max_ps(m);
}

// K rows of n at x + k * n, each step interleaved over the rows (independent dependency chains:
// a row of 64 is mostly latency, max -> exp -> sum -> divide -> scale); every row gets exactly
// the operations of the one-row case.
template <int K>
__attribute__((target("avx512f,fma"))) void softmax_block_avx512(const float* x, float* y,
                                                                  int64_t n) {
  __m512 s[K];
  __m512d acc[K];  // lane j: elements i with i % 8 == j, in order
#pragma GCC unroll 4
  for (int k = 0; k < K; ++k) {
    s[k] = _mm512_set1_ps(max_f32_avx512(x + k * n, n));
    acc[k] = _mm512_setzero_pd();
  }
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
#pragma GCC unroll 4
    for (int k = 0; k < K; ++k) {
      const __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + k * n + i), s[k]));
      _mm512_storeu_ps(y + k * n + i, e);
      acc[k] = add_first(acc[k], _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
      acc[k] = add_first(acc[k], _mm512_cvtps_pd(_mm256_castpd_ps(
                                     _mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
    }
  const int64_t rest = n - i;
  const __mmask16 mask = static_cast<__mmask16>((1u << rest) - 1u);
  alignas(64) float buf[K][16];
  float inv[K];
#pragma GCC unroll 4
  for (int k = 0; k < K; ++k) {
    int64_t j0 = 0;
    if (rest > 0) {
      const __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask, x + k * n + i), s[k]));
      _mm512_mask_storeu_ps(y + k * n + i, mask, e);
      _mm512_store_ps(buf[k], e);
      if (rest >= 8) {
        acc[k] = add_first(acc[k], _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
        j0 = 8;
      }
    }
    double sum = i + j0 > 0
                     ? hsum8(_mm512_castpd512_pd256(acc[k]), _mm512_extractf64x4_pd(acc[k], 1))
                     : 0.0;
    for (int64_t j = j0; j < rest; ++j) sum = add_first(sum, static_cast<double>(buf[k][j]));
    inv[k] = static_cast<float>(1.0 / sum);
  }
  for (int k = 0; k < K; ++k) {
    float* yr = y + k * n;
    if (!scale_needed(yr, n, inv[k])) continue;
    const __m512 f = _mm512_set1_ps(inv[k]);
    int64_t j = 0;
    for (; j + 16 <= n; j += 16)
      _mm512_storeu_ps(yr + j, _mm512_mul_ps(f, _mm512_loadu_ps(yr + j)));
    if (j < n) {
      const __mmask16 m = static_cast<__mmask16>((1u << (n - j)) - 1u);
      _mm512_mask_storeu_ps(yr + j, m, _mm512_mul_ps(f, _mm512_maskz_loadu_ps(m, yr + j)));
    }
  }
}

__attribute__((target("avx512f,fma"))) void softmax_rows_avx512(const float* x, float* y,
                                                                 int64_t rows, int64_t n) {
  int64_t r = 0;
  if (n <= 256)  // short rows: 4 at a time
    for (; r + 4 <= rows; r += 4) softmax_block_avx512<4>(x + r * n, y + r * n, n);
  for (; r < rows; ++r) softmax_block_avx512<1>(x + r * n, y + r * n, n);
}

#pragma GCC diagnostic pop

const bool kHasAvx512 = cpu_has_avx512f();

}  // namespace

void exp_f32(const float* x, float* y, int64_t n) {
  apply8(x, y, n, [](__m256 v) { return Sleef_expf8_u10(v); });
}

void exp_f32_inline(const float* x, float* y, int64_t n) {
  if (kHasAvx512) return exp_f32_avx512(x, y, n);
  exp_f32_inline_avx2(x, y, n);
}

void exp_f32_inline_avx2(const float* x, float* y, int64_t n) { apply8(x, y, n, exp8); }

void softmax_rows_f32(const float* x, float* y, int64_t rows, int64_t n) {
  if (kHasAvx512) return softmax_rows_avx512(x, y, rows, n);
  softmax_rows_f32_avx2(x, y, rows, n);
}

void softmax_rows_f32_avx2(const float* x, float* y, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) softmax_row_avx2(x + r * n, y + r * n, n);
}

void erf_f32(const float* x, float* y, int64_t n) {
  if (kHasAvx512) return erf_f32_avx512(x, y, n);
  erf_f32_avx2(x, y, n);
}

void erf_f32_avx2(const float* x, float* y, int64_t n) { apply8(x, y, n, erf8); }


void sigmoid_f32(const float* x, float* y, int64_t n) {
  apply8(x, y, n, [](__m256 v) {
    const __m256 one = _mm256_set1_ps(1.f);
    const __m256 abs = _mm256_andnot_ps(_mm256_set1_ps(-0.f), v);
    const __m256 e = Sleef_expf8_u10(_mm256_sub_ps(_mm256_setzero_ps(), abs));
    const __m256 d = _mm256_add_ps(one, e);
    const __m256 pos = _mm256_div_ps(one, d), neg = _mm256_div_ps(e, d);
    // x >= 0 (false for NaN, whose e and so neg are NaN too).
    return _mm256_blendv_ps(neg, pos, _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GE_OQ));
  });
}

void tanh_f32(const float* x, float* y, int64_t n) {
  apply8(x, y, n, [](__m256 v) { return Sleef_tanhf8_u10(v); });
}

double exp_shifted_sum_f32(const float* x, float shift, float* y, int64_t n) {
  const __m256 s = _mm256_set1_ps(shift);
  __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = Sleef_expf8_u10(_mm256_sub_ps(_mm256_loadu_ps(x + i), s));
    _mm256_storeu_ps(y + i, e);
    lo = add_widened(lo, e, &hi);
  }
  double sum = hsum(_mm256_add_pd(lo, hi));
  if (i < n) {
    alignas(32) float buf[8];
    const int64_t rest = n - i;
    for (int64_t k = 0; k < 8; ++k) buf[k] = k < rest ? x[i + k] - shift : 0.f;
    _mm256_store_ps(buf, Sleef_expf8_u10(_mm256_load_ps(buf)));
    for (int64_t k = 0; k < rest; ++k) {
      y[i + k] = buf[k];
      sum += buf[k];
    }
  }
  return sum;
}

float max_f32(const float* x, int64_t n) {
  __m256 m = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 nan = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    m = _mm256_max_ps(v, m);  // NaN in v keeps m: the NaN is tracked separately
  }
  if (_mm256_movemask_ps(nan) != 0) return std::numeric_limits<float>::quiet_NaN();
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  float r = lanes[0];
  for (int k = 1; k < 8; ++k) r = std::max(r, lanes[k]);
  for (; i < n; ++i) {
    if (x[i] != x[i]) return std::numeric_limits<float>::quiet_NaN();
    r = std::max(r, x[i]);
  }
  return r;
}

}  // namespace tierjit::kernels
