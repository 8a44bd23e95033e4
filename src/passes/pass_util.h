// Graph-surgery helpers shared by the cleanup passes (canonicalize, constant folding, CSE, DCE)
// and the partitioner: graph-output/input membership, subgraph walks, outer values read by
// subgraph captures, and a use-replacement that also rewires capture sources. Not a pass itself.
#pragma once

#include <functional>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"

namespace tierjit::passes {

/// True if `v` is listed in graph.outputs() / graph.inputs().
bool is_graph_output(const ir::Graph& graph, const ir::Value* v);
bool is_graph_input(const ir::Graph& graph, const ir::Value* v);

/// True if the node holds a subgraph attribute (If/Loop/Scan/SequenceMap bodies).
bool has_subgraph(const ir::Node& node);

/// Ops whose result is not a function of their inputs (RandomNormal/Uniform(Like), Bernoulli,
/// Multinomial): never folded or merged.
bool is_random_op(ir::OpKind op);

/// Values of `graph` that subgraphs of `node` (at any nesting depth) read through captures.
std::vector<ir::Value*> captured_outer_values(const ir::Node& node, const ir::Graph& graph);

/// Every value of `graph` read by a capture of some subgraph of one of its nodes.
std::unordered_set<const ir::Value*> all_captured_values(const ir::Graph& graph);

/// Points every use of `from` at `to`: node inputs and the capture sources of nested subgraphs.
/// Refuses (returns false, changes nothing) when `from` is a graph output, since outputs keep
/// their names.
bool replace_value_uses(ir::Graph& graph, ir::Value* from, ir::Value* to);

/// True if some node reads `v` or a nested subgraph captures it (`captured` from
/// all_captured_values), or it is a graph output.
bool value_is_used(const ir::Graph& graph, const ir::Value* v,
                   const std::unordered_set<const ir::Value*>& captured);

}  // namespace tierjit::passes
