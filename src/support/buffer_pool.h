// Process-wide pool of large tensor buffers (every TensorStorage of at least kPooledMinBytes, and
// the Plans' arenas): page-aligned anonymous mappings kept for reuse in size classes, off the
// malloc heap. Per-call tensors of changing sizes (a served model's batch dim) otherwise land on
// glibc's heap above its dynamic mmap threshold, where they fragment it and keep freed pages
// resident (docs/runtime.md, "Memory under shape churn"). The free buffers kept are bounded in
// bytes; anything beyond is unmapped at once, so resident memory follows the live tensors.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tierjit::support {

/// Requests of at least this many bytes are pooled; smaller ones come from the calling thread's
/// small-buffer cache (below), else aligned_alloc.
inline constexpr size_t kPooledMinBytes = size_t{128} << 10;

/// Free small buffers (< kPooledMinBytes) each thread keeps for reuse, bytes at most.
inline constexpr size_t kSmallCacheBytesPerThread = size_t{2} << 20;

/// A buffer of at least `bytes` bytes, 64-byte aligned (page-aligned when pooled): the most
/// recently kept buffer of the smallest size class that has one, from the request's class up to
/// 8 times its size (8 classes per power of two), else a fresh mapping (zero pages, faulted in on
/// first touch). Below kPooledMinBytes: the last buffer of the request's size class (64-byte
/// steps up to 1 KiB, then 4 classes per power of two) that this thread freed and kept, else
/// aligned_alloc of the class's size. Size 0 gets a 64-byte buffer. Throws std::bad_alloc when
/// the system has no memory.
void* buffer_alloc(size_t bytes);

/// Returns a buffer from buffer_alloc(bytes) (the same `bytes`), from any thread. A pooled one is
/// kept for reuse while the kept bytes stay within the budget (see buffer_pool_stats), else
/// unmapped. A small one is kept by the calling thread's cache while it holds at most 32 of its
/// class and kSmallCacheBytesPerThread bytes, else freed; a thread's cache is freed when the
/// thread exits. Thread-safe.
void buffer_free(void* p, size_t bytes);

/// The calling thread's small-buffer cache (buffers below kPooledMinBytes).
struct SmallBufferCacheStats {
  uint64_t hits = 0;         ///< small buffer_alloc calls served by a kept buffer
  uint64_t misses = 0;       ///< ... served by aligned_alloc
  size_t kept_bytes = 0;     ///< free buffers kept now (size classes), <= kSmallCacheBytesPerThread
  size_t kept_buffers = 0;
};
SmallBufferCacheStats small_buffer_cache_stats();

/// Frees every small buffer the calling thread's cache keeps.
void small_buffer_cache_release();

struct BufferPoolStats {
  uint64_t pooled_allocs = 0;  ///< buffer_alloc calls served by the pool (>= kPooledMinBytes)
  uint64_t reuses = 0;         ///< ... of them served by a kept buffer
  uint64_t maps = 0, unmaps = 0;
  size_t in_use_bytes = 0;     ///< pooled bytes handed out now (size classes)
  size_t peak_in_use_bytes = 0;
  size_t kept_bytes = 0;       ///< free buffers kept for reuse
  /// Bound on kept_bytes: max(64 MiB, 2 x peak_in_use_bytes), at most 1 GiB — enough to serve
  /// a repeat of the largest call seen without a fresh mapping, with room for other sizes.
  size_t budget_bytes = 0;
};
BufferPoolStats buffer_pool_stats();

/// Unmaps every kept buffer (live ones are untouched); e.g. after a burst of large requests.
void buffer_pool_release_kept();

}  // namespace tierjit::support
