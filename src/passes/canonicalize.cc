// Canonicalization pass: Constant nodes -> constant values; Identity, inference Dropout and
// no-op Cast bypassed (see canonicalize.h).
#include "passes/canonicalize.h"

#include "passes/pass_util.h"

namespace tierjit::passes {

namespace {

using ir::Attribute;
using ir::OpKind;

// The tensor a Constant node holds, or an undefined Tensor for forms left to folding.
Tensor constant_node_value(const ir::Node& node) {
  for (const auto& [name, a] : node.attributes()) {
    if (name == "value" && a.kind == Attribute::Kind::kTensor) return a.t;
    if (name == "value_float" && a.kind == Attribute::Kind::kFloat) return Tensor::scalar<float>(a.f);
    if (name == "value_int" && a.kind == Attribute::Kind::kInt) return Tensor::scalar<int64_t>(a.i);
    if (name == "value_floats" && a.kind == Attribute::Kind::kFloats)
      return Tensor::from_vector<float>({static_cast<int64_t>(a.floats.size())}, a.floats);
    if (name == "value_ints" && a.kind == Attribute::Kind::kInts)
      return Tensor::from_vector<int64_t>({static_cast<int64_t>(a.ints.size())}, a.ints);
    if (name == "value_string" && a.kind == Attribute::Kind::kString)
      return Tensor::scalar<std::string>(a.s);
    if (name == "value_strings" && a.kind == Attribute::Kind::kStrings)
      return Tensor::from_vector<std::string>({static_cast<int64_t>(a.strings.size())}, a.strings);
  }
  return Tensor();
}

// True if Dropout passes its input through unchanged (inference, or ratio 0).
bool dropout_is_identity(const ir::Node& node) {
  if (node.opset() < 12) return true;
  const ir::Value* ratio = node.input(1);
  if (ratio && ratio->is_constant() && ratio->constant().numel() == 1 &&
      dtype_is_float(ratio->constant().dtype()) && ratio->constant().value_as_double(0) == 0.0)
    return true;
  const ir::Value* mode = node.input(2);
  if (!mode) return true;
  return mode->is_constant() && mode->constant().dtype() == DType::kBool &&
         mode->constant().numel() == 1 && !mode->constant().data<bool>()[0];
}

}  // namespace

Status canonicalize(ir::Graph& graph, const PassContext& /*ctx*/) {
  const auto captured = all_captured_values(graph);
  std::vector<ir::Node*> nodes;
  for (const auto& n : graph.nodes()) nodes.push_back(n.get());
  for (ir::Node* node : nodes) {
    if (!node->domain().empty() && node->domain() != "ai.onnx") continue;
    switch (node->op()) {
      case OpKind::Constant: {
        ir::Value* out = node->output(0);
        Tensor t = constant_node_value(*node);
        if (!out || !t.defined() || node->num_outputs() != 1) break;
        ir::ValueType& type = out->mutable_type();
        if (type.dtype != DType::kUndefined && type.dtype != t.dtype()) break;  // leave to folding
        type.dtype = t.dtype();
        ir::SymShape shape;
        for (int64_t d : t.shape()) shape.push_back(ir::Dim::constant(d));
        type.shape = shape;
        graph.remove_node(node);
        out->set_constant(t);
        break;
      }
      case OpKind::Identity:
      case OpKind::Dropout:
      case OpKind::Cast: {
        ir::Value* in = node->input(0);
        ir::Value* out = node->output(0);
        if (!in || !out || is_graph_output(graph, out)) break;
        if (node->op() == OpKind::Dropout) {
          if (!dropout_is_identity(*node)) break;
          const ir::Value* mask = node->output(1);
          if (mask && value_is_used(graph, mask, captured)) break;
        }
        if (node->op() == OpKind::Cast) {
          const int64_t to = node->attr_int("to", 0);
          if (in->type().dtype == DType::kUndefined || static_cast<int64_t>(in->type().dtype) != to ||
              out->type().dtype != in->type().dtype)
            break;
        }
        if (node->op() == OpKind::Identity && in->type().dtype != DType::kUndefined &&
            out->type().dtype != DType::kUndefined && in->type().dtype != out->type().dtype)
          break;  // a declared type that contradicts the input: leave it for the kernel to report
        if (!replace_value_uses(graph, out, in)) break;
        graph.remove_node(node);
        break;
      }
      default:
        break;
    }
  }
  return Status();
}

}  // namespace tierjit::passes
