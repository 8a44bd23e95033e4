// `tierjit explain MODEL`: options and entry point (cmd_explain.cc); registered in main.cc like
// the other subcommands.
#pragma once

#include <string>

namespace tierjit::cli {

struct ExplainOptions {
  std::string model;
  bool no_fuse = false;     ///< one region per node (what the partitioner starts from)
  bool print_graph = false; ///< also print the graph after the tier-0 pass pipeline
};
/// `tierjit explain`: loads MODEL, runs the tier-0 pass pipeline (shape inference, canonicalize,
/// constant folding, CSE, DCE) and the partitioner, and prints one block per region (id, kind,
/// ops, input/output values with symbolic shapes) and a summary of regions per kind. Returns 0;
/// a model that fails to load or to pass the pipeline throws tierjit::Error (main prints one line
/// and exits 2).
int cmd_explain(const ExplainOptions& opts);

}  // namespace tierjit::cli
