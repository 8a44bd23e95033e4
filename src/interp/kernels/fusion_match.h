// Graph-matching helpers shared by the tier-0 fusions that follow a value through its only
// user (gelu_fusion.cc, softmax_fusion.cc).
#pragma once

#include <algorithm>

#include "ir/graph.h"

namespace tierjit::interp {

/// The only user of `v` if it has exactly one, reads it once, has one output, and `v` is not a
/// graph output; else nullptr.
inline const ir::Node* sole_user(const ir::Value* v, const ir::Graph& g) {
  if (!v || v->users().size() != 1) return nullptr;
  if (std::find(g.outputs().begin(), g.outputs().end(), v) != g.outputs().end()) return nullptr;
  const ir::Node* u = v->users()[0];
  int reads = 0;
  for (const ir::Value* in : u->inputs()) reads += in == v;
  return reads == 1 && u->num_outputs() == 1 ? u : nullptr;
}

/// For a binary node reading `v`: the other input (nullptr when `n` is not binary or does not
/// read `v`).
inline const ir::Value* other_input(const ir::Node& n, const ir::Value* v) {
  if (n.num_inputs() != 2) return nullptr;
  return n.input(0) == v ? n.input(1) : n.input(1) == v ? n.input(0) : nullptr;
}

}  // namespace tierjit::interp
