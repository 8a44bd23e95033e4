// Array loops over 8-lane AVX2 float functions (erf also 16 lanes on AVX-512F CPUs; see vec_math.h): SLEEF 3.5 (Debian
// libsleef-dev) Sleef_expf8_u10 and Sleef_tanhf8_u10, documented at max 1.0 ulp (its dispatcher
// picks the AVX2 code at run time), and erf as the rational approximation of the compiled tiers.
// The tail (n % 8 elements) goes through a padded 8-lane buffer: every element sees one function.
#include "interp/kernels/vec_math.h"

#include <immintrin.h>
#include <sleef.h>

#include <algorithm>
#include <cstring>
#include <limits>

namespace tierjit::interp::vm {
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

// erf(x) = x P(x^2) / Q(x^2) with x clamped to [-4, 4] (|erf| rounds to 1 beyond; NaN passes the
// clamp): the rational approximation of src/codegen/math_emit.cc (Eigen's generic_fast_erf_float),
// so tier 0 and the compiled tiers agree. SLEEF's 1-ulp erf costs ~9x more per element.
inline __m256 erf8(__m256 x) {
  const __m256 four = _mm256_set1_ps(4.f), mfour = _mm256_set1_ps(-4.f);
  __m256 xc = _mm256_blendv_ps(x, four, _mm256_cmp_ps(x, four, _CMP_GT_OQ));
  xc = _mm256_blendv_ps(xc, mfour, _mm256_cmp_ps(xc, mfour, _CMP_LT_OQ));
  const __m256 x2 = _mm256_mul_ps(xc, xc);
  __m256 p = _mm256_set1_ps(-2.72614225801306e-10f);
  for (float c : {2.77068142495902e-08f, -2.10102402082508e-06f, -5.69250639462346e-05f,
                  -7.34990630326855e-04f, -2.95459980854025e-03f, -1.60960333262415e-02f})
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(c));
  __m256 q = _mm256_set1_ps(-1.45660718464996e-05f);
  for (float c : {-2.13374055278905e-04f, -1.68282697438203e-03f, -7.37332916720468e-03f,
                  -1.42647390514189e-02f})
    q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(c));
  return _mm256_mul_ps(xc, _mm256_div_ps(p, q));  // x * (p/q): no underflow for tiny x
}

// erf8 sixteen lanes wide (AVX-512F): the same operations in the same order, so every lane's
// result equals erf8's bit for bit; run only when the CPU has AVX-512F (erf_f32 checks).
__attribute__((target("avx512f,fma"))) inline __m512 erf16(__m512 x) {
  const __m512 four = _mm512_set1_ps(4.f), mfour = _mm512_set1_ps(-4.f);
  __m512 xc = _mm512_mask_mov_ps(x, _mm512_cmp_ps_mask(x, four, _CMP_GT_OQ), four);
  xc = _mm512_mask_mov_ps(xc, _mm512_cmp_ps_mask(xc, mfour, _CMP_LT_OQ), mfour);
  const __m512 x2 = _mm512_mul_ps(xc, xc);
  __m512 p = _mm512_set1_ps(-2.72614225801306e-10f);
  for (float c : {2.77068142495902e-08f, -2.10102402082508e-06f, -5.69250639462346e-05f,
                  -7.34990630326855e-04f, -2.95459980854025e-03f, -1.60960333262415e-02f})
    p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(c));
  __m512 q = _mm512_set1_ps(-1.45660718464996e-05f);
  for (float c : {-2.13374055278905e-04f, -1.68282697438203e-03f, -7.37332916720468e-03f,
                  -1.42647390514189e-02f})
    q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(c));
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

const bool kHasAvx512 = [] {
  __builtin_cpu_init();  // static initializers may run before libgcc's own
  return __builtin_cpu_supports("avx512f") != 0;
}();

}  // namespace

void exp_f32(const float* x, float* y, int64_t n) {
  apply8(x, y, n, [](__m256 v) { return Sleef_expf8_u10(v); });
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

}  // namespace tierjit::interp::vm
