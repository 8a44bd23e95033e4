// Replaying a shape trace in-process, shared by `tierjit bench`, `tierjit explain --trace` and the
// runtime's drift test: random inputs generated once per distinct request shape (the bench's
// rule), and the compile events and tier timeline read back from a Session's decision log.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cli_util.h"
#include "tierjit/session.h"
#include "trace.h"

namespace tierjit::cli {

/// The feeds of a trace: one NamedTensors per distinct shape, in first-appearance order.
struct ReplayFeeds {
  std::vector<std::string> key_of;  ///< per request: format_request (the shape's text)
  std::vector<size_t> feed_of;      ///< per request: index into feeds
  std::vector<NamedTensors> feeds;  ///< per distinct shape: a value for every model input
};

/// Checks every distinct request against `model_inputs` (check_request) and draws its inputs with
/// random_tensor from one mt19937_64 seeded with `seed`, in first-appearance order, `ranges`
/// applying to the integer inputs they name. Throws tierjit::Error: kInvalidArgument (a request
/// that does not fit the model; the message starts with `model`), kResourceExhausted (an input
/// over `memory_limit_bytes`).
ReplayFeeds make_replay_feeds(const Trace& trace, const std::vector<TensorInfo>& model_inputs,
                              const std::map<std::string, IntRange>& ranges, uint64_t seed,
                              int64_t memory_limit_bytes, const std::string& model);

/// One finished compile of the decision log (kind "compiled", not the payoff records).
struct CompileEvent {
  double end_ms = 0;      ///< when it finished, ms after `origin_us` (may be < 0)
  double compile_ms = 0;  ///< lowering + codegen time (ms)
  int tier = 0;
  int region = -1;
  std::string region_name;
  std::string level;    ///< "exact", "shape_class", "generic"
  std::string message;  ///< the log's reason text
};
/// The compiles of Session::decision_log_json() in log order; `origin_us` is the steady_clock
/// time (µs since its epoch) that end_ms counts from. Records the log's ring dropped are missing.
std::vector<CompileEvent> compile_events(const std::string& decision_log_json, int64_t origin_us);

/// A region reaching a higher tier: from request `request` (1-based; requests.size() + 1 when
/// the compile finished after the last one started) on, calls could run its tier-`tier` code.
struct TierStep {
  int region = -1;
  std::string region_name;
  int tier = 0;
  size_t request = 0;
};
/// Per region, each compile that raised its highest compiled tier, mapped to the first request
/// that started after the compile finished (`start_ms[i]`: request i's start, same origin as the
/// events). Ordered by request, then region.
std::vector<TierStep> tier_timeline(const std::vector<CompileEvent>& events,
                                    const std::vector<double>& start_ms);

/// steady_clock now in µs since its epoch (the clock of the decision log's time_us).
int64_t steady_now_us();

}  // namespace tierjit::cli
