// The measuring options of a Session (SessionOptions::count_region_calls, time_regions) and the
// measured payoff in RegionReport: calls that ran compiled code counted per region (pinned tier:
// every call, the first included; interpret-only: none), every region's step timed in an
// interpret-only session that then runs through plans (its outputs still tier 0's), and the
// adaptive runtime's payoff over tier 0 for the tier it installed. On the chain model (one
// elementwise region, tests/runtime/chain_model.h).
#include <gtest/gtest.h>

#include <cmath>

#include "chain_model.h"
#include "onnx/model_builder.h"
#include "tierjit/session.h"

namespace tierjit {
namespace {

using onnx_test::TempDir;
using runtime_testing::random_input;
using runtime_testing::write_chain;

SessionOptions interp() {
  SessionOptions o;
  o.mode = ExecutionMode::kInterpretOnly;
  return o;
}

TEST(RegionCounters, OffByDefault) {
  TempDir dir("counters_off");
  SessionOptions o;
  o.mode = ExecutionMode::kPinnedTier;
  o.pinned_tier = 2;
  Session s(write_chain(dir), o);
  for (int i = 0; i < 3; ++i) s.run({{"x", random_input(3, 1)}});
  EXPECT_TRUE(s.region_compiled_calls().empty());
  const auto reports = s.region_reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].tier, 2);
  EXPECT_EQ(reports[0].compiled_calls, 0u);
  EXPECT_EQ(reports[0].timed_calls, 0u);
  EXPECT_EQ(reports[0].time_us, 0.0);
  EXPECT_EQ(reports[0].payoff, -1.0);  // pinned: no tier-0 time to compare with
  // Interpret-only without time_regions does not partition.
  Session i(write_chain(dir), interp());
  i.run({{"x", random_input(3, 1)}});
  EXPECT_TRUE(i.region_reports().empty());
}

// Pinned tier 2: the region runs compiled code in every call, the first (which compiles) too;
// two shapes, so two plans count into the same region.
TEST(RegionCounters, PinnedTierCountsEveryCall) {
  TempDir dir("counters_pinned");
  SessionOptions o;
  o.mode = ExecutionMode::kPinnedTier;
  o.pinned_tier = 2;
  o.count_region_calls = true;
  Session s(write_chain(dir), o);
  for (int i = 0; i < 7; ++i) s.run({{"x", random_input(i % 2 ? 5 : 3, 1)}});
  EXPECT_EQ(s.region_compiled_calls(), std::vector<uint64_t>{7});
  const auto reports = s.region_reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].compiled_calls, 7u);
  EXPECT_EQ(reports[0].calls, 7u);
  EXPECT_EQ(reports[0].timed_calls, 0u);  // counted, not timed
}

// Interpret-only with time_regions: plans at tier 0, each region timed in every call but the
// first of each signature (its recording run); nothing compiled; outputs those of tier 0.
TEST(RegionCounters, InterpretOnlyTimesRegions) {
  TempDir dir("counters_timed");
  SessionOptions o = interp();
  o.time_regions = true;
  o.count_region_calls = true;
  const std::string model = write_chain(dir);
  Session s(model, o);
  Session ref(model, interp());
  for (int i = 0; i < 10; ++i) {
    const Tensor x = random_input(i % 2 ? 4 : 2, static_cast<uint32_t>(i));
    const Tensor got = s.run({{"x", x}})[0].second;
    const Tensor want = ref.run({{"x", x}})[0].second;
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t k = 0; k < want.numel(); ++k)
      ASSERT_NEAR(got.value_as_double(k), want.value_as_double(k), 1e-6 * (1 + std::fabs(want.value_as_double(k))))
          << "call " << i << " element " << k;
  }
  EXPECT_EQ(s.stats().compiled_regions, 0u);
  EXPECT_EQ(s.region_compiled_calls(), std::vector<uint64_t>{0});
  const auto reports = s.region_reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].tier, 0);
  EXPECT_EQ(reports[0].timed_calls, 8u);  // 10 calls, 2 of them recordings (batch 2, batch 4)
  EXPECT_GT(reports[0].time_us, 0.0);
  EXPECT_EQ(reports[0].payoff, -1.0);
}

// Adaptive with synchronous compiles and no removal for slowness: the region reaches tier 2 and
// the runtime measures the payoff of each promotion (a positive speedup over tier 0; its size
// depends on the machine). Compiled calls: every call after the tier-1 install, so fewer than
// all and more than half.
TEST(RegionCounters, AdaptiveReportsPayoffAndCompiledCalls) {
  TempDir dir("counters_adaptive");
  SessionOptions o;
  o.synchronous_compilation = true;
  o.benefit_horizon_windows = 1e6;
  o.slower_margin = -1;
  o.count_region_calls = true;
  Session s(write_chain(dir), o);
  const Tensor x = random_input(3, 7);
  for (int i = 0; i < 60; ++i) s.run({{"x", x}});
  const auto reports = s.region_reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].tier, 2) << s.decision_log_json();
  EXPECT_GT(reports[0].payoff, 0.0) << s.decision_log_json();
  EXPECT_LT(reports[0].compiled_calls, 60u);
  EXPECT_GT(reports[0].compiled_calls, 30u);
  EXPECT_EQ(s.region_compiled_calls(), std::vector<uint64_t>{reports[0].compiled_calls});
}

}  // namespace
}  // namespace tierjit
