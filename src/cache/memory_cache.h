// L1 of the code cache (DESIGN.md "The code cache"): compiled versions in this process under a
// byte budget, evicted by value = (hits x µs saved per hit + compile µs) / bytes — the time lost
// per byte freed — with LRU-2 (the older of the last two accesses) breaking ties. Stores opaque
// shared pointers (the runtime's compiled regions); knows no LLVM. An evicted entry stays alive
// for whoever still holds it (a Plan running it): the cache only forgets it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace tierjit::cache {

struct MemoryCacheStats {
  size_t entries = 0;
  size_t bytes = 0;
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t insertions = 0;
  uint64_t evictions = 0;
  double hit_rate() const { return hits + misses ? double(hits) / double(hits + misses) : 0.0; }
};

/// An entry that left the cache, for the decision log ("evicted ... value 3.2 µs/KiB").
struct Eviction {
  uint64_t key = 0;
  std::string what;      ///< the description given at insert
  size_t bytes = 0;
  double value = 0;      ///< µs per byte at eviction
};

class MemoryCache {
 public:
  /// `budget_bytes` = 0: nothing is kept (every insert is evicted at once).
  explicit MemoryCache(size_t budget_bytes) : budget_(budget_bytes) {}

  /// The entry under `key` (counted as a hit, its access time updated) or null (a miss).
  std::shared_ptr<const void> find(uint64_t key);
  template <class T>
  std::shared_ptr<const T> find_as(uint64_t key) {
    return std::static_pointer_cast<const T>(find(key));
  }

  /// Inserts (or replaces) `key`. `bytes` > 0 is what the entry holds (code, metadata);
  /// `compile_us` what recompiling it would cost; `saved_us_per_hit` what each call through it
  /// saves over the tier below (0 when unknown). Evicts the lowest-value entries until the
  /// cache fits its budget (possibly the new entry itself, when it alone is over budget) and
  /// returns them.
  std::vector<Eviction> insert(uint64_t key, std::shared_ptr<const void> value, size_t bytes,
                               int64_t compile_us, double saved_us_per_hit, std::string what = {});

  /// Updates an entry's saving per hit (e.g. after measuring it); no-op for a missing key.
  void set_saving(uint64_t key, double saved_us_per_hit);
  /// Removes `key`; true if it was present.
  bool erase(uint64_t key);
  /// Changes the budget, evicting as needed.
  std::vector<Eviction> set_budget(size_t budget_bytes);

  MemoryCacheStats stats() const;
  size_t budget() const { return budget_; }

  /// Value of an entry: (hits x saved_us_per_hit + compile_us) / bytes, µs per byte.
  static double value_of(uint64_t hits, double saved_us_per_hit, int64_t compile_us, size_t bytes);

 private:
  struct Entry {
    std::shared_ptr<const void> value;
    size_t bytes = 0;
    int64_t compile_us = 0;
    double saved_us_per_hit = 0;
    uint64_t hits = 0;
    uint64_t last = 0, previous = 0;  ///< logical access times (LRU-2: previous is the tie-break)
    std::string what;
  };
  std::vector<Eviction> evict_locked();

  mutable std::mutex mu_;
  size_t budget_;
  size_t bytes_ = 0;
  uint64_t clock_ = 0;
  std::unordered_map<uint64_t, Entry> entries_;
  MemoryCacheStats counters_;
};

}  // namespace tierjit::cache
