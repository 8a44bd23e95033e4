// Graph, Node and Value mutation and attribute accessors.
#include "ir/graph.h"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "support/check.h"
#include "support/escape.h"

namespace tierjit::ir {

std::string sym_shape_to_string(const SymShape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    const Dim& d = shape[i];
    s += d.is_constant() ? std::to_string(d.value) : (d.is_symbol() ? support::escape_name(d.symbol) : "?");
  }
  return s + "]";
}

void Node::set_input(size_t i, Value* v) {
  TJ_CHECK(i < inputs_.size());
  Value* old = inputs_[i];
  if (old) {
    auto it = std::find(old->users_.begin(), old->users_.end(), this);
    if (it != old->users_.end()) old->users_.erase(it);
  }
  inputs_[i] = v;
  if (v) v->users_.push_back(this);
}

const Attribute* Node::attr(const std::string& name) const {
  auto it = attrs_.find(name);
  return it == attrs_.end() ? nullptr : &it->second;
}

int64_t Node::attr_int(const std::string& name, int64_t dflt) const {
  const Attribute* a = attr(name);
  return a && a->kind == Attribute::Kind::kInt ? a->i : dflt;
}

float Node::attr_float(const std::string& name, float dflt) const {
  const Attribute* a = attr(name);
  if (!a) return dflt;
  if (a->kind == Attribute::Kind::kFloat) return a->f;
  if (a->kind == Attribute::Kind::kInt) return static_cast<float>(a->i);
  return dflt;
}

std::string Node::attr_string(const std::string& name, const std::string& dflt) const {
  const Attribute* a = attr(name);
  return a && a->kind == Attribute::Kind::kString ? a->s : dflt;
}

std::vector<int64_t> Node::attr_ints(const std::string& name, std::vector<int64_t> dflt) const {
  const Attribute* a = attr(name);
  return a && a->kind == Attribute::Kind::kInts ? a->ints : dflt;
}

std::vector<float> Node::attr_floats(const std::string& name, std::vector<float> dflt) const {
  const Attribute* a = attr(name);
  return a && a->kind == Attribute::Kind::kFloats ? a->floats : dflt;
}

std::vector<std::string> Node::attr_strings(const std::string& name) const {
  const Attribute* a = attr(name);
  return a && a->kind == Attribute::Kind::kStrings ? a->strings : std::vector<std::string>{};
}

const Tensor* Node::attr_tensor(const std::string& name) const {
  const Attribute* a = attr(name);
  return a && a->kind == Attribute::Kind::kTensor ? &a->t : nullptr;
}

const Graph* Node::attr_graph(const std::string& name) const {
  const Attribute* a = attr(name);
  return a && a->kind == Attribute::Kind::kGraph ? a->g.get() : nullptr;
}

std::string Node::describe() const {
  if (!name_.empty()) return fmt::format("node '{}' ({})", support::escape_name(name_), op_name(op_));
  // Unnamed (common in exported models): by its first named output, as the importer names it.
  for (const Value* v : outputs_)
    if (v && !v->name().empty())
      return fmt::format("node with output '{}' ({})", support::escape_name(v->name()), op_name(op_));
  return fmt::format("node #{} ({})", id_, op_name(op_));
}

Value* Graph::add_value(std::string name, ValueType type) {
  auto v = std::make_unique<Value>();
  v->id_ = next_value_id_++;
  v->name_ = std::move(name);
  v->type_ = std::move(type);
  v->owner_ = this;
  values_.push_back(std::move(v));
  return values_.back().get();
}

Node* Graph::add_node(OpKind op, std::vector<Value*> inputs, std::vector<Value*> outputs,
                      std::string name, std::string domain) {
  auto n = std::make_unique<Node>();
  n->id_ = next_node_id_++;
  n->op_ = op;
  n->name_ = std::move(name);
  n->domain_ = std::move(domain);
  n->inputs_ = std::move(inputs);
  n->outputs_ = std::move(outputs);
  for (Value* v : n->inputs_)
    if (v) v->users_.push_back(n.get());
  for (Value* v : n->outputs_) {
    if (!v) continue;
    TJ_CHECK(v->producer_ == nullptr);
    v->producer_ = n.get();
  }
  nodes_.push_back(std::move(n));
  return nodes_.back().get();
}

void Graph::remove_node(Node* node) {
  for (size_t i = 0; i < node->inputs_.size(); ++i) node->set_input(i, nullptr);
  for (Value* v : node->outputs_)
    if (v) v->producer_ = nullptr;
  auto it = std::find_if(nodes_.begin(), nodes_.end(), [&](const auto& p) { return p.get() == node; });
  TJ_CHECK(it != nodes_.end());
  nodes_.erase(it);
}

void Graph::replace_all_uses(Value* from, Value* to) {
  std::vector<Node*> users = from->users_;
  for (Node* n : users)
    for (size_t i = 0; i < n->inputs_.size(); ++i)
      if (n->inputs_[i] == from) n->set_input(i, to);
  for (Value*& o : outputs_)
    if (o == from) o = to;
}

bool Graph::topological_sort() {
  std::unordered_map<const Node*, size_t> pending;
  std::vector<Node*> ready;
  for (const auto& n : nodes_) {
    size_t deps = 0;
    for (Value* v : n->inputs_)
      if (v && v->producer_ && v->owner_ == this) ++deps;
    pending[n.get()] = deps;
  }
  std::vector<std::unique_ptr<Node>> sorted;
  std::unordered_map<const Node*, std::unique_ptr<Node>*> slot;
  for (auto& n : nodes_) slot[n.get()] = &n;
  // Kahn's algorithm, stable w.r.t. the current order.
  std::vector<Node*> order;
  for (auto& n : nodes_)
    if (pending[n.get()] == 0) order.push_back(n.get());
  for (size_t i = 0; i < order.size(); ++i) {
    for (Value* out : order[i]->outputs_) {
      if (!out) continue;
      // users_ holds a node once per use, matching how `pending` counted it.
      for (Node* u : out->users_) {
        auto it = pending.find(u);
        if (it != pending.end() && --it->second == 0) order.push_back(u);
      }
    }
  }
  if (order.size() != nodes_.size()) return false;
  for (Node* n : order) sorted.push_back(std::move(*slot[n]));
  nodes_ = std::move(sorted);
  return true;
}

std::vector<Value*> Graph::feed_inputs() const {
  std::vector<Value*> r;
  for (Value* v : inputs_)
    if (!v->is_constant()) r.push_back(v);
  return r;
}

}  // namespace tierjit::ir
