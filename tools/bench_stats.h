// Latency statistics of `tierjit bench`: nearest-rank percentiles and per-shape summaries, as
// ../shared/bench/README.md defines them (so tierjit's JSON compares field by field with the
// ONNX Runtime and PyTorch runners). All times in milliseconds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tierjit::cli {

/// Nearest-rank percentile of `sorted` (ascending, non-empty): the value at 1-based rank
/// max(1, ceil(p * n / 100)), clamped to n. p in [0, 100]. Empty input -> 0.
double percentile_nearest_rank(const std::vector<double>& sorted, double p);

/// Summary of a series of latencies in request order.
struct LatencyStats {
  int64_t count = 0;
  double first_ms = 0;  ///< the first latency of the series (cold for its shape)
  double p50_ms = 0, p90_ms = 0, p99_ms = 0, mean_ms = 0, max_ms = 0;
  std::optional<double> mean_after_first_ms;  ///< mean without the first; none when count < 2
};
/// Statistics of `latencies_ms` (in request order; all zeros for an empty series).
LatencyStats summarize_latencies(const std::vector<double>& latencies_ms);

struct ShapeStats {
  std::string shape;  ///< the request text, e.g. "x=8x256"
  LatencyStats stats;
};

/// Per-request shapes and latencies grouped by shape, in order of first appearance (as the
/// shared runners do), plus the summary over all requests. `shape_of[i]` is the shape text of
/// request i; both vectors have one entry per request.
struct BenchStats {
  LatencyStats overall;
  std::vector<ShapeStats> shapes;
  std::vector<int64_t> shape_index;  ///< per request: its entry in `shapes`
};
BenchStats compute_bench_stats(const std::vector<std::string>& shape_of,
                               const std::vector<double>& latencies_ms);

}  // namespace tierjit::cli
