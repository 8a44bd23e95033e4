// Text printer for the graph IR (placeholder, filled in by the IR work).
#include "ir/graph.h"
namespace tierjit::ir {
std::string print_graph(const Graph& /*graph*/) { return {}; }
}  // namespace tierjit::ir
