// Loop nests of the reduction lowering (lower_reduction.cc): the outer loop over rows (flattened
// kept groups; parallel at tier 2), the reduce loops (row mode: vectorized along the last group
// with a scalar tail; column mode: vector columns reducing in lock-step), accumulators in small
// stack scratch buffers (kir has no mutable scalars; LLVM promotes them to registers), and the
// per-anchor passes: Reduce (1 pass), Softmax/LogSoftmax (max, sum of exp, write), LayerNorm
// (sum, sum of squared deviations, write).
#include <cmath>
#include <limits>

#include "kir/lower/lower_reduction_internal.h"

namespace tierjit::kir::lowering::reduction {

namespace {

/// Work (elements) above which the outer loop runs in parallel (tier 0's kParallelWork).
constexpr int64_t kParallelWork = 32768;

Expr div_fold(const Expr& a, int64_t b) {
  if (b == 1) return a;
  if (const auto* x = a->as<IntImm>()) return imm(x->value / b);
  return div(a, imm(b));
}

Expr widen(const Expr& e, int lanes) { return e->type.lanes == lanes ? e : broadcast(e, lanes); }

Expr lane_index(int lanes) { return lanes == 1 ? imm(0) : ramp(imm(0), imm(1), lanes); }

/// A reduction accumulator in a stack scratch of `size` elements. Values used more than once
/// (the new element in a select, partial results of the final combine) are let-bound, so no
/// expression tree is repeated.
struct Acc {
  std::string buf;
  DType dt = DType::kFloat32;
  int size = 1;
  bool horizontal = false;  ///< row mode: lanes are partial results combined at the end
  double init = 0;
  std::function<Expr(Expr, Expr)> step;  ///< (accumulated, new) -> accumulated; also combines
  mutable int names = 0;

  std::string temp() const { return buf + "_" + std::to_string(names++); }
  Stmt init_stmt() const { return store(buf, lane_index(size), widen(fimm(init, Type{dt, 1}), size)); }
  /// Folds x into the accumulator slice `part` (lanes of x starting at part * lanes).
  Stmt update(const Expr& x, int part = 0) const {
    const int lanes = x->type.lanes;
    const Expr idx = lanes == 1 ? imm(0) : ramp(imm(int64_t{part} * lanes), imm(1), lanes);
    const std::string v = temp();
    return let(v, x, store(buf, idx, step(load(Type{dt, lanes}, buf, idx), var(v, x->type))));
  }
  /// let out = (the accumulated value: lanes combined pairwise in row mode) in body.
  Stmt finish(const std::string& out, Stmt body) const {
    if (!horizontal || size == 1) return let(out, load(Type{dt, size}, buf, lane_index(size)), body);
    std::vector<std::pair<std::string, Expr>> lets;
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
    for (auto it = lets.rbegin(); it != lets.rend(); ++it) body = let(it->first, it->second, body);
    return body;
  }
  /// allocate(buf) { init; loops; rest }
  Stmt wrap(Stmt loops, Stmt rest) const {
    return allocate(buf, dt, size, block({init_stmt(), std::move(loops), std::move(rest)}));
  }
};

Expr add_step(Expr a, Expr x) { return add(std::move(a), std::move(x)); }
// Tier 0's softmax max: x > a ? x : a (a NaN is skipped here and reaches the sum through exp).
Expr gt_max_step(Expr a, Expr x) { return select(compare(CmpOp::kGt, x, a), x, a); }
// Tier 0's NaN-sticky max/min: (x > a || x != x) ? x : a.
Expr nan_max_step(Expr a, Expr x) {
  Expr take = binary(BinaryOp::kOr, compare(CmpOp::kGt, x, a), compare(CmpOp::kNe, x, x));
  return select(take, x, a);
}
Expr nan_min_step(Expr a, Expr x) {
  Expr take = binary(BinaryOp::kOr, compare(CmpOp::kLt, x, a), compare(CmpOp::kNe, x, x));
  return select(take, x, a);
}

Expr to_f64(const Expr& x) { return cast(f64(x->type.lanes), x); }
Expr to_f32(const Expr& x) { return x->type.dtype == DType::kFloat32 ? x : cast(f32(x->type.lanes), x); }

}  // namespace

std::string Lowering::fresh(const std::string& base) { return base + std::to_string(name_counter_++); }

int Lowering::scratch_output() const {
  if (op_ == AnchorOp::kSum || op_ == AnchorOp::kMean || op_ == AnchorOp::kMax || op_ == AnchorOp::kMin)
    return -1;
  for (size_t j = 0; j < region_.outputs.size(); ++j) {
    const ir::Value* v = region_.outputs[j];
    if (opt_.outputs[j].dtype != DType::kFloat32) continue;
    auto it = access_index_.find({v, SpaceKind::kOut});
    if (it == access_index_.end()) continue;
    const auto& s = grouped_[static_cast<size_t>(it->second)];
    bool ok = true;
    for (const Stride& x : s) ok &= x.kind == Stride::kPlain;
    if (!s.empty()) ok &= s.back().unit;
    if (ok) return static_cast<int>(j);
  }
  return -1;
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
    const Expr tail_begin = mul_fold(chunks, imm(L));
    Expr tail_n = E->as<IntImm>() ? imm(E->as<IntImm>()->value % L) : sub(E, tail_begin);
    if (!is_const(tail_n, 0)) {
      std::string t = fresh("t");
      Point pt = p;
      pt.idx[g] = var(t);
      pt.lanes = 1;
      TJ_ASSIGN_OR_RETURN(Stmt b, nest(k + 1, pt));
      parts.push_back(for_loop(t, tail_begin, tail_n, b));
    }
    return parts.size() == 1 ? parts[0] : block(parts);
  };
  return nest(0, row);
}

Expected<Stmt> Lowering::store_outputs(const Point& p, const Expr& y) {
  std::vector<Stmt> stores;
  for (size_t j = 0; j < region_.outputs.size(); ++j) {
    const ir::Value* v = region_.outputs[j];
    if (v->producer() == anchor_ && v != anchor_->output(0)) continue;  // statistics
    TJ_ASSIGN_OR_RETURN(Expr val, value_at(v, SpaceKind::kOut, p, y));
    const DType dt = opt_.outputs[j].dtype;
    if (val->type.dtype != dt) val = cast(Type{dt, val->type.lanes}, val);
    const int a = access_index_.at({v, SpaceKind::kOut});
    stores.push_back(store_at("out" + std::to_string(j), grouped_[static_cast<size_t>(a)], p, val));
  }
  return block(stores);
}

Expected<Stmt> Lowering::reduce_row(const Point& row) {
  Acc acc;
  acc.buf = fresh("acc");
  acc.horizontal = row_mode_;
  acc.size = row_mode_ ? vec_lanes_ * unroll_ : row.lanes;
  switch (op_) {
    case AnchorOp::kSum:
    case AnchorOp::kMean:
      acc.dt = DType::kFloat64;
      acc.init = 0;
      acc.step = add_step;
      break;
    case AnchorOp::kMax:
      acc.init = -std::numeric_limits<double>::infinity();
      acc.step = nan_max_step;
      break;
    default:
      acc.init = std::numeric_limits<double>::infinity();
      acc.step = nan_min_step;
      break;
  }
  const bool wide = acc.dt == DType::kFloat64;
  TJ_ASSIGN_OR_RETURN(Stmt loops, reduce_loops(row, [&](const Point& p) -> Expected<Stmt> {
    TJ_ASSIGN_OR_RETURN(Expr x, value_at(anchor_->input(0), SpaceKind::kIn, p, nullptr));
    x = to_f32(x);
    return acc.update(wide ? to_f64(x) : x, p.part);
  }));
  const std::string total = fresh("total");
  const Type tt{acc.dt, row_mode_ ? 1 : acc.size};
  Expr r = var(total, tt);
  if (op_ == AnchorOp::kMean) {
    std::vector<Expr> rd;
    for (int d = 0; d < rank_; ++d)
      if (reduced_[static_cast<size_t>(d)]) rd.push_back(space_dims_[static_cast<size_t>(d)]);
    r = div(r, widen(cast(f64(), product(rd)), r->type.lanes));
  }
  if (wide) r = to_f32(r);
  const std::string y = fresh("y");
  TJ_ASSIGN_OR_RETURN(Stmt st, store_outputs(row, var(y, r->type)));
  return acc.wrap(loops, acc.finish(total, let(y, r, st)));
}

Lowering::RowScratch Lowering::row_scratch(const ir::Value* data) const {
  RowScratch rs;
  rs.output = scratch_output();
  if (rs.output < 0) return rs;
  rs.store_x = !input_index_.count(data);
  rs.buffer = "out" + std::to_string(rs.output);
  rs.access = &grouped_[static_cast<size_t>(
      access_index_.at({region_.outputs[static_cast<size_t>(rs.output)], SpaceKind::kOut}))];
  return rs;
}

Expected<Expr> Lowering::read_row_value(const RowScratch& rs, const ir::Value* data, const Point& p,
                                        bool from_scratch) {
  if (from_scratch) return load_at(rs.buffer, DType::kFloat32, *rs.access, p);
  TJ_ASSIGN_OR_RETURN(Expr x, value_at(data, SpaceKind::kIn, p, nullptr));
  return to_f32(x);
}

Expected<Stmt> Lowering::softmax_row(const Point& row) {
  const bool log_softmax = op_ == AnchorOp::kLogSoftmax;
  const ir::Value* data = anchor_->input(0);
  const RowScratch rs = row_scratch(data);
  const int scratch = rs.output;
  const bool store_x = rs.store_x;
  const std::string& sbuf = rs.buffer;
  const std::vector<Stride>* sacc = rs.access;
  auto read_x = [&](const Point& p, bool from_scratch) { return read_row_value(rs, data, p, from_scratch); };
  const int size = row_mode_ ? vec_lanes_ * unroll_ : row.lanes;
  Acc am{fresh("accm"), DType::kFloat32, size, row_mode_, -std::numeric_limits<double>::infinity(), gt_max_step};
  Acc as{fresh("accs"), DType::kFloat64, size, row_mode_, 0.0, add_step};
  const std::string m = fresh("m"), s = fresh("s"), k = fresh(log_softmax ? "logs" : "inv");
  // Pass 1: max (NaN needs no flag: it reaches the sum through exp and every output is NaN).
  TJ_ASSIGN_OR_RETURN(Stmt pass1, reduce_loops(row, [&](const Point& p) -> Expected<Stmt> {
    TJ_ASSIGN_OR_RETURN(Expr x, read_x(p, false));
    if (!store_x) return am.update(x, p.part);
    return block({store_at(sbuf, *sacc, p, x), am.update(load_at(sbuf, DType::kFloat32, *sacc, p), p.part)});
  }));
  const Type mt = f32(size == 1 || row_mode_ ? 1 : size);
  // Pass 2: sum of exp(x - m) in float64; Softmax keeps exp in the scratch.
  TJ_ASSIGN_OR_RETURN(Stmt pass2, reduce_loops(row, [&](const Point& p) -> Expected<Stmt> {
    TJ_ASSIGN_OR_RETURN(Expr x, read_x(p, store_x));
    Expr e = call(Intrinsic::kExp, {sub(x, widen(var(m, mt), p.lanes))});
    if (scratch >= 0 && !log_softmax) {
      return block({store_at(sbuf, *sacc, p, e),
                    as.update(to_f64(load_at(sbuf, DType::kFloat32, *sacc, p)), p.part)});
    }
    return as.update(to_f64(e), p.part);
  }));
  // Pass 3: write.
  TJ_ASSIGN_OR_RETURN(Stmt pass3, reduce_loops(row, [&](const Point& p) -> Expected<Stmt> {
    Expr y;
    if (log_softmax) {
      TJ_ASSIGN_OR_RETURN(Expr x, read_x(p, store_x));
      y = sub(sub(x, widen(var(m, mt), p.lanes)), widen(var(k, mt), p.lanes));
    } else if (scratch >= 0) {
      y = mul(load_at(sbuf, DType::kFloat32, *sacc, p), widen(var(k, mt), p.lanes));
    } else {
      TJ_ASSIGN_OR_RETURN(Expr x, read_x(p, false));
      y = mul(call(Intrinsic::kExp, {sub(x, widen(var(m, mt), p.lanes))}), widen(var(k, mt), p.lanes));
    }
    const std::string yv = fresh("y");
    TJ_ASSIGN_OR_RETURN(Stmt st, store_outputs(p, var(yv, y->type)));
    return let(yv, y, st);
  }));
  Expr sv = var(s, f64(mt.lanes));
  Expr kval = log_softmax ? to_f32(call(Intrinsic::kLog, {sv}))
                          : to_f32(div(widen(fimm(1.0, f64()), mt.lanes), sv));
  Stmt tail = let(k, kval, pass3);
  Stmt after_max = as.wrap(pass2, as.finish(s, tail));
  return am.wrap(pass1, am.finish(m, after_max));
}

Expected<Stmt> Lowering::layernorm_row(const Point& row) {
  const ir::Value* data = anchor_->input(0);
  const RowScratch rs = row_scratch(data);
  const bool store_x = rs.store_x;
  const std::string& sbuf = rs.buffer;
  const std::vector<Stride>* sacc = rs.access;
  auto read_x = [&](const Point& p, bool from_scratch) { return read_row_value(rs, data, p, from_scratch); };
  const int size = row_mode_ ? vec_lanes_ * unroll_ : row.lanes;
  const int rl = row_mode_ ? 1 : size;  // lanes of the row statistics
  Acc a1{fresh("accs"), DType::kFloat64, size, row_mode_, 0.0, add_step};
  Acc a2{fresh("accv"), DType::kFloat64, size, row_mode_, 0.0, add_step};
  const std::string mean = fresh("mean"), inv = fresh("inv"), cm = fresh("cm"), ci = fresh("ci");
  std::vector<Expr> rd;
  for (int d = 0; d < rank_; ++d)
    if (reduced_[static_cast<size_t>(d)]) rd.push_back(space_dims_[static_cast<size_t>(d)]);
  const Expr n = widen(cast(f64(), product(rd)), rl);
  TJ_ASSIGN_OR_RETURN(Stmt pass1, reduce_loops(row, [&](const Point& p) -> Expected<Stmt> {
    TJ_ASSIGN_OR_RETURN(Expr x, read_x(p, false));
    if (!store_x) return a1.update(to_f64(x), p.part);
    return block({store_at(sbuf, *sacc, p, x), a1.update(to_f64(load_at(sbuf, DType::kFloat32, *sacc, p)), p.part)});
  }));
  const Expr mean_v = var(mean, f64(rl));
  TJ_ASSIGN_OR_RETURN(Stmt pass2, reduce_loops(row, [&](const Point& p) -> Expected<Stmt> {
    TJ_ASSIGN_OR_RETURN(Expr x, read_x(p, store_x));
    Expr d = sub(to_f64(x), widen(mean_v, p.lanes));
    return a2.update(mul(d, d), p.part);
  }));
  TJ_ASSIGN_OR_RETURN(Stmt pass3, reduce_loops(row, [&](const Point& p) -> Expected<Stmt> {
    TJ_ASSIGN_OR_RETURN(Expr x, read_x(p, store_x));
    TJ_ASSIGN_OR_RETURN(Expr s, value_at(anchor_->input(1), SpaceKind::kIn, p, nullptr));
    Expr y = mul(mul(sub(x, widen(var(cm, f32(rl)), p.lanes)), widen(var(ci, f32(rl)), p.lanes)), to_f32(s));
    if (const ir::Value* b = anchor_->input(2)) {
      TJ_ASSIGN_OR_RETURN(Expr bv, value_at(b, SpaceKind::kIn, p, nullptr));
      y = add(y, to_f32(bv));
    }
    const std::string yv = fresh("y");
    TJ_ASSIGN_OR_RETURN(Stmt st, store_outputs(p, var(yv, y->type)));
    return let(yv, y, st);
  }));
  // Statistics outputs (Mean, InvStdDev) at the row.
  std::vector<Stmt> stats;
  for (size_t k = 1; k <= 2; ++k) {
    const ir::Value* v = anchor_->output(k);
    if (!v || !output_index_.count(v)) continue;
    const int j = output_index_.at(v);
    const int a = access_index_.at({v, SpaceKind::kIn});
    Expr val = var(k == 1 ? mean : inv, f64(rl));
    if (opt_.outputs[static_cast<size_t>(j)].dtype == DType::kFloat32) val = to_f32(val);
    stats.push_back(store_at("out" + std::to_string(j), grouped_[static_cast<size_t>(a)], row, val));
  }
  Stmt write = let(cm, to_f32(mean_v), let(ci, to_f32(var(inv, f64(rl))), pass3));
  if (!stats.empty()) {
    stats.push_back(write);
    write = block(stats);
  }
  const std::string sum1 = fresh("sum"), sum2 = fresh("sumsq");
  const Expr var_v = div(var(sum2, f64(rl)), n);
  const Expr inv_v = div(widen(fimm(1.0, f64()), rl),
                         call(Intrinsic::kSqrt, {add(var_v, widen(fimm(epsilon_, f64()), rl))}));
  Stmt after_mean = a2.wrap(pass2, a2.finish(sum2, let(inv, inv_v, write)));
  return a1.wrap(pass1, a1.finish(sum1, let(mean, div(var(sum1, f64(rl)), n), after_mean)));
}

Expected<Stmt> Lowering::row_body(const Point& row) {
  switch (op_) {
    case AnchorOp::kSoftmax:
    case AnchorOp::kLogSoftmax: return softmax_row(row);
    case AnchorOp::kLayerNorm: return layernorm_row(row);
    default: return reduce_row(row);
  }
}

Expected<Stmt> Lowering::outer_loops(bool parallel) {
  const size_t G = groups_.size();
  std::vector<size_t> outer;
  for (size_t g = 0; g < G; ++g)
    if (!groups_[g].reduced && (row_mode_ || g + 1 != G)) outer.push_back(g);
  std::vector<Expr> ext;
  for (size_t g : outer) ext.push_back(groups_[g].extent);
  const Expr O = product(ext);
  // let i_k = (flat / ...) % ext_k for the outer groups (last group fastest) around body(row).
  auto at_row = [&](const Expr& flat, const std::function<Expected<Stmt>(const Point&)>& body)
      -> Expected<Stmt> {
    Point row;
    row.idx.assign(G, imm(0));
    std::vector<std::pair<std::string, Expr>> lets;
    Expr rest = flat;
    for (size_t k = outer.size(); k-- > 0;) {
      const std::string v = fresh("i");
      lets.push_back({v, k == 0 ? rest : mod(rest, ext[k])});
      row.idx[outer[k]] = var(v);
      if (k > 0) rest = div(rest, ext[k]);
    }
    TJ_ASSIGN_OR_RETURN(Stmt s, body(row));
    for (const auto& [v, e] : lets) s = let(v, e, s);  // each reads only `flat`
    return s;
  };
  auto loop_rows = [&](const std::function<Expected<Stmt>(const Point&)>& body,
                       bool par) -> Expected<Stmt> {
    const std::string o = fresh("o");
    if (is_const(O, 1)) return at_row(imm(0), body);  // one row
    TJ_ASSIGN_OR_RETURN(Stmt s, at_row(var(o), body));
    return for_loop(o, imm(0), O, s, par ? ForKind::kParallel : ForKind::kSerial);
  };
  if (row_mode_ || G == 0) return loop_rows([&](const Point& row) { return row_body(row); }, parallel);

  // Column mode: vector chunks of the last group, then a scalar tail.
  const int L = vec_lanes_;
  const Expr& E = groups_[G - 1].extent;
  const Expr chunks = div_fold(E, L);
  auto chunk_body = [&](const Point& row, const Expr& c) {
    Point p = row;
    p.idx[G - 1] = mul_fold(c, imm(L));
    p.lanes = L;
    return row_body(p);
  };
  auto tail = [&](const Point& row) -> Expected<Stmt> {
    const Expr begin = L > 1 ? mul_fold(chunks, imm(L)) : imm(0);
    const Expr n = L == 1 ? E : E->as<IntImm>() ? imm(E->as<IntImm>()->value % L) : sub(E, begin);
    if (is_const(n, 0)) return block({});
    const std::string j = fresh("j");
    Point p = row;
    p.idx[G - 1] = var(j);
    TJ_ASSIGN_OR_RETURN(Stmt b, row_body(p));
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
  const bool may_parallel = opt_.tier >= 2 && opt_.threads > 1;
  if (!may_parallel) return outer_loops(false);
  std::vector<Expr> all;
  for (const Group& g : groups_) all.push_back(g.extent);
  const Expr work = product(all);
  if (const auto* w = work->as<IntImm>()) {
    const bool par = w->value > kParallelWork;
    if (par) notes_.push_back("outer loop parallel");
    return outer_loops(par);
  }
  TJ_ASSIGN_OR_RETURN(Stmt par, outer_loops(true));
  TJ_ASSIGN_OR_RETURN(Stmt ser, outer_loops(false));
  notes_.push_back("outer loop parallel when the work exceeds " + std::to_string(kParallelWork));
  return if_then_else(compare(CmpOp::kGt, work, imm(kParallelWork)), par, ser);
}

}  // namespace tierjit::kir::lowering::reduction
