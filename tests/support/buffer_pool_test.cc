// The process-wide buffer pool of large tensor buffers (support/buffer_pool.h): small requests
// bypass it, a freed buffer serves the next request of its size class (or of a class down to half
// its size), kept bytes stay within the budget, Tensors of pooled sizes use it. The pool is
// process-wide, so expectations are on differences of its counters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "support/buffer_pool.h"
#include "tierjit/tensor.h"

namespace tierjit::support {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(BufferPool, SmallRequestsBypassThePool) {
  const uint64_t before = buffer_pool_stats().pooled_allocs;
  for (size_t bytes : {size_t{1}, size_t{64}, size_t{4096}, kPooledMinBytes - 1}) {
    void* p = buffer_alloc(bytes);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << bytes;
    std::memset(p, 1, bytes);
    buffer_free(p, bytes);
  }
  EXPECT_EQ(buffer_pool_stats().pooled_allocs, before);
}

TEST(BufferPool, FreedBufferServesTheNextRequestOfItsClass) {
  const size_t bytes = 3 * kMiB + 12345;
  void* a = buffer_alloc(bytes);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 4096, 0u);
  std::memset(a, 7, bytes);  // the whole request is writable
  buffer_free(a, bytes);
  const BufferPoolStats s0 = buffer_pool_stats();
  void* b = buffer_alloc(bytes - 1000);  // same size class
  EXPECT_EQ(b, a);
  const BufferPoolStats s1 = buffer_pool_stats();
  EXPECT_EQ(s1.reuses, s0.reuses + 1);
  EXPECT_EQ(s1.maps, s0.maps);
  buffer_free(b, bytes - 1000);
}

TEST(BufferPool, ASmallerRequestTakesAKeptBufferUpToEightTimesItsSize) {
  // Classes are 8 per power of two: ..., 512 KiB, ..., 1 MiB, ..., 4 MiB, 4.5 MiB, 5 MiB; a
  // request may take a kept buffer up to 24 classes (8x) above its own.
  buffer_pool_release_kept();
  void* a = buffer_alloc(5 * kMiB);
  buffer_free(a, 5 * kMiB);
  void* b = buffer_alloc(kMiB);  // 18 classes below 5 MiB: reuses it
  EXPECT_EQ(b, a);
  buffer_free(b, kMiB);  // freed with the request's size: the pool knows its real class
  void* c = buffer_alloc(5 * kMiB);
  EXPECT_EQ(c, a);
  std::memset(c, 1, 5 * kMiB);
  buffer_free(c, 5 * kMiB);
  void* d = buffer_alloc(kMiB / 2);  // 26 classes below: a fresh mapping, 5 MiB stays kept
  EXPECT_NE(d, a);
  buffer_free(d, kMiB / 2);
  // With both kept, a request takes the smallest class that fits.
  void* e = buffer_alloc(kMiB / 2);
  EXPECT_EQ(e, d);
  buffer_free(e, kMiB / 2);
}

TEST(BufferPool, KeptBytesStayWithinTheBudget) {
  buffer_pool_release_kept();
  // Free many buffers of distinct classes at once: more than the budget would be kept.
  std::vector<std::pair<void*, size_t>> live;
  size_t total = 0;
  for (size_t i = 0; total < 200 * kMiB; ++i) {
    const size_t bytes = kMiB + i * 300 * 1024;
    live.emplace_back(buffer_alloc(bytes), bytes);
    total += bytes;
  }
  for (auto [p, bytes] : live) buffer_free(p, bytes);
  const BufferPoolStats s = buffer_pool_stats();
  EXPECT_LE(s.kept_bytes, s.budget_bytes);
  EXPECT_GE(s.budget_bytes, size_t{32} << 20);
  EXPECT_GE(s.peak_in_use_bytes, total);
  EXPECT_GE(s.budget_bytes, std::min(total, size_t{1} << 30));  // the budget follows the peak
  EXPECT_GT(s.kept_bytes, 0u);
  buffer_pool_release_kept();
  EXPECT_EQ(buffer_pool_stats().kept_bytes, 0u);
  // A buffer larger than the budget's 1 GiB cap is unmapped when freed (never touched here, so
  // it costs address space only).
  const size_t huge = size_t{3} << 29;  // 1.5 GiB
  void* p = buffer_alloc(huge);
  const uint64_t unmaps = buffer_pool_stats().unmaps;
  buffer_free(p, huge);
  EXPECT_EQ(buffer_pool_stats().unmaps, unmaps + 1);
  EXPECT_EQ(buffer_pool_stats().kept_bytes, 0u);
  EXPECT_EQ(buffer_pool_stats().budget_bytes, size_t{1} << 30);
}

TEST(BufferPool, TensorsOfPooledSizesUseIt) {
  const uint64_t before = buffer_pool_stats().pooled_allocs;
  {
    Tensor t = Tensor::zeros(DType::kFloat32, {512, 512});  // 1 MiB
    EXPECT_EQ(t.span<float>()[512 * 512 - 1], 0.f);
    Tensor small = Tensor::zeros(DType::kFloat32, {16});
    EXPECT_EQ(reinterpret_cast<uintptr_t>(small.raw_data()) % kTensorAlignment, 0u);
  }
  EXPECT_EQ(buffer_pool_stats().pooled_allocs, before + 1);
  // Strings in a pooled buffer are constructed and destroyed like any others.
  Tensor s = Tensor::empty(DType::kString, {int64_t{kPooledMinBytes / sizeof(std::string)} + 1});
  s.data<std::string>()[3] = std::string(100, 'x');
  EXPECT_EQ(s.data<std::string>()[0], "");
}

TEST(BufferPool, ConcurrentAllocAndFree) {
  auto work = [](int seed) {
    for (int i = 0; i < 200; ++i) {
      const size_t bytes = kPooledMinBytes + static_cast<size_t>((seed * 7919 + i * 104729) % (8 << 20));
      auto* p = static_cast<unsigned char*>(buffer_alloc(bytes));
      p[0] = p[bytes - 1] = static_cast<unsigned char>(i);
      buffer_free(p, bytes);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back(work, t);
  for (auto& t : threads) t.join();
  const BufferPoolStats s = buffer_pool_stats();
  EXPECT_LE(s.kept_bytes, s.budget_bytes);
}

}  // namespace
}  // namespace tierjit::support
