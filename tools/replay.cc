// Trace replay helpers (replay.h): feeds per distinct shape, compile events and the tier timeline
// from the decision log JSON (Session::decision_log_json(), DecisionLog::to_json's fields).
#include "replay.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>

namespace tierjit::cli {

ReplayFeeds make_replay_feeds(const Trace& trace, const std::vector<TensorInfo>& model_inputs,
                              const std::map<std::string, IntRange>& ranges, uint64_t seed,
                              int64_t memory_limit_bytes, const std::string& model) {
  const size_t n = trace.requests.size();
  ReplayFeeds out;
  out.key_of.resize(n);
  out.feed_of.resize(n);
  std::unordered_map<std::string, size_t> feed_index;
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < n; ++i) {
    const TraceRequest& req = trace.requests[i];
    out.key_of[i] = format_request(req);
    auto [it, inserted] = feed_index.emplace(out.key_of[i], out.feeds.size());
    out.feed_of[i] = it->second;
    if (!inserted) continue;
    check_request(model_inputs, req).with_prefix(model).throw_if_error();
    NamedTensors feed;
    for (const auto& info : model_inputs) {
      const auto& shape = std::find_if(req.inputs.begin(), req.inputs.end(),
                                       [&](const auto& in) { return in.first == info.name; })->second;
      const int64_t numel = shape_numel(shape);
      const int64_t elem = static_cast<int64_t>(std::max<size_t>(1, dtype_size(info.dtype)));
      if (numel > memory_limit_bytes / elem)
        throw Error(StatusCode::kResourceExhausted,
                    fmt::format("{}: input '{}': shape {} exceeds the memory limit", req.location, info.name,
                                shape_to_string(shape)));
      auto r = ranges.find(info.name);
      std::optional<IntRange> range;
      if (r != ranges.end()) range = r->second;
      feed.emplace_back(info.name, random_tensor(info.dtype, shape, info.name, range, rng));
    }
    out.feeds.push_back(std::move(feed));
  }
  return out;
}

std::vector<CompileEvent> compile_events(const std::string& decision_log_json, int64_t origin_us) {
  std::vector<CompileEvent> out;
  nlohmann::json log = nlohmann::json::parse(decision_log_json, nullptr, /*allow_exceptions=*/false);
  if (!log.is_array()) return out;
  for (const auto& r : log) {
    if (r.value("kind", "") != "compiled") continue;
    // The payoff observation of a compile is logged as "compiled" too, with from_tier.
    if (r.contains("from_tier") || r.value("message", "").rfind("payoff", 0) == 0) continue;
    CompileEvent e;
    e.end_ms = static_cast<double>(r.value("time_us", int64_t{0}) - origin_us) / 1000.0;
    e.compile_ms = static_cast<double>(std::max<int64_t>(0, r.value("compile_us", int64_t{0}))) / 1000.0;
    e.tier = r.value("tier", 0);
    e.region = r.value("region", -1);
    e.region_name = r.value("region_name", "");
    e.level = r.value("level", "");
    e.message = r.value("message", "");
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<TierStep> tier_timeline(const std::vector<CompileEvent>& events,
                                    const std::vector<double>& start_ms) {
  std::vector<TierStep> out;
  std::unordered_map<int, int> top;  // region -> highest tier compiled so far
  for (const CompileEvent& e : events) {
    auto [it, fresh] = top.emplace(e.region, 0);
    if (!fresh && e.tier <= it->second) continue;
    if (fresh && e.tier <= 0) continue;
    it->second = e.tier;
    const size_t first = static_cast<size_t>(
        std::upper_bound(start_ms.begin(), start_ms.end(), e.end_ms) - start_ms.begin());
    out.push_back({e.region, e.region_name, e.tier, first + 1});
  }
  std::stable_sort(out.begin(), out.end(), [](const TierStep& a, const TierStep& b) {
    return a.request != b.request ? a.request < b.request : a.region < b.region;
  });
  return out;
}

int64_t steady_now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace tierjit::cli
