// The per-thread cache of small tensor buffers (support/buffer_pool.h, below kPooledMinBytes): a
// freed buffer serves the next request of its size class on the freeing thread, classes are
// 64-byte steps up to 1 KiB and then 4 per power of two, zero-size requests get a buffer, every
// buffer is 64-byte aligned, a buffer may be freed on another thread than it was allocated on, the
// kept bytes stay bounded and a thread's cache is freed when the thread exits. The cache is the
// calling thread's, so each test starts by releasing it.
#include <gtest/gtest.h>

#include <malloc.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "support/buffer_pool.h"
#include "tierjit/tensor.h"

namespace tierjit::support {
namespace {

bool aligned64(const void* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }

TEST(SmallBufferCache, FreedBufferServesTheNextRequestOfItsClass) {
  small_buffer_cache_release();
  void* a = buffer_alloc(1000);
  std::memset(a, 3, 1000);
  buffer_free(a, 1000);
  SmallBufferCacheStats s = small_buffer_cache_stats();
  EXPECT_EQ(s.kept_buffers, 1u);
  EXPECT_EQ(s.kept_bytes, 1024u);  // 1000 bytes are in the 1024-byte class
  void* b = buffer_alloc(1024);    // same class
  EXPECT_EQ(b, a);
  EXPECT_EQ(small_buffer_cache_stats().hits, s.hits + 1);
  EXPECT_EQ(small_buffer_cache_stats().kept_bytes, 0u);
  std::memset(b, 4, 1024);
  buffer_free(b, 1024);
  void* c = buffer_alloc(1025);  // the next class (1280 bytes): a fresh buffer
  EXPECT_NE(c, a);
  EXPECT_EQ(small_buffer_cache_stats().misses, s.misses + 1);
  std::memset(c, 5, 1025);
  buffer_free(c, 1025);
  small_buffer_cache_release();
  EXPECT_EQ(small_buffer_cache_stats().kept_bytes, 0u);
  EXPECT_EQ(small_buffer_cache_stats().kept_buffers, 0u);
}

TEST(SmallBufferCache, SizeClasses) {
  // Pairs in one class reuse each other's buffer; the second of each pair is one class above.
  const std::pair<size_t, size_t> same[] = {
      {1, 64}, {65, 128}, {961, 1024}, {1025, 1280}, {1537, 1792}, {2049, 2560},
      {3584 + 1, 4096}, {96 * 1024 + 1, 112 * 1024}, {112 * 1024 + 1, kPooledMinBytes - 1}};
  for (auto [lo, hi] : same) {
    small_buffer_cache_release();
    void* a = buffer_alloc(hi);
    std::memset(a, 1, hi);
    buffer_free(a, hi);
    void* b = buffer_alloc(lo);
    EXPECT_EQ(b, a) << lo << " and " << hi << " bytes should share a class";
    buffer_free(b, lo);
    void* c = buffer_alloc(hi + 1);
    EXPECT_NE(c, a) << hi + 1 << " bytes should be in the class above " << hi;
    buffer_free(c, hi + 1);
  }
  small_buffer_cache_release();
}

TEST(SmallBufferCache, ZeroSizeAndAlignment) {
  small_buffer_cache_release();
  void* z = buffer_alloc(0);
  ASSERT_NE(z, nullptr);
  EXPECT_TRUE(aligned64(z));
  buffer_free(z, 0);
  void* one = buffer_alloc(1);  // size 0 is in the 64-byte class
  EXPECT_EQ(one, z);
  buffer_free(one, 1);
  // Every size below the pool, fresh and reused, is 64-byte aligned and writable in full.
  for (int round = 0; round < 2; ++round) {
    std::vector<std::pair<void*, size_t>> live;
    for (size_t bytes = 1; bytes < kPooledMinBytes; bytes = bytes * 5 / 4 + 7) {
      void* p = buffer_alloc(bytes);
      ASSERT_NE(p, nullptr);
      EXPECT_TRUE(aligned64(p)) << bytes;
      std::memset(p, 0xab, bytes);
      live.emplace_back(p, bytes);
    }
    for (auto [p, bytes] : live) buffer_free(p, bytes);
  }
  EXPECT_GT(small_buffer_cache_stats().hits, 0u);
  small_buffer_cache_release();
}

TEST(SmallBufferCache, KeptBytesAndBuffersAreBounded) {
  small_buffer_cache_release();
  // 100 buffers of one class: at most 32 are kept.
  std::vector<void*> live;
  for (int i = 0; i < 100; ++i) live.push_back(buffer_alloc(256));
  for (void* p : live) buffer_free(p, 256);
  EXPECT_EQ(small_buffer_cache_stats().kept_buffers, 32u);
  EXPECT_EQ(small_buffer_cache_stats().kept_bytes, 32u * 256);
  small_buffer_cache_release();
  // Many large small buffers: at most kSmallCacheBytesPerThread bytes are kept.
  live.clear();
  const size_t bytes = 100 * 1024;  // 112 KiB class
  for (size_t i = 0; i < 2 * kSmallCacheBytesPerThread / bytes; ++i)
    live.push_back(buffer_alloc(bytes));
  for (void* p : live) buffer_free(p, bytes);
  const SmallBufferCacheStats s = small_buffer_cache_stats();
  EXPECT_LE(s.kept_bytes, kSmallCacheBytesPerThread);
  EXPECT_GT(s.kept_bytes, kSmallCacheBytesPerThread - 112 * 1024);
  small_buffer_cache_release();
}

TEST(SmallBufferCache, BufferFreedOnAnotherThreadServesThatThread) {
  small_buffer_cache_release();
  std::vector<void*> from_worker;
  SmallBufferCacheStats worker_stats;
  std::thread([&] {
    for (int i = 0; i < 8; ++i) {
      auto* p = static_cast<unsigned char*>(buffer_alloc(4000));
      p[0] = p[3999] = static_cast<unsigned char>(i);
      from_worker.push_back(p);
    }
    worker_stats = small_buffer_cache_stats();
  }).join();
  EXPECT_EQ(worker_stats.misses, 8u);
  EXPECT_EQ(worker_stats.kept_buffers, 0u);
  for (void* p : from_worker) buffer_free(p, 4000);  // kept by this thread's cache
  EXPECT_EQ(small_buffer_cache_stats().kept_buffers, 8u);
  void* q = buffer_alloc(4000);
  EXPECT_EQ(q, from_worker.back());
  buffer_free(q, 4000);
  // And the other way round: buffers of this thread freed by many threads at once.
  std::vector<std::vector<void*>> parts(4);
  for (auto& part : parts)
    for (int i = 0; i < 50; ++i) part.push_back(buffer_alloc(static_cast<size_t>(64 + 97 * i)));
  std::vector<std::thread> threads;
  for (auto& part : parts)
    threads.emplace_back([&part] {
      for (int round = 0; round < 3; ++round) {
        for (size_t i = 0; i < part.size(); ++i) {
          buffer_free(part[i], 64 + 97 * i);
          part[i] = buffer_alloc(64 + 97 * i);  // from this thread's cache after round 0
          std::memset(part[i], static_cast<int>(round), 64 + 97 * i);
        }
      }
      for (size_t i = 0; i < part.size(); ++i) buffer_free(part[i], 64 + 97 * i);
    });
  for (auto& t : threads) t.join();
  small_buffer_cache_release();
}

TEST(SmallBufferCache, ThreadExitFreesItsCache) {
  // A thread that keeps ~1.5 MiB of 64 KiB buffers (below glibc's mmap threshold, so malloc'd
  // from the heap) gives them back when it exits: the heap's bytes in use return to where they
  // were (mallinfo2 sums every arena).
  const size_t before = mallinfo2().uordblks;
  size_t kept = 0;
  std::thread([&kept] {
    std::vector<void*> live;
    for (int i = 0; i < 24; ++i) live.push_back(buffer_alloc(64 * 1024));
    for (void* p : live) buffer_free(p, 64 * 1024);
    kept = small_buffer_cache_stats().kept_bytes;
  }).join();
  EXPECT_EQ(kept, 24u * 64 * 1024);
  const size_t after = mallinfo2().uordblks;
  EXPECT_LT(after, before + 512 * 1024) << "heap in use " << before << " -> " << after << " bytes";
}

TEST(SmallBufferCache, TensorsReuseFreedStorage) {
  small_buffer_cache_release();
  const void* first = nullptr;
  {
    Tensor t = Tensor::zeros(DType::kFloat32, {16, 128});  // 8 KiB
    first = t.raw_data();
    EXPECT_TRUE(aligned64(first));
  }
  Tensor u = Tensor::empty(DType::kFloat32, {2048});
  EXPECT_EQ(u.raw_data(), first);
  Tensor empty = Tensor::zeros(DType::kFloat32, {0, 5});
  EXPECT_NE(empty.raw_data(), nullptr);
  EXPECT_TRUE(aligned64(empty.raw_data()));
}

}  // namespace
}  // namespace tierjit::support
