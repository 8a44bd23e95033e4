// DecisionLog (ring, per-call rate limit with the fake clock, text and JSON forms) and Metrics.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "runtime/decision_log.h"
#include "runtime/metrics.h"

namespace tierjit::runtime {
namespace {

DecisionRecord rec(DecisionKind kind, std::string msg = "") {
  DecisionRecord r;
  r.region = 3;
  r.region_name = "gemm_3";
  r.kind = kind;
  r.message = std::move(msg);
  return r;
}

TEST(DecisionLog, FormatsRecords) {
  DecisionRecord r = rec(DecisionKind::kPromoted, "calls 2 >= θ_0 2");
  r.time_us = 1'500'000;
  r.from_tier = 0;
  r.tier = 1;
  EXPECT_EQ(format_decision(r),
            "+1500.000 ms region 3 'gemm_3': promoted tier 0 -> 1 (generic): calls 2 >= θ_0 2");
  EXPECT_EQ(format_decision(r, 1'000'000),  // ms from the log's (the session's) creation
            "+500.000 ms region 3 'gemm_3': promoted tier 0 -> 1 (generic): calls 2 >= θ_0 2");
  DecisionRecord c = rec(DecisionKind::kCompiled);
  c.time_us = 2;
  c.tier = 2;
  c.level = SpecLevel::kExact;
  c.compile_us = 4200;
  EXPECT_EQ(format_decision(c), "+0.002 ms region 3 'gemm_3': compiled tier 2 (exact) in 4200 us");
  DecisionRecord h = rec(DecisionKind::kCacheHit);
  h.time_us = 1;
  h.level = SpecLevel::kShapeClass;
  h.cache_level = "L2";
  EXPECT_EQ(format_decision(h), "+0.001 ms region 3 'gemm_3': cache_hit (shape_class) from L2");
}

TEST(DecisionLog, RateLimitsPerCallKindsOnly) {
  FakeClock clock(1000);
  DecisionLog log(clock, {.capacity = 100, .per_call_limit_per_s = 3, .mirror_to_logger = false});
  for (int i = 0; i < 5; ++i) log.record(rec(DecisionKind::kDeoptimized, "input 0 dim 0: ..."));
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(log.record(rec(DecisionKind::kPromoted)));
  EXPECT_EQ(log.total(DecisionKind::kDeoptimized), 5u);
  EXPECT_EQ(log.suppressed(DecisionKind::kDeoptimized), 2u);
  EXPECT_EQ(log.suppressed(DecisionKind::kPromoted), 0u);
  EXPECT_EQ(log.records().size(), 8u);  // 3 deoptimized + 5 promoted
  EXPECT_FALSE(log.record(rec(DecisionKind::kDeoptimized)));
  clock.advance_us(1'000'000);  // a new second: allowed again
  EXPECT_TRUE(log.record(rec(DecisionKind::kDeoptimized)));
  EXPECT_EQ(log.records().back().time_us, 1'001'000);
}

TEST(DecisionLog, RingKeepsNewest) {
  FakeClock clock(1);
  DecisionLog log(clock, {.capacity = 2, .mirror_to_logger = false});
  log.record(rec(DecisionKind::kPromoted, "a"));
  log.record(rec(DecisionKind::kCompiled, "b"));
  log.record(rec(DecisionKind::kEvicted, "c"));
  auto r = log.records();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].message, "b");
  EXPECT_EQ(r[1].message, "c");
  auto j = nlohmann::json::parse(log.to_json());
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[1]["kind"], "evicted");
  EXPECT_EQ(j[1]["region_name"], "gemm_3");
}

TEST(Metrics, RatesAndJson) {
  Metrics m;
  EXPECT_EQ(m.specialized_hit_rate(), 0.0);
  Metrics::bump(m.region_calls, 10);
  Metrics::bump(m.exact_hits, 6);
  Metrics::bump(m.class_hits, 2);
  Metrics::bump(m.deoptimizations, 1);
  Metrics::bump(m.promotions, 2);
  Metrics::bump(m.compiles[2], 2);
  Metrics::bump(m.compile_us[2], 9000);
  EXPECT_DOUBLE_EQ(m.specialized_hit_rate(), 0.8);  // (6 + 2) / 10
  EXPECT_DOUBLE_EQ(m.deoptimization_rate(), 0.1);
  EXPECT_DOUBLE_EQ(m.promotion_rate(), 0.2);
  EXPECT_DOUBLE_EQ(m.mean_compile_us(2), 4500);
  EXPECT_DOUBLE_EQ(m.mean_compile_us(9), 0);
  auto j = nlohmann::json::parse(m.to_json());
  EXPECT_EQ(j["region_calls"], 10);
  EXPECT_EQ(j["compile_us"][2], 9000);
  EXPECT_DOUBLE_EQ(j["specialized_hit_rate"].get<double>(), 0.8);
}

}  // namespace
}  // namespace tierjit::runtime
