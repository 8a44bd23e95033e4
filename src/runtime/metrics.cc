// Metrics rates and JSON export.
#include "runtime/metrics.h"

#include <nlohmann/json.hpp>

namespace tierjit::runtime {

namespace {
double ratio(uint64_t a, uint64_t b) { return b == 0 ? 0.0 : static_cast<double>(a) / static_cast<double>(b); }
}  // namespace

double Metrics::specialized_hit_rate() const {
  return ratio(get(exact_hits) + get(class_hits), get(region_calls));
}
double Metrics::inline_cache_hit_rate() const { return ratio(get(inline_cache_hits), get(region_calls)); }
double Metrics::promotion_rate() const { return ratio(get(promotions), get(region_calls)); }
double Metrics::deoptimization_rate() const { return ratio(get(deoptimizations), get(region_calls)); }
double Metrics::mean_compile_us(int tier) const {
  if (tier < 0 || tier >= kNumTiers) return 0.0;
  return ratio(get(compile_us[tier]), get(compiles[tier]));
}

std::string Metrics::to_json() const {
  nlohmann::json j;
  j["region_calls"] = get(region_calls);
  j["inline_cache_hits"] = get(inline_cache_hits);
  j["exact_hits"] = get(exact_hits);
  j["class_hits"] = get(class_hits);
  j["generic_hits"] = get(generic_hits);
  j["megamorphic_calls"] = get(megamorphic_calls);
  j["misses"] = get(misses);
  j["deoptimizations"] = get(deoptimizations);
  j["promotions"] = get(promotions);
  j["declined"] = get(declined);
  j["demotions"] = get(demotions);
  j["megamorphic_regions"] = get(megamorphic_regions);
  j["compile_failures"] = get(compile_failures);
  j["evictions"] = get(evictions);
  j["jobs_queued"] = get(jobs_queued);
  j["jobs_coalesced"] = get(jobs_coalesced);
  j["jobs_rejected"] = get(jobs_rejected);
  for (int t = 0; t < kNumTiers; ++t) {
    j["compiles"].push_back(get(compiles[t]));
    j["compile_us"].push_back(get(compile_us[t]));
    j["mean_compile_us"].push_back(mean_compile_us(t));
  }
  j["cache_hits"] = {{"L1", get(cache_hits[0])}, {"L2", get(cache_hits[1])}, {"L3", get(cache_hits[2])}};
  j["specialized_hit_rate"] = specialized_hit_rate();
  j["inline_cache_hit_rate"] = inline_cache_hit_rate();
  j["promotion_rate"] = promotion_rate();
  j["deoptimization_rate"] = deoptimization_rate();
  return j.dump();
}

}  // namespace tierjit::runtime
