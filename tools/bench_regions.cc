// Per-region measures of `tierjit bench --json` (bench_regions.h): the interpret-only replay that
// gives each region's share of time, the rows joined from it and the benchmarked session, and the
// compiled coverage.
#include "bench_regions.h"

#include <fmt/format.h>

#include <algorithm>

namespace tierjit::cli {

RequestWindow last_tenth(size_t n) {
  const size_t count = (n + 9) / 10;
  return {n - count, count};
}

InterpShares interp_shares(const std::string& model, const SessionOptions& base, const ReplayFeeds& feeds,
                           size_t max_requests) {
  SessionOptions so;
  so.intra_op_threads = base.intra_op_threads;
  so.memory_limit_bytes = base.memory_limit_bytes;
  so.mode = ExecutionMode::kInterpretOnly;
  so.time_regions = true;
  Session session(model, so);
  const size_t k = std::min(max_requests, feeds.feed_of.size());
  auto run = [&](size_t i) {
    try {
      session.run(feeds.feeds[feeds.feed_of[i]]);
    } catch (const Error& e) {
      throw Error(e.code(), fmt::format("interpret-only replay for interp_share, request {} ({}): {}", i + 1,
                                        feeds.key_of[i], e.what()));
    }
  };
  // The first call of a shape records its plan and is not timed per region: make it beforehand.
  std::vector<char> warmed(feeds.feeds.size(), 0);
  for (size_t i = 0; i < k; ++i)
    if (!warmed[feeds.feed_of[i]]) {
      warmed[feeds.feed_of[i]] = 1;
      run(i);
    }
  for (size_t i = 0; i < k; ++i) run(i);
  return {k, session.region_reports()};
}

std::vector<RegionMeasure> region_measures(const std::vector<RegionReport>& shares,
                                           const std::vector<RegionReport>& main,
                                           const std::vector<uint64_t>& compiled_at_start,
                                           const std::vector<uint64_t>& compiled_at_end, size_t window_count) {
  const std::vector<RegionReport>& list = shares.empty() ? main : shares;
  double total_us = 0;
  for (const RegionReport& r : shares) total_us += r.time_us;
  std::vector<RegionMeasure> out;
  out.reserve(list.size());
  for (const RegionReport& r : list) {
    RegionMeasure m;
    m.region = r.id;
    m.name = r.name;
    m.kind = r.kind;
    const size_t id = static_cast<size_t>(r.id);
    if (!shares.empty() && total_us > 0 && id < shares.size()) m.interp_share = shares[id].time_us / total_us;
    if (id < main.size() && main[id].name == r.name) {  // the same model partitions the same way
      m.final_tier = main[id].tier;
      if (main[id].payoff > 0) m.payoff = main[id].payoff;
      if (main[id].timed_calls > 0) m.mean_us = main[id].time_us / static_cast<double>(main[id].timed_calls);
    }
    if (window_count > 0 && id < compiled_at_end.size()) {
      const uint64_t before = id < compiled_at_start.size() ? compiled_at_start[id] : 0;
      const uint64_t in_window = compiled_at_end[id] - std::min(before, compiled_at_end[id]);
      m.compiled_fraction_last10 = static_cast<double>(in_window) / static_cast<double>(window_count);
    }
    out.push_back(std::move(m));
  }
  return out;
}

Coverage compiled_coverage(const std::vector<RegionMeasure>& regions) {
  Coverage c;
  for (const RegionMeasure& r : regions) {
    if (!r.interp_share) continue;
    const double part = *r.interp_share * r.compiled_fraction_last10;
    (r.payoff && *r.payoff >= 1.0 ? c.counted : c.uncounted) += part;
  }
  return c;
}

void print_region_report(const std::vector<RegionMeasure>& regions, const Coverage& coverage,
                         const std::string& share_note, const RequestWindow& window) {
  fmt::print("\nregions (interp_share: {}; compiled: calls of the last {} requests that ran compiled code):\n",
             share_note, window.count);
  size_t w = 6;
  for (const RegionMeasure& r : regions) w = std::max(w, r.name.size());
  fmt::print("  {:>6}  {:<{}}  {:<15}  {:>12}  {:>10}  {:>8}  {:>7}\n", "region", "name", w, "kind", "interp_share",
             "final_tier", "compiled", "payoff");
  size_t left_out = 0;
  for (const RegionMeasure& r : regions) {
    if (r.interp_share.value_or(1) < 0.01 && r.compiled_fraction_last10 == 0) {
      ++left_out;
      continue;
    }
    fmt::print("  {:>6}  {:<{}}  {:<15}  {:>12}  {:>10}  {:>8.3f}  {:>7}\n", r.region, r.name, w, r.kind,
               r.interp_share ? fmt::format("{:.4f}", *r.interp_share) : "-", r.final_tier,
               r.compiled_fraction_last10, r.payoff ? fmt::format("{:.3g}", *r.payoff) : "-");
  }
  if (left_out) fmt::print("  ({} more regions under 1% of the time, none compiled in the window)\n", left_out);
  fmt::print("compiled coverage {:.4f} (regions with payoff >= 1); {:.4f} more in regions without a payoff >= 1\n",
             coverage.counted, coverage.uncounted);
}

void print_region_times(const std::vector<RegionReport>& regions, size_t top) {
  double total_us = 0;
  std::vector<const RegionReport*> order;
  for (const RegionReport& r : regions) {
    total_us += r.time_us;
    if (r.timed_calls > 0) order.push_back(&r);
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const RegionReport* a, const RegionReport* b) { return a->time_us > b->time_us; });
  fmt::print("\nregion times (every call's region step timed; mean over the timed calls, tier at the end):\n");
  size_t w = 6;
  for (const RegionReport* r : order) w = std::max(w, r->name.size());
  fmt::print("  {:>6}  {:<{}}  {:<15}  {:>4}  {:>8}  {:>10}  {:>6}  {}\n", "region", "name", w, "kind", "tier", "calls",
             "mean_us", "share", "ops");
  double rest_us = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const RegionReport& r = *order[k];
    if (k >= top) {
      rest_us += r.time_us;
      continue;
    }
    std::string ops;
    for (const std::string& op : r.ops) ops += (ops.empty() ? "" : ",") + op;
    fmt::print("  {:>6}  {:<{}}  {:<15}  {:>4}  {:>8}  {:>10.2f}  {:>6.3f}  {}\n", r.id, r.name, w, r.kind, r.tier,
               r.timed_calls, r.time_us / static_cast<double>(r.timed_calls),
               total_us > 0 ? r.time_us / total_us : 0.0, ops);
  }
  if (order.size() > top)
    fmt::print("  ({} more regions: {:.3f} of the time)\n", order.size() - top, total_us > 0 ? rest_us / total_us : 0.0);
}

}  // namespace tierjit::cli
