// DecisionLog: every decision of the adaptive runtime with its reason (DESIGN.md "Observability"):
// promoted, compiled, cache hit at a level, deoptimized (guard failed and why), demoted, evicted,
// megamorphic, declined. A thread-safe ring buffer, mirrored to the logger at info level
// (TIERJIT_LOG=info); per-call kinds (cache_hit, deoptimized, megamorphic) are rate-limited so a
// hot loop cannot flood the log, and what was suppressed is counted and said.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/clock.h"
#include "runtime/signature.h"

namespace tierjit::runtime {

enum class DecisionKind : uint8_t {
  kPromoted,     ///< policy chose to compile the region at a higher tier
  kCompiled,     ///< a version finished compiling (compile_us set)
  kCacheHit,     ///< a version came from the code cache (cache_level "L1"/"L2"/"L3")
  kDeoptimized,  ///< one call left specialized code: a guard failed (message = reason)
  kDemoted,      ///< the region's exact versions were dropped (guard-failure rate > ε)
  kEvicted,      ///< a version was removed from the table or cache
  kMegamorphic,  ///< the region reached its version cap; the generic version serves the rest
  kDeclined,     ///< policy considered a promotion and said no (message = why)
};
inline constexpr size_t kNumDecisionKinds = 8;
/// "promoted", "compiled", "cache_hit", "deoptimized", "demoted", "evicted", "megamorphic",
/// "declined".
const char* decision_kind_name(DecisionKind kind);
/// cache_hit, deoptimized and megamorphic may happen once per call: they are rate-limited.
bool is_per_call_kind(DecisionKind kind);

struct DecisionRecord {
  int64_t time_us = 0;  ///< Clock time; 0 = stamped by DecisionLog::record
  int region = -1;      ///< Region id, -1 when not about one region
  std::string region_name;
  DecisionKind kind = DecisionKind::kDeclined;
  int from_tier = -1;         ///< promoted/demoted: tier before; else -1
  int tier = -1;              ///< tier concerned (target of a promotion, of a compile, ...)
  SpecLevel level = SpecLevel::kGeneric;  ///< specialization level concerned
  int64_t compile_us = -1;    ///< compiled: compile time in µs; else -1
  std::string cache_level;    ///< cache_hit: "L1", "L2" or "L3"
  std::string message;        ///< the reason, in words
};

/// One line, its time in ms from `origin_us` (the same clock as record.time_us; a DecisionLog
/// passes its creation time, i.e. the session's, as `tierjit explain` does):
/// "+12.345 ms region 3 'gemm_3': promoted tier 0 -> 1 (generic): <message>".
std::string format_decision(const DecisionRecord& record, int64_t origin_us = 0);

struct DecisionLogOptions {
  size_t capacity = 4096;          ///< records kept (oldest dropped first)
  int per_call_limit_per_s = 20;   ///< records per second per per-call kind (rest counted)
  bool mirror_to_logger = true;    ///< also log each kept record at info level
};

class DecisionLog {
 public:
  explicit DecisionLog(const Clock& clock = steady_clock(), DecisionLogOptions options = {});

  /// Stamps (if time_us == 0), keeps and logs the record. Returns false when the rate limit of a
  /// per-call kind suppressed it (it is still counted in total()). Thread-safe.
  bool record(DecisionRecord record);
  /// True when a record of `kind` would be kept now (rate limit not reached): lets a caller skip
  /// formatting a per-call record's message that would be suppressed. Does not count anything.
  bool would_keep(DecisionKind kind) const;
  /// Kept records, oldest first.
  std::vector<DecisionRecord> records() const;
  /// Records of `kind` ever passed to record() (kept or suppressed).
  uint64_t total(DecisionKind kind) const;
  /// Records of `kind` suppressed by the rate limit.
  uint64_t suppressed(DecisionKind kind) const;
  /// JSON array of the kept records: [{"time_us":..,"region":..,"kind":"promoted",...}, ...].
  std::string to_json() const;

 private:
  const Clock& clock_;
  DecisionLogOptions options_;
  int64_t origin_us_;  // clock_ at construction: logged times are ms from it
  mutable std::mutex mu_;
  std::deque<DecisionRecord> ring_;
  std::array<uint64_t, kNumDecisionKinds> total_{};
  std::array<uint64_t, kNumDecisionKinds> suppressed_{};
  std::array<int64_t, kNumDecisionKinds> window_start_us_{};
  std::array<int, kNumDecisionKinds> window_count_{};
  std::array<uint64_t, kNumDecisionKinds> window_suppressed_{};
};

}  // namespace tierjit::runtime
