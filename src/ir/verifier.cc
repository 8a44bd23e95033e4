// IR verifier: structural invariants every pass must keep (run between passes in debug builds and
// when PassContext::verify_between_passes is set). Reports the first violation as kInternal.
#include <unordered_set>

#include "ir/graph.h"
#include "support/status.h"

namespace tierjit::ir {

namespace {

Status verify_graph(const Graph& g) {
  std::unordered_set<const Value*> defined;
  for (const Value* v : g.inputs()) defined.insert(v);
  for (const Value* v : g.captures()) defined.insert(v);
  for (const auto& v : g.values()) {
    if (v->owner() != &g)
      return internal_error("graph '{}': value '{}' has another owner", g.name(), v->name());
    if (v->is_constant()) defined.insert(v.get());
  }
  if (g.captures().size() != g.capture_sources().size())
    return internal_error("graph '{}': {} captures but {} capture sources", g.name(),
                          g.captures().size(), g.capture_sources().size());
  for (const auto& n : g.nodes()) {
    for (size_t i = 0; i < n->num_inputs(); ++i) {
      const Value* v = n->input(i);
      if (v && !defined.count(v))
        return internal_error("graph '{}': {} reads input {} '{}' before it is defined", g.name(),
                              n->describe(), i, v->name());
    }
    for (size_t i = 0; i < n->num_outputs(); ++i) {
      const Value* v = n->output(i);
      if (!v) continue;
      if (v->producer() != n.get())
        return internal_error("graph '{}': {} output {} '{}' names another producer", g.name(),
                              n->describe(), i, v->name());
      if (!defined.insert(v).second)
        return internal_error("graph '{}': value '{}' is defined twice", g.name(), v->name());
    }
    for (const auto& [name, a] : n->attributes()) {
      if (a.g) TJ_RETURN_IF_ERROR(verify_graph(*a.g));
      for (const auto& sg : a.graphs)
        if (sg) TJ_RETURN_IF_ERROR(verify_graph(*sg));
    }
  }
  for (const Value* v : g.outputs())
    if (!v || !defined.count(v))
      return internal_error("graph '{}': output '{}' is never defined", g.name(), v ? v->name() : "");
  return Status();
}

}  // namespace

Status verify(const Graph& graph) { return verify_graph(graph); }

}  // namespace tierjit::ir
