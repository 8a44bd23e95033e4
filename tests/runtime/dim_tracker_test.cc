// DimTracker and Profile: static -> dynamic on the second distinct value, the 64-call shape
// window and shares, guard-failure window, N_expected EWMA.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include "runtime/profile.h"
#include "signature_util.h"

namespace tierjit::runtime {
namespace {

using test_util::sig;

TEST(DimTracker, StaticUntilSecondDistinctValue) {
  DimTracker t;
  EXPECT_FALSE(t.observe(sig(8)));
  EXPECT_FALSE(t.observe(sig(8)));
  EXPECT_FALSE(t.any_dynamic());
  EXPECT_TRUE(t.observe(sig(16)));  // dim 0 takes its second value
  EXPECT_TRUE(t.is_dynamic(0));
  EXPECT_FALSE(t.is_dynamic(1));
  EXPECT_FALSE(t.observe(sig(32)));  // already dynamic: no change
  EXPECT_EQ(t.first_value(0), 8);
  EXPECT_EQ(t.first_value(1), 64);
  t.mark_dynamic(1);
  EXPECT_TRUE(t.is_dynamic(1));
  t.mark_dynamic(99);  // ignored
}

TEST(DimTracker, RankChangeMakesEveryDimDynamic) {
  DimTracker t;
  t.observe(sig(8));
  Signature r3;
  std::vector<int64_t> d{8, 64, 1};
  r3.add_input(DType::kFloat32, d);
  EXPECT_TRUE(t.observe(r3));
  EXPECT_TRUE(t.is_dynamic(0));
  EXPECT_TRUE(t.is_dynamic(1));
}

TEST(DimTracker, WindowOf64Shares) {
  DimTracker t;
  // 70 calls: 10 of [1,64] first, then 60 of [8,64]. The window keeps the last 64: 4 of [1,64]
  // and 60 of [8,64] -> shares 4/64 = 0.0625 and 60/64 = 0.9375.
  for (int i = 0; i < 10; ++i) t.observe(sig(1));
  for (int i = 0; i < 60; ++i) t.observe(sig(8));
  EXPECT_EQ(t.calls(), 70u);
  EXPECT_EQ(t.window_calls(), 64u);
  EXPECT_DOUBLE_EQ(t.share(sig(1).exact_key()), 0.0625);
  EXPECT_DOUBLE_EQ(t.share(sig(8).exact_key()), 0.9375);
  EXPECT_DOUBLE_EQ(t.share(sig(2).exact_key()), 0.0);
  auto shapes = t.recent_shapes();
  ASSERT_EQ(shapes.size(), 2u);
  EXPECT_EQ(shapes[0].signature, sig(8));
  EXPECT_EQ(shapes[0].count, 60u);
  // 4 more of [8,64] push [1,64] out of the window entirely.
  for (int i = 0; i < 4; ++i) t.observe(sig(8));
  EXPECT_EQ(t.recent_shapes().size(), 1u);
  EXPECT_DOUBLE_EQ(t.share(sig(8).exact_key()), 1.0);
}

// Shapes entering and leaving the window in a random order (up to 40 distinct in a window of
// 16, so most calls evict one; and 290 in a window of 300, past the 256 entries the tracker's
// direct-mapped index can name): counts, shares and the most-frequent-first order equal a
// reference recount of the window's calls after every call.
void check_churn(size_t window, uint32_t distinct, int n) {
  DimTracker t(window);
  std::vector<int64_t> calls;
  uint32_t x = 12345;
  for (int i = 0; i < n; ++i) {
    x = x * 1103515245u + 12345u;
    const int64_t b = 1 + static_cast<int64_t>((x >> 16) % (i < n / 2 ? distinct : 3));  // then few
    t.observe(sig(b));
    calls.push_back(b);
    std::map<int64_t, size_t> count;
    std::map<int64_t, size_t> last;
    const size_t from = calls.size() > window ? calls.size() - window : 0;
    for (size_t k = from; k < calls.size(); ++k) {
      ++count[calls[k]];
      last[calls[k]] = k;
    }
    const std::vector<ShapeShare> shapes = t.recent_shapes();
    ASSERT_EQ(shapes.size(), count.size()) << "call " << i;
    for (size_t k = 0; k < shapes.size(); ++k) {
      const int64_t dim = shapes[k].signature.dims(0)[0];
      ASSERT_EQ(shapes[k].count, count[dim]) << "call " << i;
      EXPECT_EQ(shapes[k].key, sig(dim).exact_key());
      EXPECT_DOUBLE_EQ(t.share(shapes[k].key), static_cast<double>(count[dim]) / static_cast<double>(calls.size() - from));
      if (k > 0) {  // most frequent first, ties: most recent first
        const int64_t prev = shapes[k - 1].signature.dims(0)[0];
        ASSERT_TRUE(count[prev] > count[dim] || (count[prev] == count[dim] && last[prev] > last[dim]))
            << "call " << i;
      }
    }
    EXPECT_EQ(t.share(sig(9999).exact_key()), 0.0);
    // sig(b) is [b, 64]: dim 0 dynamic from the second distinct b on, dim 1 static.
    EXPECT_EQ(t.is_dynamic(0), std::count(calls.begin(), calls.end(), calls[0]) != static_cast<long>(calls.size()));
    EXPECT_FALSE(t.is_dynamic(1));
  }
}

TEST(DimTracker, WindowChurnMatchesARecount) {
  check_churn(16, 40, 2000);
  check_churn(300, 290, 1200);
}

// A tier's speed per byte does not depend on the mix of shapes its calls had: tier 0 ran a large
// and a small call, tier 1 only small ones at the same rate per byte minus a half.
TEST(Profile, TimePerByteComparesTiersAtTheSameWork) {
  Profile p;
  EXPECT_EQ(p.record_model_call(sig(8), sig(8).exact_key(), 1000, 0, 10000, 0), 1u);  // 0.1 us per byte
  EXPECT_EQ(p.record_model_call(sig(1), sig(1).exact_key(), 10, 0, 100, 0), 2u); // 0.1 us per byte
  p.record_call(sig(1), 5, 1, 100, 0);                             // 0.05 us per byte
  p.record_call(sig(1), 5, 1, 100, 0);
  EXPECT_EQ(p.calls(), 4u);
  EXPECT_EQ(p.model_calls(), 2u);
  EXPECT_DOUBLE_EQ(p.mean_time_us(0), 505.0);  // per call tier 1 (5 us) looks 100x faster
  EXPECT_DOUBLE_EQ(p.mean_time_us(1), 5.0);
  EXPECT_DOUBLE_EQ(p.bytes_at_tier(0), 10100.0);
  EXPECT_DOUBLE_EQ(p.bytes_at_tier(1), 200.0);
  EXPECT_DOUBLE_EQ(p.us_per_byte(0), 1010.0 / 10100.0);  // per byte: 2x
  EXPECT_DOUBLE_EQ(p.us_per_byte(1), 10.0 / 200.0);
  EXPECT_DOUBLE_EQ(p.us_per_byte(2), -1.0);  // never ran
  Profile no_bytes;
  no_bytes.record_call(sig(8), 7, 0, 0, 0);
  EXPECT_DOUBLE_EQ(no_bytes.us_per_byte(0), -1.0);  // moved no bytes: callers compare per call
}

// The same shapes at two tiers: a signature's first call at a tier is not timed, and only
// signatures that ran at both tiers count, weighted by their calls at the second.
TEST(Profile, SameShapeTimesCompareShapeByShape) {
  Profile p;
  EXPECT_FALSE(p.same_shape_times(0, 1).has_value());
  for (int i = 0; i < 5; ++i) p.record_call(sig(1), 10, 0, 100, 0);    // batch 1: 10 us
  for (int i = 0; i < 5; ++i) p.record_call(sig(32), 200, 0, 3200, 0);  // batch 32: 200 us
  p.record_call(sig(1), 5000, 1, 100, 0);  // first call at tier 1: not timed
  EXPECT_FALSE(p.same_shape_times(0, 1).has_value());
  for (int i = 0; i < 3; ++i) p.record_call(sig(1), 8, 1, 100, 0);  // batch 1 at tier 1: 8 us
  p.record_call(sig(7), 50, 1, 700, 0);  // never at tier 0: not compared
  p.record_call(sig(7), 50, 1, 700, 0);
  auto same = p.same_shape_times(0, 1);
  ASSERT_TRUE(same.has_value());
  EXPECT_DOUBLE_EQ(same->first, 3 * 10.0);  // what tier 0 took for those 3 calls
  EXPECT_DOUBLE_EQ(same->second, 3 * 8.0);
  // Per byte, the tier-1 calls (small ones) would read as slower: 24 / 300 > 1050 / 16500.
  EXPECT_GT(24.0 / 300.0, p.us_per_byte(0));
}

TEST(Profile, CountsTimesAndGuardFailures) {
  Profile p;
  p.record_call(sig(8), 100, 0, 4096, 1000);
  p.record_call(sig(8), 300, 0, 4096, 1000);
  p.record_call(sig(8), 50, 1, 4096, 1000);
  EXPECT_EQ(p.calls(), 3u);
  EXPECT_EQ(p.calls_at_tier(0), 2u);
  EXPECT_DOUBLE_EQ(p.mean_time_us(0), 200.0);  // (100 + 300) / 2
  EXPECT_DOUBLE_EQ(p.mean_time_us(1), 50.0);
  EXPECT_DOUBLE_EQ(p.mean_time_us(2), -1.0);
  EXPECT_DOUBLE_EQ(p.total_time_us(), 450.0);
  EXPECT_DOUBLE_EQ(p.bytes_moved(), 3 * 4096.0);
  EXPECT_DOUBLE_EQ(p.flops(), 3000.0);
  // 16 guard failures on dim 0 and 3 without a dim in the window: 19 / 64.
  for (int i = 0; i < 16; ++i) p.record_call(sig(9), 10, 1, 0, 0, true, 0);
  for (int i = 0; i < 3; ++i) p.record_call(sig(9), 10, 1, 0, 0, true, -1);
  EXPECT_EQ(p.recent_guard_failures(), 19u);
  EXPECT_DOUBLE_EQ(p.guard_failure_rate(), 19.0 / 64.0);
  EXPECT_EQ(p.drifting_dims(), std::vector<int>{0});
  // 64 clean calls push every failure out of the window.
  for (int i = 0; i < 64; ++i) p.record_call(sig(8), 10, 1, 0, 0);
  EXPECT_EQ(p.recent_guard_failures(), 0u);
  EXPECT_TRUE(p.drifting_dims().empty());
  EXPECT_TRUE(p.dims().is_dynamic(0));  // 9 after 8
}

TEST(Profile, ExpectedCallsEwma) {
  Profile p;
  // Before any model call: this window's calls.
  p.record_call(sig(8), 1, 0, 0, 0);
  EXPECT_DOUBLE_EQ(p.expected_calls(), 1.0);
  // 32 model calls with 2 region calls each (1 already recorded): 63 + 1 = 64 calls in 32 model
  // calls, scaled to a 64-model-call window: 64 * 64 / 32 = 128.
  for (int i = 0; i < 63; ++i) p.record_call(sig(8), 1, 0, 0, 0);
  for (int i = 0; i < 32; ++i) p.on_model_call();
  EXPECT_DOUBLE_EQ(p.expected_calls(), 128.0);
  // Close the first window with 32 more model calls and no more region calls: N = 64 (the first
  // window is taken as is).
  for (int i = 0; i < 32; ++i) p.on_model_call();
  EXPECT_DOUBLE_EQ(p.expected_calls(), 64.0);
  // Second window: 10 calls. N = 0.9 * 64 + 0.1 * 10 = 58.6.
  for (int i = 0; i < 10; ++i) p.record_call(sig(8), 1, 0, 0, 0);
  for (int i = 0; i < 64; ++i) p.on_model_call();
  EXPECT_NEAR(p.expected_calls(), 58.6, 1e-9);
  EXPECT_EQ(p.model_calls(), 128u);
}

}  // namespace
}  // namespace tierjit::runtime
