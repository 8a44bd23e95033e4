// Common-subexpression elimination: equal small constants, then equal nodes, merged into their
// first occurrence (see common_subexpression_elimination.h).
#include "passes/common_subexpression_elimination.h"

#include <cstring>
#include <unordered_map>

#include "passes/pass_util.h"
#include "support/hash.h"

namespace tierjit::passes {

namespace {

using ir::Attribute;

constexpr size_t kMaxMergedConstantBytes = size_t{64} << 10;

bool tensors_equal(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (a.dtype() == DType::kString) {
    auto x = a.span<std::string>();
    auto y = b.span<std::string>();
    return std::equal(x.begin(), x.end(), y.begin());
  }
  return a.nbytes() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

uint64_t tensor_hash(const Tensor& t) {
  support::Hasher h;
  h.add_u64(static_cast<uint64_t>(t.dtype()));
  for (int64_t d : t.shape()) h.add_i64(d);
  if (t.dtype() == DType::kString) {
    for (const std::string& s : t.span<std::string>()) h.add(s);
  } else if (t.nbytes() > 0) {
    h.add_bytes(t.raw_data(), t.nbytes());
  }
  return h.digest();
}

// Attribute equality; subgraph attributes never compare equal (such nodes are not merged).
bool attrs_equal(const Attribute& a, const Attribute& b) {
  using K = Attribute::Kind;
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case K::kFloat: return std::memcmp(&a.f, &b.f, sizeof a.f) == 0;  // bitwise: NaN == NaN
    case K::kInt: return a.i == b.i;
    case K::kString: return a.s == b.s;
    case K::kTensor: return tensors_equal(a.t, b.t);
    case K::kFloats:
      return a.floats.size() == b.floats.size() &&
             (a.floats.empty() || std::memcmp(a.floats.data(), b.floats.data(), a.floats.size() * sizeof(float)) == 0);
    case K::kInts: return a.ints == b.ints;
    case K::kStrings: return a.strings == b.strings;
    case K::kTensors:
      if (a.tensors.size() != b.tensors.size()) return false;
      for (size_t i = 0; i < a.tensors.size(); ++i)
        if (!tensors_equal(a.tensors[i], b.tensors[i])) return false;
      return true;
    case K::kGraph:
    case K::kGraphs:
      return false;
  }
  return false;
}

bool nodes_equal(const ir::Node& a, const ir::Node& b) {
  if (a.op() != b.op() || a.domain() != b.domain() || a.opset() != b.opset()) return false;
  if (a.inputs() != b.inputs() || a.num_outputs() != b.num_outputs()) return false;
  for (size_t i = 0; i < a.num_outputs(); ++i)
    if ((a.output(i) == nullptr) != (b.output(i) == nullptr)) return false;
  if (a.attributes().size() != b.attributes().size()) return false;
  for (auto ia = a.attributes().begin(), ib = b.attributes().begin(); ia != a.attributes().end(); ++ia, ++ib)
    if (ia->first != ib->first || !attrs_equal(ia->second, ib->second)) return false;
  return true;
}

// Hash of what nodes_equal compares, except attribute values (compared on collision).
uint64_t node_key(const ir::Node& n) {
  support::Hasher h;
  h.add_u64(static_cast<uint64_t>(n.op())).add(n.domain()).add_i64(n.opset());
  for (const ir::Value* v : n.inputs()) h.add_u64(reinterpret_cast<uintptr_t>(v));
  h.add_u64(n.num_outputs());
  for (const auto& [name, a] : n.attributes()) h.add(name);
  return h.digest();
}

// Step 1: equal small constants -> one value.
void merge_constants(ir::Graph& graph) {
  std::unordered_map<uint64_t, std::vector<ir::Value*>> seen;
  std::vector<ir::Value*> values;
  for (const auto& v : graph.values()) values.push_back(v.get());
  for (ir::Value* v : values) {
    if (!v->is_constant() || v->producer() || v->users().empty()) continue;
    if (is_graph_input(graph, v) || is_graph_output(graph, v)) continue;
    const Tensor& t = v->constant();
    if (t.nbytes() > kMaxMergedConstantBytes) continue;
    auto& bucket = seen[tensor_hash(t)];
    ir::Value* same = nullptr;
    for (ir::Value* c : bucket)
      if (c->type() == v->type() && tensors_equal(c->constant(), t)) same = c;
    if (same) {
      replace_value_uses(graph, v, same);
    } else {
      bucket.push_back(v);
    }
  }
}

bool mergeable(const ir::Graph& graph, const ir::Node& n) {
  if (is_random_op(n.op()) || has_subgraph(n)) return false;
  for (const ir::Value* v : n.outputs())
    if (v && is_graph_output(graph, v)) return false;
  return true;
}

}  // namespace

Status eliminate_common_subexpressions(ir::Graph& graph, const PassContext& /*ctx*/) {
  merge_constants(graph);
  std::unordered_map<uint64_t, std::vector<ir::Node*>> seen;
  std::vector<ir::Node*> nodes;
  for (const auto& n : graph.nodes()) nodes.push_back(n.get());
  for (ir::Node* n : nodes) {
    if (is_random_op(n->op()) || has_subgraph(*n)) continue;
    auto& bucket = seen[node_key(*n)];
    ir::Node* same = nullptr;
    if (mergeable(graph, *n))
      for (ir::Node* c : bucket)
        if (nodes_equal(*c, *n)) {
          same = c;
          break;
        }
    if (!same) {
      bucket.push_back(n);
      continue;
    }
    for (size_t i = 0; i < n->num_outputs(); ++i)
      if (n->output(i)) replace_value_uses(graph, n->output(i), same->output(i));
    graph.remove_node(n);
  }
  return Status();
}

}  // namespace tierjit::passes
