// Pieces shared by the oneDNN glue files (dnnl_common.cc, dnnl_util.cc for convolutions,
// dnnl_matmul.cc): the CPU engine, per-thread reused call buffers and the cache of constant
// weights in the layouts primitives ask for. Only included by those .cc files: no oneDNN type
// leaks out of dnnl_util.h.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <array>
#include <cstddef>
#include <iterator>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "interp/kernel.h"

namespace tierjit::interp::nn::dnnl_glue {

/// The process-wide oneDNN CPU engine.
dnnl::engine& cpu_engine();

/// This thread's stream on cpu_engine(), created once and shared by every primitive call of the
/// thread (creating one is cheap, ~0.05 us, but there is no reason to do it per call).
dnnl::stream& thread_stream();

/// A reorder primitive from `from` to `to` (both plain-sized float32 layouts). Throws
/// dnnl::error when oneDNN would need a scratchpad (shared scratchpads are refused: concurrent
/// runs must share no buffers).
dnnl::reorder make_reorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to);

/// Per-thread reusable buffers for per-call memories (blocked copies, scratchpads): a fresh
/// allocation per call is a fresh mmap, and touching it page-faults on every request.
enum class CallSlot { kSrc, kDst, kScratch };

/// A memory of `md` on this thread's reused buffer of `slot` (grown to the largest size seen up
/// to 16 MiB, 64-byte aligned), or a oneDNN-allocated one-call memory when larger.
dnnl::memory call_buffer(CallSlot slot, const dnnl::memory::desc& md);

/// The data of this thread's buffer of `slot` grown to `bytes` (as call_buffer), or nullptr when
/// larger than call_buffer keeps (16 MiB) or out of memory: then use call_buffer.
void* call_buffer_data(CallSlot slot, size_t bytes);

/// The weights `w` (laid out as `user_md`) in layout `want`: `w` itself when the layouts are
/// equal; else reordered with `r` — once per constant tensor when `constant_w` (the graph
/// initializer holding `w`, promised never to change) is given, cached across calls and
/// primitives (bounded at 256 MiB), otherwise into a fresh memory on every call.
dnnl::memory weights_in_layout(const dnnl::memory::desc& user_md, const dnnl::memory::desc& want,
                               const dnnl::reorder& r, const float* w, const Tensor* constant_w,
                               dnnl::stream& s);

/// This thread's memory objects for the primitives it ran last, to be pointed at each call's
/// buffers with set_data_handle and passed to the C API's execute: creating the dnnl::memory
/// objects and an argument map per call took ~6% of bert_tiny 1x32 at tier 0
/// (dnnl_memory_create and malloc in perf). `Bound` is a struct with a
/// `std::shared_ptr<Entry> entry` member and the memories; a slot holds its entry, so an
/// entry's address cannot be reused while cached here. Use as a thread_local. 64 slots: a
/// bert_tiny request binds 5-10 entries, so 16 slots rebound on most calls when requests of
/// different shapes alternate (6 alternating shapes, tier 0: 1x16 p50 0.139-0.159 -> 0.134-0.136
/// ms; a lookup scans the slots, ~1 ns each).
template <class Entry, class Bound, size_t kSlots = 64>
class ThreadBindings {
 public:
  /// The slot of `e`, made by `make(e)` (returning a Bound with entry = e) when not held.
  template <class Make>
  Bound& get(const std::shared_ptr<Entry>& e, Make make) {
    for (Bound& m : slots_)
      if (m.entry == e) return m;
    Bound& m = slots_[next_++ % kSlots];
    m = make(e);
    return m;
  }

 private:
  std::array<Bound, kSlots> slots_;
  size_t next_ = 0;
};

/// Primitives by key (a geometry), least recently used first out past `capacity` entries:
/// under shape churn (a new batch size per call) primitives and their JIT code must not pile up
/// (4,096 matmul primitives held +50 MB under the resident-memory test). Thread-safe; a
/// primitive in use by a call is held by its shared_ptr even if evicted meanwhile.
template <class Key, class Entry>
class PrimitiveCache {
 public:
  explicit PrimitiveCache(size_t capacity) : capacity_(capacity) {}

  /// The cached entry for `key` (now the most recently used), or null; makes nothing.
  std::shared_ptr<Entry> find(const Key& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->second;
  }

  /// The cached entry for `key`, or the one `make()` creates (outside the lock; may throw
  /// dnnl::error, which propagates and caches nothing).
  template <class Make>
  std::shared_ptr<Entry> get(const Key& key, Make make) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = map_.find(key);
      if (it != map_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second);
        return it->second->second;
      }
    }
    std::shared_ptr<Entry> e = make();
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);  // another thread may have made it meanwhile
    if (it != map_.end()) return it->second->second;
    lru_.emplace_front(key, e);
    map_.emplace(key, lru_.begin());
    while (lru_.size() > capacity_) {
      map_.erase(lru_.back().first);
      lru_.pop_back();
    }
    return e;
  }

 private:
  using Item = std::pair<Key, std::shared_ptr<Entry>>;
  const size_t capacity_;
  std::mutex mu_;
  std::list<Item> lru_;  // most recently used first
  std::map<Key, typename std::list<Item>::iterator> map_;
};

/// Primitives kept per kind (matmul, convolution): enough for every layer of a network at a few
/// hot batch sizes; creating one again costs 0.05-0.5 ms.
inline constexpr size_t kPrimitiveCacheEntries = 256;

}  // namespace tierjit::interp::nn::dnnl_glue
