// Loop nests of the reduction lowering (lower_reduction.cc): accumulators in small stack
// scratch buffers (kir has no mutable scalars; LLVM promotes them to registers) combined at the
// end of a row by a tree of vector halves; the reduce loops (row mode: vectorized along the last
// group, the tail in chunks of halving width, no scalar loop; column mode: vector columns
// reducing in lock-step); the outer loop over rows (flattened kept groups, rows in blocks when
// they are short, parallel when the work is large). The per-anchor passes over a block of rows
// are in lower_reduction_rows.cc.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kir/lower/lower_reduction_internal.h"

namespace tierjit::kir::lowering::reduction {

namespace {

/// Work (elements) above which the outer loop runs in parallel (tier 0's kParallelWork).
constexpr int64_t kParallelWork = 32768;
/// Rows are blocked (Lowering::block_rows_) when a row has at most this many elements. Longer
/// rows are throughput bound and would cycle several rows' scratch through the caches between
/// passes.
constexpr int64_t kBlockRowMax = 1024;

Expr div_fold(const Expr& a, int64_t b) {
  if (b == 1) return a;
  if (const auto* x = a->as<IntImm>()) return imm(x->value / b);
  return div(a, imm(b));
}

Expr lane_index(int lanes) { return lanes == 1 ? imm(0) : ramp(imm(0), imm(1), lanes); }

}  // namespace

Expr widen(const Expr& e, int lanes) { return e->type.lanes == lanes ? e : broadcast(e, lanes); }
Expr to_f64(const Expr& x) { return cast(f64(x->type.lanes), x); }
Expr to_f32(const Expr& x) { return x->type.dtype == DType::kFloat32 ? x : cast(f32(x->type.lanes), x); }

Expr add_step(Expr a, Expr x) { return add(std::move(a), std::move(x)); }
Expr gt_max_step(Expr a, Expr x) { return select(compare(CmpOp::kGt, x, a), x, a); }
Expr nan_max_step(Expr a, Expr x) {
  Expr take = binary(BinaryOp::kOr, compare(CmpOp::kGt, x, a), compare(CmpOp::kNe, x, x));
  return select(take, x, a);
}
Expr nan_min_step(Expr a, Expr x) {
  Expr take = binary(BinaryOp::kOr, compare(CmpOp::kLt, x, a), compare(CmpOp::kNe, x, x));
  return select(take, x, a);
}

Stmt Acc::init_stmt() const { return store(buf, lane_index(size), widen(fimm(init, Type{dt, 1}), size)); }

Stmt Acc::update(const Expr& x, int part) const {
  const int lanes = x->type.lanes;
  const std::string v = temp();
  if (horizontal && lanes > 1 && lanes < part_lanes) {
    // [x, identity...]: lanes of x, then lane 0 repeated and replaced by the identity.
    std::vector<int> idx(static_cast<size_t>(part_lanes), 0);
    for (int k = 0; k < lanes; ++k) idx[static_cast<size_t>(k)] = k;
    const Expr in_x = compare(CmpOp::kLt, ramp(imm(0), imm(1), part_lanes), broadcast(imm(lanes), part_lanes));
    const Expr padded = select(in_x, shuffle(var(v, x->type), idx), widen(fimm(init, Type{dt, 1}), part_lanes));
    const Expr at = lane_index(part_lanes);
    return let(v, x, store(buf, at, step(load(Type{dt, part_lanes}, buf, at), padded)));
  }
  const Expr idx = lanes == 1 ? imm(0) : ramp(imm(int64_t{part} * lanes), imm(1), lanes);
  return let(v, x, store(buf, idx, step(load(Type{dt, lanes}, buf, idx), var(v, x->type))));
}

Stmt Acc::finish(const std::string& out, Stmt body) const {
  if (!horizontal || size == 1) return let(out, load(Type{dt, size}, buf, lane_index(size)), body);
  std::vector<std::pair<std::string, Expr>> lets;
  if ((size & (size - 1)) == 0) {  // lanes k and k + h combined, h = size/2, ..., 1
    std::string v = temp();
    lets.push_back({v, load(Type{dt, size}, buf, lane_index(size))});
    for (int h = size / 2; h >= 1; h /= 2) {
      const Expr whole = var(v, Type{dt, 2 * h});
      v = h == 1 ? out : temp();
      lets.push_back({v, step(slice(whole, 0, h), slice(whole, h, h))});
    }
  } else {
    std::vector<Expr> parts;
    for (int k = 0; k < size; ++k) parts.push_back(load(Type{dt, 1}, buf, imm(k)));
    while (parts.size() > 1) {  // pairwise
      std::vector<Expr> next;
      for (size_t k = 0; k + 1 < parts.size(); k += 2) {
        const std::string v = parts.size() == 2 ? out : temp();
        lets.push_back({v, step(parts[k], parts[k + 1])});
        next.push_back(var(v, Type{dt, 1}));
      }
      if (parts.size() % 2) next.push_back(parts.back());
      parts = std::move(next);
    }
  }
  for (auto it = lets.rbegin(); it != lets.rend(); ++it) body = let(it->first, it->second, body);
  return body;
}

Stmt Acc::wrap(Stmt loops, Stmt rest) const {
  return allocate(buf, dt, size, block({init_stmt(), std::move(loops), std::move(rest)}));
}

std::string Lowering::fresh(const std::string& base) { return base + std::to_string(name_counter_++); }

Acc Lowering::make_acc(const std::string& base, DType dt, double init,
                       std::function<Expr(Expr, Expr)> step, int row_lanes) {
  Acc a;
  a.buf = fresh(base);
  a.dt = dt;
  a.horizontal = row_mode_;
  a.size = row_mode_ ? vec_lanes_ * unroll_ : row_lanes;
  a.part_lanes = row_mode_ ? vec_lanes_ : row_lanes;
  a.init = init;
  a.step = std::move(step);
  return a;
}

Point Lowering::on_row(const Point& p, const Point& row) const {
  Point q = p;
  for (size_t g = 0; g < groups_.size(); ++g)
    if (!groups_[g].reduced) q.idx[g] = row.idx[g];
  return q;
}

Expected<Stmt> Lowering::reduce_loops(const Point& row, const PointBody& body) {
  const size_t G = groups_.size();
  std::vector<size_t> red;
  for (size_t g = 0; g < G; ++g)
    if (groups_[g].reduced) red.push_back(g);
  // Innermost first: build the body for the last reduced group, then wrap the others.
  std::function<Expected<Stmt>(size_t, Point)> nest = [&](size_t k, Point p) -> Expected<Stmt> {
    if (k == red.size()) return body(p);
    const size_t g = red[k];
    const Expr& E = groups_[g].extent;
    const bool vector_group = row_mode_ && g + 1 == G;
    if (!vector_group || vec_lanes_ == 1) {
      std::string v = fresh("r");
      p.idx[g] = var(v);
      TJ_ASSIGN_OR_RETURN(Stmt b, nest(k + 1, p));
      const ForKind kind = vector_group ? ForKind::kVectorized : ForKind::kSerial;
      return for_loop(v, imm(0), E, b, kind);
    }
    const int L = vec_lanes_;
    std::vector<Stmt> parts;
    const Expr chunks = div_fold(E, L);
    // Chunks [0, unroll * groups) in groups of `unroll`, chunk u of a group into slice u.
    const Expr groups = div_fold(E, int64_t{L} * unroll_);
    if (!is_const(groups, 0)) {
      std::string c = fresh("c");
      std::vector<Stmt> body;
      for (int u = 0; u < unroll_; ++u) {
        Point pv = p;
        pv.idx[g] = add_fold(mul_fold(var(c), imm(int64_t{L} * unroll_)), imm(int64_t{u} * L));
        pv.lanes = L;
        pv.part = u;
        TJ_ASSIGN_OR_RETURN(Stmt b, nest(k + 1, pv));
        body.push_back(b);
      }
      parts.push_back(for_loop(c, imm(0), groups, body.size() == 1 ? body[0] : block(body)));
    }
    if (unroll_ > 1) {  // the remaining whole chunks, slice 0
      const Expr first = mul_fold(groups, imm(unroll_));
      const Expr n = E->as<IntImm>() ? imm((E->as<IntImm>()->value / L) % unroll_) : sub(chunks, first);
      if (!is_const(n, 0)) {
        std::string c = fresh("c");
        Point pv = p;
        pv.idx[g] = mul_fold(var(c), imm(L));
        pv.lanes = L;
        TJ_ASSIGN_OR_RETURN(Stmt b, nest(k + 1, pv));
        parts.push_back(for_loop(c, first, n, b));
      }
    }
    if (!vector_tails_) {
      // Tier 1: the tail (E mod L elements) as a loop of L/4-lane chunks and a scalar loop (two
      // bodies instead of the four chunks of the vector tail: less code to compile).
      Expr tail_begin = mul_fold(chunks, imm(L));
      const int w = L / 4;
      if (w > 1) {
        const Expr end = mul_fold(div_fold(E, w), imm(w));
        const Expr n = E->as<IntImm>() ? imm(E->as<IntImm>()->value % L / w) : div(sub(end, tail_begin), imm(w));
        if (!is_const(n, 0)) {
          std::string q = fresh("q");
          Point pq = p;
          pq.idx[g] = add_fold(tail_begin, mul(var(q), imm(w)));
          pq.lanes = w;
          pq.part = 0;
          TJ_ASSIGN_OR_RETURN(Stmt b, nest(k + 1, pq));
          parts.push_back(for_loop(q, imm(0), n, b));
        }
        tail_begin = end;
      }
      const Expr tail_n = E->as<IntImm>() ? imm(E->as<IntImm>()->value % std::max(w, 1)) : sub(E, tail_begin);
      if (!is_const(tail_n, 0)) {
        std::string t = fresh("t");
        Point pt = p;
        pt.idx[g] = var(t);
        pt.lanes = 1;
        pt.part = 0;
        TJ_ASSIGN_OR_RETURN(Stmt b, nest(k + 1, pt));
        parts.push_back(for_loop(t, tail_begin, tail_n, b));
      }
    }
    // The tail (E mod L elements): one chunk of w lanes for each bit w = L/2, ..., 1 set in E,
    // at E rounded down to a multiple of 2w. No loop: straight-line vector code.
    for (int w = L / 2; vector_tails_ && w >= 1; w /= 2) {
      Point pt = p;
      pt.lanes = w;
      pt.part = 0;
      if (const auto* c = E->as<IntImm>()) {
        if ((c->value & w) == 0) continue;
        pt.idx[g] = imm(c->value / (2 * w) * (2 * w));
        TJ_ASSIGN_OR_RETURN(Stmt b, nest(k + 1, pt));
        parts.push_back(b);
        continue;
      }
      pt.idx[g] = mul(div(E, imm(2 * w)), imm(2 * w));
      TJ_ASSIGN_OR_RETURN(Stmt b, nest(k + 1, pt));
      parts.push_back(if_then_else(compare(CmpOp::kGe, mod(E, imm(2 * w)), imm(w)), b));
    }
    if (parts.empty()) return block({});
    return parts.size() == 1 ? parts[0] : block(parts);
  };
  return nest(0, row);
}

Expected<Stmt> Lowering::outer_loops(bool parallel, int rows_per_block) {
  const size_t G = groups_.size();
  std::vector<size_t> outer;
  for (size_t g = 0; g < G; ++g)
    if (!groups_[g].reduced && (row_mode_ || g + 1 != G)) outer.push_back(g);
  std::vector<Expr> ext;
  for (size_t g : outer) ext.push_back(groups_[g].extent);
  const Expr O = product(ext);
  using RowsBody = std::function<Expected<Stmt>(const std::vector<Point>&)>;
  // let i_k = (flat / ...) % ext_k for the outer groups (last group fastest) of each row in
  // `flats`, around body(rows).
  std::function<Expected<Stmt>(const std::vector<Expr>&, std::vector<Point>, const RowsBody&)> at_rows =
      [&](const std::vector<Expr>& flats, std::vector<Point> rows, const RowsBody& body) -> Expected<Stmt> {
    if (rows.size() == flats.size()) return body(rows);
    Point row;
    row.idx.assign(G, imm(0));
    std::vector<std::pair<std::string, Expr>> lets;
    Expr rest = flats[rows.size()];
    for (size_t k = outer.size(); k-- > 0;) {
      const std::string v = fresh("i");
      lets.push_back({v, k == 0 ? rest : mod(rest, ext[k])});
      row.idx[outer[k]] = var(v);
      if (k > 0) rest = div(rest, ext[k]);
    }
    rows.push_back(row);
    TJ_ASSIGN_OR_RETURN(Stmt s, at_rows(flats, rows, body));
    for (const auto& [v, e] : lets) s = let(v, e, s);  // each reads only its flat index
    return s;
  };
  auto at_row = [&](const Expr& flat, const std::function<Expected<Stmt>(const Point&)>& body) {
    return at_rows({flat}, {}, [&](const std::vector<Point>& rows) { return body(rows[0]); });
  };
  auto loop_rows = [&](const std::function<Expected<Stmt>(const Point&)>& body,
                       bool par) -> Expected<Stmt> {
    const std::string o = fresh("o");
    if (is_const(O, 1)) return at_row(imm(0), body);  // one row
    TJ_ASSIGN_OR_RETURN(Stmt s, at_row(var(o), body));
    return for_loop(o, imm(0), O, s, par ? ForKind::kParallel : ForKind::kSerial);
  };
  auto one_row = [&](const Point& row) { return row_body({row}); };
  if ((row_mode_ || G == 0) && rows_per_block > 1 && !is_const(O, 1)) {
    // Blocks of R rows (in parallel when asked), then the remaining rows one at a time.
    const int64_t R = rows_per_block;
    const Expr blocks = div_fold(O, R);
    std::vector<Stmt> parts;
    if (!is_const(blocks, 0)) {
      const std::string b = fresh("blk");
      std::vector<Expr> flats;
      for (int64_t r = 0; r < R; ++r) flats.push_back(add_fold(mul(var(b), imm(R)), imm(r)));
      TJ_ASSIGN_OR_RETURN(Stmt s, at_rows(flats, {}, [&](const std::vector<Point>& rows) { return row_body(rows); }));
      parts.push_back(for_loop(b, imm(0), blocks, s, parallel ? ForKind::kParallel : ForKind::kSerial));
    }
    const Expr first = mul_fold(blocks, imm(R));
    const Expr n = O->as<IntImm>() ? imm(O->as<IntImm>()->value % R) : sub(O, first);
    if (!is_const(n, 0)) {
      const std::string o = fresh("o");
      TJ_ASSIGN_OR_RETURN(Stmt s, at_row(var(o), one_row));
      parts.push_back(for_loop(o, first, n, s));
    }
    if (parts.empty()) return block({});
    return parts.size() == 1 ? parts[0] : block(parts);
  }
  if (row_mode_ || G == 0) return loop_rows(one_row, parallel);

  // Column mode: vector chunks of the last group, then a scalar tail.
  const int L = vec_lanes_;
  const Expr& E = groups_[G - 1].extent;
  const Expr chunks = div_fold(E, L);
  auto chunk_body = [&](const Point& row, const Expr& c) {
    Point p = row;
    p.idx[G - 1] = mul_fold(c, imm(L));
    p.lanes = L;
    return row_body({p});
  };
  auto tail = [&](const Point& row) -> Expected<Stmt> {
    const Expr begin = L > 1 ? mul_fold(chunks, imm(L)) : imm(0);
    const Expr n = L == 1 ? E : E->as<IntImm>() ? imm(E->as<IntImm>()->value % L) : sub(E, begin);
    if (is_const(n, 0)) return block({});
    const std::string j = fresh("j");
    Point p = row;
    p.idx[G - 1] = var(j);
    TJ_ASSIGN_OR_RETURN(Stmt b, row_body({p}));
    return for_loop(j, begin, n, b, L == 1 ? ForKind::kVectorized : ForKind::kSerial);
  };
  std::vector<Stmt> parts;
  if (L > 1 && !is_const(chunks, 0)) {
    if (parallel) {  // one parallel loop over (row, chunk) tasks: columns split across threads
      const std::string t = fresh("task");
      TJ_ASSIGN_OR_RETURN(Stmt b, at_row(div(var(t), chunks), [&](const Point& row) {
        return chunk_body(row, mod(var(t), chunks));
      }));
      parts.push_back(for_loop(t, imm(0), mul_fold(O, chunks), b, ForKind::kParallel));
    } else {
      TJ_ASSIGN_OR_RETURN(Stmt s, loop_rows([&](const Point& row) -> Expected<Stmt> {
        const std::string c = fresh("c");
        TJ_ASSIGN_OR_RETURN(Stmt b, chunk_body(row, var(c)));
        TJ_ASSIGN_OR_RETURN(Stmt tl, tail(row));
        return block({for_loop(c, imm(0), chunks, b), tl});
      }, false));
      return s;
    }
  }
  TJ_ASSIGN_OR_RETURN(Stmt tails, loop_rows(tail, false));
  parts.push_back(tails);
  return parts.size() == 1 ? parts[0] : block(parts);
}

Expected<Stmt> Lowering::build_body() {
  const size_t G = groups_.size();
  row_mode_ = G > 0 && groups_.back().reduced;
  std::string shape;
  for (const Group& g : groups_) shape += std::string(shape.empty() ? "" : ", ") + (g.reduced ? "R" : "K") + to_string(g.extent);
  notes_.push_back(std::string(ir::op_name(anchor_->op())) + ": groups [" + shape + "], " +
                   (row_mode_ ? "rows" : "columns") + " vectorized by " + std::to_string(vec_lanes_));
  // Row length (elements reduced per output row) decides the row blocking.
  std::vector<Expr> red;
  for (const Group& g : groups_)
    if (g.reduced) red.push_back(g.extent);
  const Expr row_len = product(red);
  std::vector<Expr> all;
  for (const Group& g : groups_) all.push_back(g.extent);
  const Expr work = product(all);
  const bool may_parallel = opt_.threads > 1;
  // One nest per (parallel, blocked) choice the code needs; run-time ifs pick among them.
  auto nest = [&](bool par, bool blocked) {
    return outer_loops(par, blocked && row_mode_ ? block_rows_ : 1);
  };
  auto by_length = [&](bool par) -> Expected<Stmt> {
    if (!row_mode_ || block_rows_ == 1) return nest(par, false);
    if (const auto* c = row_len->as<IntImm>()) return nest(par, c->value <= kBlockRowMax);
    TJ_ASSIGN_OR_RETURN(Stmt blocked, nest(par, true));
    TJ_ASSIGN_OR_RETURN(Stmt plain, nest(par, false));
    return if_then_else(compare(CmpOp::kLe, row_len, imm(kBlockRowMax)), blocked, plain);
  };
  if (row_mode_ && block_rows_ > 1)
    notes_.push_back("rows in blocks of " + std::to_string(block_rows_) + " up to " +
                     std::to_string(kBlockRowMax) + " elements per row");
  if (!may_parallel) return by_length(false);
  if (const auto* w = work->as<IntImm>()) {
    const bool par = w->value > kParallelWork;
    if (par) notes_.push_back("outer loop parallel");
    return by_length(par);
  }
  TJ_ASSIGN_OR_RETURN(Stmt par, by_length(true));
  TJ_ASSIGN_OR_RETURN(Stmt ser, by_length(false));
  notes_.push_back("outer loop parallel when the work exceeds " + std::to_string(kParallelWork));
  return if_then_else(compare(CmpOp::kGt, work, imm(kParallelWork)), par, ser);
}

}  // namespace tierjit::kir::lowering::reduction
