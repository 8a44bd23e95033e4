// The panel GEMM of gemm_panels.h: loops, lets and the epilogue's store loops
// around gemm_panel_rows_f32 calls. Sizes that are constants fold as the IR is
// built.
#include "kir/lower/gemm_panels.h"

#include <fmt/format.h>

#include "kernels/packed_gemm.h"
#include "kir/builder.h"
#include "kir/lower/matmul_common.h"

namespace tierjit::kir::gemm {

namespace {

using lowering::const_value;
using lowering::fold_add;
using lowering::fold_mul;

// Multiply-adds from which the items run on the OpenMP team (tier 0's
// kPrimitiveMinMacs).
constexpr int64_t kParallelMinMacs = int64_t{1} << 16;
// Bytes of A past which items go row block first, every panel inside (tier 0's
// kRowBlockBytes): A is then read from memory once instead of once per panel.
constexpr int64_t kRowsFirstBytes = int64_t{128} << 10;

Expr ceil_div(const Expr &a, int64_t d) {
  int64_t v = 0;
  if (const_value(a, &v))
    return imm((v + d - 1) / d);
  return div(add(a, imm(d - 1)), imm(d));
}
Expr fold_min(const Expr &a, const Expr &b) {
  int64_t x = 0, y = 0;
  if (const_value(a, &x) && const_value(b, &y))
    return imm(std::min(x, y));
  return min(a, b);
}
Expr fold_sub(const Expr &a, const Expr &b) {
  int64_t x = 0, y = 0;
  if (const_value(a, &x) && const_value(b, &y))
    return imm(x - y);
  if (const_value(b, &y) && y == 0)
    return a;
  return sub(a, b);
}

} // namespace

bool panels_apply(const GemmSpec &s) {
  int64_t n = 0, k = 0, cs = 0;
  return const_value(s.n, &n) && const_value(s.k, &k) && n >= 1 && k >= 0 &&
         const_value(s.a.col_stride, &cs) && cs == 1;
}

Stmt gemm_panels(const GemmSpec &s, const PackedB &b) {
  int64_t n = 0, k = 0;
  const_value(s.n, &n);
  const_value(s.k, &k);
  const int64_t width = kernels::gemm_panel_width(n),
                panels = (n + width - 1) / width;
  const int lanes = s.lanes;
  const std::string &pre = s.prefix;
  const Expr m = s.m;
  const Expr row_blocks = ceil_div(m, kPanelTileRows);
  const Expr item = var(pre + "item");
  // (panel, row block) of an item: panel-major, or row blocks first when A is
  // large.
  Expr p, blk;
  int64_t rb_const = 0;
  if (panels == 1) {
    p = imm(0);
    blk = item;
  } else if (const_value(row_blocks, &rb_const) && rb_const == 1) {
    p = item;
    blk = imm(0);
  } else {
    Expr rows_first =
        compare(CmpOp::kGt, fold_mul(m, imm(k * 4)), imm(kRowsFirstBytes));
    int64_t mv = 0;
    if (const_value(m, &mv)) {
      const bool rf = mv * k * 4 > kRowsFirstBytes;
      p = rf ? mod(item, imm(panels)) : div(item, row_blocks);
      blk = rf ? div(item, imm(panels)) : mod(item, row_blocks);
    } else {
      p = select(rows_first, mod(item, imm(panels)), div(item, row_blocks));
      blk = select(rows_first, div(item, imm(panels)), mod(item, row_blocks));
    }
  }
  const Expr pv = var(pre + "p"), r0 = var(pre + "r0"), mb = var(pre + "mb"),
             c0 = var(pre + "c0"), cols = var(pre + "cols");
  const Expr a_off = fold_add(s.a.offset, fold_mul(r0, s.a.row_stride));
  const Expr b_off = fold_add(b.offset, fold_mul(pv, imm(k * width)));
  Stmt work;
  if (!s.store) { // straight into C
    work = call_kernel(kernels::Microkernel::kGemmPanelRowsF32,
                       {{s.a.buffer, a_off},
                        {b.buffer, b_off},
                        {s.c, fold_add(s.c_offset, add(mul(r0, imm(n)), c0))}},
                       {mb, imm(k), s.a.row_stride, imm(width), cols, imm(n), imm(0)});
  } else {
    const std::string tile = pre + "tile";
    const Expr r = var(pre + "r"), v = var(pre + "v"), c = var(pre + "c");
    const Expr vec_cols = fold_mul(div(cols, imm(lanes)), imm(lanes));
    Stmt vec_store = s.store(
        load(f32(lanes), tile,
             ramp(add(mul(r, imm(width)), mul(v, imm(lanes))), imm(1), lanes)),
        add(r0, r), add(c0, mul(v, imm(lanes))), lanes);
    Stmt tail_store = s.store(load(f32(), tile, add(mul(r, imm(width)), c)),
                              add(r0, r), add(c0, c), 1);
    Stmt rows = for_loop(
        pre + "r", imm(0), mb,
        block(
            {for_loop(pre + "v", imm(0), div(cols, imm(lanes)), vec_store),
             for_loop(pre + "c", vec_cols, sub(cols, vec_cols), tail_store)}));
    work = allocate(
        tile, DType::kFloat32, kPanelTileRows * width,
        block({call_kernel(
                   kernels::Microkernel::kGemmPanelRowsF32,
                   {{s.a.buffer, a_off}, {b.buffer, b_off}, {tile, imm(0)}},
                   {mb, imm(k), s.a.row_stride, imm(width), cols, imm(width), imm(0)}),
               rows}));
  }
  Stmt body = let(
      pre + "p", p,
      let(pre + "r0", mul(blk, imm(kPanelTileRows)),
          let(pre + "mb", fold_min(imm(kPanelTileRows), fold_sub(m, r0)),
              let(pre + "c0", mul(pv, imm(width)),
                  let(pre + "cols", min(imm(width), sub(imm(n), c0)), work)))));
  const Expr items = fold_mul(row_blocks, imm(panels));
  Stmt serial = for_loop(pre + "item", imm(0), items, body, ForKind::kSerial);
  if (s.threads <= 1)
    return serial;
  Stmt parallel =
      for_loop(pre + "item", imm(0), items, body, ForKind::kParallel);
  int64_t mv = 0;
  if (const_value(m, &mv))
    return mv * n * k >= kParallelMinMacs ? parallel : serial;
  return if_then_else(
      compare(CmpOp::kGe, mul(m, imm(n * k)), imm(kParallelMinMacs)), parallel,
      serial);
}

std::string describe_panels(const GemmSpec &s) {
  int64_t n = 0;
  const_value(s.n, &n);
  return fmt::format("gemm panels: weight packed once into panels of {} "
                     "columns, {} rows x 1 panel "
                     "per microkernel call{}",
                     kernels::gemm_panel_width(n), kPanelTileRows,
                     s.store ? ", epilogue on the L1 tile"
                             : ", stored in place");
}

} // namespace tierjit::kir::gemm
