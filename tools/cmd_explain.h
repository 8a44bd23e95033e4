// `tierjit explain MODEL`: options and entry point (cmd_explain.cc); registered in main.cc like
// the other subcommands.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tierjit::cli {

struct ExplainOptions {
  std::string model;
  bool no_fuse = false;     ///< one region per node (what the partitioner starts from)
  bool print_graph = false; ///< also print the graph after the tier-0 pass pipeline
  /// --trace FILE: replay it (as `tierjit bench`, random inputs per shape) and report what runs.
  std::string trace;
  std::string mode = "adaptive";        ///< with --trace: adaptive | interpret-only
  int tier = -1;                        ///< with --trace: pin tier N; -1 = not pinned
  std::vector<std::string> int_ranges;  ///< NAME=LO:HI for the random integer inputs
  uint64_t seed = 0;                    ///< seed of the random inputs
  int log_entries = 12;                 ///< decision log records printed at the end
};
/// `tierjit explain`: loads MODEL, runs the tier-0 pass pipeline (shape inference, canonicalize,
/// constant folding, CSE, DCE) and the partitioner, and prints one block per region (id, kind,
/// ops, input/output values with symbolic shapes) and a summary of regions per kind. Returns 0;
/// a model that fails to load or to pass the pipeline throws tierjit::Error (main prints one line
/// and exits 2).
/// With --trace: the regions as above, then a Session (adaptive, synchronous compilation, so the
/// replay is deterministic; or --mode / --tier) replays the trace in-process and the command
/// prints per region its ops, tier, calls, versions with their guards and whether it is
/// megamorphic (Session::region_reports()), a summary (compiles per tier, compile failures,
/// deoptimizations, megamorphic regions) and the last `log_entries` decision log records. Bad
/// options or a trace that does not fit the model print one error line and return 2.
int cmd_explain(const ExplainOptions& opts);

}  // namespace tierjit::cli
