// The recurrent cell's gate GEMM (a microkernel compiled code calls, microkernels.def): one time
// step's h R^T for the few batch rows of an LSTM / GRU step, over a range of the packed weight's
// panels (kernels::gemm_pack_b_f32's layout) in one call. One row is latency-bound in
// gemm_panel_rows_f32 (4 accumulators of one 64-column panel, each k waiting on the last FMA:
// lstm_small's step at batch 1 spent 63% of its time there); here it runs two panels at once
// (8 independent accumulators). Two or more rows go to gemm_panel_rows_f32 panel by panel.
// The gate activations and the state update are generated code (kir/lower/recurrent_cell.cc).
#pragma once

#include <cstdint>

namespace tierjit::kernels {

/// y[r * ldy + (p - p0) * width + c] = sum over kk < k of a[r * lda + kk] * B[kk, p * width + c]
/// for rows r < m, panels p0 <= p < p1 of the weight B [k, n] packed by gemm_pack_b_f32 at
/// `packed` (width = gemm_panel_width(n)), and c < min(width, n - p * width). The sums run in
/// order of kk with fused multiply-adds (one row: in two halves of k, added, for an odd last
/// panel; several rows: gemm_panel_rows_f32's blocks of 256): results may differ from
/// gemm_panel_rows_f32 in the last bits. y must not overlap a or the panels; k = 0 writes zeros.
/// Single-threaded. m >= 0, k >= 0, 0 <= p0 <= p1 <= ceil(n / width).
void recurrent_gates_f32(const float* a, const float* packed, float* y, int64_t m, int64_t k,
                         int64_t lda, int64_t n, int64_t p0, int64_t p1, int64_t ldy);

}  // namespace tierjit::kernels
