// Metrics: counters of the adaptive runtime (DESIGN.md "Observability") as relaxed atomics, so any
// thread may bump them on the call path; derived rates (hit rate, promotion rate, deoptimization
// rate, compile time per tier) and a JSON export. One Metrics per Session.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

namespace tierjit::runtime {

/// Tiers 0..3 (DESIGN.md "Tier").
inline constexpr int kNumTiers = 4;

class Metrics {
 public:
  using Counter = std::atomic<uint64_t>;
  static void bump(Counter& c, uint64_t n = 1) { c.fetch_add(n, std::memory_order_relaxed); }
  static uint64_t get(const Counter& c) { return c.load(std::memory_order_relaxed); }

  // Call path (VersionTable::lookup).
  Counter region_calls{0};        ///< region calls dispatched (= lookups)
  Counter inline_cache_hits{0};   ///< resolved by the last-hit version (monomorphic)
  Counter exact_hits{0};          ///< ran an exact version
  Counter class_hits{0};          ///< ran a shape-class version
  Counter generic_hits{0};        ///< ran a generic version (tier 0 interpreter included)
  Counter megamorphic_calls{0};   ///< generic because the region is megamorphic
  Counter misses{0};              ///< no version at all matched
  Counter deoptimizations{0};     ///< calls that left specialized code (guard failed)
  // Policy.
  Counter promotions{0};
  Counter declined{0};
  Counter demotions{0};
  Counter megamorphic_regions{0};
  // Compiles, per tier (index = tier).
  std::array<Counter, kNumTiers> compiles{};
  std::array<Counter, kNumTiers> compile_us{};  ///< total compile time, µs
  Counter compile_failures{0};
  // Code cache levels L1, L2, L3 (index 0..2).
  std::array<Counter, 3> cache_hits{};
  Counter evictions{0};
  // CompileQueue.
  Counter jobs_queued{0};
  Counter jobs_coalesced{0};
  Counter jobs_rejected{0};

  /// Share of region calls that ran a specialized (exact or shape-class) version; 0 with no calls.
  double specialized_hit_rate() const;
  /// Share of region calls resolved by the inline cache.
  double inline_cache_hit_rate() const;
  /// Promotions per region call.
  double promotion_rate() const;
  /// Deoptimizations per region call.
  double deoptimization_rate() const;
  /// Mean compile time of tier `tier` in µs (0 when none).
  double mean_compile_us(int tier) const;
  /// Every counter and rate as one JSON object.
  std::string to_json() const;
};

}  // namespace tierjit::runtime
