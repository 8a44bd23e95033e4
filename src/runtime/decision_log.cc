// DecisionLog: ring buffer, per-kind rate limit, logger mirror, JSON export.
#include "runtime/decision_log.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/log.h"

namespace tierjit::runtime {

const char* decision_kind_name(DecisionKind kind) {
  switch (kind) {
    case DecisionKind::kPromoted: return "promoted";
    case DecisionKind::kCompiled: return "compiled";
    case DecisionKind::kCacheHit: return "cache_hit";
    case DecisionKind::kDeoptimized: return "deoptimized";
    case DecisionKind::kDemoted: return "demoted";
    case DecisionKind::kEvicted: return "evicted";
    case DecisionKind::kMegamorphic: return "megamorphic";
    case DecisionKind::kDeclined: return "declined";
  }
  return "?";
}

bool is_per_call_kind(DecisionKind kind) {
  return kind == DecisionKind::kCacheHit || kind == DecisionKind::kDeoptimized ||
         kind == DecisionKind::kMegamorphic;
}

std::string format_decision(const DecisionRecord& r, int64_t origin_us) {
  std::string out = fmt::format("+{:.3f} ms", static_cast<double>(r.time_us - origin_us) / 1000.0);
  if (r.region >= 0) out += fmt::format(" region {} '{}'", r.region, r.region_name);
  out += fmt::format(": {}", decision_kind_name(r.kind));
  if (r.from_tier >= 0 && r.tier >= 0) {
    out += fmt::format(" tier {} -> {}", r.from_tier, r.tier);
  } else if (r.tier >= 0) {
    out += fmt::format(" tier {}", r.tier);
  }
  if (r.tier >= 0 || r.kind == DecisionKind::kCacheHit) out += fmt::format(" ({})", spec_level_name(r.level));
  if (r.compile_us >= 0) out += fmt::format(" in {} us", r.compile_us);
  if (!r.cache_level.empty()) out += fmt::format(" from {}", r.cache_level);
  if (!r.message.empty()) out += ": " + r.message;
  return out;
}

DecisionLog::DecisionLog(const Clock& clock, DecisionLogOptions options)
    : clock_(clock), options_(options), origin_us_(clock.now_us()) {}

bool DecisionLog::record(DecisionRecord r) {
  int64_t now = clock_.now_us();
  if (r.time_us == 0) r.time_us = now;
  size_t k = static_cast<size_t>(r.kind);
  uint64_t flushed = 0;
  {
    std::lock_guard lock(mu_);
    ++total_[k];
    if (is_per_call_kind(r.kind)) {
      if (now - window_start_us_[k] >= 1'000'000 || window_count_[k] == 0) {
        flushed = window_suppressed_[k];
        window_suppressed_[k] = 0;
        window_start_us_[k] = now;
        window_count_[k] = 0;
      }
      if (window_count_[k] >= options_.per_call_limit_per_s) {
        ++suppressed_[k];
        ++window_suppressed_[k];
        return false;
      }
      ++window_count_[k];
    }
    if (options_.capacity > 0) {
      if (ring_.size() >= options_.capacity) ring_.pop_front();
      ring_.push_back(r);
    }
  }
  if (options_.mirror_to_logger) {
    if (flushed > 0) {
      TJ_LOG_INFO("decision: {} more '{}' records suppressed in the last second (rate limit {}/s)",
                  flushed, decision_kind_name(r.kind), options_.per_call_limit_per_s);
    }
    TJ_LOG_INFO("decision: {}", format_decision(r, origin_us_));
  }
  return true;
}

bool DecisionLog::would_keep(DecisionKind kind) const {
  if (!is_per_call_kind(kind)) return true;
  size_t k = static_cast<size_t>(kind);
  std::lock_guard lock(mu_);
  return window_count_[k] < options_.per_call_limit_per_s ||
         clock_.now_us() - window_start_us_[k] >= 1'000'000;
}

std::vector<DecisionRecord> DecisionLog::records() const {
  std::lock_guard lock(mu_);
  return {ring_.begin(), ring_.end()};
}

uint64_t DecisionLog::total(DecisionKind kind) const {
  std::lock_guard lock(mu_);
  return total_[static_cast<size_t>(kind)];
}

uint64_t DecisionLog::suppressed(DecisionKind kind) const {
  std::lock_guard lock(mu_);
  return suppressed_[static_cast<size_t>(kind)];
}

std::string DecisionLog::to_json() const {
  nlohmann::json out = nlohmann::json::array();
  for (const DecisionRecord& r : records()) {
    nlohmann::json j = {{"time_us", r.time_us},
                        {"region", r.region},
                        {"region_name", r.region_name},
                        {"kind", decision_kind_name(r.kind)},
                        {"level", spec_level_name(r.level)},
                        {"message", r.message}};
    if (r.from_tier >= 0) j["from_tier"] = r.from_tier;
    if (r.tier >= 0) j["tier"] = r.tier;
    if (r.compile_us >= 0) j["compile_us"] = r.compile_us;
    if (!r.cache_level.empty()) j["cache_level"] = r.cache_level;
    out.push_back(std::move(j));
  }
  return out.dump();
}

}  // namespace tierjit::runtime
