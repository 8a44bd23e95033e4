// Latency statistics of `tierjit bench` (tools/bench_stats.h): nearest-rank percentiles checked
// against hand-computed ranks, per-shape grouping in order of first appearance, mean after first.
#include <gtest/gtest.h>

#include "bench_stats.h"

namespace tierjit::cli {
namespace {

TEST(BenchStats, NearestRankOfTenValues) {
  // Sorted: 1 2 3 4 5 6 7 8 9 10. Nearest rank r = ceil(p * 10 / 100):
  // p50 -> ceil(5) = 5 -> 5; p90 -> ceil(9) = 9 -> 9 (not 10); p99 -> ceil(9.9) = 10 -> 10;
  // p10 -> 1 -> 1; p11 -> ceil(1.1) = 2 -> 2; p0 -> clamped to rank 1 -> 1; p100 -> 10.
  std::vector<double> v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(percentile_nearest_rank(v, 50), 5);
  EXPECT_EQ(percentile_nearest_rank(v, 90), 9);
  EXPECT_EQ(percentile_nearest_rank(v, 99), 10);
  EXPECT_EQ(percentile_nearest_rank(v, 10), 1);
  EXPECT_EQ(percentile_nearest_rank(v, 11), 2);
  EXPECT_EQ(percentile_nearest_rank(v, 0), 1);
  EXPECT_EQ(percentile_nearest_rank(v, 100), 10);
}

TEST(BenchStats, NearestRankSmallAndLarge) {
  EXPECT_EQ(percentile_nearest_rank({}, 50), 0);
  EXPECT_EQ(percentile_nearest_rank({7}, 50), 7);  // n = 1: every percentile is the value
  EXPECT_EQ(percentile_nearest_rank({7}, 99), 7);
  // n = 2: p50 -> ceil(1) = 1 -> first; p90 -> ceil(1.8) = 2 -> second.
  EXPECT_EQ(percentile_nearest_rank({3, 4}, 50), 3);
  EXPECT_EQ(percentile_nearest_rank({3, 4}, 90), 4);
  // n = 500 values 1..500: p50 -> 250, p90 -> 450, p99 -> ceil(495) = 495.
  std::vector<double> v;
  for (int i = 1; i <= 500; ++i) v.push_back(i);
  EXPECT_EQ(percentile_nearest_rank(v, 50), 250);
  EXPECT_EQ(percentile_nearest_rank(v, 90), 450);
  EXPECT_EQ(percentile_nearest_rank(v, 99), 495);
  // n = 7: p99 -> ceil(6.93) = 7; p90 -> ceil(6.3) = 7; p50 -> ceil(3.5) = 4.
  std::vector<double> w = {10, 20, 30, 40, 50, 60, 70};
  EXPECT_EQ(percentile_nearest_rank(w, 50), 40);
  EXPECT_EQ(percentile_nearest_rank(w, 90), 70);
}

TEST(BenchStats, SummarizeUnsortedSeries) {
  // Request order: 9 1 5 3 7 (first = 9). Sorted 1 3 5 7 9: p50 rank ceil(2.5) = 3 -> 5;
  // p90 rank ceil(4.5) = 5 -> 9; mean 25 / 5 = 5; mean after first (1+5+3+7) / 4 = 4.
  LatencyStats s = summarize_latencies({9, 1, 5, 3, 7});
  EXPECT_EQ(s.count, 5);
  EXPECT_EQ(s.first_ms, 9);
  EXPECT_EQ(s.p50_ms, 5);
  EXPECT_EQ(s.p90_ms, 9);
  EXPECT_EQ(s.p99_ms, 9);
  EXPECT_DOUBLE_EQ(s.mean_ms, 5);
  EXPECT_EQ(s.max_ms, 9);
  ASSERT_TRUE(s.mean_after_first_ms.has_value());
  EXPECT_DOUBLE_EQ(*s.mean_after_first_ms, 4);

  LatencyStats one = summarize_latencies({2.5});
  EXPECT_EQ(one.count, 1);
  EXPECT_EQ(one.p99_ms, 2.5);
  EXPECT_FALSE(one.mean_after_first_ms.has_value());  // JSON null, as the shared runners write
  LatencyStats none = summarize_latencies({});
  EXPECT_EQ(none.count, 0);
}

TEST(BenchStats, GroupsByShapeInFirstAppearanceOrder) {
  std::vector<std::string> shape = {"x=8", "x=1", "x=8", "x=1", "x=1", "x=4"};
  std::vector<double> ms = {10, 2, 6, 4, 3, 1};
  BenchStats b = compute_bench_stats(shape, ms);
  ASSERT_EQ(b.shapes.size(), 3u);
  EXPECT_EQ(b.shapes[0].shape, "x=8");
  EXPECT_EQ(b.shapes[1].shape, "x=1");
  EXPECT_EQ(b.shapes[2].shape, "x=4");
  EXPECT_EQ(b.shape_index, (std::vector<int64_t>{0, 1, 0, 1, 1, 2}));
  // x=8: 10, 6 -> first 10, p50 rank 1 of sorted {6, 10} -> 6, mean 8, after first 6.
  EXPECT_EQ(b.shapes[0].stats.count, 2);
  EXPECT_EQ(b.shapes[0].stats.first_ms, 10);
  EXPECT_EQ(b.shapes[0].stats.p50_ms, 6);
  EXPECT_DOUBLE_EQ(*b.shapes[0].stats.mean_after_first_ms, 6);
  // x=1: 2, 4, 3 -> sorted {2, 3, 4}; p50 rank ceil(1.5) = 2 -> 3; mean 3; after first 3.5.
  EXPECT_EQ(b.shapes[1].stats.count, 3);
  EXPECT_EQ(b.shapes[1].stats.p50_ms, 3);
  EXPECT_DOUBLE_EQ(*b.shapes[1].stats.mean_after_first_ms, 3.5);
  EXPECT_EQ(b.shapes[2].stats.count, 1);
  // Overall: 10 2 6 4 3 1 -> sorted 1 2 3 4 6 10; p50 rank 3 -> 3; p90 rank ceil(5.4) = 6 -> 10;
  // mean 26 / 6; first 10.
  EXPECT_EQ(b.overall.count, 6);
  EXPECT_EQ(b.overall.first_ms, 10);
  EXPECT_EQ(b.overall.p50_ms, 3);
  EXPECT_EQ(b.overall.p90_ms, 10);
  EXPECT_DOUBLE_EQ(b.overall.mean_ms, 26.0 / 6.0);
  int64_t total = 0;
  for (const auto& s : b.shapes) total += s.stats.count;
  EXPECT_EQ(total, 6);
}

}  // namespace
}  // namespace tierjit::cli
