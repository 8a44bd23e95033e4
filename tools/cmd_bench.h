// `tierjit bench MODEL (--trace FILE | --shapes SPEC... [--requests N])`: options and entry point
// (cmd_bench.cc); registered in main.cc like the other subcommands. See docs/bench.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tierjit::cli {

struct BenchOptions {
  std::string model;
  std::string trace;                    ///< trace file (one request per line)
  std::vector<std::string> shapes;      ///< --shapes: request lines, cycled
  int64_t requests = -1;                ///< --requests (with --shapes); -1 = one per spec
  std::string mode = "adaptive";        ///< adaptive | interpret-only
  int tier = -1;                        ///< --tier N: pin every region at tier N; -1 = not pinned
  std::string json_out;                 ///< --json FILE
  std::string chrome_trace_out;         ///< --chrome-trace FILE
  std::vector<std::string> int_ranges;  ///< NAME=LO:HI
  int threads = 1;                      ///< SessionOptions::intra_op_threads (0 = all cores)
  uint64_t seed = 0;                    ///< seed of the random inputs
  bool no_progress = false;             ///< never draw the progress bar
  bool no_warm_up = false;              ///< SessionOptions::warm_up = false (cold-start comparisons)
  /// --interp-share-requests: requests of the interpret-only replay that gives each region's
  /// share of time (with --json; the first N of the trace, 0 = no such replay).
  int64_t interp_share_requests = 1000;
  /// --time-regions: time every region's step in the benchmarked session
  /// (SessionOptions::time_regions) and report each region's mean µs per call.
  bool time_regions = false;
};

/// `tierjit bench`: loads MODEL (timed: session_create_ms), validates every request of the trace
/// against the model's inputs, generates random inputs once per distinct shape, replays the
/// requests one after the other through Session::run (each timed), and prints per-shape
/// latency statistics, the totals, compile events and the tier timeline; --json and
/// --chrome-trace write files. Returns 0, or 2 after printing one error line (bad options, trace
/// or model; an error while running a request). With --json it also reports each region's share
/// of time in an interpret-only replay, final tier, compiled fraction over the last 10% of
/// requests and payoff, and the compiled coverage (bench_regions.h).
int cmd_bench(const BenchOptions& opts);

}  // namespace tierjit::cli
