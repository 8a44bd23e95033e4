// Graph-surgery helpers shared by the cleanup passes and the partitioner (see pass_util.h).
#include "passes/pass_util.h"

#include <algorithm>

namespace tierjit::passes {

namespace {

using ir::OpKind;

void for_each_subgraph(const ir::Node& node, const std::function<void(ir::Graph&)>& fn) {
  for (const auto& [name, a] : node.attributes()) {
    if (a.g) fn(*a.g);
    for (const auto& sg : a.graphs)
      if (sg) fn(*sg);
  }
}

// Visits `g` and every graph nested in it.
void walk_nested(ir::Graph& g, const std::function<void(ir::Graph&)>& fn) {
  fn(g);
  for (const auto& n : g.nodes()) for_each_subgraph(*n, [&](ir::Graph& sub) { walk_nested(sub, fn); });
}

}  // namespace

bool is_graph_output(const ir::Graph& graph, const ir::Value* v) {
  return std::find(graph.outputs().begin(), graph.outputs().end(), v) != graph.outputs().end();
}

bool is_graph_input(const ir::Graph& graph, const ir::Value* v) {
  return std::find(graph.inputs().begin(), graph.inputs().end(), v) != graph.inputs().end();
}

bool has_subgraph(const ir::Node& node) {
  for (const auto& [name, a] : node.attributes())
    if (a.g || !a.graphs.empty()) return true;
  return false;
}

bool is_random_op(ir::OpKind op) {
  switch (op) {
    case OpKind::RandomNormal:
    case OpKind::RandomNormalLike:
    case OpKind::RandomUniform:
    case OpKind::RandomUniformLike:
    case OpKind::Bernoulli:
    case OpKind::Multinomial:
      return true;
    default:
      return false;
  }
}

std::vector<ir::Value*> captured_outer_values(const ir::Node& node, const ir::Graph& graph) {
  std::vector<ir::Value*> out;
  for_each_subgraph(node, [&](ir::Graph& sub) {
    walk_nested(sub, [&](ir::Graph& g) {
      for (ir::Value* src : g.capture_sources())
        if (src && src->owner() == &graph && std::find(out.begin(), out.end(), src) == out.end())
          out.push_back(src);
    });
  });
  return out;
}

std::unordered_set<const ir::Value*> all_captured_values(const ir::Graph& graph) {
  std::unordered_set<const ir::Value*> out;
  for (const auto& n : graph.nodes())
    for (ir::Value* v : captured_outer_values(*n, graph)) out.insert(v);
  return out;
}

bool replace_value_uses(ir::Graph& graph, ir::Value* from, ir::Value* to) {
  if (from == to || is_graph_output(graph, from)) return false;
  graph.replace_all_uses(from, to);
  for (const auto& n : graph.nodes())
    for_each_subgraph(*n, [&](ir::Graph& sub) {
      walk_nested(sub, [&](ir::Graph& g) {
        for (ir::Value*& src : g.capture_sources())
          if (src == from) src = to;
      });
    });
  return true;
}

bool value_is_used(const ir::Graph& graph, const ir::Value* v,
                   const std::unordered_set<const ir::Value*>& captured) {
  return !v->users().empty() || captured.count(v) != 0 || is_graph_output(graph, v);
}

}  // namespace tierjit::passes
