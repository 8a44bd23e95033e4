// Dead-code elimination: liveness from the graph outputs backwards (see dead_code_elimination.h).
#include "passes/dead_code_elimination.h"

#include <unordered_set>

#include "passes/pass_util.h"

namespace tierjit::passes {

Status eliminate_dead_code(ir::Graph& graph, const PassContext& /*ctx*/) {
  std::unordered_set<const ir::Value*> live_values(graph.outputs().begin(), graph.outputs().end());
  std::unordered_set<const ir::Node*> live_nodes;
  const auto& nodes = graph.nodes();
  for (size_t i = nodes.size(); i-- > 0;) {
    const ir::Node& n = *nodes[i];
    bool live = false;
    for (const ir::Value* v : n.outputs()) live |= v && live_values.count(v);
    if (!live) continue;
    live_nodes.insert(&n);
    for (const ir::Value* v : n.inputs())
      if (v) live_values.insert(v);
    for (const ir::Value* v : captured_outer_values(n, graph)) live_values.insert(v);
  }
  std::vector<ir::Node*> dead;
  for (const auto& n : nodes)
    if (!live_nodes.count(n.get())) dead.push_back(n.get());
  for (ir::Node* n : dead) graph.remove_node(n);

  const auto captured = all_captured_values(graph);
  for (const auto& v : graph.values())
    if (v->is_constant() && !v->producer() && !is_graph_input(graph, v.get()) &&
        !value_is_used(graph, v.get(), captured))
      v->set_constant(Tensor());
  return Status();
}

}  // namespace tierjit::passes
