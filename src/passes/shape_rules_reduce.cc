// Shape rules for reductions and normalizations: Reduce* (axes attribute, or input for ReduceSum
// from opset 13; keepdims; noop_with_empty_axes), ArgMax/ArgMin, BatchNormalization (training
// outputs), InstanceNormalization, LayerNormalization (Mean/InvStdDev), Det, and the losses
// SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss. Source: ONNX operator specs, opsets 1..17.
#include "passes/shape_rules.h"

namespace tierjit::passes::shapes {
namespace {

using ir::Dim;
using ir::OpKind;
using ir::SymShape;

Status reduce_to(RuleContext& c, DType dtype) {
  const auto& in = c.shape(0);
  bool keepdims = c.node().attr_int("keepdims", 1) != 0;
  bool present = false;
  int input_from = c.node().op() == OpKind::ReduceSum ? 13 : 18;
  auto axes = axes_arg(c, "axes", 1, input_from, &present);
  if (!in) {
    c.set_output(0, dtype, std::nullopt);
    return Status();
  }
  int64_t r = static_cast<int64_t>(in->size());
  if (!axes) {  // axes computed at run time
    int64_t len = -1;
    if (const auto& s = c.shape(1); s && s->size() == 1 && (*s)[0].is_constant()) len = (*s)[0].value;
    if (keepdims) c.set_output(0, dtype, unknown_dims(in->size()));
    else c.set_output(0, dtype, len > 0 && len <= r ? std::optional<SymShape>(unknown_dims(static_cast<size_t>(r - len))) : std::nullopt);
    return Status();
  }
  std::vector<bool> reduced(in->size(), false);
  if (axes->empty()) {
    bool noop = input_from <= c.opset() && c.node().attr_int("noop_with_empty_axes", 0) != 0;
    if (noop) {
      c.set_output(0, dtype, in);
      return Status();
    }
    reduced.assign(in->size(), true);
  }
  for (int64_t a : *axes) {
    TJ_RETURN_IF_ERROR(c.normalize_axis(a, r, "axis"));
    reduced[static_cast<size_t>(a)] = true;
  }
  SymShape out;
  for (size_t i = 0; i < in->size(); ++i) {
    if (!reduced[i]) out.push_back((*in)[i]);
    else if (keepdims) out.push_back(Dim::constant(1));
  }
  c.set_output(0, dtype, std::move(out));
  return Status();
}

Status reduce(RuleContext& c) { return reduce_to(c, c.dtype(0)); }

Status arg_reduce(RuleContext& c) {
  const auto& in = c.shape(0);
  if (!in) {
    c.set_output(0, DType::kInt64, std::nullopt);
    return Status();
  }
  int64_t axis = c.node().attr_int("axis", 0);
  TJ_RETURN_IF_ERROR(c.normalize_axis(axis, static_cast<int64_t>(in->size()), "axis"));
  SymShape out = *in;
  if (c.node().attr_int("keepdims", 1) != 0) out[static_cast<size_t>(axis)] = Dim::constant(1);
  else out.erase(out.begin() + axis);
  c.set_output(0, DType::kInt64, std::move(out));
  return Status();
}

Status batch_norm(RuleContext& c) {
  same_as_input(c, 0, 0);
  const auto& x = c.shape(0);
  Dim ch = x && x->size() >= 2 ? (*x)[1] : Dim::unknown();
  bool per_channel = c.opset() >= 9 || c.node().attr_int("spatial", 1) != 0;
  for (size_t i = 1; i < c.num_outputs(); ++i) {
    DType dt = c.dtype(0);
    if (c.opset() >= 15 && (i == 1 || i == 2)) dt = c.dtype(i + 2);
    c.set_output(i, dt, per_channel ? std::optional<SymShape>(SymShape{ch}) : std::nullopt);
  }
  return Status();
}

Status layer_norm(RuleContext& c) {
  same_as_input(c, 0, 0);
  const auto& x = c.shape(0);
  int64_t stash = c.node().attr_int("stash_type", 1);
  DType st = dtype_is_valid(static_cast<int32_t>(stash)) ? static_cast<DType>(stash) : DType::kUndefined;
  std::optional<SymShape> stats;
  if (x) {
    int64_t axis = c.node().attr_int("axis", -1);
    TJ_RETURN_IF_ERROR(c.normalize_axis(axis, static_cast<int64_t>(x->size()), "axis"));
    stats = *x;
    for (size_t i = static_cast<size_t>(axis); i < stats->size(); ++i) (*stats)[i] = Dim::constant(1);
  }
  c.set_output(1, st, stats);
  c.set_output(2, st, stats);
  return Status();
}

Status det(RuleContext& c) {
  const auto& x = c.shape(0);
  if (x && x->size() < 2) return c.fail("input has rank {}, expected >= 2", x->size());
  c.set_output(0, c.dtype(0), x ? std::optional<SymShape>(SymShape(x->begin(), x->end() - 2)) : std::nullopt);
  return Status();
}

// SoftmaxCrossEntropyLoss / NegativeLogLikelihoodLoss: scores/input 0 [N, C, d...], labels
// input 1 [N, d...]; reduction "none" gives labels' shape, otherwise a scalar.
Status loss(RuleContext& c) {
  std::string reduction = c.node().attr_string("reduction", "mean");
  c.set_output(0, c.dtype(0), reduction == "none" ? c.shape(1) : std::optional<SymShape>(SymShape{}));
  same_as_input(c, 1, 0);
  return Status();
}

}  // namespace

void register_reduce_rules(RuleTable& t) {
  for (OpKind op : {OpKind::ReduceL1, OpKind::ReduceL2, OpKind::ReduceLogSum, OpKind::ReduceLogSumExp,
                    OpKind::ReduceMax, OpKind::ReduceMean, OpKind::ReduceMin, OpKind::ReduceProd, OpKind::ReduceSum,
                    OpKind::ReduceSumSquare})
    add_rule(t, op, reduce);
  add_rule(t, OpKind::ArgMax, arg_reduce);
  add_rule(t, OpKind::ArgMin, arg_reduce);
  add_rule(t, OpKind::BatchNormalization, batch_norm);
  add_rule(t, OpKind::InstanceNormalization, [](RuleContext& c) {
    same_as_input(c, 0, 0);
    return Status();
  });
  add_rule(t, OpKind::LayerNormalization, layer_norm);
  add_rule(t, OpKind::Det, det);
  add_rule(t, OpKind::SoftmaxCrossEntropyLoss, loss);
  add_rule(t, OpKind::NegativeLogLikelihoodLoss, loss);
}

}  // namespace tierjit::passes::shapes
