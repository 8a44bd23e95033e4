// Shape inference driver: walks a graph in topological order, runs each node's shape rule (the
// rule table is filled per op family by shape_rules_*.cc), merges the result with the type the
// model declared, and tracks the integer contents of small shape tensors so that Reshape targets
// built from Shape ops stay symbolic. Subgraph bodies are inferred when their node is reached.
#include "passes/shape_inference.h"

#include <algorithm>

#include "passes/shape_rules.h"
#include "support/log.h"

namespace tierjit::passes {
namespace shapes {

namespace {

constexpr int64_t kMaxTrackedElements = 64;  // shape tensors are tiny; bigger ones are data

const RuleTable& rule_table() {
  static const RuleTable table = [] {
    RuleTable t{};
    register_elementwise_rules(t);
    register_tensor_rules(t);
    register_index_rules(t);
    register_nn_rules(t);
    register_reduce_rules(t);
    register_misc_rules(t);
    return t;
  }();
  return table;
}

bool is_int_dtype(DType t) { return dtype_is_integer(t) || t == DType::kBool; }

std::optional<SymInts> contents_of(const Tensor& t) {
  if (!is_int_dtype(t.dtype()) || t.rank() > 1 || t.numel() > kMaxTrackedElements) return std::nullopt;
  SymInts v;
  v.reserve(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(SymInt::constant(t.value_as_int64(i)));
  return v;
}

ir::SymShape shape_of(const Tensor& t) {
  ir::SymShape s;
  for (int64_t d : t.shape()) s.push_back(ir::Dim::constant(d));
  return s;
}

}  // namespace

/// Per-graph state of the pass: tracked contents and constant tensors by value id.
class GraphState {
 public:
  GraphState(ir::Graph& graph, const PassContext& ctx, GraphState* parent)
      : graph_(graph), ctx_(ctx), parent_(parent) {
    known_.resize(graph.num_value_ids());
    constants_.resize(graph.num_value_ids(), nullptr);
  }

  ir::Graph& graph() { return graph_; }
  const PassContext& ctx() const { return ctx_; }

  GraphState* owner_state(const ir::Value* v) {
    for (GraphState* s = this; s; s = s->parent_)
      if (v->owner() == &s->graph_) return s;
    return nullptr;
  }
  const SymInts* known(const ir::Value* v) {
    GraphState* s = owner_state(v);
    if (!s || v->id() < 0 || static_cast<size_t>(v->id()) >= s->known_.size()) return nullptr;
    const auto& k = s->known_[static_cast<size_t>(v->id())];
    return k ? &*k : nullptr;
  }
  const Tensor* constant(const ir::Value* v) {
    if (v->is_constant()) return &v->constant();
    GraphState* s = owner_state(v);
    if (!s || v->id() < 0 || static_cast<size_t>(v->id()) >= s->constants_.size()) return nullptr;
    return s->constants_[static_cast<size_t>(v->id())];
  }
  void set_known(const ir::Value* v, SymInts c) {
    if (v->owner() != &graph_ || static_cast<size_t>(v->id()) >= known_.size()) return;
    if (c.size() > static_cast<size_t>(kMaxTrackedElements)) return;
    known_[static_cast<size_t>(v->id())] = std::move(c);
  }
  void set_constant(const ir::Value* v, const Tensor* t) {
    if (v->owner() != &graph_ || static_cast<size_t>(v->id()) >= constants_.size()) return;
    constants_[static_cast<size_t>(v->id())] = t;
    if (t && t->defined()) {
      if (auto c = contents_of(*t)) known_[static_cast<size_t>(v->id())] = std::move(*c);
    }
  }

  Status run();

 private:
  Status seed();
  Status merge_output(const ir::Node& node, size_t i, ir::ValueType inferred);

  ir::Graph& graph_;
  const PassContext& ctx_;
  GraphState* parent_;
  std::vector<std::optional<SymInts>> known_;
  std::vector<const Tensor*> constants_;
};

Status GraphState::seed() {
  for (const auto& vp : graph_.values()) {
    ir::Value* v = vp.get();
    if (!v->is_constant()) continue;
    const Tensor& t = v->constant();
    ir::ValueType& ty = v->mutable_type();
    if (ty.dtype == DType::kUndefined) ty.dtype = t.dtype();
    if (!ty.shape) ty.shape = shape_of(t);
    if (auto c = contents_of(t)) known_[static_cast<size_t>(v->id())] = std::move(*c);
  }
  // Captures read outer values: same type, same tracked contents.
  const auto& caps = graph_.captures();
  const auto& srcs = graph_.capture_sources();
  for (size_t i = 0; i < caps.size() && i < srcs.size(); ++i) {
    ir::Value* cap = caps[i];
    const ir::Value* src = srcs[i];
    if (!cap || !src) continue;
    ir::ValueType& ty = cap->mutable_type();
    if (ty.dtype == DType::kUndefined) ty.dtype = src->type().dtype;
    if (!ty.shape) ty.shape = src->type().shape;
    if (parent_) {
      if (const SymInts* k = parent_->known(src)) known_[static_cast<size_t>(cap->id())] = *k;
      if (const Tensor* t = parent_->constant(src)) constants_[static_cast<size_t>(cap->id())] = t;
    }
  }
  return Status();
}

// Keeps, per field, the more precise of the declared type (already on the value) and the
// inferred one. A dtype contradiction is an error; a shape contradiction keeps the inferred
// shape (as ONNX Runtime does, it only warns: the declared type is a hint).
Status GraphState::merge_output(const ir::Node& node, size_t i, ir::ValueType inferred) {
  ir::Value* v = node.output(i);
  if (!v) return Status();
  ir::ValueType& decl = v->mutable_type();
  if (decl.dtype != DType::kUndefined && inferred.dtype != DType::kUndefined && decl.dtype != inferred.dtype)
    return invalid_model("{}: output {} '{}' is declared {} but computes {}", node.describe(), i, v->name(),
                         dtype_name(decl.dtype), dtype_name(inferred.dtype));
  if (decl.dtype == DType::kUndefined) decl.dtype = inferred.dtype;
  if (!inferred.shape) return Status();
  if (!decl.shape) {
    decl.shape = std::move(inferred.shape);
    return Status();
  }
  ir::SymShape& d = *decl.shape;
  ir::SymShape& s = *inferred.shape;
  if (d.size() != s.size()) {
    TJ_LOG_WARN("{}: output {} '{}' is declared {} but infers {}; keeping the inferred shape", node.describe(), i,
                v->name(), ir::sym_shape_to_string(d), ir::sym_shape_to_string(s));
    d = std::move(s);
    return Status();
  }
  for (size_t k = 0; k < d.size(); ++k) {
    ir::Dim& a = d[k];
    ir::Dim& b = s[k];
    if (b.is_constant()) {
      if (a.is_constant() && a.value != b.value)
        TJ_LOG_WARN("{}: output {} '{}' is declared {} but infers {}; keeping the inferred dim", node.describe(), i,
                    v->name(), ir::sym_shape_to_string(d), ir::sym_shape_to_string(s));
      a = std::move(b);
    } else if (b.is_symbol() && !a.is_constant()) {
      a = std::move(b);
    }
  }
  return Status();
}

Status GraphState::run() {
  TJ_RETURN_IF_ERROR(seed());
  const RuleTable& rules = rule_table();
  for (const auto& np : graph_.nodes()) {
    ir::Node& node = *np;
    RuleContext rc(*this, node);
    ShapeRule rule = rules[static_cast<size_t>(node.op())];
    if (!rule) continue;  // no computable output type: keep what the model declares
    TJ_RETURN_IF_ERROR(rule(rc));
    for (size_t i = 0; i < node.num_outputs(); ++i) TJ_RETURN_IF_ERROR(merge_output(node, i, rc.inferred()[i]));
  }
  return Status();
}

// ---- RuleContext ------------------------------------------------------------------------------

RuleContext::RuleContext(GraphState& state, ir::Node& node) : state_(state), node_(node) {
  out_.resize(node.num_outputs());
}

DType RuleContext::dtype(size_t i) const {
  const ir::Value* v = node_.input(i);
  return v ? v->type().dtype : DType::kUndefined;
}

const std::optional<ir::SymShape>& RuleContext::shape(size_t i) const {
  static const std::optional<ir::SymShape> kNone;
  const ir::Value* v = node_.input(i);
  return v ? v->type().shape : kNone;
}

const SymInts* RuleContext::known(size_t i) const {
  const ir::Value* v = node_.input(i);
  return v ? state_.known(v) : nullptr;
}

std::optional<std::vector<int64_t>> RuleContext::const_ints(size_t i) const {
  const SymInts* k = known(i);
  if (!k) return std::nullopt;
  std::vector<int64_t> r;
  r.reserve(k->size());
  for (const SymInt& e : *k) {
    if (!e.is_constant()) return std::nullopt;
    r.push_back(e.value);
  }
  return r;
}

const Tensor* RuleContext::constant(size_t i) const {
  const ir::Value* v = node_.input(i);
  return v ? state_.constant(v) : nullptr;
}

void RuleContext::set_output(size_t i, DType dtype, std::optional<ir::SymShape> shape) {
  if (i >= out_.size()) return;
  out_[i].dtype = dtype;
  out_[i].shape = std::move(shape);
}

void RuleContext::set_known(size_t i, SymInts contents) {
  if (const ir::Value* v = node_.output(i)) state_.set_known(v, std::move(contents));
}

void RuleContext::set_constant(size_t i, const Tensor* t) {
  if (const ir::Value* v = node_.output(i)) state_.set_constant(v, t);
}

Status RuleContext::same_dtype(size_t a, size_t b) const {
  DType ta = dtype(a), tb = dtype(b);
  if (ta == DType::kUndefined || tb == DType::kUndefined || ta == tb) return Status();
  return fail("input {} has dtype {}, expected {} like input {}", b, dtype_name(tb), dtype_name(ta), a);
}

Status RuleContext::normalize_axis(int64_t& axis, int64_t rank, const char* what, bool inclusive) const {
  int64_t hi = inclusive ? rank + 1 : rank;
  if (axis < -hi || axis >= hi) return fail("{} {} out of range [{}, {})", what, axis, -hi, hi);
  if (axis < 0) axis += hi;
  return Status();
}

ir::Graph* RuleContext::body(const char* name) const {
  const ir::Attribute* a = node_.attr(name);
  return a && a->kind == ir::Attribute::Kind::kGraph ? a->g.get() : nullptr;
}

Status RuleContext::infer_body(ir::Graph& body) {
  GraphState sub(body, state_.ctx(), &state_);
  return sub.run();
}

// ---- helpers ----------------------------------------------------------------------------------

void same_as_input(RuleContext& c, size_t out, size_t in, DType dtype) {
  c.set_output(out, dtype == DType::kUndefined ? c.dtype(in) : dtype, c.shape(in));
}

ir::SymShape unknown_dims(size_t r) { return ir::SymShape(r, ir::Dim::unknown()); }

std::optional<std::vector<int64_t>> axes_arg(const RuleContext& c, const char* attr, size_t input,
                                             int input_from, bool* present) {
  if (c.opset() < input_from) {
    *present = c.node().has_attr(attr);
    return c.node().attr_ints(attr);
  }
  *present = c.has_input(input);
  if (!*present) return std::vector<int64_t>{};
  return c.const_ints(input);
}

}  // namespace shapes

Status infer_shapes(ir::Graph& graph, const PassContext& ctx) {
  shapes::GraphState state(graph, ctx, nullptr);
  return state.run();
}

}  // namespace tierjit::passes
