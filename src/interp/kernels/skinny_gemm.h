// Tier 0's product of a few rows by a constant weight matrix (the mlp's and classifiers' layers
// at batch 1-8): y[M, N] = a[M, K] * op(b) + bias, with b packed once into column panels of 64
// (`[ceil(N/64)][K][64]`, zeros past N) and each thread of the team taking whole panels, so each
// core streams the same share of the weights from its own L2 on every call. oneDNN's brgemm
// matmul spends ~1.5 us more per product of one row here (1x512x512 on 2 threads: 4.6 vs 3.0 us;
// docs/performance.md "Skinny products (session 8)"). nn::dnnl_matmul_f32 routes constant-weight
// products of at most kSkinnyMaxRows rows here on CPUs with AVX-512F.
#pragma once

#include <cstdint>

#include "tierjit/tensor.h"

namespace tierjit::interp::nn {

/// Rows (M) up to which skinny_matmul_f32 runs instead of oneDNN's matmul primitive.
inline constexpr int64_t kSkinnyMaxRows = 8;

/// Whether this CPU runs skinny_matmul_f32 (AVX-512F) and it is enabled
/// (set_skinny_matmul_enabled; tests compare both paths).
bool skinny_matmul_available();
void set_skinny_matmul_enabled(bool enabled);

/// Calls of skinny_matmul_f32 since the process started (tests check the routing).
uint64_t skinny_matmul_runs();

/// y[M, N] = a[M, K] * op(b) (+ bias[N] on every row when bias is non-null), float32, a and y
/// dense row-major; b row-major [K, N], or [N, K] when trans_b (Gemm's transB), held by
/// `constant_b`, a tensor whose contents never change (a graph initializer): b's packed panels
/// are cached by b's address and the geometry, and hold the tensor. Sums run in order of
/// k per output with fused multiply-adds, starting from the bias (results may differ from
/// oneDNN's in the last bits). K = 0 gives the bias (or zeros). Runs on min(threads, panels)
/// threads of the calling OpenMP team. Requires skinny_matmul_available(), 1 <= m <=
/// kSkinnyMaxRows, n >= 1, k >= 0. Never fails.
void skinny_matmul_f32(int64_t m, int64_t n, int64_t k, bool trans_b, const float* a,
                       const float* b, const Tensor& constant_b, const float* bias, float* y,
                       int threads);

}  // namespace tierjit::interp::nn
