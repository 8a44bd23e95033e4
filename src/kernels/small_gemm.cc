// Small float32 GEMM (see small_gemm.h): 16-lane vector accumulators, compiled twice: for
// AVX-512F on GCC's 16-lane vector type, for the build's baseline (AVX2 + FMA) on a pair of 8-lane
// vectors (P16: GCC lowers 16-lane vectors for AVX2 through memory), chosen at run time. Each
// lane sees the same operations in both: the same bits.
// (Not target_clones: its ifunc resolvers run before ThreadSanitizer's runtime is up, and the
// TSan build of the tests crashed at load.)
#include "kernels/small_gemm.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/cpu_features.h"

// The 16-lane helpers below pass vectors by value; they are internal and always inlined into
// the clones, so no call crosses an ABI boundary.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace tierjit::kernels {
namespace {

typedef float V16 __attribute__((vector_size(64)));
typedef float V8 __attribute__((vector_size(32)));

// 16 lanes as two AVX2 vectors: lanes 0-7 in lo, 8-15 in hi.
struct P16 {
  V8 lo, hi;
  __attribute__((always_inline)) P16& operator+=(const P16& o) {
    lo += o.lo;
    hi += o.hi;
    return *this;
  }
  __attribute__((always_inline)) float operator[](int l) const { return l < 8 ? lo[l] : hi[l - 8]; }
};
__attribute__((always_inline)) inline P16 operator+(const P16& a, const P16& b) {
  return {a.lo + b.lo, a.hi + b.hi};
}
__attribute__((always_inline)) inline P16 operator*(const P16& a, const P16& b) {
  return {a.lo * b.lo, a.hi * b.hi};
}
__attribute__((always_inline)) inline P16 operator*(float a, const P16& b) {
  return {a * b.lo, a * b.hi};
}

template <class V>
__attribute__((always_inline)) inline V load(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// (Through memcpy a P16 went through the stack: its halves are loaded one by one.)
template <>
__attribute__((always_inline)) inline P16 load<P16>(const float* p) {
  return {load<V8>(p), load<V8>(p + 8)};
}

template <class V>
__attribute__((always_inline)) inline void store(float* p, const V& v) {
  std::memcpy(p, &v, sizeof v);
}
template <>
__attribute__((always_inline)) inline void store<P16>(float* p, const P16& v) {
  store(p, v.lo);
  store(p + 8, v.hi);
}

// The 16 lanes summed in order.
__attribute__((always_inline)) inline float hsum(const V16& v) {
  float s = 0;
  for (int l = 0; l < 16; ++l) s += v[l];
  return s;
}
__attribute__((always_inline)) inline float hsum(const P16& v) {
  float s = 0;
  for (int l = 0; l < 8; ++l) s += v.lo[l];
  for (int l = 0; l < 8; ++l) s += v.hi[l];
  return s;
}

__attribute__((always_inline)) inline float finish(float acc, float alpha, float beta,
                                                   const float* c) {
  return beta == 0.f ? alpha * acc : alpha * acc + beta * *c;
}

// B plain [K, N]: R rows of C at once, 16 columns at a time (R independent accumulators, so
// the sums over k do not wait on each other), rows of B scaled by A's elements; a tail of
// fewer columns in scalars, the same order of k.
template <class V, int R>
__attribute__((always_inline)) inline void rows_b_plain(bool trans_a, int64_t i0, int64_t n,
                                                       int64_t k, float alpha, const float* a,
                                                       int64_t lda, const float* b, int64_t ldb,
                                                       float beta, float* c, int64_t ldc) {
  const int64_t rs = trans_a ? 1 : lda, ps = trans_a ? lda : 1;  // A(i, p) = a[i * rs + p * ps]
  auto av = [&](int r, int64_t p) { return a[(i0 + r) * rs + p * ps]; };
  int64_t j0 = 0;
  for (; j0 + 16 <= n; j0 += 16) {
    V s0 = {}, s1 = {}, s2 = {}, s3 = {};  // rows i0 .. i0 + R - 1 (R <= 4)
    for (int64_t p = 0; p < k; ++p) {
      const V bv = load<V>(b + p * ldb + j0);
      s0 += av(0, p) * bv;
      if constexpr (R > 1) s1 += av(1, p) * bv;
      if constexpr (R > 2) s2 += av(2, p) * bv;
      if constexpr (R > 3) s3 += av(3, p) * bv;
    }
    const V sums[4] = {s0, s1, s2, s3};
    for (int r = 0; r < R; ++r) {  // finish() on 16 lanes
      float* cr = c + (i0 + r) * ldc + j0;
      store(cr, beta == 0.f ? alpha * sums[r] : alpha * sums[r] + beta * load<V>(cr));
    }
  }
  if (j0 < n) {
    const int64_t jn = n - j0;
    float acc[R][16] = {};
    for (int64_t p = 0; p < k; ++p) {
      const float* bp = b + p * ldb + j0;
      for (int r = 0; r < R; ++r) {
        const float x = av(r, p);
        for (int64_t jj = 0; jj < jn; ++jj) acc[r][jj] += x * bp[jj];
      }
    }
    for (int r = 0; r < R; ++r) {
      float* cr = c + (i0 + r) * ldc + j0;
      for (int64_t jj = 0; jj < jn; ++jj) cr[jj] = finish(acc[r][jj], alpha, beta, cr + jj);
    }
  }
}

template <class V>
__attribute__((always_inline)) inline void gemm_b_plain(bool trans_a, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) rows_b_plain<V, 4>(trans_a, i, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  switch (m - i) {
    case 3: rows_b_plain<V, 3>(trans_a, i, n, k, alpha, a, lda, b, ldb, beta, c, ldc); break;
    case 2: rows_b_plain<V, 2>(trans_a, i, n, k, alpha, a, lda, b, ldb, beta, c, ldc); break;
    case 1: rows_b_plain<V, 1>(trans_a, i, n, k, alpha, a, lda, b, ldb, beta, c, ldc); break;
    default: break;
  }
}

// B transposed (stored [N, K]) and A plain: dot products of rows, four columns of C at a time
// sharing A's loads; 16 lanes of partial sums, then the lanes summed in order. Two rows at once
// with 16-lane registers (8 accumulators); one with P16 (the pairs of AVX2's 16 registers).
template <class V>
__attribute__((always_inline)) inline void gemm_b_trans(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                  const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  const int64_t kv = k / 16 * 16;
  int64_t i = 0;
  for (; std::is_same_v<V, V16> && i + 2 <= m; i += 2) {  // two rows of C: eight (or two) sums
    const float* a0 = a + i * lda;
    const float* a1 = a0 + lda;
    float* c0 = c + i * ldc;
    float* c1 = c0 + ldc;
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
      const float* bj[4] = {b + j * ldb, b + (j + 1) * ldb, b + (j + 2) * ldb, b + (j + 3) * ldb};
      V s00 = {}, s01 = {}, s02 = {}, s03 = {}, s10 = {}, s11 = {}, s12 = {}, s13 = {};
      for (int64_t p = 0; p < kv; p += 16) {
        const V x0 = load<V>(a0 + p), x1 = load<V>(a1 + p);
        const V y0 = load<V>(bj[0] + p), y1 = load<V>(bj[1] + p);
        const V y2 = load<V>(bj[2] + p), y3 = load<V>(bj[3] + p);
        s00 += x0 * y0;
        s01 += x0 * y1;
        s02 += x0 * y2;
        s03 += x0 * y3;
        s10 += x1 * y0;
        s11 += x1 * y1;
        s12 += x1 * y2;
        s13 += x1 * y3;
      }
      float r0[4] = {hsum(s00), hsum(s01), hsum(s02), hsum(s03)};
      float r1[4] = {hsum(s10), hsum(s11), hsum(s12), hsum(s13)};
      for (int q = 0; q < 4; ++q) {
        for (int64_t p = kv; p < k; ++p) {
          r0[q] += a0[p] * bj[q][p];
          r1[q] += a1[p] * bj[q][p];
        }
        c0[j + q] = finish(r0[q], alpha, beta, c0 + j + q);
        c1[j + q] = finish(r1[q], alpha, beta, c1 + j + q);
      }
    }
    for (; j < n; ++j) {
      const float* bj = b + j * ldb;
      V s0 = {}, s1 = {};
      for (int64_t p = 0; p < kv; p += 16) {
        const V y = load<V>(bj + p);
        s0 += load<V>(a0 + p) * y;
        s1 += load<V>(a1 + p) * y;
      }
      float r0 = hsum(s0), r1 = hsum(s1);
      for (int64_t p = kv; p < k; ++p) {
        r0 += a0[p] * bj[p];
        r1 += a1[p] * bj[p];
      }
      c0[j] = finish(r0, alpha, beta, c0 + j);
      c1[j] = finish(r1, alpha, beta, c1 + j);
    }
  }
  for (; i < m; ++i) {  // the last row alone
    const float* ai = a + i * lda;
    float* ci = c + i * ldc;
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
      const float* b0 = b + j * ldb;
      const float* b1 = b0 + ldb;
      const float* b2 = b1 + ldb;
      const float* b3 = b2 + ldb;
      V s0 = {}, s1 = {}, s2 = {}, s3 = {};
      for (int64_t p = 0; p < kv; p += 16) {
        const V av = load<V>(ai + p);
        s0 += av * load<V>(b0 + p);
        s1 += av * load<V>(b1 + p);
        s2 += av * load<V>(b2 + p);
        s3 += av * load<V>(b3 + p);
      }
      float r[4] = {hsum(s0), hsum(s1), hsum(s2), hsum(s3)};
      for (int64_t p = kv; p < k; ++p) {
        r[0] += ai[p] * b0[p];
        r[1] += ai[p] * b1[p];
        r[2] += ai[p] * b2[p];
        r[3] += ai[p] * b3[p];
      }
      for (int q = 0; q < 4; ++q) ci[j + q] = finish(r[q], alpha, beta, ci + j + q);
    }
    for (; j < n; ++j) {
      const float* bj = b + j * ldb;
      V s = {};
      for (int64_t p = 0; p < kv; p += 16) s += load<V>(ai + p) * load<V>(bj + p);
      float r = hsum(s);
      for (int64_t p = kv; p < k; ++p) r += ai[p] * bj[p];
      ci[j] = finish(r, alpha, beta, ci + j);
    }
  }
}

// Where the CPU has AVX-512F (checked once).
const bool kHasAvx512 = cpu_has_avx512f();

__attribute__((target("avx512f"))) void plain_avx512(bool trans_a, int64_t m, int64_t n,
                                                     int64_t k, float alpha, const float* a,
                                                     int64_t lda, const float* b, int64_t ldb,
                                                     float beta, float* c, int64_t ldc) {
  gemm_b_plain<V16>(trans_a, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void plain_avx2(bool trans_a, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  gemm_b_plain<P16>(trans_a, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

__attribute__((target("avx512f"))) void trans_avx512(int64_t m, int64_t n, int64_t k, float alpha,
                                                     const float* a, int64_t lda, const float* b,
                                                     int64_t ldb, float beta, float* c,
                                                     int64_t ldc) {
  gemm_b_trans<V16>(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void trans_avx2(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  gemm_b_trans<P16>(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace

void small_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                 int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (!trans_b) {
    (kHasAvx512 ? plain_avx512 : plain_avx2)(trans_a, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else if (!trans_a) {
    (kHasAvx512 ? trans_avx512 : trans_avx2)(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else {  // both transposed (Gemm with transA and transB): rare, plain loops
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float acc = 0;
        for (int64_t p = 0; p < k; ++p) acc += a[p * lda + i] * b[j * ldb + p];
        c[i * ldc + j] = finish(acc, alpha, beta, c + i * ldc + j);
      }
  }
}

}  // namespace tierjit::kernels
