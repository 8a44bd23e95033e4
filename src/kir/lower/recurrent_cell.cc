// The gate math of one LSTM / GRU step in generated vector code (recurrent_internal.h): per batch
// row and group of hidden units, the gates' pre-activations (input projection + recurrent
// product + biases, peepholes), clip, the activations and the state update, stored to the state
// and to Y. Tier 0's semantics (src/interp/kernels/rnn.cc's reference path): the biases Wb + Rb
// summed first and added after both products (as oneDNN, tier 0's fast path, does); GRU with
// linear_before_reset keeps Rbh with the recurrent term. Transcendentals are codegen's
// polynomials (docs/codegen.md: sigmoid 2.7 ulp, tanh 1.3 ulp); NaN propagates as in tier 0.
// Source: ONNX operator spec, LSTM 7/14/22, GRU 7/14/22 (equations and activation functions).
#include <functional>

#include "kir/lower/lower_ops.h"
#include "kir/lower/recurrent_internal.h"

namespace tierjit::kir::lowering {

Expr splat_f32(float v, int lanes) { return lanes > 1 ? broadcast(fimm(v), lanes) : fimm(v); }

Expr load_f32(const Array& a, const Expr& i, int lanes) {
  Expr idx = add(a.base, i);
  return lanes > 1 ? load(f32(lanes), a.buffer, ramp(idx, imm(1), lanes))
                   : load(f32(), a.buffer, idx);
}

Stmt store_f32(const Array& a, const Expr& i, const Expr& value, int lanes) {
  Expr idx = add(a.base, i);
  return store(a.buffer, lanes > 1 ? ramp(idx, imm(1), lanes) : idx, value);
}

Expected<Stmt> unit_loop(int64_t hidden, int lanes, const std::string& name,
                         const std::function<Expected<Stmt>(const Expr&, int)>& body) {
  std::vector<Stmt> parts;
  const int64_t vecs = lanes > 1 ? hidden / lanes : 0;
  if (vecs > 0) {
    TJ_ASSIGN_OR_RETURN(Stmt b, body(var(name), lanes));
    parts.push_back(
        for_loop(name + "_v", imm(0), imm(vecs), let(name, mul(var(name + "_v"), imm(lanes)), b)));
  }
  if (hidden > vecs * lanes) {
    TJ_ASSIGN_OR_RETURN(Stmt b, body(var(name + "_s"), 1));
    parts.push_back(for_loop(name + "_s", imm(vecs * lanes), imm(hidden - vecs * lanes), b));
  }
  return block(std::move(parts));
}

namespace {

// f(x) for one of the spec's activation functions, as tier 0 computes it (rnn.cc `apply`).
Expr activate(const RnnActivation& a, const Expr& x, int lanes) {
  auto c = [lanes](float v) { return splat_f32(v, lanes); };
  switch (a.kind) {
    case RnnActivation::kSigmoid:
      return call(Intrinsic::kSigmoid, {x});
    case RnnActivation::kTanh:
      return call(Intrinsic::kTanh, {x});
    case RnnActivation::kRelu:
      return select(compare(CmpOp::kLt, x, c(0)), c(0), x);  // NaN stays
    case RnnActivation::kAffine:
      return add(mul(c(a.alpha), x), c(a.beta));
    case RnnActivation::kLeakyRelu:
      return select(compare(CmpOp::kGe, x, c(0)), x, mul(c(a.alpha), x));
    case RnnActivation::kThresholdedRelu:
      return select(compare(CmpOp::kGt, x, c(a.alpha)), x, c(0));
    case RnnActivation::kScaledTanh:
      return mul(c(a.alpha), call(Intrinsic::kTanh, {mul(c(a.beta), x)}));
    case RnnActivation::kHardSigmoid: {
      Expr v = add(mul(c(a.alpha), x), c(a.beta));
      return select(compare(CmpOp::kLt, v, c(0)), c(0),
                    select(compare(CmpOp::kGt, v, c(1)), c(1), v));
    }
    case RnnActivation::kElu:
      return select(compare(CmpOp::kGe, x, c(0)), x,
                    mul(c(a.alpha), sub(call(Intrinsic::kExp, {x}), c(1))));
    case RnnActivation::kSoftsign:
      return div(x, add(c(1), call(Intrinsic::kAbs, {x})));
    case RnnActivation::kSoftplus:
      return call(Intrinsic::kLog, {add(c(1), call(Intrinsic::kExp, {x}))});
  }
  return x;
}

// Gate math of one row and unit group, with the lets it binds.
class Units {
 public:
  Units(const RowStep& row, const Expr& u, int lanes, const std::string& prefix)
      : row_(row), s_(*row.spec), u_(u), lanes_(lanes), lets_(prefix) {}

  Expr bind(const Expr& e) { return lets_.bind(e); }
  Expr c(float v) const { return splat_f32(v, lanes_); }
  Expr ld(const Array& a, int64_t off) const { return load_f32(a, add(u_, imm(off)), lanes_); }
  Stmt st(const Array& a, int64_t off, const Expr& v) const {
    return store_f32(a, add(u_, imm(off)), v, lanes_);
  }
  const RnnActivation& act(int k) const {
    return s_.acts[static_cast<size_t>(row_.dir * s_.per_dir() + k)];
  }
  Expr f(int k, const Expr& x) { return bind(activate(act(k), x, lanes_)); }
  Expr clip(const Expr& x) const {
    if (!s_.has_clip) return x;
    return select(compare(CmpOp::kLt, x, c(-s_.clip)), c(-s_.clip),
                  select(compare(CmpOp::kGt, x, c(s_.clip)), c(s_.clip), x));
  }
  // The bias of gate g as RowStep::bias holds it (Wb + Rb; GRU's h gate: Wb), or null.
  Expr bias(int64_t g) const {
    return row_.bias.buffer.empty() ? nullptr : ld(row_.bias, g * s_.hidden);
  }
  Expr rbias(int64_t g) const {  // Rb of gate g alone (from B), or null
    if (s_.b < 0) return nullptr;
    const int64_t gh = s_.gates * s_.hidden;
    return ld(Array{"in" + std::to_string(s_.b), imm(row_.dir * 2 * gh)}, gh + g * s_.hidden);
  }
  // Projection + recurrent product + Wb + Rb of gate g.
  Expr pre(int64_t g) const {
    Expr v = add(ld(row_.proj, g * s_.hidden), ld(row_.rec, g * s_.hidden));
    Expr b = bias(g);
    return b ? add(v, b) : v;
  }
  Stmt wrap(std::vector<Stmt> stores) const { return lets_.wrap(block(std::move(stores))); }
  Stmt store_y(const Expr& h) const {
    return row_.y.buffer.empty() ? block({}) : store_f32(row_.y, u_, h, lanes_);
  }

 private:
  const RowStep& row_;
  const RnnSpec& s_;
  Expr u_;
  int lanes_;
  LetScope lets_;
};

std::string prefix_for(const char* what, int lanes) {
  return std::string(what) + (lanes > 1 ? "v" : "s");
}

}  // namespace

Expected<Stmt> lstm_units(const RowStep& row, const Expr& u, int lanes) {
  const RnnSpec& s = *row.spec;
  const int64_t H = s.hidden;
  Units x(row, u, lanes, prefix_for("l", lanes));
  // ONNX gate order i, o, f, c; peepholes P = [p_i, p_o, p_f].
  Expr cp = x.bind(x.ld(row.c, 0));
  Expr gi = x.pre(0), go = x.pre(1), gf = x.pre(2), gc = x.pre(3);
  Array peep{s.p >= 0 ? "in" + std::to_string(s.p) : "", imm(row.dir * 3 * H)};
  if (s.p >= 0) {
    gi = add(gi, mul(x.ld(peep, 0), cp));
    gf = add(gf, mul(x.ld(peep, 2 * H), cp));
  }
  Expr i = x.f(0, x.clip(gi));
  Expr f = s.input_forget ? x.bind(sub(x.c(1), i)) : x.f(0, x.clip(gf));
  Expr cc = x.f(1, x.clip(gc));
  Expr cn = x.bind(add(mul(f, cp), mul(i, cc)));
  if (s.p >= 0) go = add(go, mul(x.ld(peep, H), cn));
  Expr o = x.f(0, x.clip(go));
  Expr hn = x.bind(mul(o, x.f(2, cn)));
  return x.wrap({x.st(row.c, 0, cn), x.st(row.h, 0, hn), x.store_y(hn)});
}

Expected<Stmt> gru_reset_units(const RowStep& row, const Expr& u, int lanes) {
  Units x(row, u, lanes, prefix_for("z", lanes));
  Expr z = x.f(0, x.clip(x.pre(0)));
  Expr r = x.f(0, x.clip(x.pre(1)));
  return x.wrap({x.st(row.rec, 0, z), x.st(row.rh, 0, mul(r, x.ld(row.h, 0)))});
}

Expected<Stmt> gru_units(const RowStep& row, const Expr& u, int lanes) {
  const RnnSpec& s = *row.spec;
  const int64_t H = s.hidden;
  Units x(row, u, lanes, prefix_for("g", lanes));
  Expr hp = x.bind(x.ld(row.h, 0));
  Expr z, gh;
  Expr wbh = x.bias(2), rbh = x.rbias(2);
  Expr ph = x.ld(row.proj, 2 * H);
  if (wbh) ph = add(ph, wbh);
  if (s.lbr) {
    z = x.f(0, x.clip(x.pre(0)));
    Expr r = x.f(0, x.clip(x.pre(1)));
    Expr rec = x.ld(row.rec, 2 * H);
    if (rbh) rec = add(rec, rbh);
    gh = add(ph, mul(r, rec));
  } else {
    z = x.bind(x.ld(row.rec, 0));  // activated by gru_reset_units
    Expr rec = x.ld(row.rec_h, 0);
    if (rbh) rec = add(rec, rbh);
    gh = add(ph, rec);
  }
  Expr hh = x.f(1, x.clip(gh));
  Expr hn = x.bind(add(mul(sub(x.c(1), z), hh), mul(z, hp)));
  return x.wrap({x.st(row.h, 0, hn), x.store_y(hn)});
}

}  // namespace tierjit::kir::lowering
