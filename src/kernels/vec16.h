// 16-float vectors (and two integer helpers) for the kernel layer's plain C++
// tiles (private to src/kernels): GCC vector extensions, compiled for the
// target of the function they are inlined into (one zmm register under
// target("avx512f"), two ymm registers under the AVX2 baseline), so one body
// serves both instruction sets through two wrappers with different target
// attributes. Only inline helpers here: every vf16 value stays inside such a
// wrapper (gcc's -Wpsabi note about passing them is moot and silenced where
// they are used).
#pragma once

#include <cstdint>
#include <cstring>

namespace tierjit::kernels {

/// Floor and ceiling of a / b for b > 0.
inline int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
inline int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

// Every vf16 value stays inside one target-attributed function (see above): gcc's -Wpsabi
// note about passing such values across an ABI boundary does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float vf16 __attribute__((vector_size(64)));

inline __attribute__((always_inline)) vf16 loadu16(const float *p) {
  vf16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline __attribute__((always_inline)) void storeu16(float *p, vf16 v) {
  std::memcpy(p, &v, sizeof v);
}

/// dst[0, n) = src[0, n), 16 at a time then one by one.
inline __attribute__((always_inline)) void copy_run(float *dst, const float *src, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) storeu16(dst + i, loadu16(src + i));
  for (; i < n; ++i) dst[i] = src[i];
}
/// dst[0, n) = src[0, n) in whole vectors: may write up to 15 floats past dst +
/// n and read up to 15 past src + n (callers give both room).
inline __attribute__((always_inline)) void copy_run_over(float *dst, const float *src, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) storeu16(dst + i, loadu16(src + i));
}
/// dst[0, n) = 0 in whole vectors: may write up to 15 floats past dst + n.
inline __attribute__((always_inline)) void zero_run_over(float *dst, int64_t n) {
  const vf16 z = {};
  for (int64_t i = 0; i < n; i += 16) storeu16(dst + i, z);
}
/// dst[0, n) = 0.
inline __attribute__((always_inline)) void zero_run(float *dst, int64_t n) {
  int64_t i = 0;
  const vf16 z = {};
  for (; i + 16 <= n; i += 16) storeu16(dst + i, z);
  for (; i < n; ++i) dst[i] = 0.f;
}
/// dst[t] = src[2 t] for t < n: 16 at a time from 32 floats while src[2 t + 31]
/// is inside `limit` floats of src, then one by one.
inline __attribute__((always_inline)) void copy_run_stride2(float *dst, const float *src, int64_t n,
                                                            int64_t limit) {
  int64_t t = 0;
  for (; t + 16 <= n && 2 * t + 32 <= limit; t += 16) {
    const vf16 a = loadu16(src + 2 * t), b = loadu16(src + 2 * t + 16);
    storeu16(dst + t, __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24,
                                              26, 28, 30));
  }
  for (; t < n; ++t) dst[t] = src[2 * t];
}

}  // namespace tierjit::kernels
