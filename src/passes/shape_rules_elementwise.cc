// Shape rules for elementwise ops: unary math and activations (output type = input type),
// predicates (bool), Cast/CastLike, multidirectional-broadcast binary and variadic ops, Where,
// Clip, Dropout, and the *Like random ops. Integer Add/Sub/Mul/Div on tracked shape tensors also
// propagate their contents (shape arithmetic). Source: ONNX operator specs, opsets 1..17.
#include <algorithm>

#include "passes/shape_rules.h"

namespace tierjit::passes::shapes {
namespace {

using ir::OpKind;

Status unary_same(RuleContext& c) {
  same_as_input(c, 0, 0);
  return Status();
}

// Neg/Abs of a tracked shape tensor (e.g. -axis in expanded LayerNormalization).
Status neg_abs(RuleContext& c) {
  same_as_input(c, 0, 0);
  if (const SymInts* k = c.known(0)) {
    SymInts r;
    for (const SymInt& e : *k) {
      bool neg = c.node().op() == OpKind::Neg || (e.is_constant() && e.value < 0);
      r.push_back(!neg ? e : e.is_constant() && e.value != INT64_MIN ? SymInt::constant(-e.value) : SymInt::unknown());
    }
    c.set_known(0, std::move(r));
  }
  return Status();
}

Status unary_bool(RuleContext& c) {
  same_as_input(c, 0, 0, DType::kBool);
  return Status();
}

Status identity(RuleContext& c) {
  same_as_input(c, 0, 0);
  if (const SymInts* k = c.known(0)) c.set_known(0, *k);
  if (const Tensor* t = c.constant(0)) c.set_constant(0, t);
  return Status();
}

Status cast(RuleContext& c) {
  const ir::Attribute* a = c.node().attr("to");
  DType dt = DType::kUndefined;
  if (a && a->kind == ir::Attribute::Kind::kString) {  // Cast-1 names the type ("FLOAT")
    dt = dtype_from_name(a->s).value_or(DType::kUndefined);
  } else if (a && a->kind == ir::Attribute::Kind::kInt && dtype_is_valid(static_cast<int32_t>(a->i))) {
    dt = static_cast<DType>(a->i);
  }
  if (!a) return c.fail("attribute 'to' is missing");  // an unsupported 'to' stays kUndefined
  same_as_input(c, 0, 0, dt);
  if (dtype_is_integer(dt) && dtype_is_integer(c.dtype(0)))
    if (const SymInts* k = c.known(0)) c.set_known(0, *k);
  return Status();
}

Status cast_like(RuleContext& c) {
  same_as_input(c, 0, 0, c.dtype(1));
  if (dtype_is_integer(c.dtype(1)) && dtype_is_integer(c.dtype(0)))
    if (const SymInts* k = c.known(0)) c.set_known(0, *k);
  return Status();
}

// Broadcast output shape of inputs [0, n) with optional dtype checks against input `first`.
Status broadcast_rule(RuleContext& c, DType out_dtype, size_t first, bool check_dtypes) {
  std::vector<const ir::SymShape*> shapes;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    if (!c.has_input(i)) continue;
    if (check_dtypes && i > first) TJ_RETURN_IF_ERROR(c.same_dtype(first, i));
    shapes.push_back(c.shape(i) ? &*c.shape(i) : nullptr);
  }
  std::string err;
  auto shape = broadcast_shapes(shapes, &err);
  if (!err.empty()) return c.fail("{}", err);
  c.set_output(0, out_dtype, std::move(shape));
  return Status();
}

// Contents of an integer binary op on tracked shape tensors (scalar or equal-length operands).
template <class F>
void propagate_binary(RuleContext& c, F f) {
  const SymInts* a = c.known(0);
  const SymInts* b = c.known(1);
  if (!a || !b || a->empty() || b->empty()) return;
  if (a->size() != b->size() && a->size() != 1 && b->size() != 1) return;
  size_t n = std::max(a->size(), b->size());
  SymInts r(n);
  for (size_t i = 0; i < n; ++i) r[i] = f((*a)[a->size() == 1 ? 0 : i], (*b)[b->size() == 1 ? 0 : i]);
  c.set_known(0, std::move(r));
}

Status arith(RuleContext& c) {
  TJ_RETURN_IF_ERROR(broadcast_rule(c, c.dtype(0), 0, true));
  if (!dtype_is_integer(c.dtype(0))) return Status();
  switch (c.node().op()) {
    case OpKind::Add: propagate_binary(c, sym_add); break;
    case OpKind::Sub: propagate_binary(c, sym_sub); break;
    case OpKind::Mul: propagate_binary(c, sym_mul); break;
    case OpKind::Div: propagate_binary(c, sym_div_trunc); break;
    default: break;
  }
  return Status();
}

Status pow_rule(RuleContext& c) { return broadcast_rule(c, c.dtype(0), 0, false); }

// Equal on shape tensors (exporters test shape entries against -1 before Expand/Reshape).
SymInt sym_equal(const SymInt& a, const SymInt& b) {
  if (a.is_constant() && b.is_constant()) return SymInt::constant(a.value == b.value);
  if (a.is_symbol() && b.is_symbol() && a.symbol == b.symbol) return SymInt::constant(1);
  if ((a.is_symbol() && b.is_constant() && b.value < 0) || (b.is_symbol() && a.is_constant() && a.value < 0))
    return SymInt::constant(0);  // symbols are dims, never negative
  return SymInt::unknown();
}

Status compare(RuleContext& c) {
  TJ_RETURN_IF_ERROR(broadcast_rule(c, DType::kBool, 0, true));
  if (c.node().op() == OpKind::Equal && dtype_is_integer(c.dtype(0))) propagate_binary(c, sym_equal);
  return Status();
}

Status variadic(RuleContext& c) {
  size_t first = 0;
  while (first < c.num_inputs() && !c.has_input(first)) ++first;
  TJ_RETURN_IF_ERROR(broadcast_rule(c, c.dtype(first), first, true));
  bool is_max = c.node().op() == OpKind::Max;
  if ((is_max || c.node().op() == OpKind::Min) && c.num_inputs() == 2 && dtype_is_integer(c.dtype(0))) {
    propagate_binary(c, [is_max](const SymInt& a, const SymInt& b) {
      if (a.is_constant() && b.is_constant()) return SymInt::constant(is_max ? std::max(a.value, b.value) : std::min(a.value, b.value));
      if (is_max && a.is_symbol() && b.is_constant() && b.value <= 0) return a;
      if (is_max && b.is_symbol() && a.is_constant() && a.value <= 0) return b;
      return SymInt::unknown();
    });
  }
  return Status();
}

Status where(RuleContext& c) {
  TJ_RETURN_IF_ERROR(c.same_dtype(1, 2));
  if (c.dtype(0) != DType::kUndefined && c.dtype(0) != DType::kBool)
    return c.fail("input 0 'condition' has dtype {}, expected bool", dtype_name(c.dtype(0)));
  TJ_RETURN_IF_ERROR(broadcast_rule(c, c.dtype(1), 1, false));
  const SymInts* k[3] = {c.known(0), c.known(1), c.known(2)};
  if (!k[0] || !k[1] || !k[2]) return Status();
  size_t n = std::max({k[0]->size(), k[1]->size(), k[2]->size()});
  for (const SymInts* v : k)
    if (v->empty() || (v->size() != n && v->size() != 1)) return Status();
  SymInts r(n);
  for (size_t i = 0; i < n; ++i) {
    const SymInt& cond = (*k[0])[k[0]->size() == 1 ? 0 : i];
    const SymInt& x = (*k[1])[k[1]->size() == 1 ? 0 : i];
    const SymInt& y = (*k[2])[k[2]->size() == 1 ? 0 : i];
    r[i] = !cond.is_constant() ? SymInt::unknown() : (cond.value != 0 ? x : y);
  }
  c.set_known(0, std::move(r));
  return Status();
}

Status prelu(RuleContext& c) {
  TJ_RETURN_IF_ERROR(c.same_dtype(0, 1));
  same_as_input(c, 0, 0);
  return Status();
}

Status clip(RuleContext& c) {
  for (size_t i = 1; i < c.num_inputs(); ++i)
    if (c.has_input(i)) TJ_RETURN_IF_ERROR(c.same_dtype(0, i));
  same_as_input(c, 0, 0);
  return Status();
}

Status dropout(RuleContext& c) {
  same_as_input(c, 0, 0);
  same_as_input(c, 1, 0, c.opset() < 10 ? c.dtype(0) : DType::kBool);  // mask is T before opset 10
  return Status();
}

// RandomNormalLike, RandomUniformLike, Bernoulli, EyeLike: attribute 'dtype' or the input's.
Status like_rule(RuleContext& c) {
  DType dt = c.dtype(0);
  if (c.node().has_attr("dtype")) {
    int64_t code = c.node().attr_int("dtype", 0);
    if (!dtype_is_valid(static_cast<int32_t>(code))) return c.fail("attribute 'dtype' = {} is not a dtype", code);
    dt = static_cast<DType>(code);
  }
  same_as_input(c, 0, 0, dt);
  return Status();
}

}  // namespace

void register_elementwise_rules(RuleTable& t) {
  for (OpKind op : {OpKind::Abs, OpKind::Acos, OpKind::Acosh, OpKind::Asin, OpKind::Asinh, OpKind::Atan,
                    OpKind::Atanh, OpKind::Ceil, OpKind::Cos, OpKind::Cosh, OpKind::Erf, OpKind::Exp,
                    OpKind::Floor, OpKind::Log, OpKind::Neg, OpKind::Reciprocal, OpKind::Round, OpKind::Sign,
                    OpKind::Sin, OpKind::Sinh, OpKind::Sqrt, OpKind::Tan, OpKind::Tanh, OpKind::Relu,
                    OpKind::Sigmoid, OpKind::Softplus, OpKind::Softsign, OpKind::Elu, OpKind::Selu, OpKind::Celu,
                    OpKind::LeakyRelu, OpKind::HardSigmoid, OpKind::HardSwish, OpKind::ThresholdedRelu,
                    OpKind::Shrink, OpKind::Not, OpKind::Softmax, OpKind::LogSoftmax, OpKind::Hardmax,
                    OpKind::LRN, OpKind::LpNormalization, OpKind::MeanVarianceNormalization, OpKind::CumSum,
                    OpKind::Trilu, OpKind::ReverseSequence, OpKind::ScatterElements, OpKind::Scatter,
                    OpKind::ScatterND})
    add_rule(t, op, unary_same);
  add_rule(t, OpKind::Neg, neg_abs);
  add_rule(t, OpKind::Abs, neg_abs);
  add_rule(t, OpKind::IsInf, unary_bool);
  add_rule(t, OpKind::IsNaN, unary_bool);
  add_rule(t, OpKind::Identity, identity);
  add_rule(t, OpKind::Cast, cast);
  add_rule(t, OpKind::CastLike, cast_like);
  for (OpKind op : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Mod, OpKind::BitShift, OpKind::And,
                    OpKind::Or, OpKind::Xor})
    add_rule(t, op, arith);
  add_rule(t, OpKind::Pow, pow_rule);
  for (OpKind op : {OpKind::Equal, OpKind::Greater, OpKind::GreaterOrEqual, OpKind::Less, OpKind::LessOrEqual})
    add_rule(t, op, compare);
  for (OpKind op : {OpKind::Max, OpKind::Min, OpKind::Mean, OpKind::Sum}) add_rule(t, op, variadic);
  add_rule(t, OpKind::Where, where);
  add_rule(t, OpKind::PRelu, prelu);
  add_rule(t, OpKind::Clip, clip);
  add_rule(t, OpKind::Dropout, dropout);
  for (OpKind op : {OpKind::RandomNormalLike, OpKind::RandomUniformLike, OpKind::Bernoulli, OpKind::EyeLike})
    add_rule(t, op, like_rule);
}

}  // namespace tierjit::passes::shapes
