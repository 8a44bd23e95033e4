// Structural hash of the graph IR (a factor of code cache keys; used by tests to compare graphs).
// Hashes ops, domains, opsets, attributes (tensor contents and subgraphs included), wiring,
// types and constant contents. Values are numbered canonically — graph inputs, then captures, then
// each node's not-yet-numbered inputs (constants) and outputs in node order — so names, value ids
// and doc strings do not matter, and a constant is hashed by its contents where it is first used.
#include <unordered_map>

#include "ir/graph.h"
#include "support/hash.h"

namespace tierjit::ir {

namespace {

using support::Hasher;

void hash_tensor(Hasher& h, const Tensor& t) {
  h.add_u64(static_cast<uint64_t>(t.dtype()));
  if (!t.defined()) return;
  h.add_u64(t.shape().size());
  for (int64_t d : t.shape()) h.add_i64(d);
  if (t.dtype() == DType::kString) {
    for (const std::string& s : t.span<std::string>()) h.add(s);
  } else if (t.nbytes() > 0) {
    h.add_bytes(t.raw_data(), t.nbytes());
  }
}

void hash_type(Hasher& h, const ValueType& t) {
  h.add_u64(static_cast<uint64_t>(t.dtype));
  if (!t.shape) {
    h.add_i64(-1);
    return;
  }
  h.add_u64(t.shape->size());
  for (const Dim& d : *t.shape) {
    h.add_i64(d.value);
    h.add(d.symbol);  // symbol names are part of the type: N and N are equal, N and M are not
  }
}

class GraphHasher {
 public:
  GraphHasher(Hasher& h, const GraphHasher* parent) : h_(h), parent_(parent) {}

  void hash_graph(const Graph& g) {
    h_.add("graph");
    h_.add_u64(g.inputs().size());
    for (const Value* v : g.inputs()) {
      define(v);
      hash_type(h_, v->type());
      h_.add_u64(v->is_constant());
      if (v->is_constant()) hash_tensor(h_, v->constant());
    }
    h_.add_u64(g.captures().size());
    for (size_t i = 0; i < g.captures().size(); ++i) {
      const Value* v = g.captures()[i];
      define(v);
      hash_type(h_, v->type());
      const Value* src = i < g.capture_sources().size() ? g.capture_sources()[i] : nullptr;
      h_.add_i64(parent_ && src ? parent_->index_of(src) : -1);
    }
    h_.add_u64(g.nodes().size());
    for (const auto& n : g.nodes()) hash_node(*n);
    h_.add_u64(g.outputs().size());
    for (const Value* v : g.outputs()) reference(v);
  }

  int64_t index_of(const Value* v) const {
    auto it = index_.find(v);
    return it == index_.end() ? -2 : it->second;
  }

 private:
  void define(const Value* v) { index_.emplace(v, static_cast<int64_t>(index_.size())); }

  // A use of `v`: its canonical index; a value seen for the first time here (a constant, or a
  // value defined outside the graph's own order) is defined and described on the spot.
  void reference(const Value* v) {
    if (!v) {
      h_.add_i64(-1);
      return;
    }
    auto it = index_.find(v);
    if (it != index_.end()) {
      h_.add_i64(it->second);
      return;
    }
    define(v);
    h_.add_i64(-3);
    hash_type(h_, v->type());
    h_.add_u64(v->is_constant());
    if (v->is_constant()) hash_tensor(h_, v->constant());
  }

  void hash_attr(const Attribute& a) {
    using K = Attribute::Kind;
    h_.add_u64(static_cast<uint64_t>(a.kind));
    switch (a.kind) {
      case K::kFloat: h_.add_f64(a.f); break;
      case K::kInt: h_.add_i64(a.i); break;
      case K::kString: h_.add(a.s); break;
      case K::kTensor: hash_tensor(h_, a.t); break;
      case K::kGraph: hash_subgraph(a.g.get()); break;
      case K::kFloats:
        h_.add_u64(a.floats.size());
        for (float f : a.floats) h_.add_f64(f);
        break;
      case K::kInts:
        h_.add_u64(a.ints.size());
        for (int64_t i : a.ints) h_.add_i64(i);
        break;
      case K::kStrings:
        h_.add_u64(a.strings.size());
        for (const auto& s : a.strings) h_.add(s);
        break;
      case K::kTensors:
        h_.add_u64(a.tensors.size());
        for (const auto& t : a.tensors) hash_tensor(h_, t);
        break;
      case K::kGraphs:
        h_.add_u64(a.graphs.size());
        for (const auto& g : a.graphs) hash_subgraph(g.get());
        break;
    }
  }

  void hash_subgraph(const Graph* g) {
    if (!g) {
      h_.add("null graph");
      return;
    }
    // The outer values the subgraph reads are uses in this graph: a constant read only by the
    // subgraph is hashed (by contents) here, so the capture below can refer to it by index.
    for (const Value* src : g->capture_sources()) reference(src);
    GraphHasher sub(h_, this);
    sub.hash_graph(*g);
  }

  void hash_node(const Node& n) {
    h_.add("node");
    h_.add(op_name(n.op()));
    h_.add(n.domain());
    h_.add_i64(n.opset());
    h_.add_u64(n.inputs().size());
    for (const Value* v : n.inputs()) reference(v);
    h_.add_u64(n.attributes().size());
    for (const auto& [name, a] : n.attributes()) {
      h_.add(name);
      hash_attr(a);
    }
    h_.add_u64(n.outputs().size());
    for (const Value* v : n.outputs()) {
      if (!v) {
        h_.add_i64(-1);
        continue;
      }
      define(v);
      hash_type(h_, v->type());
    }
  }

  Hasher& h_;
  const GraphHasher* parent_;
  std::unordered_map<const Value*, int64_t> index_;
};

}  // namespace

uint64_t structural_hash(const Graph& graph) {
  Hasher h;
  GraphHasher gh(h, nullptr);
  gh.hash_graph(graph);
  return h.digest();
}

}  // namespace tierjit::ir
