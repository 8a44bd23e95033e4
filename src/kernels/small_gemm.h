// Tier 0's float32 GEMM for small products (attention heads of short sequences, classifier
// layers of a few rows). oneDNN's dnnl_sgemm generates its kernels on the first call of each
// kind: 2.2 ms for one row with B transposed, 1.3 ms for more, 19 ms with B plain (measured
// here, once per process: bert_tiny's first 1x16 request took 22.7 ms, then 0.09 ms), which
// this loop nest, compiled ahead of time, never pays. nn::sgemm routes products below
// kSmallGemmMacs here.
#pragma once

#include <cstdint>

namespace tierjit::kernels {

/// Multiply-accumulates below which nn::sgemm runs small_sgemm. Steady state against
/// dnnl_sgemm, one thread, median of 2,000 (us): 16x64x16 0.25 vs 0.38, 16x16x64 0.22 vs 0.36,
/// 32x32x64 0.86 vs 0.70, 64x64x16 1.0 vs 0.79; B transposed: 1x10x512 0.12 vs 0.26, 2x10x512
/// 0.24 vs 0.22, 8x10x512 0.95 vs 0.59, 4x10x1568 1.5 vs 1.1.
inline constexpr int64_t kSmallGemmMacs = int64_t{1} << 16;

/// Row-major C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, op = transpose if trans_*,
/// with BLAS semantics: lda/ldb/ldc are row strides (elements) of the stored matrices; beta = 0
/// writes C without reading it (NaN in C is ignored); K = 0 gives beta * C. Sums run in order
/// of k within vector lanes, then across lanes (results may differ from dnnl_sgemm in the
/// last bits). On the calling thread; AVX-512 / AVX2 where the CPU has them. Never fails.
void small_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                 int64_t ldc);

}  // namespace tierjit::kernels
