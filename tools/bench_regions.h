// Per-region measures of `tierjit bench --json` (docs/bench.md "Regions and compiled coverage"):
// each region's share of time in an interpret-only replay of the trace (or of its first
// requests), its final tier, the fraction of its calls in the last 10% of requests that ran
// compiled code, the payoff the runtime measured, and the compiled coverage summed from them.
// The interpret-only replay is a second Session run after the timed loop, so the benchmarked
// session's own timings stay as they were.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "replay.h"
#include "tierjit/session.h"

namespace tierjit::cli {

/// The last 10% of n requests: requests [first, first + count) (0-based), count = ceil(n / 10)
/// (at least 1 when n > 0; 0 for n = 0).
struct RequestWindow {
  size_t first = 0;
  size_t count = 0;
};
RequestWindow last_tenth(size_t n);

/// Each region's time in an interpret-only replay (SessionOptions::time_regions): every distinct
/// shape among the replayed requests is run once untimed (its recording call), then the first
/// `requests` requests of the trace are replayed, each region's step timed.
struct InterpShares {
  size_t requests = 0;              ///< requests replayed (timed)
  std::vector<RegionReport> regions;  ///< the replay session's regions (time_us, timed_calls)
};
/// Replays min(max_requests, trace requests) requests of `feeds` in a Session of `model` with
/// `base`'s threads and memory limit, mode kInterpretOnly and time_regions. Throws
/// tierjit::Error (a failing request names it, as the timed loop does).
InterpShares interp_shares(const std::string& model, const SessionOptions& base, const ReplayFeeds& feeds,
                           size_t max_requests);

/// One region's row of the report.
struct RegionMeasure {
  int region = -1;
  std::string name, kind;
  std::optional<double> interp_share;  ///< region time / all regions' time (none: not measured)
  int final_tier = 0;                  ///< highest tier installed when the last request finished
  double compiled_fraction_last10 = 0; ///< calls of the last-10% window that ran compiled code / window size
  std::optional<double> payoff;        ///< RegionReport::payoff of final_tier (none: not measured)
  std::optional<double> mean_us;       ///< benchmarked session's µs per timed call (--time-regions)
};

/// The rows: regions from `shares` (all regions of the partition; when it has none, from
/// `main`), their interp_share from `shares` (none when its regions' total time is 0), final
/// tier and payoff from `main` (the benchmarked session's reports; empty: tier 0, no payoff),
/// the compiled fraction from the compiled-call counts at the window's start and end (indexed by
/// region; empty: 0) over `window_count` calls.
std::vector<RegionMeasure> region_measures(const std::vector<RegionReport>& shares,
                                           const std::vector<RegionReport>& main,
                                           const std::vector<uint64_t>& compiled_at_start,
                                           const std::vector<uint64_t>& compiled_at_end, size_t window_count);

/// Σ interp_share × compiled_fraction_last10: `counted` over regions whose payoff is >= 1.0,
/// `uncounted` over the others (payoff < 1 or not measured). Regions without interp_share add
/// nothing. Both are in [0, 1] up to rounding.
struct Coverage {
  double counted = 0;
  double uncounted = 0;
};
Coverage compiled_coverage(const std::vector<RegionMeasure>& regions);

/// The text block of the bench report: one row per region with at least 1% of the interpret-only
/// time or any compiled call in the window (the others counted in one line), then the coverage.
/// `share_note` says which requests the shares come from.
void print_region_report(const std::vector<RegionMeasure>& regions, const Coverage& coverage,
                         const std::string& share_note, const RequestWindow& window);

/// The text block of `--time-regions`: the benchmarked session's regions by total timed time,
/// slowest first (the first `top`, the rest summed in one line): mean µs per timed call, share of
/// all regions' time, tier at the end, ops.
void print_region_times(const std::vector<RegionReport>& regions, size_t top);

}  // namespace tierjit::cli
