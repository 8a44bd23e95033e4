// Tests of tools/replay.h: feeds generated once per distinct shape (deterministic by seed),
// compile events read from decision log JSON (payoff records and other kinds skipped, times from
// the origin) and the tier timeline (each compile mapped to the first request starting after it).
#include "replay.h"

#include <gtest/gtest.h>

namespace tierjit::cli {
namespace {

std::vector<TensorInfo> one_input() {
  TensorInfo x;
  x.name = "x";
  x.dtype = DType::kFloat32;
  x.shape = {-1, 4};
  x.dim_names = {"N", ""};
  x.has_shape = true;
  return {x};
}

TEST(ReplayFeeds, OneFeedPerDistinctShapeSameSeedSameValues) {
  Trace t = parse_trace_text("x=2x4\nx=3x4\nx=2x4\nx=0x4\n", "t").value();
  ReplayFeeds a = make_replay_feeds(t, one_input(), {}, 7, int64_t{1} << 30, "m");
  ASSERT_EQ(a.feeds.size(), 3u);
  EXPECT_EQ(a.feed_of, (std::vector<size_t>{0, 1, 0, 2}));
  EXPECT_EQ(a.key_of[2], "x=2x4");
  EXPECT_EQ(a.feeds[1][0].second.shape(), (Shape{3, 4}));
  EXPECT_EQ(a.feeds[2][0].second.shape(), (Shape{0, 4}));
  ReplayFeeds b = make_replay_feeds(t, one_input(), {}, 7, int64_t{1} << 30, "m");
  const float* pa = a.feeds[1][0].second.data<float>();
  const float* pb = b.feeds[1][0].second.data<float>();
  for (int i = 0; i < 12; ++i) EXPECT_EQ(pa[i], pb[i]);
}

TEST(ReplayFeeds, BadRequestAndMemoryLimitThrow) {
  Trace bad = parse_trace_text("x=2x5\n", "t").value();
  EXPECT_THROW(make_replay_feeds(bad, one_input(), {}, 0, int64_t{1} << 30, "m"), Error);
  Trace big = parse_trace_text("x=1000x4\n", "t").value();
  try {
    make_replay_feeds(big, one_input(), {}, 0, 1000, "m");
    ADD_FAILURE() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kResourceExhausted);
  }
}

// Times in µs; origin 1,000,000 µs.
const char* kLog = R"([
  {"time_us": 1000000, "region": -1, "region_name": "", "kind": "declined", "level": "generic", "message": "x"},
  {"time_us": 1005000, "region": 0, "region_name": "gemm_0", "kind": "promoted", "level": "generic", "from_tier": 0, "tier": 1, "message": "hot"},
  {"time_us": 1007000, "region": 0, "region_name": "gemm_0", "kind": "compiled", "level": "generic", "tier": 1, "compile_us": 2000, "message": "generic"},
  {"time_us": 1009000, "region": 1, "region_name": "gemm_1", "kind": "compiled", "level": "generic", "tier": 1, "compile_us": 1500, "message": "generic"},
  {"time_us": 1020000, "region": 0, "region_name": "gemm_0", "kind": "compiled", "level": "generic", "from_tier": 0, "tier": 1, "compile_us": 2000, "message": "payoff after 8 calls"},
  {"time_us": 1030000, "region": 0, "region_name": "gemm_0", "kind": "compiled", "level": "exact", "tier": 2, "compile_us": 4000, "message": "exact"},
  {"time_us": 1031000, "region": 0, "region_name": "gemm_0", "kind": "compiled", "level": "generic", "tier": 2, "compile_us": 3000, "message": "generic"},
  {"time_us": 1090000, "region": 1, "region_name": "gemm_1", "kind": "compiled", "level": "exact", "tier": 2, "compile_us": 3000, "message": "late"}
])";

TEST(CompileEvents, OnlyCompilesNotPayoffsTimesFromOrigin) {
  std::vector<CompileEvent> e = compile_events(kLog, 1000000);
  ASSERT_EQ(e.size(), 5u);
  EXPECT_DOUBLE_EQ(e[0].end_ms, 7.0);
  EXPECT_DOUBLE_EQ(e[0].compile_ms, 2.0);
  EXPECT_EQ(e[0].tier, 1);
  EXPECT_EQ(e[0].region_name, "gemm_0");
  EXPECT_EQ(e[2].level, "exact");
  EXPECT_EQ(e[2].message, "exact");
  EXPECT_TRUE(compile_events("not json", 0).empty());
  EXPECT_TRUE(compile_events("{}", 0).empty());
}

TEST(TierTimeline, FirstRequestStartingAfterTheCompile) {
  std::vector<CompileEvent> e = compile_events(kLog, 1000000);
  // Requests start at 0, 4, 8, 12, 16, 20, 40 ms.
  std::vector<double> start = {0, 4, 8, 12, 16, 20, 40};
  std::vector<TierStep> t = tier_timeline(e, start);
  ASSERT_EQ(t.size(), 4u);  // gemm_0 -> 1, gemm_1 -> 1, gemm_0 -> 2 (its second tier-2 compile is no step), gemm_1 -> 2
  EXPECT_EQ(t[0].region, 0);
  EXPECT_EQ(t[0].tier, 1);
  EXPECT_EQ(t[0].request, 3u);  // finished at 7 ms: request 3 (starts at 8) is the first to run it
  EXPECT_EQ(t[1].region, 1);
  EXPECT_EQ(t[1].request, 4u);  // 9 ms -> starts at 12
  EXPECT_EQ(t[2].region, 0);
  EXPECT_EQ(t[2].tier, 2);
  EXPECT_EQ(t[2].request, 7u);  // 30 ms -> starts at 40
  EXPECT_EQ(t[3].region, 1);
  EXPECT_EQ(t[3].tier, 2);
  EXPECT_EQ(t[3].request, 8u);  // 90 ms: after the last request
  EXPECT_TRUE(tier_timeline({}, start).empty());
}

}  // namespace
}  // namespace tierjit::cli
