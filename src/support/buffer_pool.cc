// Process-wide pool of large tensor buffers (see buffer_pool.h): size classes of 8 per power of
// two (at most 12.5% rounding), a deque of kept buffers per class (reuse takes the newest of the
// smallest class that fits, up to 2x the request; the budget evicts the oldest kept anywhere),
// one mutex. Small buffers: a per-thread cache of aligned_alloc'd buffers in size classes (64-byte
// steps up to 1 KiB, then 4 per power of two), bounded in bytes, freed when the thread exits.
#include "support/buffer_pool.h"

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <new>
#include <unordered_map>

namespace tierjit::support {

namespace {

constexpr int kMinOctave = 17;  // 2^17 = kPooledMinBytes
constexpr int kMaxOctave = 40;  // larger requests are mapped and unmapped without pooling
constexpr int kStepsPerOctave = 8;
constexpr int kClasses = (kMaxOctave - kMinOctave + 1) * kStepsPerOctave;
// A request may take a kept buffer up to 8x its size rather than map (and fault in) a fresh
// one: a batch of 2 after a batch of 8 reuses the larger activations. mobilenet_v2's Zipf trace
// (batch 1-8) faulted 69K pages with 2x, 59K with 8x; resnet18's 76K -> 70K (0.77 us a fault).
constexpr int kLargerClassesTried = 24;
constexpr size_t kMinBudget = size_t{64} << 20;
constexpr size_t kMaxBudget = size_t{1} << 30;
static_assert(kPooledMinBytes == size_t{1} << kMinOctave);

/// Size class of `bytes` (>= kPooledMinBytes) and its size; -1 beyond the largest class.
int class_of(size_t bytes, size_t* class_bytes) {
  const int octave = std::bit_width(bytes) - 1;  // 2^octave <= bytes
  if (octave > kMaxOctave) {
    *class_bytes = (bytes + 4095) / 4096 * 4096;
    return -1;
  }
  const size_t step = (size_t{1} << octave) / kStepsPerOctave;
  const size_t steps = (bytes + step - 1) / step;  // 8..16
  *class_bytes = steps * step;
  // steps == 16 is the first class of the next octave.
  const int c = (octave - kMinOctave) * kStepsPerOctave + static_cast<int>(steps - kStepsPerOctave);
  return c < kClasses ? c : -1;
}

size_t bytes_of_class(int c) {
  const int octave = kMinOctave + c / kStepsPerOctave;
  return (size_t{1} << octave) / kStepsPerOctave * static_cast<size_t>(kStepsPerOctave + c % kStepsPerOctave);
}

struct Kept {
  void* p;
  uint64_t seq;  // when it was freed (oldest evicted first)
};

struct Pool {
  std::mutex mu;
  std::array<std::deque<Kept>, kClasses> kept;
  std::unordered_map<void*, int> live;  // pooled buffer -> its class (it may be above the request's)
  uint64_t seq = 0;
  BufferPoolStats stats;

  size_t budget() const {
    return std::min(kMaxBudget, std::max(kMinBudget, 2 * stats.peak_in_use_bytes));
  }
  // Unmaps the oldest kept buffer; false when none is kept.
  bool evict_oldest() {
    int best = -1;
    for (int c = 0; c < kClasses; ++c)
      if (!kept[c].empty() && (best < 0 || kept[c].front().seq < kept[best].front().seq)) best = c;
    if (best < 0) return false;
    munmap(kept[best].front().p, bytes_of_class(best));
    kept[best].pop_front();
    stats.kept_bytes -= bytes_of_class(best);
    ++stats.unmaps;
    return true;
  }
};

Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: tensors may be freed during static destruction
  return *p;
}

void* map_bytes(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return p;
}

// ---- per-thread cache of small buffers ------------------------------------------------------

constexpr size_t kSmallStep = 64;           // classes 64, 128, ..., 1024 bytes
constexpr int kSmallLinearClasses = 16;     // ... then 4 per power of two, 1280 .. 128 KiB
constexpr int kSmallStepsPerOctave = 4;
constexpr int kSmallFirstOctave = 10;       // 2^10 = 1 KiB, the last linear class
constexpr int kSmallClasses =
    kSmallLinearClasses + (kMinOctave - kSmallFirstOctave) * kSmallStepsPerOctave;
constexpr int kSmallSlots = 32;             // kept buffers per class at most

/// Size class of a small request (bytes < kPooledMinBytes) and its size (a multiple of 64).
int small_class_of(size_t bytes, size_t* class_bytes) {
  if (bytes <= kSmallStep * kSmallLinearClasses) {
    const size_t steps = std::max<size_t>((bytes + kSmallStep - 1) / kSmallStep, 1);
    *class_bytes = steps * kSmallStep;
    return static_cast<int>(steps) - 1;
  }
  const int octave = std::bit_width(bytes - 1) - 1;  // 2^octave < bytes <= 2^(octave+1)
  const size_t step = (size_t{1} << octave) / kSmallStepsPerOctave;
  const size_t steps = (bytes + step - 1) / step;  // 5..8 steps of 2^octave / 4
  *class_bytes = steps * step;
  return kSmallLinearClasses + (octave - kSmallFirstOctave) * kSmallStepsPerOctave +
         static_cast<int>(steps) - kSmallStepsPerOctave - 1;
}

struct SmallCache {
  std::array<std::array<void*, kSmallSlots>, kSmallClasses> slots;
  std::array<uint8_t, kSmallClasses> count{};
  SmallBufferCacheStats stats;

  void release() {
    for (int c = 0; c < kSmallClasses; ++c) {
      for (int i = 0; i < count[c]; ++i) std::free(slots[c][i]);
      count[c] = 0;
    }
    stats.kept_bytes = 0;
    stats.kept_buffers = 0;
  }
};

// The calling thread's cache: created on first use, released when the thread exits. Afterwards
// (tensors freed by later thread-exit or static destructors) small buffers go straight to free().
thread_local bool t_small_cache_gone = false;

struct SmallCacheHolder {
  SmallCache* cache = new SmallCache;
  ~SmallCacheHolder() {
    cache->release();
    delete cache;
    t_small_cache_gone = true;
  }
};

SmallCache* small_cache() {
  if (t_small_cache_gone) return nullptr;
  thread_local SmallCacheHolder holder;
  return holder.cache;
}

void* small_alloc(size_t bytes) {
  size_t class_bytes = 0;
  const int c = small_class_of(bytes, &class_bytes);
  if (SmallCache* sc = small_cache()) {
    if (sc->count[c] > 0) {
      ++sc->stats.hits;
      --sc->stats.kept_buffers;
      sc->stats.kept_bytes -= class_bytes;
      return sc->slots[c][--sc->count[c]];
    }
    ++sc->stats.misses;
  }
  void* p = std::aligned_alloc(64, class_bytes);
  if (!p) throw std::bad_alloc();
  return p;
}

void small_free(void* p, size_t bytes) {
  size_t class_bytes = 0;
  const int c = small_class_of(bytes, &class_bytes);
  SmallCache* sc = small_cache();
  if (sc && sc->count[c] < kSmallSlots &&
      sc->stats.kept_bytes + class_bytes <= kSmallCacheBytesPerThread) {
    sc->slots[c][sc->count[c]++] = p;
    sc->stats.kept_bytes += class_bytes;
    ++sc->stats.kept_buffers;
    return;
  }
  std::free(p);
}

}  // namespace

SmallBufferCacheStats small_buffer_cache_stats() {
  SmallCache* sc = small_cache();
  return sc ? sc->stats : SmallBufferCacheStats{};
}

void small_buffer_cache_release() {
  if (SmallCache* sc = small_cache()) sc->release();
}

void* buffer_alloc(size_t bytes) {
  if (bytes < kPooledMinBytes) return small_alloc(bytes);
  size_t class_bytes = 0;
  const int c = class_of(bytes, &class_bytes);
  if (c < 0) return map_bytes(class_bytes);
  Pool& pl = pool();
  std::lock_guard<std::mutex> lock(pl.mu);
  ++pl.stats.pooled_allocs;
  int from = -1;
  for (int k = c; k < std::min(kClasses, c + 1 + kLargerClassesTried) && from < 0; ++k)
    if (!pl.kept[k].empty()) from = k;
  void* p = nullptr;
  if (from >= 0) {
    p = pl.kept[from].back().p;
    pl.kept[from].pop_back();
    pl.stats.kept_bytes -= bytes_of_class(from);
    ++pl.stats.reuses;
  } else {
    from = c;
    p = map_bytes(class_bytes);
    ++pl.stats.maps;
  }
  pl.live.emplace(p, from);
  pl.stats.in_use_bytes += bytes_of_class(from);
  pl.stats.peak_in_use_bytes = std::max(pl.stats.peak_in_use_bytes, pl.stats.in_use_bytes);
  return p;
}

void buffer_free(void* p, size_t bytes) {
  if (!p) return;
  if (bytes < kPooledMinBytes) {
    small_free(p, bytes);
    return;
  }
  size_t class_bytes = 0;
  if (class_of(bytes, &class_bytes) < 0) {
    munmap(p, class_bytes);
    return;
  }
  Pool& pl = pool();
  std::lock_guard<std::mutex> lock(pl.mu);
  auto it = pl.live.find(p);
  if (it == pl.live.end()) {  // not from buffer_alloc: a caller bug; do not keep it
    munmap(p, class_bytes);
    return;
  }
  const int c = it->second;
  pl.live.erase(it);
  const size_t cb = bytes_of_class(c);
  pl.stats.in_use_bytes -= cb;
  if (cb > pl.budget()) {
    munmap(p, cb);
    ++pl.stats.unmaps;
    return;
  }
  while (pl.stats.kept_bytes + cb > pl.budget() && pl.evict_oldest()) {
  }
  pl.kept[c].push_back({p, ++pl.seq});
  pl.stats.kept_bytes += cb;
}

BufferPoolStats buffer_pool_stats() {
  Pool& pl = pool();
  std::lock_guard<std::mutex> lock(pl.mu);
  BufferPoolStats s = pl.stats;
  s.budget_bytes = pl.budget();
  return s;
}

void buffer_pool_release_kept() {
  Pool& pl = pool();
  std::lock_guard<std::mutex> lock(pl.mu);
  while (pl.evict_oldest()) {
  }
}

}  // namespace tierjit::support
