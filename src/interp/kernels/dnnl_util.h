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

/// An elementwise activation oneDNN applies to each convolution output before storing it (an
/// eltwise post-op), so Conv followed by that activation is one pass over the output (tier 0's
/// Conv + activation fusion, interp/kernels/conv_fusion.h). Only forms whose oneDNN result equals
/// tier 0's activation kernel bit for bit, NaN and signed zeros included, are offered:
/// kClip: min(max(y, alpha), beta), NaN -> alpha (oneDNN eltwise_clip; Relu is alpha = 0,
///   beta = +inf, matching tier 0's Relu, which maps NaN and -0 to +0).
/// kLeakyRelu: y > 0 ? y : alpha * y with alpha > 0 (oneDNN eltwise_relu; NaN stays NaN).
/// `sum` (dnnl_conv_f32_accumulate only): first y = conv + y's prior contents (oneDNN's sum
/// post-op, scale 1: one float32 addition, as tier 0's Add), then the activation.
struct ConvPostOp {
  enum class Kind : uint8_t { kNone, kClip, kLeakyRelu };
  Kind kind = Kind::kNone;
  float alpha = 0, beta = 0;
  bool sum = false;
  bool operator==(const ConvPostOp&) const = default;
};

/// y = conv(x, w) + bias (bias may be nullptr), float32 via a cached oneDNN primitive.
/// `constant_w`, when non-null, is the weight tensor (holding `w`) and promises that its
/// contents never change (a graph initializer): its reordered copy is then cached across calls.
/// Requires every dim > 0. Errors: oneDNN failures as kInternal.
Status dnnl_conv_f32(const ConvGeometry& g, const float* x, const float* w,
                     const Tensor* constant_w, const float* bias, float* y, int threads);

/// True if a oneDNN convolution of `g` applies post-ops inside its kernel: not for 1x1 kernels,
/// which run oneDNN's GEMM convolution on the plain layout, where an eltwise post-op made
/// mobilenet_v2's 1x1 convolutions 4.5x slower (3.4 -> 15 ms per call in all); apply the
/// activation separately there.
bool dnnl_conv_fuses_post_ops(const ConvGeometry& g);

/// As above with `post` applied to every output element (ConvPostOp; kNone: none).
Status dnnl_conv_f32(const ConvGeometry& g, const float* x, const float* w,
                     const Tensor* constant_w, const float* bias, float* y, int threads,
                     const ConvPostOp& post);

/// Layout of a float32 activation tensor [N, C, spatial...] (spatial rank 1-3) handed to oneDNN.
/// kPlain: row-major N, C, spatial (ONNX's). kChannelsLast: N, spatial, C (oneDNN's nwc / nhwc /
/// ndhwc), the layout its brgemm convolutions (dense and depthwise) read and write on AVX-512.
/// kBlocked8: N, C / 8, spatial, 8 (oneDNN's nCw8c / nChw8c / nCdhw8c; C a multiple of 8), the
/// layout its AVX2 direct kernels read and write: on an AVX2-only CPU resnet18's layer1 ran
/// 14-32% faster there than on kChannelsLast (docs/performance.md, "AVX2 kernels (session 11)").
/// Tier 0's conv chains keep one of the two (interp/kernels/conv_chain.h).
enum class ActLayout : uint8_t { kPlain, kChannelsLast, kBlocked8 };

/// As dnnl_conv_f32 with `x` laid out as `x_layout` and `y` written as `y_layout` (both as in
/// ActLayout); `post` is applied to every output element. A kChannelsLast (or kBlocked8)
/// destination runs the convolution writing that layout and reading a source in it as it is (no reorder;
/// 1x1 kernels then run oneDNN's brgemm convolution instead of its GEMM on the plain layout,
/// post-ops included), a kPlain source in oneDNN's preferred layout (reordered, e.g. a first
/// layer's 3 channels; oneDNN then runs its channels-last brgemm kernel where a plain
/// convolution of few input channels runs its nChw16c direct one). Where oneDNN offers only its
/// reference kernel for the requested layouts, it runs on its preferred ones with reorders.
/// Requires every dim > 0. Errors: oneDNN failures as kInternal.
Status dnnl_conv_f32(const ConvGeometry& g, const float* x, ActLayout x_layout, const float* w,
                     const Tensor* constant_w, const float* bias, float* y, ActLayout y_layout,
                     int threads, const ConvPostOp& post);

/// As the layout form of dnnl_conv_f32, but `post` is applied only where oneDNN runs the same
/// convolution (implementation and memory layouts) with it as without it, so that the values
/// before the post-op are bit for bit the convolution's alone (tier 0's conv chains apply a Clip
/// this way, conv_chain_bounds.h; oneDNN may pick another kernel for some shapes when a post-op
/// is attached, e.g. brgemm 1x1 instead of GEMM on a one-position image). Returns whether `post`
/// was applied (false: y holds the convolution alone). Errors: as dnnl_conv_f32.
Expected<bool> dnnl_conv_f32_same_kernel(const ConvGeometry& g, const float* x, ActLayout x_layout,
                                         const float* w, const Tensor* constant_w,
                                         const float* bias, float* y, ActLayout y_layout,
                                         int threads, const ConvPostOp& post);

/// y = act(conv(x, w) + bias + y) for `post` with post.sum set, y in `y_layout` (kChannelsLast
/// or kBlocked8: a conv chain's residual Add fused into the Conv that feeds it, conv_chain.h): only where oneDNN runs the
/// same convolution with the post-ops as without them and writes y in place (no destination
/// reorder), so the sum is tier 0's Conv then Add (then activation) bit for bit. Returns false,
/// having written nothing (y keeps its contents), where that does not hold. Errors: as
/// dnnl_conv_f32.
Expected<bool> dnnl_conv_f32_accumulate(const ConvGeometry& g, const float* x, ActLayout x_layout,
                                        const float* w, const Tensor* constant_w,
                                        const float* bias, float* y, ActLayout y_layout,
                                        int threads, const ConvPostOp& post);

}  // namespace tierjit::interp::nn
