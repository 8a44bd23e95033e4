// Tests of the L1 code cache: hits and misses, the byte budget, eviction by value (hits x µs
// saved + compile µs per byte) with LRU-2 tie-break, entries kept alive by holders after
// eviction, and the cache key's sensitivity to every factor.
#include "cache/memory_cache.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "cache/key.h"

namespace tierjit::cache {
namespace {

std::shared_ptr<const void> blob(int v) { return std::make_shared<const int>(v); }

TEST(MemoryCache, HitMissAndStats) {
  MemoryCache c(1000);
  EXPECT_EQ(c.find(1), nullptr);
  EXPECT_TRUE(c.insert(1, blob(7), 100, 5000, 10.0, "r0 tier 2").empty());
  auto v = c.find_as<int>(1);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(*v, 7);
  MemoryCacheStats s = c.stats();
  EXPECT_EQ(s.entries, 1u);
  EXPECT_EQ(s.bytes, 100u);
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_DOUBLE_EQ(s.hit_rate(), 0.5);
}

TEST(MemoryCache, ValueFormula) {
  // (3 hits x 10 µs + 5000 µs) / 100 bytes = 50.3 µs per byte.
  EXPECT_DOUBLE_EQ(MemoryCache::value_of(3, 10.0, 5000, 100), 50.3);
  EXPECT_DOUBLE_EQ(MemoryCache::value_of(0, 10.0, 0, 0), 0.0);  // bytes clamped to 1
}

TEST(MemoryCache, EvictsLowestValuePerByteFirst) {
  MemoryCache c(300);
  c.insert(1, blob(1), 100, 1000, 0, "cheap");    // 10 µs/byte
  c.insert(2, blob(2), 100, 50000, 0, "costly");  // 500 µs/byte
  c.insert(3, blob(3), 100, 20000, 0, "middle");  // 200 µs/byte
  auto ev = c.insert(4, blob(4), 100, 30000, 0, "new");  // 300 µs/byte: over budget by 100
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].key, 1u);
  EXPECT_EQ(ev[0].what, "cheap");
  EXPECT_DOUBLE_EQ(ev[0].value, 10.0);
  EXPECT_EQ(c.find(1), nullptr);
  EXPECT_NE(c.find(2), nullptr);
  EXPECT_EQ(c.stats().evictions, 1u);
  EXPECT_LE(c.stats().bytes, 300u);
}

TEST(MemoryCache, HitsRaiseValue) {
  MemoryCache c(200);
  c.insert(1, blob(1), 100, 1000, 100.0, "hot");  // starts at 10 µs/byte
  c.insert(2, blob(2), 100, 2000, 0.0, "cold");   // 20 µs/byte
  for (int i = 0; i < 5; ++i) c.find(1);          // (5 x 100 + 1000) / 100 = 15... still lower
  for (int i = 0; i < 10; ++i) c.find(1);         // (15 x 100 + 1000) / 100 = 25 > 20
  auto ev = c.insert(3, blob(3), 100, 10000, 0.0, "new");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].key, 2u);
}

TEST(MemoryCache, TieBrokenByOlderSecondToLastAccess) {
  MemoryCache c(200);
  c.insert(1, blob(1), 100, 1000, 0, "a");
  c.insert(2, blob(2), 100, 1000, 0, "b");  // same value as a
  c.find(1);  // hits change value only through saved µs (0 here): a and b still tie
  c.find(2);
  c.find(2);  // b's second-to-last access is now more recent than a's
  auto ev = c.insert(3, blob(3), 100, 100000, 0, "c");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].key, 1u);
}

TEST(MemoryCache, OversizedEntryIsEvictedAndHoldersKeepIt) {
  MemoryCache c(100);
  auto held = blob(42);
  auto ev = c.insert(9, held, 1000, 1, 0, "huge");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(c.stats().entries, 0u);
  EXPECT_EQ(*std::static_pointer_cast<const int>(held), 42);  // still valid for its holder
}

TEST(MemoryCache, ReplaceAndEraseAndBudgetChange) {
  MemoryCache c(1000);
  c.insert(1, blob(1), 400, 1, 0);
  c.insert(1, blob(2), 300, 1, 0);  // replaces: bytes 300, not 700
  EXPECT_EQ(c.stats().bytes, 300u);
  EXPECT_EQ(*c.find_as<int>(1), 2);
  c.insert(2, blob(3), 300, 1, 0);
  EXPECT_EQ(c.set_budget(300).size(), 1u);
  EXPECT_EQ(c.stats().bytes, 300u);
  EXPECT_TRUE(c.erase(c.find(1) ? 1 : 2));
  EXPECT_EQ(c.stats().entries, 0u);
  EXPECT_FALSE(c.erase(77));
  MemoryCache none(0);
  EXPECT_EQ(none.insert(1, blob(1), 1, 1, 0).size(), 1u);
}

TEST(MemoryCache, ConcurrentUseStaysWithinBudget) {
  MemoryCache c(64 * 100);
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; ++t)
    ts.emplace_back([&c, t] {
      for (int i = 0; i < 2000; ++i) {
        uint64_t k = static_cast<uint64_t>((t * 7919 + i) % 200) + 1;
        if (!c.find(k)) c.insert(k, blob(i), 100, i % 50, 1.0);
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_LE(c.stats().bytes, 6400u);
  EXPECT_GT(c.stats().hits, 0u);
}

TEST(CacheKey, EveryFactorChangesTheKey) {
  CacheKeyParts base;
  base.function_hash = 0x1234;
  base.specialization = "exact [8,64]";
  base.tier = 2;
  base.codegen_options = "lanes=16";
  base.target = "x86_64-pc-linux-gnu|x86-64-v4|+avx2,+avx512f";
  base.llvm_version = "16.0.6";
  std::set<uint64_t> keys = {cache_key(base)};
  auto vary = [&](auto mutate) {
    CacheKeyParts p = base;
    mutate(p);
    EXPECT_TRUE(keys.insert(cache_key(p)).second) << describe(p);
  };
  vary([](CacheKeyParts& p) { p.function_hash = 0x1235; });
  vary([](CacheKeyParts& p) { p.specialization = "generic"; });
  vary([](CacheKeyParts& p) { p.tier = 3; });
  vary([](CacheKeyParts& p) { p.codegen_options = "lanes=8"; });
  vary([](CacheKeyParts& p) { p.target = "x86_64-pc-linux-gnu|x86-64-v3|+avx2"; });
  vary([](CacheKeyParts& p) { p.llvm_version = "17.0.0"; });
  vary([](CacheKeyParts& p) { p.build_id = "other"; });
  vary([](CacheKeyParts& p) { p.format_version = 2; });
  // Length-prefixed parts: moving text between fields changes the key.
  vary([](CacheKeyParts& p) {
    p.specialization = "exact [8,64]lanes=16";
    p.codegen_options = "";
  });
  EXPECT_EQ(cache_key(base), cache_key(base));
  EXPECT_NE(cache_key(base), 0u);
  EXPECT_NE(base.build_id.find('+'), std::string::npos) << base.build_id;
  EXPECT_NE(describe(base).find("tier 2 exact"), std::string::npos) << describe(base);
}

}  // namespace
}  // namespace tierjit::cache
