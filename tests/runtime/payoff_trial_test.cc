// PayoffTrial: the weighted median (hand-computed), the verdict's sample bounds, its clearance
// test against the eviction bound, and the preference for quiet samples.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/payoff_trial.h"

namespace tierjit::runtime {
namespace {

using S = PayoffTrial::Sample;

TEST(PayoffTrial, WeightedMedianByHand) {
  EXPECT_EQ(PayoffTrial::weighted_median({}), 0);
  EXPECT_EQ(PayoffTrial::weighted_median({{3, 1}}), 3);
  // Equal weights: the middle value, or the mean of the middle two.
  EXPECT_EQ(PayoffTrial::weighted_median({{5, 1}, {1, 1}, {3, 1}}), 3);
  EXPECT_EQ(PayoffTrial::weighted_median({{4, 1}, {1, 1}, {3, 1}, {2, 1}}), 2.5);
  // One heavy sample (a batch-128 call among batch-1 calls) carries the median: 1 + 1 + 1 < 10.
  EXPECT_EQ(PayoffTrial::weighted_median({{-0.7, 1}, {-0.7, 1}, {-0.7, 1}, {0.2, 10}}), 0.2);
  // Weights 1, 2, 3 on 10, 20, 30: half of 6 is reached at 20 (1 + 2 = 3, exactly half): mean of
  // 20 and 30.
  EXPECT_EQ(PayoffTrial::weighted_median({{30, 3}, {10, 1}, {20, 2}}), 25);
}

TEST(PayoffTrial, NoVerdictBeforeMinSamplesUnlessExpired) {
  PayoffTrial t;
  for (int i = 0; i < 7; ++i) t.add(0.5, 1, true);
  EXPECT_FALSE(t.verdict(1.1));
  ASSERT_TRUE(t.verdict(1.1, /*expired=*/true));
  EXPECT_NEAR(t.verdict(1.1, true)->ratio, 0.5, 1e-12);
  t.add(0.5, 1, true);  // 8 samples, all 0.5: clearly under 1.1
  ASSERT_TRUE(t.verdict(1.1));
  EXPECT_NEAR(t.verdict(1.1)->ratio, 0.5, 1e-12);
  EXPECT_EQ(t.verdict(1.1)->samples, 8u);
  // Expired with fewer than min_samples / 2 = 4 samples: nothing to judge on; with 4, their median.
  PayoffTrial few;
  for (int i = 0; i < 3; ++i) few.add(2, 1, true);
  EXPECT_FALSE(few.verdict(1.1, true));
  few.add(2, 1, true);
  ASSERT_TRUE(few.verdict(1.1, true));
  EXPECT_NEAR(few.verdict(1.1, true)->ratio, 2, 1e-12);
  EXPECT_EQ(few.verdict(1.1, true)->samples, 4u);
}

TEST(PayoffTrial, IgnoresSamplesThatAreNotPositive) {
  PayoffTrial t;
  t.add(0, 1, true);
  t.add(-1, 1, true);
  t.add(std::nan(""), 1, true);
  t.add(INFINITY, 1, true);
  t.add(1, 0, true);
  t.add(1, -3, true);
  EXPECT_EQ(t.samples(), 0u);
}

// Ratios scattered around the bound 1.1: no verdict until max_samples; scattered well below it:
// a verdict at min_samples.
TEST(PayoffTrial, NearTheBoundItMeasuresLonger) {
  PayoffTrial near, far;
  const double spread[] = {0.8, 1.4, 0.9, 1.3, 1.0, 1.25, 1.05, 1.2};
  for (double r : spread) {
    near.add(r, 1, true);
    far.add(r * 0.5, 1, true);
  }
  // near: sorted logs of 0.8 .. 1.4, median (log 1.05 + log 1.2) / 2 = log 1.1225; MAD large.
  EXPECT_FALSE(near.verdict(1.1));
  ASSERT_TRUE(far.verdict(1.1));
  EXPECT_NEAR(far.verdict(1.1)->ratio, 0.5 * std::sqrt(1.05 * 1.2), 1e-9);
  for (int i = 0; near.samples() < 32; ++i) {
    EXPECT_FALSE(near.verdict(1.1)) << near.samples();
    near.add(spread[i % 8], 1, true);
  }
  ASSERT_TRUE(near.verdict(1.1));  // the cap: judged on what it has
  EXPECT_NEAR(near.verdict(1.1)->ratio, std::sqrt(1.05 * 1.2), 1e-9);
  // No eviction bound (bound <= 0: nothing is evicted): any median is a verdict.
  PayoffTrial any;
  for (double r : spread) any.add(r, 1, true);
  EXPECT_TRUE(any.verdict(0));
}

// Samples taken while a compile shared the cores (2x slower here) wait for quiet ones: the
// verdict uses min_samples quiet samples alone, and all samples only when the trial expires.
TEST(PayoffTrial, QuietSamplesWinWhenThereAreEnough) {
  PayoffTrial t;
  for (int i = 0; i < 20; ++i) t.add(1.6, 1, false);
  for (int i = 0; i < 7; ++i) t.add(0.8, 1, true);
  EXPECT_FALSE(t.verdict(1.1));  // 7 quiet, 27 in all: keep measuring
  t.add(0.8, 1, true);
  ASSERT_TRUE(t.verdict(1.1));
  EXPECT_NEAR(t.verdict(1.1)->ratio, 0.8, 1e-12);
  EXPECT_EQ(t.verdict(1.1)->samples, 8u);
  EXPECT_EQ(t.samples(), 28u);
  EXPECT_EQ(t.quiet_samples(), 8u);
  PayoffTrial loud;
  for (int i = 0; i < 40; ++i) loud.add(1.6, 1, false);
  for (int i = 0; i < 7; ++i) loud.add(0.8, 1, true);
  EXPECT_FALSE(loud.verdict(1.1));  // 47 samples, 7 quiet: the cap counts quiet ones
  ASSERT_TRUE(loud.verdict(1.1, /*expired=*/true));
  EXPECT_NEAR(loud.verdict(1.1, true)->ratio, 1.6, 1e-12);
  EXPECT_EQ(loud.verdict(1.1, true)->samples, 47u);
}

}  // namespace
}  // namespace tierjit::runtime
