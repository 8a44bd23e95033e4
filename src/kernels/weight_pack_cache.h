// Weights of constant tensors repacked once for a kernel (packed product panels, direct
// convolution taps, LSTM gate blocks), kept by the tensors' addresses and the geometry. Each
// entry holds the tensors it was packed from, so their storage (and the key's addresses) cannot
// be reused while it is cached. An entry whose tensors only the cache still holds (their model
// is gone) is dropped at the next miss: a service that loads and drops models keeps only the
// live ones' packings (an LSTM cache that kept them until its budget grew resident memory by
// +130 MiB over 300 sessions). Thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

namespace tierjit::kernels {

/// Entry: `size_t bytes() const` (its packed size) and `bool orphaned() const` (true when the
/// cache holds the last reference to the tensors it was packed from).
template <class Key, class Entry>
class WeightPackCache {
 public:
  explicit WeightPackCache(size_t budget_bytes) : budget_(budget_bytes) {}

  /// The entry for `key`, made by `make()` (returning std::shared_ptr<Entry>, outside the lock)
  /// on a miss; `need` is its size in bytes. Null, and nothing made, when the live entries and
  /// this one would exceed the budget (the caller packs per call or runs another kernel). When
  /// two threads make one key at once, both get the entry inserted first.
  template <class Make>
  std::shared_ptr<const Entry> get(const Key& key, size_t need, const Make& make) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = items_.find(key);
      if (it != items_.end()) return it->second;
      for (auto e = items_.begin(); e != items_.end();)
        if (e->second->orphaned()) {
          bytes_ -= e->second->bytes();
          e = items_.erase(e);
        } else {
          ++e;
        }
      if (bytes_ + need > budget_) return nullptr;
    }
    std::shared_ptr<const Entry> made = make();
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, inserted] = items_.emplace(key, made);
    if (inserted) bytes_ += made->bytes();
    return it->second;
  }

  /// Bytes of the entries cached now.
  size_t bytes() {
    std::lock_guard<std::mutex> lock(mu_);
    return bytes_;
  }

 private:
  const size_t budget_;
  std::mutex mu_;
  std::map<Key, std::shared_ptr<const Entry>> items_;
  size_t bytes_ = 0;
};

}  // namespace tierjit::kernels
