// oneDNN glue for the tier-0 nn kernels: float32 GEMM (dnnl_sgemm, no primitive needed), float32
// matrix products and convolutions through oneDNN primitives cached per shape (creating one
// costs 0.05-0.5 ms). Threads: oneDNN runs on OpenMP; every call first sets the calling thread's
// OpenMP thread count to ExecOptions::intra_op_threads. No oneDNN type leaks out of this header.
#pragma once

#include <cstdint>
#include <vector>

#include "interp/kernel.h"

namespace tierjit::interp::nn {

/// Multiply-accumulates below which sgemm runs on one thread (2^22: ~20 us on one core); above,
/// it uses the team while the spare cores are free (parallel_threads). Below it, waking and
/// joining an OpenMP team costs about as much as it saves when the second core is busy (with
/// OMP_WAIT_POLICY=passive: mlp 8x256 at 2 threads took 0.058 ms p50 with 2^21, 0.042 ms with
/// 2^22). The generated GEMM uses the same bound (kir/lower/gemm_kernel.cc).
inline constexpr int64_t kParallelMacs = int64_t{1} << 22;

/// Multiply-accumulates below which dnnl_matmul_f32 calls sgemm (a primitive call's fixed cost,
/// ~0.6 us, exceeds sgemm's: 32x64x32 took 0.7 us by sgemm, 1.3 us by a primitive) and
/// oneDNN calls run on one thread.
inline constexpr int64_t kPrimitiveMinMacs = int64_t{1} << 16;

/// Threads for a oneDNN call of `macs` multiply-adds given `threads` intra-op threads: 1 below
/// kPrimitiveMinMacs; above, `threads` only while no other process and no background compile of
/// this one holds the spare cores (support::spare_cores_for), else 1. On an idle second core the
/// team made mlp's 1x256 / 8x256 / 32x256 calls 0.025 / 0.042 / 0.116 -> 0.019 / 0.030 / 0.088 ms;
/// with one foreign busy process it made them up to 4x slower, and during compiles mlp's long
/// trace took 940 ms with the team for products >= 2^22, 750 ms without.
int parallel_threads(int64_t macs, int threads);

/// Bytes of the reordered copies of constant weights kept for oneDNN's primitives (plus the
/// originals they hold): bounded by a budget (256 MiB; past it a copy is made per call), and a
/// copy whose weight tensor only the cache still holds is dropped at the next reorder (tests
/// check it).
size_t dnnl_cached_weight_bytes();

/// Sets omp_set_num_threads(threads) for the calling thread if it differs (oneDNN reads it).
void set_dnnl_threads(int threads);

/// Row-major C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, op = transpose if trans_*.
/// lda/ldb/ldc are row strides in elements of the stored (untransposed) matrices.
/// M, N or K may be 0 (K = 0 scales C by beta). Errors: oneDNN's status as kInternal.
Status sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
             const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
             int64_t ldc);

/// Geometry of a float32 matrix product y[M, N] = a[M, K] * op(b): `a` and `y` dense row-major,
/// `b` dense row-major [K, N], or [N, K] when trans_b (Gemm's transB, a Linear layer's weight).
struct MatMulGeometry {
  int64_t m = 0, n = 0, k = 0;
  bool trans_b = false;
  bool operator==(const MatMulGeometry&) const = default;
};

/// y = a * op(b), plus bias[N] added to every row when `bias` is non-null; float32 through a
/// oneDNN matmul primitive cached per geometry (brgemm kernels; 1.3-2.8x dnnl_sgemm for M <= 64
/// on the mlp's layers, without sgemm's multi-millisecond first calls per new shape).
/// `constant_b`, when non-null, is the tensor holding `b` and promises its contents never change
/// (a graph initializer): the product then runs on our packed panels (packed_gemm.h: no kernel
/// generated per row count, at any row count), else on
/// the primitive with b kept packed in its preferred layout across calls (weights_in_layout).
/// Below kPrimitiveMinMacs multiply-adds dnnl_sgemm runs instead (less fixed cost); above,
/// `threads` or one as parallel_threads decides. Requires m, n, k > 0.
/// Errors: oneDNN failures as kInternal.
Status dnnl_matmul_f32(const MatMulGeometry& g, const float* a, const float* b,
                       const Tensor* constant_b, const float* bias, float* y, int threads);

/// y[t] = a[t] * b[t] for t < batch: contiguous [batch, M, K] x [batch, K, N] -> [batch, M, N]
/// float32 (attention's per-head products) in one oneDNN batched matmul primitive, cached per
/// geometry; `threads` or one as parallel_threads decides for the whole product. g.trans_b is
/// ignored (b is plain). Requires batch, m, n, k > 0. Errors: oneDNN failures as kInternal.
Status dnnl_batched_matmul_f32(int64_t batch, const MatMulGeometry& g, const float* a,
                               const float* b, float* y, int threads);

/// Geometry of an N-D convolution (1 <= spatial rank <= 3), all in elements.
/// x: [batch, in_channels, in_spatial...]; w: [out_channels, in_channels/group, kernel...]
/// y: [batch, out_channels, out_spatial...]. dilations are ONNX-style (1 = dense).
struct ConvGeometry {
  int64_t batch = 0, in_channels = 0, out_channels = 0, group = 1;
  std::vector<int64_t> in_spatial, out_spatial, kernel, strides, dilations, pad_begin, pad_end;
  bool operator==(const ConvGeometry&) const = default;
};

/// Largest batch whose first call runs image by image (dnnl_conv_f32): convnet_small's first
/// calls at 32 and 128 images were no slower that way (2.7-3.6 vs 3.3-3.5 ms, 9.0-11.9 vs
/// 10.9-11.7 ms; loaded 2-core machine).
inline constexpr int64_t kConvImagesApartMax = 64;

/// y = conv(x, w) + bias (bias may be nullptr), float32 via a oneDNN primitive cached per
/// geometry and thread count. Creating one costs 0.1-0.25 ms per batch size (primitive
/// descriptor 25-45 us, source and destination reorders 30-75 us, kernel generation 35-155 us;
/// convnet_small's two Convs), so the first call of a batch size of 2..kConvImagesApartMax
/// that has no primitive runs image by image on the batch-1 primitive of the same geometry
/// (which a Session's warm-up made; convnet_small first calls at 2 / 8 images: 0.95 / 1.6 ->
/// 0.37 / 0.95 ms) and its second call makes the batch size's own primitive (no slower than
/// the image loop from 8 images on: 0.26 vs 0.30-0.33 ms). Results may differ from one batched
/// call in the last bits (oneDNN may pick another implementation for one image).
/// `constant_w`, when non-null, is the weight tensor (holding `w`) and promises that its
/// contents never change (a graph initializer): its reordered copy is then cached across calls.
/// Requires every dim > 0. Errors: oneDNN failures as kInternal.
Status dnnl_conv_f32(const ConvGeometry& g, const float* x, const float* w,
                     const Tensor* constant_w, const float* bias, float* y, int threads);

}  // namespace tierjit::interp::nn
