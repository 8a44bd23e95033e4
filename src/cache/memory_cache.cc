// MemoryCache: a map under one mutex; eviction scans for the lowest value (caches hold tens to
// hundreds of versions, and evictions are rare next to lookups).
#include "cache/memory_cache.h"

#include <algorithm>

namespace tierjit::cache {

double MemoryCache::value_of(uint64_t hits, double saved_us_per_hit, int64_t compile_us,
                             size_t bytes) {
  return (static_cast<double>(hits) * saved_us_per_hit + static_cast<double>(compile_us)) /
         static_cast<double>(std::max<size_t>(bytes, 1));
}

std::shared_ptr<const void> MemoryCache::find(uint64_t key) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    ++counters_.misses;
    return nullptr;
  }
  ++counters_.hits;
  Entry& e = it->second;
  ++e.hits;
  e.previous = e.last;
  e.last = ++clock_;
  return e.value;
}

std::vector<Eviction> MemoryCache::insert(uint64_t key, std::shared_ptr<const void> value,
                                          size_t bytes, int64_t compile_us,
                                          double saved_us_per_hit, std::string what) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    bytes_ -= it->second.bytes;
    entries_.erase(it);
  }
  Entry e;
  e.value = std::move(value);
  e.bytes = std::max<size_t>(bytes, 1);
  e.compile_us = compile_us;
  e.saved_us_per_hit = saved_us_per_hit;
  e.last = ++clock_;
  e.what = std::move(what);
  bytes_ += e.bytes;
  entries_.emplace(key, std::move(e));
  ++counters_.insertions;
  return evict_locked();
}

void MemoryCache::set_saving(uint64_t key, double saved_us_per_hit) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it != entries_.end()) it->second.saved_us_per_hit = saved_us_per_hit;
}

bool MemoryCache::erase(uint64_t key) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  bytes_ -= it->second.bytes;
  entries_.erase(it);
  return true;
}

std::vector<Eviction> MemoryCache::set_budget(size_t budget_bytes) {
  std::lock_guard lock(mu_);
  budget_ = budget_bytes;
  return evict_locked();
}

std::vector<Eviction> MemoryCache::evict_locked() {
  std::vector<Eviction> out;
  while (bytes_ > budget_ && !entries_.empty()) {
    auto victim = entries_.end();
    double victim_value = 0;
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      const Entry& e = it->second;
      double v = value_of(e.hits, e.saved_us_per_hit, e.compile_us, e.bytes);
      // Lowest value first; equal values: the entry whose second-to-last access is oldest.
      if (victim == entries_.end() || v < victim_value ||
          (v == victim_value && e.previous < victim->second.previous) ||
          (v == victim_value && e.previous == victim->second.previous && e.last < victim->second.last)) {
        victim = it;
        victim_value = v;
      }
    }
    out.push_back({victim->first, victim->second.what, victim->second.bytes, victim_value});
    bytes_ -= victim->second.bytes;
    entries_.erase(victim);
    ++counters_.evictions;
  }
  return out;
}

MemoryCacheStats MemoryCache::stats() const {
  std::lock_guard lock(mu_);
  MemoryCacheStats s = counters_;
  s.entries = entries_.size();
  s.bytes = bytes_;
  return s;
}

}  // namespace tierjit::cache
