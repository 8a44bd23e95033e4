// A Conv region's pool (Region::pool, partition.h rule 4b) pooled from the conv's output while it
// is still in a tile: the direct convolution computes a block of output rows of a few channels,
// the epilogue runs on the tile in place, and the pooled rows go to the region's output; the conv
// output itself never reaches memory. Other convolutions (the generated GEMM) pool each image's
// output from the workspace. Semantics: ONNX MaxPool-12 / AveragePool-11 (2-D, no dilation,
// ceil_mode 0), tier 0's exactly: MaxPool takes NaN when any tap is NaN; AveragePool sums
// 0 + t0 + t1 + ... in row-major tap order and divides by the tap count (count_include_pad 1: the
// window's size; 0: its taps inside the image).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kir/builder.h"
#include "kir/lower/lower_conv_internal.h"
#include "kir/lower/lower_ops.h"
#include "kernels/conv_tiles.h"

namespace tierjit::kir::lowering {

Expected<PoolGeometry> pool_geometry(const ir::Node& pool, int64_t in_h, int64_t in_w) {
  auto fail = [&](const std::string& why) {
    return unsupported("pool '{}' ({}): {}", pool.name(), ir::op_name(pool.op()), why);
  };
  PoolGeometry p;
  p.max = pool.op() == ir::OpKind::MaxPool;
  const ir::Attribute* k = pool.attr("kernel_shape");
  if (!k || k->ints.size() != 2) return fail("only a 2-D kernel_shape is fused");
  p.kh = k->ints[0], p.kw = k->ints[1];
  const ir::Attribute* s = pool.attr("strides");
  if (s) {
    if (s->ints.size() != 2) return fail("bad strides");
    p.sh = s->ints[0], p.sw = s->ints[1];
  }
  const std::string auto_pad = pool.attr_string("auto_pad", "NOTSET");
  if (const ir::Attribute* pads = pool.attr("pads"); pads && auto_pad == "NOTSET") {
    if (pads->ints.size() != 4) return fail("bad pads");
    p.pt = pads->ints[0], p.pl = pads->ints[1], p.pb = pads->ints[2], p.pr = pads->ints[3];
  } else if (auto_pad != "NOTSET" && auto_pad != "VALID") {
    return fail("auto_pad " + auto_pad + " is not fused");
  }
  if (const ir::Attribute* d = pool.attr("dilations"))
    for (int64_t v : d->ints)
      if (v != 1) return fail("dilations are not fused");
  if (pool.attr_int("ceil_mode", 0) != 0) return fail("ceil_mode 1 is not fused");
  p.count_include_pad = pool.attr_int("count_include_pad", 0) != 0;
  if (p.kh < 1 || p.kw < 1 || p.sh < 1 || p.sw < 1 || p.pt < 0 || p.pl < 0 || p.pb < 0 || p.pr < 0)
    return fail("bad kernel, stride or padding");
  if (p.sw > kPoolSlack + 1) return fail("a column stride above 17 is not fused");
  // A window wholly in the padding has no tap: tier 0 defines it, this code does not.
  if (p.pt >= p.kh || p.pb >= p.kh || p.pl >= p.kw || p.pr >= p.kw)
    return fail("padding as wide as the window");
  p.in_h = in_h, p.in_w = in_w;
  if (in_h + p.pt + p.pb < p.kh || in_w + p.pl + p.pr < p.kw) return fail("window larger than the map");
  p.oh = (in_h + p.pt + p.pb - p.kh) / p.sh + 1;
  p.ow = (in_w + p.pl + p.pr - p.kw) / p.sw + 1;
  return p;
}

namespace {

// The fold of one tap `v` into `acc` (tier 0's fold_max / running sum).
Expr fold(const PoolGeometry& p, const Expr& acc, const Expr& v) {
  if (!p.max) return add(acc, v);
  return select(binary(BinaryOp::kOr, compare(CmpOp::kGt, v, acc), compare(CmpOp::kNe, v, v)), v,
                acc);
}

Expr start(const PoolGeometry& p, int lanes) {
  const Expr s = fimm(p.max ? -std::numeric_limits<double>::infinity() : 0.0);
  return lanes > 1 ? broadcast(s, lanes) : s;
}

}  // namespace

Stmt pool_rows(const PoolGeometry& p, const PoolRowsIo& io, const Expr& pr0, const Expr& pr1) {
  const int l = io.lanes;
  const std::string pre = io.prefix;
  const Expr pr = var(pre + "pr"), rb = var(pre + "rb"), pc = var(pre + "pc");
  const Expr out_row = add(io.dst_base, mul(pr, imm(p.ow)));
  // A tap's value: the loaded conv output through io.tap (bias and epilogue) when given.
  auto value = [&](const Expr& raw, const Expr& r, const Expr& c, int lanes, LetScope* lets) {
    return io.tap ? io.tap(raw, r, c, lanes, lets) : raw;
  };
  auto src_at = [&](const Expr& row, const Expr& col) {
    return add(io.src_base, add(mul(sub(row, io.src_row0), imm(p.in_w)), col));
  };
  // Columns whose whole window lies inside the map: [c_lo, c_hi).
  const int64_t c_lo = std::min(p.ow, (p.pl + p.sw - 1) / p.sw);
  const int64_t c_hi = std::max(c_lo, std::min(p.ow, (p.in_w - p.kw + p.pl) / p.sw + 1));

  // One output column at a time, every tap checked against the map (clamped loads, masked).
  auto scalar_cols = [&](const Expr& from, const Expr& count) {
    LetScope lets(pre + "s_");
    const Expr c0 = lets.bind(sub(mul(pc, imm(p.sw)), imm(p.pl)));
    Expr acc = start(p, 1), taps = imm(0);
    for (int64_t i = 0; i < p.kh; ++i)
      for (int64_t j = 0; j < p.kw; ++j) {
        const Expr r = add(rb, imm(i)), c = add(c0, imm(j));
        const Expr inside = lets.bind(binary(
            BinaryOp::kAnd,
            binary(BinaryOp::kAnd, compare(CmpOp::kGe, r, imm(0)), lt(r, imm(p.in_h))),
            binary(BinaryOp::kAnd, compare(CmpOp::kGe, c, imm(0)), lt(c, imm(p.in_w)))));
        const Expr rc = lets.bind(min(max(r, imm(0)), imm(p.in_h - 1)));
        const Expr cc = lets.bind(min(max(c, imm(0)), imm(p.in_w - 1)));
        const Expr t = lets.bind(value(load(f32(), io.src, src_at(rc, cc)), rc, cc, 1, &lets));
        acc = lets.bind(select(inside, fold(p, acc, t), acc));
        if (!p.max && !p.count_include_pad) taps = lets.bind(add(taps, select(inside, imm(1), imm(0))));
      }
    if (!p.max)
      acc = div(acc, p.count_include_pad ? fimm(static_cast<double>(p.kh * p.kw))
                                         : cast(f32(), taps));
    return for_loop(pre + "pc", from, count, lets.wrap(store(io.dst, add(out_row, pc), acc)));
  };
  // Vectors of `lanes` output columns from column `from`, `count` of them, every tap inside (rows
  // checked by the caller). Each window row loads spans of lanes * stride contiguous floats, one
  // per `stride` columns of the window, and tap j keeps every stride-th float of its span from
  // j % stride on: io.tap runs once per span (each conv value once when the window is no wider
  // than its stride). The last span reads up to stride - 1 floats past the window: the sources
  // keep kPoolSlack floats of room. lanes = 1: single columns, no checks.
  auto vector_cols = [&](int lanes, int64_t from, int64_t count) -> Stmt {
    LetScope lets(pre + "v_");
    const std::string vv = pre + "pv" + std::to_string(lanes);
    const Expr col0 = lets.bind(add(imm(from), mul(var(vv), imm(lanes))));
    const Expr first = lets.bind(sub(mul(col0, imm(p.sw)), imm(p.pl)));
    // Single columns load each tap alone (span = 1 column).
    const int sw = lanes == 1 ? 1 : static_cast<int>(p.sw), wide = lanes * sw;
    Expr acc = start(p, lanes);
    for (int64_t i = 0; i < p.kh; ++i) {
      const Expr r = add(rb, imm(i));
      Expr span;
      for (int64_t j = 0; j < p.kw; ++j) {
        if (j % sw == 0) {
          const Expr c = add(first, imm(j));
          const Expr raw = wide == 1 ? load(f32(), io.src, src_at(r, c))
                                     : load(f32(wide), io.src, ramp(src_at(r, c), imm(1), wide));
          span = lets.bind(value(raw, r, c, wide, &lets));
        }
        Expr t = span;
        if (sw > 1) {
          std::vector<int> every;
          for (int q = 0; q < lanes; ++q) every.push_back(q * sw + static_cast<int>(j % sw));
          t = lets.bind(shuffle(span, every));
        }
        acc = lets.bind(fold(p, acc, t));
      }
    }
    if (!p.max) {
      const Expr n = fimm(static_cast<double>(p.kh * p.kw));
      acc = div(acc, lanes > 1 ? broadcast(n, lanes) : n);
    }
    const Expr at = add(out_row, col0);
    return for_loop(vv, imm(0), imm(count),
                    lets.wrap(store(io.dst, lanes > 1 ? ramp(at, imm(1), lanes) : at, acc)));
  };
  // The interior columns in vectors of l, then l / 2 and l / 4 lanes (at least 4), then single
  // columns: a pooled row of 14 takes 8 + 4 + 2.
  std::vector<Stmt> interior = {scalar_cols(imm(0), imm(c_lo))};
  int64_t pos = c_lo;
  for (int lanes = l; lanes >= 1; lanes = lanes > 4 ? lanes / 2 : lanes == 4 ? 1 : 0) {
    const int64_t count = (c_hi - pos) / lanes;
    if (count == 0) continue;
    interior.push_back(vector_cols(lanes, pos, count));
    pos += count * lanes;
  }
  interior.push_back(scalar_cols(imm(pos), imm(p.ow - pos)));
  Stmt interior_row = block(interior);
  Stmt edge_row = scalar_cols(imm(0), imm(p.ow));
  const Expr rows_inside = binary(BinaryOp::kAnd, compare(CmpOp::kGe, rb, imm(0)),
                                  compare(CmpOp::kLe, add(rb, imm(p.kh)), imm(p.in_h)));
  return for_loop(pre + "pr", pr0, sub(pr1, pr0),
                  let(pre + "rb", sub(mul(pr, imm(p.sh)), imm(p.pt)),
                      if_then_else(rows_inside, interior_row, edge_row)));
}

std::pair<Expr, Expr> pool_source_rows(const PoolGeometry& p, const Expr& pr0, const Expr& pr1) {
  const Expr r0 = max(imm(0), sub(mul(pr0, imm(p.sh)), imm(p.pt)));
  const Expr r1 = min(imm(p.in_h), add(sub(mul(sub(pr1, imm(1)), imm(p.sh)), imm(p.pt)), imm(p.kh)));
  return {r0, r1};
}

}  // namespace tierjit::kir::lowering
