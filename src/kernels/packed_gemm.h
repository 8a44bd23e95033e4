// Tier 0's float32 product by constant weights (Gemm / MatMul / Linear layers): y[M, N] =
// a[M, K] * op(b) + bias, with b packed once into column panels of 64 (`[ceil(N/64)][K][64]`,
// zeros past N; on CPUs without AVX-512 each panel's 16-column slices are stored one after
// another, `[K][16]` each, so the AVX2 code streams each sequentially), 4 rows x 64 columns of
// AVX-512 accumulators per step (AVX2: 6 x 16); for narrow N (when 64-wide
// panels would be over a quarter padding: N = 10) panels of 16 and 8 rows per step. Threads take whole panels
// (each core then streams the same share of the weights from its own L2 on every call), or
// shares of the rows when there are too few panels to go round.
//
// Why not oneDNN's matmul primitive (dnnl_util.h), which tier 0 used before: its brgemm kernels
// are generated per distinct row count (0.4-1.4 ms on the first call of every new batch size:
// 3 of the mlp's 4 ms of first calls on its 500-request trace) and cost ~1.5-2.5 us more per
// product of a few rows; in steady state it is no faster at any size measured (2 threads, median
// of 5, `tierjit_micro_bench --benchmark_filter=matmul.packed_`: 1x512x512 6.39 vs 3.90 us,
// 64x512x512 71.8 vs 65.8, 512x128x512 132 vs 131, 4096x128x512 1034 vs 1038; docs/performance.md
// "Packed products (session 8)"). nn::dnnl_matmul_f32 runs constant-weight products here first.
// Batched products with equal batch dims (attention) run here too, packing each B per call
// (packed_batched_matmul_f32): oneDNN's batched primitive cost bert_tiny 18-28 ms of kernel
// generation on its first call (first_run_ms 20-30 -> 2.5-3.3 with panels) and more on every new
// sequence length; per call the panels are 10-25% faster for S = 32 and level to 10% slower for
// S = 128-256 (`tierjit_micro_bench --benchmark_filter=matmul.batched_`).
#pragma once

#include <cstdint>

#include "tierjit/tensor.h"

namespace tierjit::kernels {

/// Whether packed_matmul_f32 is enabled (set_packed_matmul_enabled; tests and benchmarks compare
/// with oneDNN's primitive). It runs on every CPU: AVX-512F code where the CPU has it, else AVX2
/// + FMA code giving the same bits (4 rows x 16 columns per step; on an AVX2-only AMD EPYC the
/// mlp's tier-0 calls were 1.3-1.5x ONNX Runtime's through oneDNN's primitive: docs/performance.md,
/// "An AVX2-only machine").
bool packed_matmul_available();
void set_packed_matmul_enabled(bool enabled);
/// Runs the AVX2 code on an AVX-512 CPU too (tests: both versions give the same bits).
void set_packed_matmul_force_avx2(bool force);

/// Calls that packed_matmul_f32 ran since the process started (tests check the routing).
uint64_t packed_matmul_runs();
/// Bytes of packed panels cached now (all weights).
size_t packed_panel_bytes();

/// Bytes of packed panels kept for all weight tensors at most (1 GiB). A weight whose panels
/// would exceed it is not packed: packed_matmul_f32 returns false and the caller runs oneDNN.
inline constexpr size_t kPackedPanelBudget = size_t{1} << 30;

/// y[M, N] = a[M, K] * op(b) (+ bias[N] on every row when bias is non-null), float32, a and y
/// dense row-major; b row-major [K, N], or [N, K] when trans_b (Gemm's transB), held by
/// `constant_b`, a tensor whose contents never change (a graph initializer): b's panels are
/// packed on the first call and cached by b's address and the geometry, holding the tensor until
/// nothing else does (then dropped at the next packing: a dropped model's panels are freed).
/// Sums run in order of k per output with fused multiply-adds in blocks of 256 k's, the blocks'
/// sums added in order, then the bias (as a MatMul followed by an Add rounds; results may differ
/// from oneDNN's in the last bits). K = 0 gives the bias (or zeros). Runs on up to
/// `threads` threads of a new OpenMP team (the caller decides the count, e.g. parallel_threads).
/// Returns false, having written nothing, when !packed_matmul_available() or the panels would
/// exceed kPackedPanelBudget; true when y holds the product (any row count). Requires m, n >= 1,
/// k >= 0.
bool packed_matmul_f32(int64_t m, int64_t n, int64_t k, bool trans_b, const float* a,
                       const float* b, const Tensor& constant_b, const float* bias, float* y,
                       int threads);

/// y[t] = a[t] * b[t] for t < batch: a [batch, M, K], b [batch, K, N] and y [batch, M, N], dense
/// float32, B different every call (attention's Q K^T and P V). Each product packs its b into
/// the calling thread's scratch panels (kept per thread, as large as the largest b seen) and runs
/// as packed_matmul_f32 does (same sums in the same order, so the same bits as packed_matmul_f32
/// of each slice); products are shared over up to `threads` threads by stealing. No oneDNN
/// primitive: nothing is generated per shape. Returns false, having written nothing, when
/// !packed_matmul_available(). Requires m, n >= 1, k >= 0.
bool packed_batched_matmul_f32(int64_t batch, int64_t m, int64_t n, int64_t k, const float* a,
                               const float* b, float* y, int threads);

// ---- Microkernels for compiled code (microkernels.def) ----
// The same panels and register tiles, called by generated GEMM regions around their own loops
// (kir CallKernel): the weight packed once into panels (gemm_pack_b_f32, at compile time for a
// constant weight, per call into the workspace otherwise), then one panel x a block of rows per
// call, the region's epilogue applied by the generated code while the block is in L1.

/// Columns of each packed panel of a weight with `n` columns: 64, or 16 where 64-wide panels
/// would be over a quarter padding (n = 10). n >= 1.
int64_t gemm_panel_width(int64_t n);
/// Floats of the packed weight: ceil(n / width) panels of k x width floats each (panel p starts
/// p * k * width floats in). n >= 1, k >= 0.
int64_t gemm_packed_floats(int64_t n, int64_t k);

/// True when panels are stored as 16-column slices one after another ([width / 16][k][16]; CPUs
/// without AVX-512F), false when a panel's rows lie side by side ([k][width]). Packers of other
/// operands (conv_tiles.h) lay their panels out the same way.
bool gemm_panels_sliced();

/// Packs b (float32, row-major [k, n], or [n, k] when trans_b != 0) into `out`
/// (gemm_packed_floats(n, k) floats, 64-byte aligned; zeros past column n), in the layout
/// gemm_panel_rows_f32 reads on this CPU (rows of a panel side by side with AVX-512F, 16-column
/// slices one after another without). n >= 1, k >= 0.
void gemm_pack_b_f32(const float* b, float* out, int64_t n, int64_t k, int64_t trans_b);

/// y[r * ldy + c] = sum over kk < k of a[r * lda + kk] * B[kk, c] for r < m and c < cols, B the
/// packed panel at `panel` (panel p of gemm_pack_b_f32's output: out + p * k * width, `width` =
/// gemm_panel_width(n), cols = min(width, n - p * width)). The sum runs in order of kk in blocks
/// of 256 with fused multiply-adds, the blocks' sums added in order: the same bits as
/// packed_matmul_f32 without a bias. accumulate != 0: y += the product instead (y's prior sum,
/// then each block's, as a longer K continues; a K split at multiples of 256 gives one call's
/// bits). y must not overlap a or the panel; k = 0 writes zeros (or leaves y). Single-threaded.
/// m, cols >= 0.
void gemm_panel_rows_f32(const float* a, const float* panel, float* y, int64_t m, int64_t k,
                         int64_t lda, int64_t width, int64_t cols, int64_t ldy, int64_t accumulate);

/// gemm_panel_rows_f32 with B read where it lies: y[r * ldy + c] = sum over kk < k of
/// a[r * lda + kk] * b[kk * ldb + c] for r < m, c < cols <= width (width 64 or 16: the tile's
/// vectors; only b's first cols columns of each row are read, unaligned). E.g. a 1x1 stride-1
/// convolution's input [C, H * W] (ldb = H * W) needs no packing. Same sums and bits as the
/// packed form; single-threaded.
void gemm_rows_in_place_f32(const float* a, const float* b, float* y, int64_t m, int64_t k,
                            int64_t lda, int64_t ldb, int64_t width, int64_t cols, int64_t ldy,
                            int64_t accumulate);

/// The transposed product of one packed panel with x's columns: y[c * ldy + r] = sum over kk < k
/// of x[kk * ldx + r] * B[kk, c] for r < m and c < cols <= width, B the packed panel at `panel`
/// (as gemm_panel_rows_f32 reads it). With x a 1x1 convolution's input [C, H * W] (ldx = H * W)
/// and B the packed [C, M] transpose of its weight, y is the output's [M, H * W] rows. Vectors run
/// over the panel's columns and registers hold up to 7 of x's columns (gemm_cols.cc), so every
/// lane works whatever m is: gemm_rows_in_place_f32 fills 49 of 64 lanes on a 7 x 7 map. K is
/// summed in order in blocks of 256, the blocks' sums added in order, as gemm_panel_rows_f32
/// does; no bias (the caller's epilogue adds it). y must not overlap x or the panel.
/// Single-threaded. m, cols >= 0, k >= 0 (k = 0 writes zeros); nothing is returned or thrown.
void gemm_panel_cols_f32(const float* x, const float* panel, float* y, int64_t m, int64_t k,
                         int64_t ldx, int64_t width, int64_t cols, int64_t ldy);

}  // namespace tierjit::kernels
