// VersionTable: monomorphic (inline cache) and polymorphic hits, most specialized version wins,
// deoptimization to generic with its reason, cap -> megamorphic (generic, counted, logged once),
// tier replacement, removal while a call is in flight, and 8 threads looking up during installs.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <random>
#include <thread>
#include <vector>

#include "runtime/version_table.h"
#include "signature_util.h"

namespace tierjit::runtime {
namespace {

class FakeEntry : public VersionEntry {
 public:
  explicit FakeEntry(int id) : id_(id) {}
  Status run(const RegionCall&) const override {
    runs_.fetch_add(1, std::memory_order_relaxed);
    return Status();
  }
  int id() const { return id_; }
  mutable std::atomic<int> runs_{0};

 private:
  int id_;
};

using test_util::sig;

std::shared_ptr<const Version> make(int tier, Specialization spec, int id) {
  return Version::make(tier, std::move(spec), std::make_shared<FakeEntry>(id));
}

int id_of(const LookupResult& r) {
  return r.version ? static_cast<const FakeEntry&>(*r.version->entry).id() : -1;
}

const std::vector<uint8_t> kDyn0{1, 0};

TEST(VersionTable, MonomorphicInlineCache) {
  Metrics m;
  VersionTable t(0, "gemm_0", {}, nullptr, &m);
  EXPECT_EQ(t.install(make(2, Specialization::exact(sig(8)), 1)), InstallResult::kInstalled);
  EXPECT_EQ(t.install(make(0, Specialization::generic(sig(8)), 0)), InstallResult::kInstalled);
  LookupResult first = t.lookup(sig(8));
  EXPECT_EQ(id_of(first), 1);
  EXPECT_FALSE(first.inline_cache_hit);  // resolved through the hash
  LookupResult second = t.lookup(sig(8));
  EXPECT_EQ(id_of(second), 1);
  EXPECT_TRUE(second.inline_cache_hit);
  EXPECT_EQ(second.deopt_from, nullptr);
  EXPECT_EQ(Metrics::get(m.region_calls), 2u);
  EXPECT_EQ(Metrics::get(m.inline_cache_hits), 1u);
  EXPECT_EQ(Metrics::get(m.exact_hits), 2u);
  EXPECT_EQ(second.version->hits.load(), 2u);
}

TEST(VersionTable, PolymorphicMostSpecializedWins) {
  Metrics m;
  VersionTable t(1, "add_1", {}, nullptr, &m);
  t.install(make(0, Specialization::generic(sig(8)), 0));
  t.install(make(2, Specialization::exact(sig(8)), 8));
  t.install(make(2, Specialization::exact(sig(16)), 16));
  t.install(make(2, Specialization::shape_class(sig(100), kDyn0), 128));  // dim 0 in 65..128
  t.install(make(2, Specialization::exact(sig(128)), 1128));
  EXPECT_EQ(t.size(), 5u);
  EXPECT_EQ(id_of(t.lookup(sig(8))), 8);
  EXPECT_EQ(id_of(t.lookup(sig(16))), 16);
  EXPECT_EQ(id_of(t.lookup(sig(100))), 128);
  EXPECT_EQ(id_of(t.lookup(sig(128))), 1128);  // exact beats its own class
  EXPECT_EQ(id_of(t.lookup(sig(65))), 128);
  // 300 fits no specialized version: generic, a deoptimization whose reason is the guard of the
  // specialized version dispatched last (the class version).
  LookupResult r = t.lookup(sig(300));
  EXPECT_EQ(id_of(r), 0);
  ASSERT_NE(r.deopt_from, nullptr);
  EXPECT_EQ(r.deopt_from->guard.check(sig(300))->reason,
            "input 0 dim 0: class 128 (65..128), got 300");
  EXPECT_FALSE(r.megamorphic);
  EXPECT_EQ(Metrics::get(m.deoptimizations), 1u);
  EXPECT_EQ(Metrics::get(m.generic_hits), 1u);
  // Other static dim: also generic.
  EXPECT_EQ(id_of(t.lookup(sig(8, 63))), 0);
  // A repeated signature goes through the inline cache and gets the same answer.
  for (int64_t s : {8, 100, 128, 300}) {
    LookupResult once = t.lookup(sig(s));
    LookupResult again = t.lookup(sig(s));
    EXPECT_TRUE(again.inline_cache_hit) << s;
    EXPECT_EQ(again.version, once.version) << s;
  }
}

TEST(VersionTable, DeoptimizationLoggedWithReason) {
  FakeClock clock(1);
  DecisionLog log(clock, {.capacity = 16, .per_call_limit_per_s = 2, .mirror_to_logger = false});
  VersionTable t(9, "relu_9", {}, &log);
  t.install(make(0, Specialization::generic(sig(8)), 0));
  t.install(make(2, Specialization::exact(sig(128)), 128));
  t.lookup(sig(128));
  for (int i = 0; i < 5; ++i) t.lookup(sig(77));
  auto records = log.records();
  ASSERT_EQ(records.size(), 2u);  // rate limit 2 per second: the other 3 never formatted
  EXPECT_EQ(records[0].kind, DecisionKind::kDeoptimized);
  EXPECT_EQ(records[0].region_name, "relu_9");
  EXPECT_EQ(records[0].message, "input 0 dim 0: specialized 128, got 77; ran generic tier 0");
}

TEST(VersionTable, MissWithoutGeneric) {
  VersionTable t(2, "r", {});
  t.install(make(2, Specialization::exact(sig(8)), 8));
  LookupResult r = t.lookup(sig(9));
  EXPECT_EQ(r.version, nullptr);
  EXPECT_NE(r.deopt_from, nullptr);
}

TEST(VersionTable, CapMakesRegionMegamorphic) {
  FakeClock clock(5);
  DecisionLog log(clock, {.mirror_to_logger = false});
  Metrics m;
  VersionTable t(3, "mul_3", {.cap = 3}, &log, &m);
  EXPECT_EQ(t.install(make(1, Specialization::generic(sig(1)), 0)), InstallResult::kInstalled);
  EXPECT_EQ(t.install(make(2, Specialization::exact(sig(1)), 1)), InstallResult::kInstalled);
  EXPECT_EQ(t.install(make(2, Specialization::exact(sig(2)), 2)), InstallResult::kInstalled);
  EXPECT_FALSE(t.megamorphic());
  EXPECT_EQ(t.install(make(2, Specialization::exact(sig(3)), 3)), InstallResult::kMegamorphic);
  EXPECT_EQ(t.install(make(2, Specialization::exact(sig(4)), 4)), InstallResult::kMegamorphic);
  EXPECT_TRUE(t.megamorphic());
  EXPECT_EQ(t.size(), 3u);
  // Installed shapes keep their versions; the rest run generic, counted as megamorphic calls.
  EXPECT_EQ(id_of(t.lookup(sig(2))), 2);
  LookupResult r = t.lookup(sig(3));
  EXPECT_EQ(id_of(r), 0);
  EXPECT_TRUE(r.megamorphic);
  t.lookup(sig(4));
  EXPECT_EQ(Metrics::get(m.megamorphic_calls), 2u);
  EXPECT_EQ(Metrics::get(m.megamorphic_regions), 1u);
  // Logged once, with its reason (the generic calls are also logged as deoptimized).
  std::vector<DecisionRecord> records;
  for (const DecisionRecord& r : log.records()) {
    if (r.kind == DecisionKind::kMegamorphic) records.push_back(r);
  }
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(log.total(DecisionKind::kDeoptimized), 2u);
  EXPECT_EQ(records[0].region_name, "mul_3");
  EXPECT_EQ(records[0].message,
            "version cap 3 reached, exact float32[3,64] not installed; calls outside the "
            "installed versions run the generic version");
  // A generic version is still accepted past the cap (another dtype's generic).
  Signature h;
  std::vector<int64_t> d{1, 64};
  h.add_input(DType::kFloat16, d);
  EXPECT_EQ(t.install(make(1, Specialization::generic(h), 9)), InstallResult::kInstalled);
  // Removing a version below the cap ends the megamorphic state.
  EXPECT_EQ(t.remove_level(SpecLevel::kExact, "demoted"), 2u);
  EXPECT_FALSE(t.megamorphic());
  EXPECT_EQ(log.records().back().kind, DecisionKind::kEvicted);
}

TEST(VersionTable, SameKeyReplacesOnlyUpward) {
  VersionTable t(4, "r");
  Specialization g = Specialization::generic(sig(8));
  EXPECT_EQ(t.install(make(0, g, 0)), InstallResult::kInstalled);
  EXPECT_EQ(t.install(make(1, g, 1)), InstallResult::kReplaced);
  EXPECT_EQ(t.install(make(0, g, 2)), InstallResult::kKeptHigherTier);
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(id_of(t.lookup(sig(5))), 1);
}

TEST(VersionTable, RemovalKeepsInFlightCallAlive) {
  VersionTable t(5, "r");
  auto v = make(2, Specialization::exact(sig(8)), 8);
  std::weak_ptr<const VersionEntry> entry = v->entry;
  uint64_t key = v->key;
  t.install(std::move(v));
  LookupResult in_flight = t.lookup(sig(8));
  ASSERT_NE(in_flight.version, nullptr);
  EXPECT_TRUE(t.remove(key));
  EXPECT_FALSE(t.remove(key));
  EXPECT_EQ(t.lookup(sig(8)).version, nullptr);
  EXPECT_FALSE(entry.expired());  // the call still holds its code
  EXPECT_TRUE(in_flight.version->entry->run(RegionCall{}).ok());
  in_flight = {};
  EXPECT_TRUE(entry.expired());  // freed once no call can run it
}

// 8 threads look up while the main thread installs, replaces and removes versions. Every answer
// must pass its own guard (never a version whose assumptions the call breaks). Run under
// -fsanitize=thread for data races (build-runtime-tsan, docs/runtime.md).
TEST(VersionTable, ConcurrentLookupsDuringInstalls) {
  Metrics m;
  VersionTable t(6, "r", {.cap = 8}, nullptr, &m);
  t.install(make(0, Specialization::generic(sig(1)), 0));
  constexpr int kThreads = 8, kLookups = 20000;
  std::atomic<int> done{0};
  std::atomic<int64_t> bad{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      std::mt19937 rng(i);
      std::vector<Signature> sigs;
      for (int64_t s : {1, 2, 3, 8, 16, 100, 128, 300}) sigs.push_back(sig(s));
      for (int n = 0; n < kLookups; ++n) {
        const Signature& s = sigs[rng() % sigs.size()];
        LookupResult r = t.lookup(s);
        if (!r.version || !r.version->guard.passes(s) || !r.version->entry->run({}).ok()) ++bad;
      }
      ++done;
    });
  }
  int rounds = 0;
  for (; done.load() < kThreads || rounds < 50; ++rounds) {
    int64_t s = int64_t{1} << (rounds % 8);
    t.install(make(2, Specialization::exact(sig(s)), static_cast<int>(s)));
    t.install(make(2, Specialization::shape_class(sig(100), kDyn0), 128));
    t.install(make(rounds % 2, Specialization::generic(sig(1)), 0));
    if (rounds % 3 == 0) t.remove_level(SpecLevel::kExact, "test");
    if (rounds % 5 == 0) t.remove(Specialization::shape_class(sig(100), kDyn0).key());
  }
  for (auto& th : threads) th.join();
  EXPECT_GE(rounds, 50);
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(Metrics::get(m.region_calls), uint64_t{kThreads} * kLookups);
}

}  // namespace

thread_local int64_t g_allocations = 0;  // operator new calls on this thread (replaced below)

namespace {

// The steady-state call path allocates nothing: signature hash, inline cache, per-pattern hash
// probe, guard check.
TEST(VersionTable, LookupAndGuardDoNotAllocateOnSuccess) {
  VersionTable t(10, "r");
  t.install(make(0, Specialization::generic(sig(8)), 0));
  t.install(make(2, Specialization::exact(sig(8)), 8));
  t.install(make(2, Specialization::shape_class(sig(100), kDyn0), 128));
  Signature a = sig(8), b = sig(100), c = sig(300);
  Guard g(Specialization::exact(a));
  t.lookup(a);  // warm: nothing lazily allocated later
  int64_t before = g_allocations;
  for (int i = 0; i < 10; ++i) {
    LookupResult ra = t.lookup(a);  // inline cache
    LookupResult rb = t.lookup(b);  // class hash
    LookupResult rc = t.lookup(c);  // generic (deoptimization, no log attached)
    EXPECT_FALSE(g.check(a).has_value());
    EXPECT_EQ(rb.version->level(), SpecLevel::kShapeClass);
  }
  EXPECT_EQ(g_allocations - before, 0);
  Signature fresh = sig(5);  // the counter does see allocations
  EXPECT_GT(g_allocations - before, 0);
}

}  // namespace
}  // namespace tierjit::runtime

// Counting replacements of the global allocation functions (malloc/free underneath). GCC warns
// that free() meets memory from "operator new", which is exactly what this replacement does.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) {
  ++tierjit::runtime::g_allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop
