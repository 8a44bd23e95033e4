// Elementwise ONNX nodes -> kir expressions (lower_ops.h). Each case mirrors the tier-0 functor of
// the same op (src/interp/kernels/*.cc) operation by operation, so NaN, signed zero, integer
// wrap and division by zero come out the same.
#include "kir/lower/lower_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "kir/builder.h"

namespace tierjit::kir::lowering {

using ir::OpKind;

// ---- LetScope ------------------------------------------------------------------------------------

Expr LetScope::bind(const Expr& value) {
  const Expr* e = &value;
  if (const auto* b = (*e)->as<Broadcast>()) e = &b->value;
  switch ((*e)->kind) {
    case NodeKind::kVar:
    case NodeKind::kIntImm:
    case NodeKind::kFloatImm:
      return value;
    default:
      break;
  }
  names_.push_back(prefix_ + std::to_string(names_.size()));
  values_.push_back(value);
  return var(names_.back(), value->type);
}

Stmt LetScope::wrap(Stmt body) const {
  for (size_t i = names_.size(); i-- > 0;) body = let(names_[i], values_[i], std::move(body));
  return body;
}

namespace {

// ---- which nodes lower ---------------------------------------------------------------------------

enum class Accept { kFloat, kNumeric, kFloatOrSigned, kInt, kBool, kNumericOrBool };

bool accepts(Accept a, DType t) {
  if (!is_kernel_dtype(t)) return false;
  const bool f = t == DType::kFloat32 || t == DType::kFloat64;
  const bool i = dtype_is_integer(t);
  switch (a) {
    case Accept::kFloat: return f;
    case Accept::kNumeric: return f || i;
    case Accept::kFloatOrSigned: return f || (i && dtype_is_signed(t));
    case Accept::kInt: return i;
    case Accept::kBool: return t == DType::kBool;
    case Accept::kNumericOrBool: return true;
  }
  return false;
}

DType input_dtype(const ir::Node& n, size_t i) {
  const ir::Value* v = n.input(i);
  return v ? v->type().dtype : DType::kUndefined;
}

/// The dtype a Cast node converts to, or kUndefined.
DType cast_target(const ir::Node& n) {
  const ir::Attribute* a = n.attr("to");
  if (!a) return DType::kUndefined;
  if (a->kind == ir::Attribute::Kind::kString) return dtype_from_name(a->s).value_or(DType::kUndefined);
  if (!dtype_is_valid(static_cast<int32_t>(a->i))) return DType::kUndefined;
  return static_cast<DType>(a->i);
}

Status unsupported_node(const ir::Node& n, const std::string& why) {
  return unsupported("{}", n.describe() + ": " + why + " has no compiled lowering");
}

/// OK when lower_elementwise_op handles `n`, else kUnsupported saying why.
Status check_node(const ir::Node& n) {
  const DType t0 = input_dtype(n, 0);
  auto need = [&](Accept a, DType t, size_t i) -> Status {
    if (accepts(a, t)) return Status();
    return unsupported_node(n, fmt::format("input {} dtype {}", i, dtype_name(t)));
  };
  switch (n.op()) {
    case OpKind::Erf: case OpKind::Exp: case OpKind::Log: case OpKind::Sqrt: case OpKind::Tanh:
    case OpKind::Sigmoid: case OpKind::Reciprocal: case OpKind::Round: case OpKind::Floor:
    case OpKind::Ceil: case OpKind::IsNaN: case OpKind::IsInf: case OpKind::LeakyRelu:
    case OpKind::Elu: case OpKind::Selu: case OpKind::Celu: case OpKind::HardSigmoid:
    case OpKind::HardSwish: case OpKind::Softplus: case OpKind::Softsign:
    case OpKind::ThresholdedRelu:
      return need(Accept::kFloat, t0, 0);
    case OpKind::Div:  // integer Div must raise on a zero divisor: tier 0 only
      return need(Accept::kFloat, t0, 0);
    case OpKind::Abs: case OpKind::Sign: case OpKind::Add: case OpKind::Sub: case OpKind::Mul:
    case OpKind::Greater: case OpKind::GreaterOrEqual: case OpKind::Less:
    case OpKind::LessOrEqual: case OpKind::Shrink: case OpKind::Clip:
      return need(Accept::kNumeric, t0, 0);
    case OpKind::PRelu: {
      const auto& s = n.input(1) ? n.input(1)->type().shape : std::nullopt;
      if (n.opset() < 7 && (!s || (s->size() == 1 && (*s)[0].value != 1)))
        return unsupported_node(n, "a per-channel slope (PRelu before opset 7)");
      return need(Accept::kNumeric, t0, 0);
    }
    case OpKind::Max: case OpKind::Min: case OpKind::Sum: case OpKind::Mean:
      for (size_t i = 0; i < n.num_inputs(); ++i) {
        TJ_RETURN_IF_ERROR(need(n.op() == OpKind::Mean ? Accept::kFloat : Accept::kNumeric,
                                input_dtype(n, i), i));
      }
      if (n.num_inputs() == 0) return unsupported_node(n, "no inputs");
      return Status();
    case OpKind::Neg: case OpKind::Relu:
      return need(Accept::kFloatOrSigned, t0, 0);
    case OpKind::Sinh: case OpKind::Cosh: case OpKind::Asinh: case OpKind::Acosh:
    case OpKind::Atanh:  // float32 through float64 exp/log (libm); float64 would not be exact
      if (t0 != DType::kFloat32) return unsupported_node(n, fmt::format("input 0 dtype {}", dtype_name(t0)));
      return Status();
    case OpKind::Not: case OpKind::And: case OpKind::Or: case OpKind::Xor:
      return need(Accept::kBool, t0, 0);
    case OpKind::Equal: case OpKind::Identity:
      return need(Accept::kNumericOrBool, t0, 0);
    case OpKind::Where:
      TJ_RETURN_IF_ERROR(need(Accept::kBool, t0, 0));
      return need(Accept::kNumericOrBool, input_dtype(n, 1), 1);
    case OpKind::Cast: {
      TJ_RETURN_IF_ERROR(need(Accept::kNumericOrBool, t0, 0));
      const DType to = cast_target(n);
      if (!is_kernel_dtype(to)) return unsupported_node(n, fmt::format("cast to {}", dtype_name(to)));
      return Status();
    }
    case OpKind::Pow:
      TJ_RETURN_IF_ERROR(need(Accept::kFloat, t0, 0));
      return need(Accept::kNumeric, input_dtype(n, 1), 1);
    case OpKind::Mod:  // integer Mod must raise on a zero divisor (tier 0); float fmod: no frem
      return unsupported_node(n, "Mod (tier 0 only)");
    default:
      return unsupported_node(n, "this op");
  }
}

// ---- expression helpers ----------------------------------------------------------------------------

/// The constant v as type t (float or integer/bool, any lanes).
Expr cst(double v, Type t) {
  if (t.is_float()) return fimm(v, t);
  return imm(static_cast<int64_t>(v), t);
}
Expr icst(int64_t v, Type t) { return imm(v, t); }

Expr eq(Expr a, Expr b) { return compare(CmpOp::kEq, std::move(a), std::move(b)); }
Expr ne(Expr a, Expr b) { return compare(CmpOp::kNe, std::move(a), std::move(b)); }
Expr gt(Expr a, Expr b) { return compare(CmpOp::kGt, std::move(a), std::move(b)); }
Expr ge(Expr a, Expr b) { return compare(CmpOp::kGe, std::move(a), std::move(b)); }
Expr land(Expr a, Expr b) { return binary(BinaryOp::kAnd, std::move(a), std::move(b)); }
Expr lor(Expr a, Expr b) { return binary(BinaryOp::kOr, std::move(a), std::move(b)); }

/// Lowers one node; operands already broadcast to one lane count and bound.
class OpLowering {
 public:
  OpLowering(const ir::Node& n, std::vector<Expr> x, LetScope* lets)
      : n_(n), x_(std::move(x)), lets_(lets) {}

  Expected<Expr> run();

 private:
  Expr b(Expr e) { return lets_ ? lets_->bind(e) : e; }
  Expr x(size_t i) const { return x_[i]; }
  Type t() const { return x_[0]->type; }
  Expr c(double v) const { return cst(v, t()); }
  Expr attr(const char* name, float dflt) const { return c(static_cast<double>(n_.attr_float(name, dflt))); }
  bool is_float() const { return t().is_float(); }

  Expr is_nan(const Expr& v) { return ne(v, v); }
  Expr relu0(const Expr& v) { return select(gt(v, cst(0, v->type)), v, cst(0, v->type)); }

  /// expm1(v) from exp and log (Kahan): u = e^v; u == 1 ? v : u - 1 == -1 ? -1 : (u-1) v / log u.
  Expr expm1(const Expr& v0) {
    Expr v = b(v0);
    Expr u = b(call(Intrinsic::kExp, {v}));
    Expr um1 = b(sub(u, cst(1, v->type)));
    Expr general = div(mul(um1, v), call(Intrinsic::kLog, {u}));
    return select(eq(u, cst(1, v->type)), v,
                  select(eq(um1, cst(-1, v->type)), cst(-1, v->type), general));
  }
  /// log1p(e) for e >= 0 (Goldberg): u = 1 + e; u == 1 ? e : log(u) * e / (u - 1).
  Expr log1p(const Expr& e0) {
    Expr e = b(e0);
    Expr u = b(add(cst(1, e->type), e));
    return select(eq(u, cst(1, e->type)), e,
                  mul(call(Intrinsic::kLog, {u}), div(e, sub(u, cst(1, e->type)))));
  }

  Expr cast_to(DType to, const Expr& v);
  Expr hyperbolic(OpKind op, const Expr& v);
  Expr float_to_int(DType to, const Expr& v);
  Expected<Expr> clip();
  Expected<Expr> variadic();

  const ir::Node& n_;
  std::vector<Expr> x_;
  LetScope* lets_;
};

/// Float -> integer as tier 0 (cast.cc float_to_int): truncate, NaN -> 0, saturate to int64 (to
/// uint64 for uint64), then wrap to narrower types. fptosi out of range is poison in LLVM, so the
/// out-of-range lanes select their result without reading it.
Expr OpLowering::float_to_int(DType to, const Expr& v0) {
  Expr v = b(v0);
  const Type ft = v->type;
  const int lanes = ft.lanes;
  const Expr two63 = cst(9223372036854775808.0, ft);
  Expr as64 = select(ge(v, two63), icst(std::numeric_limits<int64_t>::max(), i64(lanes)),
                     select(lt(v, cst(-9223372036854775808.0, ft)),
                            icst(std::numeric_limits<int64_t>::min(), i64(lanes)),
                            cast(i64(lanes), v)));
  as64 = select(is_nan(v), icst(0, i64(lanes)), as64);
  if (to == DType::kUInt64) {
    const Type u = Type{DType::kUInt64, lanes};
    return select(ge(v, cst(18446744073709551616.0, ft)), icst(-1, u),
                  select(ge(v, two63), cast(u, v), cast(u, as64)));
  }
  return to == DType::kInt64 ? as64 : cast(Type{to, lanes}, as64);
}

Expr OpLowering::cast_to(DType to, const Expr& v) {
  const Type from = v->type;
  if (from.dtype == to) return v;
  if (to == DType::kBool) return cast(boolean(from.lanes), v);  // x != 0, NaN -> true
  if (from.is_float() && dtype_is_integer(to)) return float_to_int(to, v);
  return cast(Type{to, from.lanes}, v);  // int/bool/float -> float, int/bool -> int (wraps)
}

/// Sinh Cosh Asinh Acosh Atanh of float32, computed in float64 from exp/log/sqrt (libm) and
/// rounded once, so they match tier 0's sinhf etc. to within rounding (overflow edges included);
/// near 0 the odd ones use two Taylor terms (|x| < 1e-4: the next term is below float64's eps).
Expr OpLowering::hyperbolic(OpKind op, const Expr& v) {
  const Type dt = f64(v->type.lanes);
  Expr x = b(cast(dt, v));
  auto d = [&](double k) { return cst(k, dt); };
  Expr ax = b(call(Intrinsic::kAbs, {x}));
  Expr small = lt(ax, d(1e-4));
  Expr x3 = mul(mul(x, x), x);
  Expr r;
  switch (op) {
    case OpKind::Cosh: {
      Expr e = b(call(Intrinsic::kExp, {ax}));
      r = mul(d(0.5), add(e, div(d(1), e)));
      break;
    }
    case OpKind::Sinh: {
      Expr e = b(call(Intrinsic::kExp, {x}));
      r = select(small, add(x, div(x3, d(6))), mul(d(0.5), sub(e, div(d(1), e))));
      break;
    }
    case OpKind::Asinh: {
      Expr big = call(Intrinsic::kLog, {add(ax, call(Intrinsic::kSqrt, {add(mul(x, x), d(1))}))});
      big = select(lt(x, d(0)), sub(d(-0.0), big), big);
      r = select(small, sub(x, div(x3, d(6))), big);
      break;
    }
    case OpKind::Acosh:
      r = call(Intrinsic::kLog, {add(x, call(Intrinsic::kSqrt, {sub(mul(x, x), d(1))}))});
      break;
    default:  // Atanh
      r = select(small, add(x, div(x3, d(3))),
                 mul(d(0.5), call(Intrinsic::kLog, {div(add(d(1), x), sub(d(1), x))})));
      break;
  }
  return cast(v->type, r);
}

/// Clip: x < lo ? lo : x, then > hi ? hi : it (NaN kept; lo > hi gives hi). Bounds are inputs
/// from opset 11, attributes before.
Expected<Expr> OpLowering::clip() {
  Expr v = x(0);
  Expr lo, hi;
  if (n_.opset() >= 11) {
    if (x_.size() > 1) lo = x_[1];
    if (x_.size() > 2) hi = x_[2];
  } else {
    if (n_.has_attr("min")) lo = attr("min", 0);
    if (n_.has_attr("max")) hi = attr("max", 0);
  }
  if (lo) {
    lo = b(lo);
    v = b(select(lt(v, lo), lo, v));
  }
  if (hi) {
    hi = b(hi);
    v = select(gt(v, hi), hi, v);
  }
  return v;
}

/// Max/Min/Sum/Mean folded pairwise from input 0, as tier 0's variadic kernel.
Expected<Expr> OpLowering::variadic() {
  Expr acc = x(0);
  for (size_t i = 1; i < x_.size(); ++i) {
    Expr a = b(acc), y = x(i);
    switch (n_.op()) {
      case OpKind::Max:
      case OpKind::Min: {
        Expr pick = n_.op() == OpKind::Max ? select(lt(a, y), y, a) : select(lt(y, a), y, a);
        acc = is_float() ? select(is_nan(a), a, select(is_nan(y), y, pick)) : pick;
        break;
      }
      default:
        acc = add(a, y);
        break;
    }
  }
  if (n_.op() == OpKind::Mean && x_.size() > 1) acc = div(acc, c(static_cast<double>(x_.size())));
  return acc;
}

Expected<Expr> OpLowering::run() {
  const Expr v = x(0);
  switch (n_.op()) {
    case OpKind::Identity: return v;
    case OpKind::Add: return add(v, x(1));
    case OpKind::Sub: return sub(v, x(1));
    case OpKind::Mul: return mul(v, x(1));
    case OpKind::Div: return div(v, x(1));  // floats only (check_node)
    case OpKind::Pow: {
      Expr e = cast_to(t().dtype, x(1));
      const Expr* k = &e;
      if (const auto* bc = e->as<Broadcast>()) k = &bc->value;
      if (const auto* f = (*k)->as<FloatImm>()) {
        if (f->value == 1.0) return v;
        if (f->value == 2.0) return mul(v, v);
      }
      return call(Intrinsic::kPow, {v, e});
    }
    case OpKind::Neg: return is_float() ? sub(c(-0.0), v) : sub(c(0), v);
    case OpKind::Abs: return call(Intrinsic::kAbs, {v});
    case OpKind::Reciprocal: return div(c(1), v);
    case OpKind::Sqrt: return call(Intrinsic::kSqrt, {v});
    case OpKind::Exp: return call(Intrinsic::kExp, {v});
    case OpKind::Log: return call(Intrinsic::kLog, {v});
    case OpKind::Tanh: return call(Intrinsic::kTanh, {v});
    case OpKind::Erf: return call(Intrinsic::kErf, {v});
    case OpKind::Sigmoid: {
      if (t().dtype == DType::kFloat32) return call(Intrinsic::kSigmoid, {v});  // polynomial
      // float64 as tier 0 writes it: 1 / (1 + e^-x) for x >= 0, e^x / (1 + e^x) below.
      Expr e = b(call(Intrinsic::kExp, {sub(c(-0.0), call(Intrinsic::kAbs, {v}))}));
      Expr d = b(add(c(1), e));
      return select(ge(v, c(0)), div(c(1), d), div(e, d));
    }
    case OpKind::Floor: return call(Intrinsic::kFloor, {v});
    case OpKind::Ceil: return call(Intrinsic::kCeil, {v});
    case OpKind::Round: return call(Intrinsic::kRound, {v});
    case OpKind::Sign: {
      Expr zero = is_float() ? select(is_nan(v), v, c(0)) : c(0);
      return select(gt(v, c(0)), c(1), select(lt(v, c(0)), c(-1), zero));
    }
    case OpKind::IsNaN: return is_nan(v);
    case OpKind::IsInf: {
      const bool neg = n_.attr_int("detect_negative", 1) != 0;
      const bool pos = n_.attr_int("detect_positive", 1) != 0;
      const double inf = std::numeric_limits<double>::infinity();
      if (pos && neg) return eq(call(Intrinsic::kAbs, {v}), c(inf));
      if (pos) return eq(v, c(inf));
      if (neg) return eq(v, c(-inf));
      return icst(0, boolean(t().lanes));
    }
    case OpKind::Not: return eq(v, icst(0, t()));
    case OpKind::And: return land(v, x(1));
    case OpKind::Or: return lor(v, x(1));
    case OpKind::Xor: return ne(v, x(1));
    case OpKind::Equal: return eq(v, x(1));
    case OpKind::Greater: return gt(v, x(1));
    case OpKind::GreaterOrEqual: return ge(v, x(1));
    case OpKind::Less: return lt(v, x(1));
    case OpKind::LessOrEqual: return compare(CmpOp::kLe, v, x(1));
    case OpKind::Where: return select(v, x(1), x(2));
    case OpKind::Cast: return cast_to(cast_target(n_), v);
    case OpKind::Clip: return clip();
    case OpKind::Max: case OpKind::Min: case OpKind::Sum: case OpKind::Mean: return variadic();
    case OpKind::Relu: return relu0(v);
    case OpKind::Sinh: case OpKind::Cosh: case OpKind::Asinh: case OpKind::Acosh:
    case OpKind::Atanh:
      return hyperbolic(n_.op(), v);
    case OpKind::PRelu: return select(lt(v, c(0)), mul(x(1), v), v);
    case OpKind::LeakyRelu: return select(lt(v, c(0)), mul(attr("alpha", 0.01f), v), v);
    case OpKind::ThresholdedRelu: return select(gt(v, attr("alpha", 1.0f)), v, c(0));
    case OpKind::Elu:
      return select(lt(v, c(0)), mul(attr("alpha", 1.0f), expm1(v)), v);
    case OpKind::Selu: {
      Expr neg = mul(attr("alpha", 1.67326319217681884765625f), expm1(v));
      return mul(attr("gamma", 1.05070102214813232421875f), select(gt(v, c(0)), v, neg));
    }
    case OpKind::Celu: {
      Expr alpha = attr("alpha", 1.0f);
      return select(gt(v, c(0)), v, mul(alpha, expm1(div(v, alpha))));
    }
    case OpKind::HardSigmoid: {
      Expr h = b(add(mul(attr("alpha", 0.2f), v), attr("beta", 0.5f)));
      return select(lt(h, c(0)), c(0), select(gt(h, c(1)), c(1), h));
    }
    case OpKind::HardSwish: {
      Expr h = b(add(div(v, c(6)), c(0.5)));
      return mul(v, select(lt(h, c(0)), c(0), select(gt(h, c(1)), c(1), h)));
    }
    case OpKind::Softplus:
      return add(relu0(v), log1p(call(Intrinsic::kExp, {sub(c(-0.0), call(Intrinsic::kAbs, {v}))})));
    case OpKind::Softsign: return div(v, add(c(1), call(Intrinsic::kAbs, {v})));
    case OpKind::Shrink: {
      const double lambd = n_.attr_float("lambd", 0.5f), bias = n_.attr_float("bias", 0.0f);
      if (is_float()) {
        return select(lt(v, c(-lambd)), add(v, c(bias)),
                      select(gt(v, c(lambd)), sub(v, c(bias)), c(0)));
      }
      Expr d = b(cast(f64(t().lanes), v));  // integers compute in double, as tier 0
      const Type dt = d->type;
      return select(lt(d, cst(-lambd, dt)), cast(t(), add(d, cst(bias, dt))),
                    select(gt(d, cst(lambd, dt)), cast(t(), sub(d, cst(bias, dt))), c(0)));
    }
    default:
      break;
  }
  return unsupported_node(n_, "this op");
}

}  // namespace

bool elementwise_op_supported(const ir::Node& node) { return check_node(node).ok(); }

Expected<Expr> lower_elementwise_op(const ir::Node& node, const std::vector<Expr>& operands,
                                    LetScope* lets) {
  TJ_RETURN_IF_ERROR(check_node(node));
  if (operands.size() != node.num_inputs())
    return invalid_argument("{}", node.describe() + ": " + std::to_string(operands.size()) +
                                      " operands for " + std::to_string(node.num_inputs()) +
                                      " inputs");
  int lanes = 1;
  for (const Expr& e : operands) {
    if (e) lanes = std::max(lanes, e->type.lanes);
  }
  std::vector<Expr> x;
  for (size_t i = 0; i < operands.size(); ++i) {
    Expr e = operands[i];
    if (!e) {
      if (i == 0 || node.op() != OpKind::Clip)
        return invalid_argument("{}", node.describe() + ": operand " + std::to_string(i) + " is missing");
      x.push_back(nullptr);
      continue;
    }
    const DType want = input_dtype(node, i);
    if (want != DType::kUndefined && e->type.dtype != want)
      return invalid_argument("{}", node.describe() + ": operand " + std::to_string(i) + " is " +
                                        std::string(dtype_name(e->type.dtype)) + ", input is " +
                                        std::string(dtype_name(want)));
    if (e->type.lanes != lanes) {
      if (e->type.lanes != 1)
        return invalid_argument("{}", node.describe() + ": operands of " +
                                          std::to_string(e->type.lanes) + " and " +
                                          std::to_string(lanes) + " lanes");
      e = broadcast(lets ? lets->bind(e) : e, lanes);
    }
    x.push_back(lets ? lets->bind(e) : e);
  }
  while (!x.empty() && !x.back()) x.pop_back();  // trailing omitted Clip bounds
  TJ_ASSIGN_OR_RETURN(Expr out, OpLowering(node, std::move(x), lets).run());
  const ir::Value* y = node.output(0);
  if (y && y->type().dtype != DType::kUndefined && y->type().dtype != out->type.dtype)
    return unsupported_node(node, fmt::format("output dtype {} (lowering gives {})",
                                              dtype_name(y->type().dtype),
                                              dtype_name(out->type.dtype)));
  return out;
}

Expr scalar_constant(const ir::Value* v) {
  if (!v->is_constant()) return nullptr;
  return scalar_immediate(v->constant());
}

Expr scalar_immediate(const Tensor& t) {
  if (!t.defined() || t.numel() != 1) return nullptr;
  const DType d = t.dtype();
  if (d == DType::kFloat32 || d == DType::kFloat64) return fimm(t.value_as_double(0), Type{d, 1});
  if (d == DType::kBool || d == DType::kInt8 || d == DType::kInt16 || d == DType::kInt32 ||
      d == DType::kInt64 || d == DType::kUInt8 || d == DType::kUInt16 || d == DType::kUInt32)
    return imm(t.value_as_int64(0), Type{d, 1});
  return nullptr;  // uint64 beyond int64 would not survive value_as_int64
}

}  // namespace tierjit::kir::lowering
