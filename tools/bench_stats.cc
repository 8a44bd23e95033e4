// Latency statistics of `tierjit bench` (bench_stats.h): nearest-rank percentiles, per-shape
// grouping in order of first appearance.
#include "bench_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

namespace tierjit::cli {

double percentile_nearest_rank(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double n = static_cast<double>(sorted.size());
  // p * n / 100 rather than p / 100 * n: exact when p * n is a multiple of 100 (90 * 10 / 100
  // is exactly 9, so the 90th percentile of 10 values is the 9th, not the 10th).
  double rank = std::ceil(p * n / 100.0);
  rank = std::clamp(rank, 1.0, n);
  return sorted[static_cast<size_t>(rank) - 1];
}

LatencyStats summarize_latencies(const std::vector<double>& latencies_ms) {
  LatencyStats s;
  s.count = static_cast<int64_t>(latencies_ms.size());
  if (latencies_ms.empty()) return s;
  std::vector<double> sorted = latencies_ms;
  std::sort(sorted.begin(), sorted.end());
  s.first_ms = latencies_ms.front();
  s.p50_ms = percentile_nearest_rank(sorted, 50);
  s.p90_ms = percentile_nearest_rank(sorted, 90);
  s.p99_ms = percentile_nearest_rank(sorted, 99);
  s.max_ms = sorted.back();
  const double total = std::accumulate(latencies_ms.begin(), latencies_ms.end(), 0.0);
  s.mean_ms = total / static_cast<double>(s.count);
  if (s.count > 1) s.mean_after_first_ms = (total - s.first_ms) / static_cast<double>(s.count - 1);
  return s;
}

BenchStats compute_bench_stats(const std::vector<std::string>& shape_of,
                               const std::vector<double>& latencies_ms) {
  BenchStats out;
  const size_t n = std::min(shape_of.size(), latencies_ms.size());
  std::unordered_map<std::string, int64_t> index;
  std::vector<std::vector<double>> series;
  out.shape_index.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    auto [it, inserted] = index.emplace(shape_of[i], static_cast<int64_t>(series.size()));
    if (inserted) {
      series.emplace_back();
      out.shapes.push_back(ShapeStats{shape_of[i], {}});
    }
    series[static_cast<size_t>(it->second)].push_back(latencies_ms[i]);
    out.shape_index.push_back(it->second);
  }
  for (size_t k = 0; k < series.size(); ++k) out.shapes[k].stats = summarize_latencies(series[k]);
  out.overall = summarize_latencies(std::vector<double>(latencies_ms.begin(), latencies_ms.begin() + static_cast<std::ptrdiff_t>(n)));
  return out;
}

}  // namespace tierjit::cli
