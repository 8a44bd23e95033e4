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

Expr ceil_div(const Expr& a, int64_t d) {
  int64_t v = 0;
  if (const_value(a, &v)) return imm((v + d - 1) / d);
  return div(add(a, imm(d - 1)), imm(d));
}
Expr fold_min(const Expr& a, const Expr& b) {
  int64_t x = 0, y = 0;
  if (const_value(a, &x) && const_value(b, &y)) return imm(std::min(x, y));
  return min(a, b);
}
Expr fold_sub(const Expr& a, const Expr& b) {
  int64_t x = 0, y = 0;
  if (const_value(a, &x) && const_value(b, &y)) return imm(x - y);
  if (const_value(b, &y) && y == 0) return a;
  return sub(a, b);
}

}  // namespace

bool panels_apply(const GemmSpec& s) {
  int64_t cs = 0;
  return const_value(s.a.col_stride, &cs) && cs == 1;
}

Expr panel_width(const Expr& n) {
  int64_t nv = 0;
  if (const_value(n, &nv)) return imm(kernels::gemm_panel_width(std::max<int64_t>(nv, 1)));
  // kernels::gemm_panel_width at run time: 64 unless that pads over a quarter of the columns.
  const Expr padded = mul(div(add(n, imm(63)), imm(64)), imm(64));
  return select(compare(CmpOp::kLe, mul(imm(4), padded), mul(imm(5), n)), imm(64), imm(16));
}

Stmt gemm_panels(const GemmSpec& s, const PackedB& b) {
  const Expr n = s.n, k = s.k;
  const Expr width = panel_width(n);
  int64_t wv = 0, nv = 0, kv = 0;
  const bool const_width = const_value(width, &wv), const_n = const_value(n, &nv),
             const_k = const_value(k, &kv);
  const Expr panels = const_width ? ceil_div(n, wv) : div(add(n, sub(width, imm(1))), width);
  const int lanes = s.lanes;
  const std::string& pre = s.prefix;
  const Expr m = s.m;
  const Expr row_blocks = ceil_div(m, kPanelTileRows);
  const Expr item = var(pre + "item");
  // (panel, row block) of an item: panel-major, or row blocks first when A is large.
  Expr p, blk;
  int64_t rb_const = 0, panels_const = 0;
  const bool one_panel = const_value(panels, &panels_const) && panels_const == 1;
  if (one_panel) {
    p = imm(0);
    blk = item;
  } else if (const_value(row_blocks, &rb_const) && rb_const == 1) {
    p = item;
    blk = imm(0);
  } else {
    int64_t mv = 0;
    if (const_value(m, &mv) && const_k) {
      const bool rf = mv * kv * 4 > kRowsFirstBytes;
      p = rf ? mod(item, panels) : div(item, row_blocks);
      blk = rf ? div(item, panels) : mod(item, row_blocks);
    } else {
      Expr rows_first = compare(CmpOp::kGt, mul(fold_mul(m, k), imm(4)), imm(kRowsFirstBytes));
      p = select(rows_first, mod(item, panels), div(item, row_blocks));
      blk = select(rows_first, div(item, panels), mod(item, row_blocks));
    }
  }
  const Expr pv = var(pre + "p"), r0 = var(pre + "r0"), mb = var(pre + "mb"), c0 = var(pre + "c0"),
             cols = var(pre + "cols");
  const Expr a_off = fold_add(s.a.offset, fold_mul(r0, s.a.row_stride));
  const Expr b_off = fold_add(b.offset, fold_mul(pv, fold_mul(k, width)));
  Stmt work;
  if (!s.store) {  // straight into C
    work = call_kernel(kernels::Microkernel::kGemmPanelRowsF32,
                       {{s.a.buffer, a_off},
                        {b.buffer, b_off},
                        {s.c, fold_add(s.c_offset, add(fold_mul(r0, n), c0))}},
                       {mb, k, s.a.row_stride, width, cols, n, imm(0)});
  } else {
    // The tile has room for the widest panel (64 columns); its rows are `width` apart.
    const std::string tile = pre + "tile";
    const Expr r = var(pre + "r"), v = var(pre + "v"), c = var(pre + "c");
    const Expr vec_cols = fold_mul(div(cols, imm(lanes)), imm(lanes));
    Stmt vec_store =
        s.store(load(f32(lanes), tile, ramp(add(mul(r, width), mul(v, imm(lanes))), imm(1), lanes)),
                add(r0, r), add(c0, mul(v, imm(lanes))), lanes);
    Stmt tail_store = s.store(load(f32(), tile, add(mul(r, width), c)), add(r0, r), add(c0, c), 1);
    Stmt rows = for_loop(pre + "r", imm(0), mb,
                         block({for_loop(pre + "v", imm(0), div(cols, imm(lanes)), vec_store),
                                for_loop(pre + "c", vec_cols, sub(cols, vec_cols), tail_store)}));
    work = allocate(tile, DType::kFloat32, kPanelTileRows * 64,
                    block({call_kernel(kernels::Microkernel::kGemmPanelRowsF32,
                                       {{s.a.buffer, a_off}, {b.buffer, b_off}, {tile, imm(0)}},
                                       {mb, k, s.a.row_stride, width, cols, width, imm(0)}),
                           rows}));
  }
  Stmt body = let(
      pre + "p", p,
      let(pre + "r0", mul(blk, imm(kPanelTileRows)),
          let(pre + "mb", fold_min(imm(kPanelTileRows), fold_sub(m, r0)),
              let(pre + "c0", mul(pv, width), let(pre + "cols", min(width, sub(n, c0)), work)))));
  const Expr items = fold_mul(row_blocks, panels);
  Stmt serial = for_loop(pre + "item", imm(0), items, body, ForKind::kSerial);
  if (s.threads <= 1) return serial;
  Stmt parallel = for_loop(pre + "item", imm(0), items, body, ForKind::kParallel);
  int64_t mv = 0;
  if (const_value(m, &mv) && const_n && const_k)
    return mv * nv * kv >= kParallelMinMacs ? parallel : serial;
  return if_then_else(compare(CmpOp::kGe, mul(fold_mul(m, n), k), imm(kParallelMinMacs)), parallel,
                      serial);
}

Stmt gemm_panels_packing_b(const GemmSpec& s, const Expr& batches, const std::string& t,
                           int64_t* workspace_floats) {
  // One packed B per chunk of batches, in its own slice of the workspace (rounded to whole
  // cache lines); the largest B the code may see when N or K are read at run time is not known
  // here, so those need constants: callers check panels_pack_b_applies.
  int64_t nv = 0, kv = 0;
  const_value(s.n, &nv);
  const_value(s.k, &kv);
  const int64_t slice = std::max<int64_t>(
      16, (kernels::gemm_packed_floats(std::max<int64_t>(nv, 1), kv) + 15) / 16 * 16);
  auto pack = [&](const Expr& ws_off) {
    return call_kernel(kernels::Microkernel::kGemmPackBF32,
                       {{s.b.buffer, s.b.offset}, {"workspace", ws_off}}, {s.n, s.k, imm(0)});
  };
  int64_t bv = 0;
  if (const_value(batches, &bv) && bv == 1) {
    *workspace_floats = slice;
    return block({pack(imm(0)), gemm_panels(s, {"workspace", imm(0)})});
  }
  const int chunks = std::max(1, s.threads);
  *workspace_floats = chunks * slice;
  GemmSpec inner = s;
  inner.threads = 1;  // the chunks of batches are the parallel loop
  const Expr chunk = var(s.prefix + "chunk");
  const Expr ws_off = mul(chunk, imm(slice));
  Stmt one = block({pack(ws_off), gemm_panels(inner, {"workspace", ws_off})});
  Stmt serial = let(s.prefix + "chunk", imm(0), for_loop(t, imm(0), batches, one));
  if (chunks <= 1) return serial;
  const Expr lo = div(mul(chunk, batches), imm(chunks));
  const Expr hi = div(mul(add(chunk, imm(1)), batches), imm(chunks));
  Stmt par = for_loop(s.prefix + "chunk", imm(0), imm(chunks), for_loop(t, lo, sub(hi, lo), one),
                      ForKind::kParallel);
  const Expr macs = mul(mul(batches, s.m), imm(nv * kv));
  return if_then_else(compare(CmpOp::kGe, macs, imm(kParallelMinMacs)), par, serial);
}

std::string describe_panels(const GemmSpec& s) {
  int64_t n = 0;
  const_value(s.n, &n);
  return fmt::format(
      "gemm panels: weight packed once into panels of {} "
      "columns, {} rows x 1 panel "
      "per microkernel call{}",
      kernels::gemm_panel_width(n), kPanelTileRows,
      s.store ? ", epilogue on the L1 tile" : ", stored in place");
}

}  // namespace tierjit::kir::gemm
