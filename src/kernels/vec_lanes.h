// Float vectors of L lanes (and two integer helpers) for the kernel layer's plain C++ tiles
// (private to src/kernels): GCC vector extensions, compiled for the target of the function they
// are inlined into. A tile is written once as a template over L and instantiated in two
// wrappers: L = 16 under target("avx512f") (one zmm register), L = 8 under the AVX2 baseline
// (one ymm register; 16-lane vectors there are split through memory by gcc, 10x slower).
// Every vector value stays inside such a wrapper: gcc's -Wpsabi note about passing them across
// an ABI boundary does not apply and is silenced here.
#pragma once

#include <cstdint>
#include <cstring>

#pragma GCC diagnostic ignored "-Wpsabi"

namespace tierjit::kernels {

/// Floor and ceiling of a / b for b > 0.
inline int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
inline int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

template <int L>
struct VecF {
  typedef float type __attribute__((vector_size(4 * L)));
};

/// 32-bit integer vectors of L lanes (lane masks: -1 keeps a float's bits, 0 clears them).
template <int L>
struct VecI {
  typedef int32_t type __attribute__((vector_size(4 * L)));
};

template <int L>
inline __attribute__((always_inline)) typename VecF<L>::type loadu(const float* p) {
  typename VecF<L>::type v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <int L>
inline __attribute__((always_inline)) void storeu(float* p, typename VecF<L>::type v) {
  std::memcpy(p, &v, sizeof v);
}

/// dst[0, n) = src[0, n), L at a time then one by one.
template <int L>
inline __attribute__((always_inline)) void copy_run(float* dst, const float* src, int64_t n) {
  int64_t i = 0;
  for (; i + L <= n; i += L) storeu<L>(dst + i, loadu<L>(src + i));
  for (; i < n; ++i) dst[i] = src[i];
}
/// dst[0, n) = src[0, n) in whole vectors: may write up to L - 1 floats past dst + n and read up
/// to L - 1 past src + n (callers give both room).
template <int L>
inline __attribute__((always_inline)) void copy_run_over(float* dst, const float* src, int64_t n) {
  for (int64_t i = 0; i < n; i += L) storeu<L>(dst + i, loadu<L>(src + i));
}
/// dst[0, n) = 0 in whole vectors: may write up to L - 1 floats past dst + n.
template <int L>
inline __attribute__((always_inline)) void zero_run_over(float* dst, int64_t n) {
  const typename VecF<L>::type z = {};
  for (int64_t i = 0; i < n; i += L) storeu<L>(dst + i, z);
}
/// dst[0, n) = 0.
template <int L>
inline __attribute__((always_inline)) void zero_run(float* dst, int64_t n) {
  int64_t i = 0;
  const typename VecF<L>::type z = {};
  for (; i + L <= n; i += L) storeu<L>(dst + i, z);
  for (; i < n; ++i) dst[i] = 0.f;
}
/// The even lanes of a then of b: {a0, a2, ..., b0, b2, ...}.
template <int L>
inline __attribute__((always_inline)) typename VecF<L>::type even_lanes(typename VecF<L>::type a,
                                                                         typename VecF<L>::type b) {
  if constexpr (L == 16)
    return __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  else
    return __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
}
/// dst[t] = src[2 t] for t < n: L at a time from 2 L floats while src[2 t + 2 L - 1] is inside
/// `limit` floats of src, then one by one.
template <int L>
inline __attribute__((always_inline)) void copy_run_stride2(float* dst, const float* src, int64_t n,
                                                            int64_t limit) {
  int64_t t = 0;
  for (; t + L <= n && 2 * t + 2 * L <= limit; t += L) {
    storeu<L>(dst + t, even_lanes<L>(loadu<L>(src + 2 * t), loadu<L>(src + 2 * t + L)));
  }
  for (; t < n; ++t) dst[t] = src[2 * t];
}

/// dst[t] = src[2 t] for t < n in whole vectors of L: may write up to L - 1 floats past dst + n
/// (callers give it room) and reads whole vectors while `avail` (floats readable from src) allows,
/// masked loads for the rest (AVX-512F for L = 16, AVX2 for L = 8: the helpers below carry their
/// target; they are not inlined into the generic template, one call per run's end).
void stride2_tail16(float* dst, const float* src, int64_t n, int64_t avail);
void stride2_tail8(float* dst, const float* src, int64_t n, int64_t avail);
template <int L>
inline __attribute__((always_inline)) void copy_run_stride2_over(float* dst, const float* src,
                                                                 int64_t n, int64_t avail) {
  int64_t t = 0;
  for (; t < n && avail - 2 * t >= 2 * L; t += L) {
    storeu<L>(dst + t, even_lanes<L>(loadu<L>(src + 2 * t), loadu<L>(src + 2 * t + L)));
  }
  if (t >= n) return;
  if constexpr (L == 16) stride2_tail16(dst + t, src + 2 * t, n - t, avail - 2 * t);
  else stride2_tail8(dst + t, src + 2 * t, n - t, avail - 2 * t);
}

}  // namespace tierjit::kernels
