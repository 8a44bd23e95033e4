// Constant folding pass: evaluates constant-input nodes through PassContext::evaluate_node and
// stores the results as constant values (see constant_folding.h for the rules and limits).
#include "passes/constant_folding.h"

#include <algorithm>

#include "passes/pass_util.h"
#include "support/log.h"

namespace tierjit::passes {

namespace {

using ir::OpKind;

// Ops whose outputs are sequences or optionals (not plain tensors): never folded.
bool has_non_tensor_outputs(OpKind op) {
  switch (op) {
    case OpKind::SequenceConstruct:
    case OpKind::SequenceEmpty:
    case OpKind::SequenceInsert:
    case OpKind::SequenceErase:
    case OpKind::SequenceAt:
    case OpKind::SequenceLength:
    case OpKind::SequenceMap:
    case OpKind::SplitToSequence:
    case OpKind::ConcatFromSequence:
    case OpKind::Optional:
    case OpKind::OptionalGetElement:
    case OpKind::OptionalHasElement:
      return true;
    default:
      return false;
  }
}

// Bytes of a value from its static type when every dim is a constant; -1 otherwise.
int64_t static_bytes(const ir::ValueType& t) {
  if (!t.shape || t.dtype == DType::kUndefined) return -1;
  int64_t n = 1;
  for (const ir::Dim& d : *t.shape) {
    if (!d.is_constant()) return -1;
    if (d.value != 0 && n > INT64_MAX / d.value) return INT64_MAX;
    n *= d.value;
  }
  const auto size = static_cast<int64_t>(dtype_size(t.dtype));
  return n > INT64_MAX / std::max<int64_t>(size, 1) ? INT64_MAX : n * size;
}

bool foldable(const ir::Node& node) {
  if (!node.domain().empty() && node.domain() != "ai.onnx") return false;
  if (is_random_op(node.op()) || has_subgraph(node) || has_non_tensor_outputs(node.op())) return false;
  for (const ir::Value* v : node.inputs())
    if (v && !v->is_constant()) return false;
  bool any_output = false;
  for (const ir::Value* v : node.outputs()) any_output |= v != nullptr;
  return any_output;
}

}  // namespace

Status fold_constants(ir::Graph& graph, const PassContext& ctx) {
  if (!ctx.evaluate_node) return Status();
  const int64_t limit = std::min(ctx.max_folded_bytes, ctx.memory_limit_bytes);
  std::vector<ir::Node*> nodes;
  for (const auto& n : graph.nodes()) nodes.push_back(n.get());
  int folded = 0;
  for (ir::Node* node : nodes) {
    if (!foldable(*node)) continue;
    bool too_big = false;
    for (const ir::Value* v : node->outputs())
      if (v && static_bytes(v->type()) > limit) too_big = true;
    if (too_big) continue;
    std::vector<Tensor> inputs;
    for (const ir::Value* v : node->inputs()) inputs.push_back(v ? v->constant() : Tensor());
    auto result = ctx.evaluate_node(*node, inputs);
    if (!result.ok()) {
      TJ_LOG_DEBUG("constant folding: {} left unfolded: {}", node->describe(), result.status().message());
      continue;
    }
    std::vector<Tensor>& outs = result.value();
    bool ok = outs.size() >= node->num_outputs();
    for (size_t i = 0; ok && i < node->num_outputs(); ++i) {
      const ir::Value* v = node->output(i);
      if (!v) continue;
      const Tensor& t = outs[i];
      const ir::ValueType& type = v->type();
      ok = t.defined() && static_cast<int64_t>(t.nbytes()) <= limit &&
           (type.dtype == DType::kUndefined || type.dtype == t.dtype()) &&
           (!type.shape || type.shape->size() == t.shape().size());
    }
    if (!ok) continue;
    for (size_t i = 0; i < node->num_outputs(); ++i) {
      ir::Value* v = node->output(i);
      if (!v) continue;
      // Kernels may return views of their inputs (Reshape, Identity); sharing storage with
      // another constant is fine because constants are never written.
      Tensor t = std::move(outs[i]);
      ir::ValueType& type = v->mutable_type();
      type.dtype = t.dtype();
      ir::SymShape shape;
      for (int64_t d : t.shape()) shape.push_back(ir::Dim::constant(d));
      type.shape = shape;
      v->set_constant(std::move(t));
    }
    graph.remove_node(node);
    ++folded;
  }
  if (folded) TJ_LOG_DEBUG("constant folding: {} nodes folded in graph '{}'", folded, graph.name());
  return Status();
}

}  // namespace tierjit::passes
