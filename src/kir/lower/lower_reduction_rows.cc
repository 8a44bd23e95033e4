// The passes of the reduction lowering over a block of output rows (lower_reduction.cc,
// loops in lower_reduction_kernel.cc): Reduce (1 pass), Softmax/LogSoftmax (max, sum of exp,
// write), LayerNormalization (sum, sum of squared deviations, write). Each pass is one loop
// nest over the reduced groups whose body updates every row of the block (independent chains),
// each row with its own accumulators; a row's results are exactly those of the row alone.
#include <cmath>
#include <limits>

#include "kir/lower/lower_reduction_internal.h"

namespace tierjit::kir::lowering::reduction {

namespace {

/// allocate(a_0) { ... allocate(a_n) { init_0; ...; init_n; loops; rest } }
Stmt wrap_all(const std::vector<Acc>& accs, Stmt loops, Stmt rest) {
  std::vector<Stmt> body;
  for (const Acc& a : accs) body.push_back(a.init_stmt());
  body.push_back(std::move(loops));
  body.push_back(std::move(rest));
  Stmt s = block(std::move(body));
  for (auto it = accs.rbegin(); it != accs.rend(); ++it) s = allocate(it->buf, it->dt, it->size, s);
  return s;
}

/// let out_0 = acc_0 combined in ... let out_n = ... in body.
Stmt finish_all(const std::vector<Acc>& accs, const std::vector<std::string>& outs, Stmt body) {
  for (size_t r = accs.size(); r-- > 0;) body = accs[r].finish(outs[r], body);
  return body;
}

}  // namespace

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


Expected<Stmt> Lowering::reduce_row(const std::vector<Point>& rows) {
  const size_t R = rows.size();
  DType dt = DType::kFloat32;
  double init = 0;
  std::function<Expr(Expr, Expr)> step = add_step;
  switch (op_) {
    case AnchorOp::kSum:
    case AnchorOp::kMean:
      dt = DType::kFloat64;
      break;
    case AnchorOp::kMax:
      init = -std::numeric_limits<double>::infinity();
      step = nan_max_step;
      break;
    default:
      init = std::numeric_limits<double>::infinity();
      step = nan_min_step;
      break;
  }
  const bool wide = dt == DType::kFloat64;
  std::vector<Acc> acc;
  std::vector<std::string> total;
  for (size_t r = 0; r < R; ++r) {
    acc.push_back(make_acc("acc", dt, init, step, rows[r].lanes));
    total.push_back(fresh("total"));
  }
  TJ_ASSIGN_OR_RETURN(Stmt loops, reduce_loops(rows[0], [&](const Point& p) -> Expected<Stmt> {
    std::vector<Stmt> s;
    for (size_t r = 0; r < R; ++r) {
      TJ_ASSIGN_OR_RETURN(Expr x, value_at(anchor_->input(0), SpaceKind::kIn, on_row(p, rows[r]), nullptr));
      x = to_f32(x);
      s.push_back(acc[r].update(wide ? to_f64(x) : x, p.part));
    }
    return s.size() == 1 ? s[0] : block(s);
  }));
  std::vector<Expr> rd;
  for (int d = 0; d < rank_; ++d)
    if (reduced_[static_cast<size_t>(d)]) rd.push_back(space_dims_[static_cast<size_t>(d)]);
  std::vector<Stmt> stores;
  for (size_t r = 0; r < R; ++r) {
    const Type tt{dt, row_mode_ ? 1 : acc[r].size};
    Expr v = var(total[r], tt);
    if (op_ == AnchorOp::kMean) v = div(v, widen(cast(f64(), product(rd)), v->type.lanes));
    if (wide) v = to_f32(v);
    const std::string y = fresh("y");
    TJ_ASSIGN_OR_RETURN(Stmt st, store_outputs(rows[r], var(y, v->type)));
    stores.push_back(let(y, v, st));
  }
  return wrap_all(acc, loops, finish_all(acc, total, stores.size() == 1 ? stores[0] : block(stores)));
}

Expected<Stmt> Lowering::softmax_row(const std::vector<Point>& rows) {
  const size_t R = rows.size();
  const bool log_softmax = op_ == AnchorOp::kLogSoftmax;
  const ir::Value* data = anchor_->input(0);
  const RowScratch rs = row_scratch(data);
  const int scratch = rs.output;
  const bool store_x = rs.store_x;
  const std::string& sbuf = rs.buffer;
  const std::vector<Stride>* sacc = rs.access;
  auto read_x = [&](const Point& p, bool from_scratch) { return read_row_value(rs, data, p, from_scratch); };
  const int lanes = rows[0].lanes;
  const Type mt = f32(row_mode_ ? 1 : lanes);
  std::vector<Acc> am, as;
  std::vector<std::string> m, s, k;
  for (size_t r = 0; r < R; ++r) {
    am.push_back(make_acc("accm", DType::kFloat32, -std::numeric_limits<double>::infinity(), gt_max_step, lanes));
    as.push_back(make_acc("accs", DType::kFloat64, 0.0, add_step, lanes));
    m.push_back(fresh("m"));
    s.push_back(fresh("s"));
    k.push_back(fresh(log_softmax ? "logs" : "inv"));
  }
  // Runs body(point of row r, r) for each row of the block at the reduce loops' point p.
  auto each_row = [&](const std::function<Expected<Stmt>(const Point&, size_t)>& body) {
    return reduce_loops(rows[0], [&](const Point& p) -> Expected<Stmt> {
      std::vector<Stmt> st;
      for (size_t r = 0; r < R; ++r) {
        TJ_ASSIGN_OR_RETURN(Stmt b, body(on_row(p, rows[r]), r));
        st.push_back(b);
      }
      return st.size() == 1 ? st[0] : block(st);
    });
  };
  // Pass 1: max (NaN needs no flag: it reaches the sum through exp and every output is NaN).
  TJ_ASSIGN_OR_RETURN(Stmt pass1, each_row([&](const Point& p, size_t r) -> Expected<Stmt> {
    TJ_ASSIGN_OR_RETURN(Expr x, read_x(p, false));
    if (!store_x) return am[r].update(x, p.part);
    return block({store_at(sbuf, *sacc, p, x), am[r].update(load_at(sbuf, DType::kFloat32, *sacc, p), p.part)});
  }));
  // Pass 2: sum of exp(x - m) in float64; Softmax keeps exp in the scratch.
  TJ_ASSIGN_OR_RETURN(Stmt pass2, each_row([&](const Point& p, size_t r) -> Expected<Stmt> {
    TJ_ASSIGN_OR_RETURN(Expr x, read_x(p, store_x));
    Expr e = call(Intrinsic::kExp, {sub(x, widen(var(m[r], mt), p.lanes))});
    if (scratch >= 0 && !log_softmax) {
      return block({store_at(sbuf, *sacc, p, e),
                    as[r].update(to_f64(load_at(sbuf, DType::kFloat32, *sacc, p)), p.part)});
    }
    return as[r].update(to_f64(e), p.part);
  }));
  // Pass 3: write.
  TJ_ASSIGN_OR_RETURN(Stmt pass3, each_row([&](const Point& p, size_t r) -> Expected<Stmt> {
    Expr y;
    if (log_softmax) {
      TJ_ASSIGN_OR_RETURN(Expr x, read_x(p, store_x));
      y = sub(sub(x, widen(var(m[r], mt), p.lanes)), widen(var(k[r], mt), p.lanes));
    } else if (scratch >= 0) {
      y = mul(load_at(sbuf, DType::kFloat32, *sacc, p), widen(var(k[r], mt), p.lanes));
    } else {
      TJ_ASSIGN_OR_RETURN(Expr x, read_x(p, false));
      y = mul(call(Intrinsic::kExp, {sub(x, widen(var(m[r], mt), p.lanes))}), widen(var(k[r], mt), p.lanes));
    }
    const std::string yv = fresh("y");
    TJ_ASSIGN_OR_RETURN(Stmt st, store_outputs(p, var(yv, y->type)));
    return let(yv, y, st);
  }));
  Stmt tail = pass3;
  for (size_t r = R; r-- > 0;) {
    Expr sv = var(s[r], f64(mt.lanes));
    Expr kval = log_softmax ? to_f32(call(Intrinsic::kLog, {sv}))
                            : to_f32(div(widen(fimm(1.0, f64()), mt.lanes), sv));
    tail = let(k[r], kval, tail);
  }
  Stmt after_max = wrap_all(as, pass2, finish_all(as, s, tail));
  return wrap_all(am, pass1, finish_all(am, m, after_max));
}

Expected<Stmt> Lowering::layernorm_row(const std::vector<Point>& rows) {
  const size_t R = rows.size();
  const ir::Value* data = anchor_->input(0);
  const RowScratch rs = row_scratch(data);
  const bool store_x = rs.store_x;
  const std::string& sbuf = rs.buffer;
  const std::vector<Stride>* sacc = rs.access;
  auto read_x = [&](const Point& p, bool from_scratch) { return read_row_value(rs, data, p, from_scratch); };
  const int lanes = rows[0].lanes;
  const int rl = row_mode_ ? 1 : lanes;  // lanes of the row statistics
  std::vector<Acc> a1, a2;
  std::vector<std::string> mean, inv, cm, ci, sum1, sum2;
  for (size_t r = 0; r < R; ++r) {
    a1.push_back(make_acc("accs", DType::kFloat64, 0.0, add_step, lanes));
    a2.push_back(make_acc("accv", DType::kFloat64, 0.0, add_step, lanes));
    mean.push_back(fresh("mean"));
    inv.push_back(fresh("inv"));
    cm.push_back(fresh("cm"));
    ci.push_back(fresh("ci"));
    sum1.push_back(fresh("sum"));
    sum2.push_back(fresh("sumsq"));
  }
  auto each_row = [&](const std::function<Expected<Stmt>(const Point&, size_t)>& body) {
    return reduce_loops(rows[0], [&](const Point& p) -> Expected<Stmt> {
      std::vector<Stmt> st;
      for (size_t r = 0; r < R; ++r) {
        TJ_ASSIGN_OR_RETURN(Stmt b, body(on_row(p, rows[r]), r));
        st.push_back(b);
      }
      return st.size() == 1 ? st[0] : block(st);
    });
  };
  std::vector<Expr> rd;
  for (int d = 0; d < rank_; ++d)
    if (reduced_[static_cast<size_t>(d)]) rd.push_back(space_dims_[static_cast<size_t>(d)]);
  const Expr n = widen(cast(f64(), product(rd)), rl);
  TJ_ASSIGN_OR_RETURN(Stmt pass1, each_row([&](const Point& p, size_t r) -> Expected<Stmt> {
    TJ_ASSIGN_OR_RETURN(Expr x, read_x(p, false));
    if (!store_x) return a1[r].update(to_f64(x), p.part);
    return block({store_at(sbuf, *sacc, p, x), a1[r].update(to_f64(load_at(sbuf, DType::kFloat32, *sacc, p)), p.part)});
  }));
  TJ_ASSIGN_OR_RETURN(Stmt pass2, each_row([&](const Point& p, size_t r) -> Expected<Stmt> {
    TJ_ASSIGN_OR_RETURN(Expr x, read_x(p, store_x));
    Expr d = sub(to_f64(x), widen(var(mean[r], f64(rl)), p.lanes));
    return a2[r].update(mul(d, d), p.part);
  }));
  TJ_ASSIGN_OR_RETURN(Stmt pass3, each_row([&](const Point& p, size_t r) -> Expected<Stmt> {
    TJ_ASSIGN_OR_RETURN(Expr x, read_x(p, store_x));
    TJ_ASSIGN_OR_RETURN(Expr sc, value_at(anchor_->input(1), SpaceKind::kIn, p, nullptr));
    Expr y = mul(mul(sub(x, widen(var(cm[r], f32(rl)), p.lanes)), widen(var(ci[r], f32(rl)), p.lanes)), to_f32(sc));
    if (const ir::Value* b = anchor_->input(2)) {
      TJ_ASSIGN_OR_RETURN(Expr bv, value_at(b, SpaceKind::kIn, p, nullptr));
      y = add(y, to_f32(bv));
    }
    const std::string yv = fresh("y");
    TJ_ASSIGN_OR_RETURN(Stmt st, store_outputs(p, var(yv, y->type)));
    return let(yv, y, st);
  }));
  // Statistics outputs (Mean, InvStdDev) at each row, then the write pass.
  std::vector<Stmt> write;
  for (size_t r = 0; r < R; ++r)
    for (size_t j = 1; j <= 2; ++j) {
      const ir::Value* v = anchor_->output(j);
      if (!v || !output_index_.count(v)) continue;
      const int o = output_index_.at(v);
      const int a = access_index_.at({v, SpaceKind::kIn});
      Expr val = var(j == 1 ? mean[r] : inv[r], f64(rl));
      if (opt_.outputs[static_cast<size_t>(o)].dtype == DType::kFloat32) val = to_f32(val);
      write.push_back(store_at("out" + std::to_string(o), grouped_[static_cast<size_t>(a)], rows[r], val));
    }
  write.push_back(pass3);
  Stmt tail = write.size() == 1 ? write[0] : block(write);
  for (size_t r = R; r-- > 0;)
    tail = let(cm[r], to_f32(var(mean[r], f64(rl))), let(ci[r], to_f32(var(inv[r], f64(rl))), tail));
  for (size_t r = R; r-- > 0;) {
    const Expr var_v = div(var(sum2[r], f64(rl)), n);
    const Expr inv_v = div(widen(fimm(1.0, f64()), rl),
                           call(Intrinsic::kSqrt, {add(var_v, widen(fimm(epsilon_, f64()), rl))}));
    tail = let(inv[r], inv_v, tail);
  }
  Stmt after_mean = wrap_all(a2, pass2, finish_all(a2, sum2, tail));
  Stmt means = after_mean;
  for (size_t r = R; r-- > 0;) means = let(mean[r], div(var(sum1[r], f64(rl)), n), means);
  return wrap_all(a1, pass1, finish_all(a1, sum1, means));
}

Expected<Stmt> Lowering::row_body(const std::vector<Point>& rows) {
  switch (op_) {
    case AnchorOp::kSoftmax:
    case AnchorOp::kLogSoftmax: return softmax_row(rows);
    case AnchorOp::kLayerNorm: return layernorm_row(rows);
    default: return reduce_row(rows);
  }
}

}  // namespace tierjit::kir::lowering::reduction
