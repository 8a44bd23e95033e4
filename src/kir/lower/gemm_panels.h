// Generated GEMM around the kernel layer's panel microkernel
// (kernels/packed_gemm.h): the weight B packed once into panels (a prepared
// constant input, kir::InputLayout::kGemmPanels), then a loop over (panel,
// block of rows) items, each one CallKernel of gemm_panel_rows_f32 into an L1
// tile and the region's epilogue applied to the tile by generated vector code
// (GemmSpec::store), so the product never goes to memory before its epilogue.
// The items run in parallel when the work is large; their order follows tier
// 0's packed products (whole panels per thread, or rows first when A exceeds
// 128 KiB). N and K must be constants of the code (the weight's shape); M may
// be read at run time: one version serves every batch.
#pragma once

#include <string>

#include "kir/lower/gemm_kernel.h"

namespace tierjit::kir::gemm {

/// Rows of A per item (the tile is kPanelTileRows x panel width floats, at most
/// 6 KiB).
inline constexpr int64_t kPanelTileRows = 24;

/// Where the packed weight lies: gemm_pack_b_f32's panels for [K, N] starting
/// at element `offset` of `buffer` (64-byte aligned).
struct PackedB {
  std::string buffer;
  Expr offset;
};

/// True when `spec` can run as panels: A's columns contiguous (col_stride 1).
bool panels_apply(const GemmSpec& spec);

/// Columns per panel of a B with `n` columns (kernels::gemm_panel_width, computed at run time
/// when n is not a constant).
Expr panel_width(const Expr& n);

/// The statements computing spec's product from `b` (spec.b is not read) and storing it
/// through spec.store (or into spec.c, row stride N, when store is null). spec.workspace is
/// not used. N and K may be read at run time. Requires panels_apply(spec).
Stmt gemm_panels(const GemmSpec& spec, const PackedB& b);

/// A product whose B is computed (not a constant): for each of `batches` (loop variable `t`,
/// which spec's offsets and store may use) B [K, N] (spec.b: row stride N, col stride 1) is
/// packed into the workspace by gemm_pack_b_f32 and multiplied by gemm_panels. Batches run in
/// `threads` contiguous chunks in parallel (one packed B per chunk) when the work is large.
/// N and K must be constants; `*workspace_floats` receives the floats of workspace used.
Stmt gemm_panels_packing_b(const GemmSpec& spec, const Expr& batches, const std::string& t,
                           int64_t* workspace_floats);

/// One line for LoweredRegion::notes.
std::string describe_panels(const GemmSpec& spec);

}  // namespace tierjit::kir::gemm
