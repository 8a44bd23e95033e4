// Shape rules for control flow and non-tensor values: If, Loop, Scan (their bodies are inferred
// first, with captures typed from the outer graph), the Sequence* ops and Optional*. The IR types
// a sequence or optional value by its element dtype with no shape. Dims that differ between
// branches or iterations become unknown. Source: ONNX operator specs, opsets 1..17.
#include "passes/shape_rules.h"

namespace tierjit::passes::shapes {
namespace {

using ir::Dim;
using ir::OpKind;
using ir::SymShape;

// The type both a and b satisfy: equal dims stay, others become unknown.
ir::ValueType join(const ir::ValueType& a, const ir::ValueType& b) {
  ir::ValueType r;
  r.dtype = a.dtype == b.dtype ? a.dtype : DType::kUndefined;
  if (a.shape && b.shape && a.shape->size() == b.shape->size()) {
    r.shape = *a.shape;
    for (size_t i = 0; i < r.shape->size(); ++i)
      if (!((*a.shape)[i] == (*b.shape)[i])) (*r.shape)[i] = Dim::unknown();
  }
  return r;
}

const ir::ValueType& type_of(const ir::Value* v) {
  static const ir::ValueType kNone;
  return v ? v->type() : kNone;
}

std::string name_of(const ir::Value* v) { return v ? v->name() : std::string(); }

// A state carried from one iteration to the next keeps its dtype (ONNX Loop and Scan specs):
// body output `body_out` must have the dtype of the node's input `input` that starts it.
Status check_carried_dtype(const RuleContext& c, size_t input, size_t output, const ir::Value* body_out) {
  const DType init = c.dtype(input), next = type_of(body_out).dtype;
  if (init == DType::kUndefined || next == DType::kUndefined || init == next) return Status();
  return c.fail("output {} '{}': the body turns loop-carried input '{}' ({}) into '{}' ({}); a loop-carried "
                "value keeps its dtype",
                output, c.has_output(output) ? name_of(c.node().output(output)) : std::string(),
                name_of(c.node().input(input)), dtype_name(init), name_of(body_out), dtype_name(next));
}

Status if_rule(RuleContext& c) {
  ir::Graph* then_g = c.body("then_branch");
  ir::Graph* else_g = c.body("else_branch");
  if (!then_g || !else_g) return c.fail("missing then_branch or else_branch");
  TJ_RETURN_IF_ERROR(c.infer_body(*then_g));
  TJ_RETURN_IF_ERROR(c.infer_body(*else_g));
  if (then_g->outputs().size() != c.num_outputs() || else_g->outputs().size() != c.num_outputs())
    return c.fail("branches have {} and {} outputs, node has {}", then_g->outputs().size(), else_g->outputs().size(),
                  c.num_outputs());
  for (size_t i = 0; i < c.num_outputs(); ++i) {
    const ir::ValueType& a = type_of(then_g->outputs()[i]);
    const ir::ValueType& b = type_of(else_g->outputs()[i]);
    if (a.dtype != DType::kUndefined && b.dtype != DType::kUndefined && a.dtype != b.dtype)
      return c.fail("output {}: then_branch gives {}, else_branch {}", i, dtype_name(a.dtype), dtype_name(b.dtype));
    ir::ValueType j = join(a, b);
    if (j.dtype == DType::kUndefined) j.dtype = a.dtype != DType::kUndefined ? a.dtype : b.dtype;
    c.set_output(i, j.dtype, j.shape);
  }
  return Status();
}

// Loop(M, cond, v_initial...) -> (v_final..., scan_outputs...); body(iter, cond, v...) ->
// (cond, v..., scan...).
Status loop_rule(RuleContext& c) {
  ir::Graph* body = c.body("body");
  if (!body) return c.fail("missing body");
  size_t n_carried = c.num_inputs() >= 2 ? c.num_inputs() - 2 : 0;
  auto& bin = body->inputs();
  if (bin.size() != n_carried + 2) return c.fail("body has {} inputs, expected {}", bin.size(), n_carried + 2);
  auto fill = [](ir::Value* v, DType dt, std::optional<SymShape> s) {
    ir::ValueType& t = v->mutable_type();
    if (t.dtype == DType::kUndefined) t.dtype = dt;
    if (!t.shape && s) t.shape = std::move(s);
  };
  fill(bin[0], DType::kInt64, SymShape{});
  fill(bin[1], DType::kBool, SymShape{});
  for (size_t i = 0; i < n_carried; ++i) fill(bin[i + 2], c.dtype(i + 2), std::nullopt);
  TJ_RETURN_IF_ERROR(c.infer_body(*body));
  auto& bout = body->outputs();
  if (bout.size() < n_carried + 1) return c.fail("body has {} outputs, expected >= {}", bout.size(), n_carried + 1);
  for (size_t i = 0; i < n_carried; ++i) {
    TJ_RETURN_IF_ERROR(check_carried_dtype(c, i + 2, i, bout[i + 1]));
    ir::ValueType init{c.dtype(i + 2), c.shape(i + 2)};
    ir::ValueType j = join(init, type_of(bout[i + 1]));  // zero iterations return the initial value
    if (j.dtype == DType::kUndefined) j.dtype = init.dtype != DType::kUndefined ? init.dtype : type_of(bout[i + 1]).dtype;
    c.set_output(i, j.dtype, j.shape);
  }
  Dim trips = Dim::unknown();  // the body's cond output may end the loop before M iterations
  for (size_t i = n_carried; i < c.num_outputs() && i + 1 < bout.size(); ++i) {
    const ir::ValueType& t = type_of(bout[i + 1]);
    std::optional<SymShape> s;
    if (t.shape) {
      s = *t.shape;
      s->insert(s->begin(), trips);
    }
    c.set_output(i, t.dtype, std::move(s));
  }
  return Status();
}

// Scan (opset >= 9): inputs = N states then M scan inputs; outputs = N final states then K scan
// outputs stacked along scan_output_axes.
Status scan_rule(RuleContext& c) {
  ir::Graph* body = c.body("body");
  if (!body) return c.fail("missing body");
  if (c.opset() < 9) {  // opset 8 has a batch axis and sequence_lens: keep dtypes only
    TJ_RETURN_IF_ERROR(c.infer_body(*body));
    for (size_t i = 0; i < c.num_outputs() && i < body->outputs().size(); ++i)
      c.set_output(i, type_of(body->outputs()[i]).dtype, std::nullopt);
    return Status();
  }
  int64_t m = c.node().attr_int("num_scan_inputs", 0);
  int64_t n_states = static_cast<int64_t>(c.num_inputs()) - m;
  if (m < 0 || n_states < 0) return c.fail("num_scan_inputs {} exceeds the {} inputs", m, c.num_inputs());
  std::vector<int64_t> in_axes = c.node().attr_ints("scan_input_axes", std::vector<int64_t>(static_cast<size_t>(m), 0));
  auto& bin = body->inputs();
  if (bin.size() != c.num_inputs()) return c.fail("body has {} inputs, expected {}", bin.size(), c.num_inputs());
  Dim seq = Dim::unknown();
  for (int64_t j = 0; j < m; ++j) {
    size_t i = static_cast<size_t>(n_states + j);
    const auto& s = c.shape(i);
    ir::ValueType& bt = bin[i]->mutable_type();
    if (bt.dtype == DType::kUndefined) bt.dtype = c.dtype(i);
    if (!s || static_cast<size_t>(j) >= in_axes.size()) continue;
    int64_t a = in_axes[static_cast<size_t>(j)];
    TJ_RETURN_IF_ERROR(c.normalize_axis(a, static_cast<int64_t>(s->size()), "scan_input_axes entry"));
    if (j == 0) seq = (*s)[static_cast<size_t>(a)];
    if (!bt.shape) {
      SymShape e = *s;
      e.erase(e.begin() + a);
      bt.shape = std::move(e);
    }
  }
  for (int64_t i = 0; i < n_states; ++i) {
    ir::ValueType& bt = bin[static_cast<size_t>(i)]->mutable_type();
    if (bt.dtype == DType::kUndefined) bt.dtype = c.dtype(static_cast<size_t>(i));
    if (!bt.shape) bt.shape = c.shape(static_cast<size_t>(i));
  }
  TJ_RETURN_IF_ERROR(c.infer_body(*body));
  auto& bout = body->outputs();
  size_t k = bout.size() >= static_cast<size_t>(n_states) ? bout.size() - static_cast<size_t>(n_states) : 0;
  std::vector<int64_t> out_axes = c.node().attr_ints("scan_output_axes", std::vector<int64_t>(k, 0));
  for (int64_t i = 0; i < n_states && static_cast<size_t>(i) < bout.size(); ++i)
    TJ_RETURN_IF_ERROR(check_carried_dtype(c, static_cast<size_t>(i), static_cast<size_t>(i), bout[static_cast<size_t>(i)]));
  for (size_t i = 0; i < c.num_outputs() && i < bout.size(); ++i) {
    const ir::ValueType& t = type_of(bout[i]);
    if (static_cast<int64_t>(i) < n_states) {
      c.set_output(i, t.dtype, t.shape);
      continue;
    }
    size_t j = i - static_cast<size_t>(n_states);
    std::optional<SymShape> s;
    if (t.shape && j < out_axes.size()) {
      int64_t a = out_axes[j];
      TJ_RETURN_IF_ERROR(c.normalize_axis(a, static_cast<int64_t>(t.shape->size()), "scan_output_axes entry", true));
      s = *t.shape;
      s->insert(s->begin() + a, seq);
    }
    c.set_output(i, t.dtype, std::move(s));
  }
  return Status();
}

Status sequence_like(RuleContext& c) {
  c.set_output(0, c.dtype(0), std::nullopt);
  return Status();
}

// SequenceMap: each output is a sequence of the body's matching output (dtype only).
Status sequence_map(RuleContext& c) {
  ir::Graph* body = c.body("body");
  if (!body) return c.fail("missing body");
  TJ_RETURN_IF_ERROR(c.infer_body(*body));
  for (size_t i = 0; i < c.num_outputs() && i < body->outputs().size(); ++i)
    c.set_output(i, type_of(body->outputs()[i]).dtype, std::nullopt);
  return Status();
}

Status sequence_empty(RuleContext& c) {
  int64_t code = c.node().attr_int("dtype", static_cast<int64_t>(DType::kFloat32));
  c.set_output(0, dtype_is_valid(static_cast<int32_t>(code)) ? static_cast<DType>(code) : DType::kUndefined,
               std::nullopt);
  return Status();
}

Status sequence_length(RuleContext& c) {
  c.set_output(0, DType::kInt64, SymShape{});
  return Status();
}

Status optional_rule(RuleContext& c) {
  if (c.has_input(0)) c.set_output(0, c.dtype(0), c.shape(0));
  return Status();
}

Status optional_has_element(RuleContext& c) {
  c.set_output(0, DType::kBool, SymShape{});
  return Status();
}

}  // namespace

void register_control_rules(RuleTable& t) {
  add_rule(t, OpKind::If, if_rule);
  add_rule(t, OpKind::Loop, loop_rule);
  add_rule(t, OpKind::Scan, scan_rule);
  for (OpKind op : {OpKind::SequenceConstruct, OpKind::SequenceInsert, OpKind::SequenceErase, OpKind::SequenceAt,
                    OpKind::SplitToSequence, OpKind::ConcatFromSequence})
    add_rule(t, op, sequence_like);
  add_rule(t, OpKind::SequenceEmpty, sequence_empty);
  add_rule(t, OpKind::SequenceMap, sequence_map);
  add_rule(t, OpKind::SequenceLength, sequence_length);
  add_rule(t, OpKind::Optional, optional_rule);
  add_rule(t, OpKind::OptionalGetElement, optional_rule);
  add_rule(t, OpKind::OptionalHasElement, optional_has_element);
}

}  // namespace tierjit::passes::shapes
