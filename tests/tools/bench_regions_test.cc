// Per-region measures of `tierjit bench --json` (tools/bench_regions.h): the last-10% window,
// rows joined from the interpret-only replay and the benchmarked session, and the compiled
// coverage checked against sums worked out by hand.
#include <gtest/gtest.h>

#include "bench_regions.h"

namespace tierjit::cli {
namespace {

TEST(BenchRegions, LastTenth) {
  EXPECT_EQ(last_tenth(0).count, 0u);
  EXPECT_EQ(last_tenth(1).first, 0u);
  EXPECT_EQ(last_tenth(1).count, 1u);
  EXPECT_EQ(last_tenth(9).first, 8u);  // ceil(0.9) = 1
  EXPECT_EQ(last_tenth(10).first, 9u);
  EXPECT_EQ(last_tenth(11).first, 9u);  // ceil(1.1) = 2
  EXPECT_EQ(last_tenth(11).count, 2u);
  EXPECT_EQ(last_tenth(500).first, 450u);
  EXPECT_EQ(last_tenth(500).count, 50u);
  EXPECT_EQ(last_tenth(10000).count, 1000u);
}

RegionReport report(int id, const std::string& name, int tier, double time_us, double payoff = -1) {
  RegionReport r;
  r.id = id;
  r.name = name;
  r.kind = "elementwise";
  r.tier = tier;
  r.time_us = time_us;
  r.payoff = payoff;
  return r;
}

TEST(BenchRegions, MeasuresJoinBothSessions) {
  // Shares: 60, 30, 10 us of 100. Main: region 0 at tier 2 (payoff 1.5), region 1 at tier 1
  // (payoff 0.8), region 2 at tier 0. Window of 10 calls: 10, 5 and 0 compiled.
  const std::vector<RegionReport> shares = {report(0, "a", 0, 60), report(1, "b", 0, 30), report(2, "c", 0, 10)};
  const std::vector<RegionReport> main = {report(0, "a", 2, 0, 1.5), report(1, "b", 1, 0, 0.8), report(2, "c", 0, 0)};
  const auto rows = region_measures(shares, main, {40, 7, 0}, {50, 12, 0}, 10);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_DOUBLE_EQ(*rows[0].interp_share, 0.6);
  EXPECT_DOUBLE_EQ(*rows[1].interp_share, 0.3);
  EXPECT_DOUBLE_EQ(*rows[2].interp_share, 0.1);
  EXPECT_EQ(rows[0].final_tier, 2);
  EXPECT_EQ(rows[1].final_tier, 1);
  EXPECT_EQ(rows[2].final_tier, 0);
  EXPECT_DOUBLE_EQ(rows[0].compiled_fraction_last10, 1.0);
  EXPECT_DOUBLE_EQ(rows[1].compiled_fraction_last10, 0.5);
  EXPECT_DOUBLE_EQ(rows[2].compiled_fraction_last10, 0.0);
  EXPECT_DOUBLE_EQ(*rows[0].payoff, 1.5);
  EXPECT_DOUBLE_EQ(*rows[1].payoff, 0.8);
  EXPECT_FALSE(rows[2].payoff);
  // Counted: 0.6 x 1 (payoff 1.5); uncounted: 0.3 x 0.5 (payoff 0.8) + 0.1 x 0.
  const Coverage c = compiled_coverage(rows);
  EXPECT_DOUBLE_EQ(c.counted, 0.6);
  EXPECT_DOUBLE_EQ(c.uncounted, 0.15);
}

TEST(BenchRegions, MissingPartsGiveZeroOrNone) {
  const std::vector<RegionReport> shares = {report(0, "a", 0, 3), report(1, "b", 0, 1)};
  // Interpret-only main run: no reports, no counts: tier 0, fraction 0, no payoff, coverage 0.
  auto rows = region_measures(shares, {}, {}, {}, 5);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_DOUBLE_EQ(*rows[0].interp_share, 0.75);
  EXPECT_EQ(rows[0].final_tier, 0);
  EXPECT_EQ(rows[0].compiled_fraction_last10, 0.0);
  EXPECT_FALSE(rows[0].payoff);
  EXPECT_EQ(compiled_coverage(rows).counted, 0.0);
  EXPECT_EQ(compiled_coverage(rows).uncounted, 0.0);
  // No replay: rows from the main session, no share, nothing summed; compiled calls counted from
  // the start when the window began before the first count (empty start).
  const std::vector<RegionReport> main = {report(0, "a", 2, 0, 2.0)};
  rows = region_measures({}, main, {}, {4}, 4);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_FALSE(rows[0].interp_share);
  EXPECT_EQ(rows[0].compiled_fraction_last10, 1.0);
  EXPECT_EQ(compiled_coverage(rows).counted, 0.0);
  // A replay whose regions took no time at all gives no shares.
  rows = region_measures({report(0, "a", 0, 0)}, {}, {}, {}, 1);
  EXPECT_FALSE(rows[0].interp_share);
  // A payoff of exactly 1.0 counts.
  std::vector<RegionMeasure> one(1);
  one[0].interp_share = 0.5;
  one[0].compiled_fraction_last10 = 1;
  one[0].payoff = 1.0;
  EXPECT_DOUBLE_EQ(compiled_coverage(one).counted, 0.5);
}

}  // namespace
}  // namespace tierjit::cli
