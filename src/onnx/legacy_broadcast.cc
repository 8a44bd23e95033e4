// Rewrite of opset < 7 "legacy" broadcasting into numpy broadcasting, so kernels only know numpy
// rules (ONNX Add-1/Add-6 and the other binary ops' docs, "Broadcasting in ONNX"). With
// broadcast=1, B's shape is a contiguous run of A's dims starting at `axis` (suffix when axis is
// absent). Suffix matching already is numpy; with an axis, B needs rank(A) - axis - rank(B)
// trailing 1-dims: a constant B is reshaped, otherwise an Unsqueeze (opset 11, `axes`
// attribute) is inserted. broadcast=0 requires equal shapes, which numpy treats the same.
// PRelu-1/6 applies a 1-D slope per channel (axis 1), rewritten the same way.
#include <fmt/format.h>

#include "onnx/import_internal.h"

namespace tierjit::onnx_import {

namespace {

bool has_legacy_broadcast(ir::OpKind op) {
  using ir::OpKind;
  switch (op) {
    case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div: case OpKind::Pow:
    case OpKind::And: case OpKind::Or: case OpKind::Xor: case OpKind::Equal:
    case OpKind::Greater: case OpKind::Less:
      return true;
    default: return false;
  }
}

std::string describe(const ir::Node& n) {
  return n.name().empty() ? fmt::format("node #{} (op {})", n.id(), ir::op_name(n.op()))
                          : fmt::format("node '{}' (op {})", n.name(), ir::op_name(n.op()));
}

std::optional<int64_t> rank_of(const ir::Value* v) {
  if (v->is_constant()) return v->constant().rank();
  if (v->type().shape) return static_cast<int64_t>(v->type().shape->size());
  return std::nullopt;
}

// Makes B (input 1) of rank `rb` line up with dims [axis, axis + rb) of A (rank `ra`) under numpy
// rules by appending ra - axis - rb size-1 dims: a constant B is reshaped, otherwise an
// Unsqueeze (opset 11, `axes` attribute) is inserted before `n`.
void align_b_at_axis(ir::Graph& g, ir::Node& n, int64_t axis, int64_t ra, int64_t rb) {
  const int64_t trailing = ra - axis - rb;
  if (trailing <= 0) return;
  ir::Value* b = n.input(1);
  ir::ValueType t = b->type();
  if (t.shape)
    for (int64_t i = 0; i < trailing; ++i) t.shape->push_back(ir::Dim::constant(1));
  const std::string name = (b->name().empty() ? std::string("b") : b->name()) +
                           fmt::format("_legacy_bcast_{}", n.id());
  ir::Value* nb = g.add_value(name, t);
  if (b->is_constant()) {
    Shape s = b->constant().shape();
    s.resize(s.size() + static_cast<size_t>(trailing), 1);
    nb->set_constant(b->constant().reshaped(s));
  } else {
    ir::Node* unsq = g.add_node(ir::OpKind::Unsqueeze, {b}, {nb}, name);
    unsq->set_opset(11);
    ir::Attribute axes;
    axes.kind = ir::Attribute::Kind::kInts;
    for (int64_t i = 0; i < trailing; ++i) axes.ints.push_back(rb + i);
    unsq->set_attr("axes", axes);
  }
  n.set_input(1, nb);
}

Status rewrite_binary(ir::Graph& g, ir::Node& n) {
  const int64_t broadcast = n.attr_int("broadcast", 0);
  const ir::Attribute* axis_attr = n.attr("axis");
  const bool has_axis = axis_attr && axis_attr->kind == ir::Attribute::Kind::kInt;
  const int64_t axis_value = has_axis ? axis_attr->i : 0;
  n.remove_attr("broadcast");
  n.remove_attr("axis");
  if (broadcast == 0 || !has_axis || n.num_inputs() < 2 || !n.input(0) || !n.input(1))
    return Status();
  ir::Value* a = n.input(0);
  ir::Value* b = n.input(1);
  std::optional<int64_t> ra = rank_of(a), rb = rank_of(b);
  if (!ra || !rb)
    return unsupported("{}: legacy broadcast (broadcast=1, axis={}) needs the rank of input {} "
                       "'{}', which the model does not declare", describe(n), axis_value,
                       ra ? 1 : 0, ra ? b->name() : a->name());
  int64_t axis = axis_value < 0 ? axis_value + *ra : axis_value;
  if (axis < 0 || axis + *rb > *ra)
    return invalid_model("{}: legacy broadcast axis {} does not fit input ranks {} and {}",
                         describe(n), axis_value, *ra, *rb);
  align_b_at_axis(g, n, axis, *ra, *rb);
  return Status();
}

// PRelu-1/6: a 1-D slope holds one value per channel (axis 1 of X), not per last-axis element.
Status rewrite_prelu(ir::Graph& g, ir::Node& n) {
  if (n.num_inputs() < 2 || !n.input(0) || !n.input(1)) return Status();
  std::optional<int64_t> rx = rank_of(n.input(0)), rs = rank_of(n.input(1));
  if (!rs || *rs != 1) return Status();
  const ir::Value* slope = n.input(1);
  const bool single = slope->is_constant() ? slope->constant().numel() == 1
                                           : slope->type().shape && (*slope->type().shape)[0] ==
                                                                        ir::Dim::constant(1);
  if (single) return Status();  // one shared slope: numpy already broadcasts it
  if (!rx)
    return unsupported("{}: PRelu before opset 7 with a per-channel slope needs the rank of input "
                       "0 '{}', which the model does not declare", describe(n),
                       n.input(0)->name());
  if (*rx >= 2) align_b_at_axis(g, n, 1, *rx, 1);
  return Status();
}

}  // namespace

Status rewrite_legacy_broadcast(ir::Graph& graph) {
  // Collect first: the rewrite appends nodes (the caller re-sorts topologically afterwards).
  std::vector<ir::Node*> binary, prelu;
  for (const auto& n : graph.nodes()) {
    if (n->opset() >= 7 || !n->domain().empty()) continue;
    if (has_legacy_broadcast(n->op()) && (n->has_attr("broadcast") || n->has_attr("axis")))
      binary.push_back(n.get());
    else if (n->op() == ir::OpKind::PRelu)
      prelu.push_back(n.get());
    else if (n->op() == ir::OpKind::Gemm)
      n->remove_attr("broadcast");  // Gemm < 7: C broadcasts unidirectionally, as numpy does
  }
  for (ir::Node* n : binary) TJ_RETURN_IF_ERROR(rewrite_binary(graph, *n));
  for (ir::Node* n : prelu) TJ_RETURN_IF_ERROR(rewrite_prelu(graph, *n));
  return Status();
}

}  // namespace tierjit::onnx_import
