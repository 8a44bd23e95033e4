// TierPolicy: promotion only at θ_i and only when the expected benefit is positive (numbers
// hand-computed below), declines with reasons, threshold adaptation sign, hotness, demotion at ε,
// and which specializations DESIGN.md "Which shapes get which code" asks for.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "passes/pass_test_util.h"
#include "runtime/tier_policy.h"
#include "signature_util.h"

namespace tierjit::runtime {
namespace {

using test_util::sig;

// `n` model calls, each running the region once with signature sig(8) for `us` microseconds.
void model_calls(Profile& prof, int n, double us) {
  for (int i = 0; i < n; ++i) {
    prof.record_call(sig(8), us, 0, 0, 0);
    prof.on_model_call();
  }
}

// The seeds this file's arithmetic is written for (a build's measured seeds,
// src/runtime/speedup_seeds/*.json, differ by machine): elementwise 4, 1.5, 1; matmul_epilogue
// 0.01, 71, 1.4; reduction 0.35, 4.5, 1; conv 0.01, 80, 1.
void use_test_seeds(TierPolicy& p) {
  const double seeds[][3] = {{4.0, 1.5, 1.0}, {0.01, 71.0, 1.4}, {0.35, 4.5, 1.0}, {0.01, 80.0, 1.0}};
  const SpeedupClass classes[] = {SpeedupClass::kElementwise, SpeedupClass::kMatMulEpilogue,
                                  SpeedupClass::kReduction, SpeedupClass::kConv};
  for (int c = 0; c < 4; ++c)
    for (int t = 0; t < 3; ++t) p.speedups().set_seed(classes[c], t, seeds[c][t]);
  // No spread: the mean speedup alone decides (the spread's own tests set one).
  for (int c = 0; c < kNumSpeedupClasses; ++c)
    for (int t = 1; t < kNumTiers; ++t) p.speedups().set_spread(static_cast<SpeedupClass>(c), t, 0);
}

// An elementwise region of 10 nodes. Seeds: speedup 0->1 = 4.0, 1->2 = 1.5; compile cost prior
// tier 1 = 2000 + 300·10 = 5000 us, tier 2 = 8000 + 1500·10 = 23000 us.
RegionInfo region() { return {7, "add_7", RegionKind::kElementwise, 10}; }

TEST(TierPolicy, DefaultThresholdsAndModels) {
  TierPolicy p;
  EXPECT_DOUBLE_EQ(p.threshold(0), 2);    // θ0
  EXPECT_DOUBLE_EQ(p.threshold(1), 20);   // θ0·γ
  EXPECT_DOUBLE_EQ(p.threshold(2), 200);  // θ0·γ²
  EXPECT_NEAR(p.costs().predict(1, 10), 5000, 1e-6);
  EXPECT_NEAR(p.costs().predict(2, 10), 23000, 1e-6);
  // Seeds from the measured data of this CPU's instruction set, embedded in the build: every
  // compiled kind measured, each step a positive number.
  const MeasuredSeeds& m = measured_seeds();
  for (SpeedupClass c : {SpeedupClass::kElementwise, SpeedupClass::kMatMulEpilogue,
                         SpeedupClass::kReduction, SpeedupClass::kConv}) {
    EXPECT_TRUE(m.measured[static_cast<int>(c)]) << m.isa << " class " << static_cast<int>(c);
    for (int t = 0; t < 3; ++t) {
      EXPECT_GT(m.steps[static_cast<int>(c)][t], 0);
      EXPECT_NEAR(p.speedups().speedup(c, t), m.steps[static_cast<int>(c)][t], 1e-9);
    }
  }
}

TEST(TierPolicy, NoDecisionBelowThreshold) {
  TierPolicy p;
  use_test_seeds(p);
  Profile prof;
  prof.record_call(sig(8), 1000, 0, 0, 0);  // 1 call < θ_0 = 2
  PromotionDecision d = p.consider_promotion(region(), prof, 0);
  EXPECT_FALSE(d.promote);
  EXPECT_FALSE(d.record.has_value());
}

TEST(TierPolicy, DeclinedWhenItCannotPay) {
  TierPolicy p;
  use_test_seeds(p);
  Profile prof;
  prof.record_call(sig(8), 100, 0, 0, 0);
  prof.record_call(sig(8), 100, 0, 0, 0);
  // 2 calls >= θ_0 = 2; N_expected = 2 (no model call yet); t_1 = 100 / 4 = 25;
  // benefit = 2·(100 − 25) − 5000 = −4850 <= 0.
  PromotionDecision d = p.consider_promotion(region(), prof, 0);
  EXPECT_FALSE(d.promote);
  EXPECT_NEAR(d.benefit_us, -4850, 1e-6);
  ASSERT_TRUE(d.record.has_value());
  EXPECT_EQ(d.record->kind, DecisionKind::kDeclined);
  EXPECT_EQ(d.record->region_name, "add_7");
  EXPECT_EQ(d.record->message.rfind("cannot pay: calls 2 >= θ_0 2; benefit N_expected 2 x", 0), 0u)
      << d.record->message;
}

TEST(TierPolicy, PromotesWhenBenefitPositive) {
  TierPolicy p;
  use_test_seeds(p);
  Profile prof;
  // One call per model call, 1000 us each at tier 0, over a full window of 64 model calls:
  // N_expected = 64; t_1 = 1000 / 4 = 250; benefit = 64·(1000 − 250) − 5000 = 43000 > 0;
  // density = 43000 / 5000 = 8.6.
  model_calls(prof, 64, 1000);
  PromotionDecision d = p.consider_promotion(region(), prof, 0);
  EXPECT_TRUE(d.promote);
  EXPECT_EQ(d.to_tier, 1);
  EXPECT_DOUBLE_EQ(d.n_expected, 64);
  EXPECT_DOUBLE_EQ(d.t_next_us, 250);
  EXPECT_NEAR(d.benefit_us, 43000, 1e-6);
  EXPECT_NEAR(d.density, 8.6, 1e-9);
  ASSERT_TRUE(d.record.has_value());
  EXPECT_EQ(d.record->kind, DecisionKind::kPromoted);
  EXPECT_EQ(d.record->from_tier, 0);
  EXPECT_EQ(d.record->tier, 1);
  // Tier 1 -> 2: 64 calls >= θ_1 = 20 but t_1 = 250 measured, t_2 = 250 / 1.5 = 166.67;
  // benefit = 64·83.33 − 23000 = −17666.7: declined.
  Profile t1;
  for (int i = 0; i < 64; ++i) {
    t1.record_call(sig(8), 250, 1, 0, 0);
    t1.on_model_call();
  }
  PromotionDecision d2 = p.consider_promotion(region(), t1, 1);
  EXPECT_FALSE(d2.promote);
  EXPECT_NEAR(d2.benefit_us, 64 * (250 - 250 / 1.5) - 23000, 1e-6);
  EXPECT_EQ(d2.record->kind, DecisionKind::kDeclined);
  // The same with 10 calls < θ_1 = 20: nothing decided.
  Profile few;
  for (int i = 0; i < 10; ++i) few.record_call(sig(8), 250, 1, 0, 0);
  EXPECT_FALSE(p.consider_promotion(region(), few, 1).record.has_value());
}

TEST(TierPolicy, CompileCostFactorScalesTheCost) {
  // The same profile as PromotesWhenBenefitPositive: C_1 = 5000 us; with compile_cost_factor 1.5
  // (a compile thread taking one of a two-thread team's cores) C = 7500 and benefit
  // 64·750 − 7500 = 40500; at factor 9, 48000 − 45000 = 3000; at 20, 48000 − 100000: declined.
  Profile prof;
  model_calls(prof, 64, 1000);
  for (auto [factor, benefit] : {std::pair{1.5, 40500.0}, {9.0, 3000.0}, {20.0, -52000.0}}) {
    TierPolicyOptions o;
    o.compile_cost_factor = factor;
    TierPolicy p(o);
    use_test_seeds(p);
    PromotionDecision d = p.consider_promotion(region(), prof, 0);
    EXPECT_NEAR(d.compile_us, 5000 * factor, 1e-6) << factor;
    EXPECT_NEAR(d.benefit_us, benefit, 1e-6) << factor;
    EXPECT_EQ(d.promote, benefit > 0) << factor;
  }
}

TEST(TierPolicy, OpaqueAndTopTierAreNotPromoted) {
  TierPolicy p;
  use_test_seeds(p);
  Profile prof;
  for (int i = 0; i < 300; ++i) prof.record_call(sig(8), 1000, 0, 0, 0);
  RegionInfo opaque{1, "nms_1", RegionKind::kOpaque, 1};
  PromotionDecision d = p.consider_promotion(opaque, prof, 0);
  EXPECT_FALSE(d.promote);
  EXPECT_EQ(d.record->message, "opaque regions are not compiled");
  EXPECT_FALSE(p.consider_promotion(region(), prof, 3).record.has_value());
}

TEST(TierPolicy, ThresholdAdaptationSign) {
  TierPolicy p;
  use_test_seeds(p);
  // Pays well: R = (1000 − 250)·64 / 5000 = 9.6 > R_target 2 -> θ_1 = 20 − 0.1·20·(9.6 − 2) = 4.8.
  ThresholdUpdate u = p.observe_compile(region(), 1, 1000, 250, 64, 5000);
  EXPECT_NEAR(u.r_actual, 9.6, 1e-12);
  EXPECT_NEAR(u.new_theta, 4.8, 1e-9);
  EXPECT_NEAR(p.threshold(1), 4.8, 1e-9);
  // Pays nothing: R = 0 -> θ_1 = 4.8 − 0.48·(0 − 2) = 5.76 (raised).
  u = p.observe_compile(region(), 1, 100, 100, 64, 5000);
  EXPECT_NEAR(u.new_theta, 5.76, 1e-9);
  // Pays hugely: clamped at θ_min = θ0 = 2.
  u = p.observe_compile(region(), 1, 1e6, 1, 1000, 10);
  EXPECT_DOUBLE_EQ(u.new_theta, 2);
  // The observed compile fed the speedup model: geometric mean of seed 1.5 and 1000/250 = 4 and
  // 100/100 = 1 and 1e6/1: exp((ln 1.5 + ln 4 + ln 1 + ln 1e6) / 4).
  double expect = std::exp((std::log(1.5) + std::log(4.0) + std::log(1e6)) / 4);
  EXPECT_NEAR(p.speedups().speedup(SpeedupClass::kElementwise, 1), expect, 1e-9);
}

TEST(TierPolicy, CompileCostModelFollowsData) {
  CompileCostModel m;
  m.set_prior(1, 1000, 100);  // pseudo-points (1, 1100), (10, 2000)
  EXPECT_NEAR(m.predict(1, 5), 1500, 1e-9);
  // Many compiles on the line 500 + 200·size dominate the two prior points.
  for (int i = 0; i < 200; ++i) {
    m.observe(1, 5, 1500);
    m.observe(1, 50, 10500);
  }
  EXPECT_NEAR(m.predict(1, 20), 4500, 0.02 * 4500);
}

TEST(TierPolicy, Hotness) {
  TierPolicy p;
  use_test_seeds(p);
  // 1·10 + 1·0.5 + 0.5·0.2 + 0.25·4 = 11.6
  EXPECT_NEAR(p.hotness({10, 0.5, 0.2, 4}), 11.6, 1e-12);
  // From a profile: 2 calls, 300 us of a 600 us model, 2000 of 10000 bytes, 8000 FLOPs:
  // {2, 0.5, 0.2, 8000 / 2000 = 4} -> 1·2 + 0.5 + 0.1 + 1 = 3.6.
  Profile prof;
  prof.record_call(sig(8), 100, 0, 1000, 4000);
  prof.record_call(sig(8), 200, 0, 1000, 4000);
  HotnessInputs in = hotness_inputs(prof, 600, 10000);
  EXPECT_DOUBLE_EQ(in.time_share, 0.5);
  EXPECT_DOUBLE_EQ(in.arithmetic_intensity, 4);
  EXPECT_NEAR(p.hotness(in), 3.6, 1e-12);
  EXPECT_DOUBLE_EQ(hotness_inputs(Profile(), 0, 0).time_share, 0);
}

TEST(TierPolicy, DemotionAtEpsilon) {
  TierPolicy p;
  use_test_seeds(p);
  Profile prof;
  for (int i = 0; i < 45; ++i) prof.record_call(sig(8), 1, 2, 0, 0);
  for (int i = 0; i < 19; ++i) prof.record_call(sig(9), 1, 2, 0, 0, true, 0);
  EXPECT_FALSE(p.consider_demotion(region(), prof).has_value());  // 19/64 = 0.297 <= 0.3
  prof.record_call(sig(9), 1, 2, 0, 0, true, 0);                   // 20/64 = 0.3125 > 0.3
  auto d = p.consider_demotion(region(), prof);
  ASSERT_TRUE(d.has_value());
  EXPECT_DOUBLE_EQ(d->failure_rate, 20.0 / 64);
  EXPECT_EQ(d->dims_to_mark_dynamic, std::vector<int>{0});
  EXPECT_EQ(d->record.kind, DecisionKind::kDemoted);
  EXPECT_EQ(d->record.message,
            "guard-failure rate 0.312 over the last 64 calls > ε 0.3: exact versions dropped, "
            "flat dims [0] marked dynamic");
}

// Lindy horizon: N_expected = EWMA calls per window x windows of model calls seen so far. A region
// at 20 us per call (tier 1 predicted 20 / 4 = 5 us, C_1 = 5000 us) cannot pay at its 2nd call
// (N = 64: 64·15 − 5000 = −4040) but pays after 512 calls (N = 64·512/64 = 512: 512·15 − 5000 =
// 2680 > 0). Without the Lindy horizon N stays 64.
TEST(TierPolicy, LindyHorizonReconsidersAndPromotes) {
  TierPolicy p;
  use_test_seeds(p);
  Profile prof;
  model_calls(prof, 2, 20);
  PromotionDecision d = p.consider_promotion(region(), prof, 0);
  EXPECT_FALSE(d.promote);
  EXPECT_DOUBLE_EQ(d.n_expected, 64);
  EXPECT_NEAR(d.benefit_us, -4040, 1e-6);
  model_calls(prof, 510, 20);
  d = p.consider_promotion(region(), prof, 0);
  EXPECT_TRUE(d.promote) << d.record->message;
  EXPECT_DOUBLE_EQ(d.n_expected, 512);
  EXPECT_NEAR(d.benefit_us, 2680, 1e-6);
  TierPolicyOptions no_lindy;
  no_lindy.lindy_horizon = false;
  TierPolicy q(no_lindy);
  use_test_seeds(q);
  d = q.consider_promotion(region(), prof, 0);
  EXPECT_FALSE(d.promote);
  EXPECT_DOUBLE_EQ(d.n_expected, 64);
  // benefit_horizon_windows is a floor on the horizon: 10 windows -> N = 640 after 2 calls.
  TierPolicyOptions long_run;
  long_run.benefit_horizon_windows = 10;
  Profile two;
  for (int i = 0; i < 2; ++i) {
    two.record_call(sig(8), 20, 0, 0, 0);
    two.on_model_call();
  }
  EXPECT_DOUBLE_EQ(TierPolicy(long_run).expected_calls(two), 640);
}

TEST(TierPolicy, ReconsiderationBackoff) {
  TierPolicy p;
  use_test_seeds(p);
  // calls + max(8, 0.5·calls): 2 -> 10 -> 18 -> 27 -> 41; 1000 -> 1500.
  EXPECT_EQ(p.next_consideration(2), 10u);
  EXPECT_EQ(p.next_consideration(10), 18u);
  EXPECT_EQ(p.next_consideration(18), 27u);
  EXPECT_EQ(p.next_consideration(27), 41u);
  EXPECT_EQ(p.next_consideration(1000), 1500u);
  // From call 2 to call 10,000 about log_1.5(10000 / 16) + 2 decisions, not one per call.
  int decisions = 0;
  for (uint64_t c = 2; c < 10000; c = p.next_consideration(c)) ++decisions;
  EXPECT_LE(decisions, 20);
}

// A matmul region whose tier-2 code is seeded 1.17x tier 0 (the seed before session 20): the
// 0 -> 1 step is predicted 0.01x (generic GEMM), so it is skipped and (max tier 2) tier 2 is
// weighed at θ_1 = 20 with speedup 0.01 · 117 = 1.17 over tier 0: t_2 = 100 / 1.17 = 85.5 us;
// C_2 = 8000 + 1500·1 = 9500 us does not pay within 64 calls.
TEST(TierPolicy, SkipsAStepPredictedSlower) {
  TierPolicyOptions two;
  two.max_tier = 2;  // as the adaptive Session runs it
  TierPolicy p(two);
  use_test_seeds(p);
  p.speedups().set_seed(SpeedupClass::kMatMulEpilogue, 1, 117);
  RegionInfo gemm{3, "gemm_3", RegionKind::kMatMulEpilogue, 1};
  Profile few;
  for (int i = 0; i < 10; ++i) few.record_call(sig(8), 100, 0, 0, 0);
  EXPECT_FALSE(p.consider_promotion(gemm, few, 0).record.has_value());  // 10 < θ_1 = 20
  Profile prof;
  model_calls(prof, 64, 100);
  PromotionDecision d = p.consider_promotion(gemm, prof, 0);
  EXPECT_FALSE(d.promote);
  EXPECT_EQ(d.to_tier, 2);
  EXPECT_DOUBLE_EQ(d.threshold, 20);
  EXPECT_NEAR(d.t_next_us, 100 / 1.17, 1e-6);  // seed: tier 2 1.17x tier 0 (0.01 · 117)
  EXPECT_NEAR(d.benefit_us, 64 * (100 - 100 / 1.17) - 9500, 1e-6);
  ASSERT_TRUE(d.record.has_value());
  EXPECT_EQ(d.record->tier, 2);
  EXPECT_NE(d.record->message.find("tier 1 skipped (predicted speedup 0.01 over tier 0)"), std::string::npos)
      << d.record->message;
  // With tier 3 allowed, tier 2 (1.17x, faster than tier 0) is still the step weighed.
  TierPolicy three;
  use_test_seeds(three);
  three.speedups().set_seed(SpeedupClass::kMatMulEpilogue, 1, 117);
  EXPECT_EQ(three.consider_promotion(gemm, prof, 0).to_tier, 2);
  // Measured tier-2 code 3x faster than tier 0 changes the answer: 0.01·300 = 3 -> t_2 = 33.3 us,
  // benefit 64·66.7 − 9500 < 0 at 64 calls, > 0 at 640 (Lindy: N = 640).
  p.speedups().set_seed(SpeedupClass::kMatMulEpilogue, 1, 300);
  model_calls(prof, 576, 100);
  d = p.consider_promotion(gemm, prof, 0);
  EXPECT_TRUE(d.promote) << d.record->message;
  EXPECT_EQ(d.to_tier, 2);
  EXPECT_NEAR(d.benefit_us, 640 * (100 - 100 / 3.0) - 9500, 1e-6);
}

// A convolution region (tier 0: oneDNN, conv chains) is predicted no faster at tiers 1-3 and is
// declined however hot; a MatMul region with the same profile, its tier 2 seeded 1.17x, is
// weighed for tier 2. Payoffs measured on one class do not move the other's estimates.
TEST(TierPolicy, ConvRegionsAreWeighedApartFromMatMuls) {
  TierPolicy p;
  use_test_seeds(p);
  p.speedups().set_seed(SpeedupClass::kMatMulEpilogue, 1, 117);
  RegionInfo conv{0, "conv_0", RegionKind::kMatMulEpilogue, 2, /*conv_anchor=*/true};
  RegionInfo gemm{1, "gemm_1", RegionKind::kMatMulEpilogue, 2};
  EXPECT_EQ(conv.speedup_class(), SpeedupClass::kConv);
  EXPECT_EQ(gemm.speedup_class(), SpeedupClass::kMatMulEpilogue);
  EXPECT_EQ(speedup_class(RegionKind::kReduction, true), SpeedupClass::kReduction);
  RegionInfo pointwise = conv, depthwise = conv;
  pointwise.conv_class = SpeedupClass::kConvPointwise;
  depthwise.conv_class = SpeedupClass::kConvDepthwise;
  EXPECT_EQ(pointwise.speedup_class(), SpeedupClass::kConvPointwise);
  EXPECT_EQ(depthwise.speedup_class(), SpeedupClass::kConvDepthwise);
  EXPECT_EQ(speedup_class_named("conv_pointwise"), SpeedupClass::kConvPointwise);
  EXPECT_EQ(speedup_class_named("conv_depthwise"), SpeedupClass::kConvDepthwise);
  EXPECT_EQ(speedup_class_named("conv_pool"), SpeedupClass::kConvPool);
  // Every class has a generic factor in (0, 1]: exact code is never infinitely faster.
  for (int k = 0; k < kNumSpeedupClasses; ++k) {
    const double f = p.speedups().generic_factor(static_cast<SpeedupClass>(k));
    EXPECT_GT(f, 0.0) << k;
    EXPECT_LE(f, 1.0) << k;
  }
  Profile prof;
  model_calls(prof, 100000, 1000);
  PromotionDecision c = p.consider_promotion(conv, prof, 0);
  EXPECT_FALSE(c.promote);
  ASSERT_TRUE(c.record.has_value());
  EXPECT_EQ(c.record->kind, DecisionKind::kDeclined);
  EXPECT_NEAR(p.speedups().speedup_between(SpeedupClass::kConv, 0, 2), 0.8, 1e-9);
  PromotionDecision g = p.consider_promotion(gemm, prof, 0);
  EXPECT_TRUE(g.promote) << (g.record ? g.record->message : "");
  EXPECT_EQ(g.to_tier, 2);
  // A conv compile measured 4x slower than tier 0 leaves the MatMul estimate where it was.
  (void)p.observe_compile(conv, 0, 2, 100, 400, 1000, 10000);
  EXPECT_NEAR(p.speedups().speedup(SpeedupClass::kMatMulEpilogue, 1), 117, 1e-9);
  EXPECT_LT(p.speedups().speedup(SpeedupClass::kConv, 1), 80);
}

// A compile from tier 0 straight to tier 2 (100 us -> 50 us) is an observation of the 1 -> 2 step
// once the 0 -> 1 estimate (0.01) is divided out: 100 / (50 · 0.01) = 200; with the seed 71 the
// estimate is sqrt(71 · 200) = 119.16. θ_1 (the step into tier 2) adapts.
TEST(TierPolicy, ObserveSpanAttributesTheLastStep) {
  TierPolicy p;
  use_test_seeds(p);
  RegionInfo gemm{3, "gemm_3", RegionKind::kMatMulEpilogue, 1};
  ThresholdUpdate u = p.observe_compile(gemm, 0, 2, 100, 50, 64, 1000);
  EXPECT_EQ(u.tier, 1);
  EXPECT_NEAR(p.speedups().speedup(SpeedupClass::kMatMulEpilogue, 1), std::sqrt(71.0 * 200.0), 1e-9);
  EXPECT_NEAR(p.speedups().speedup(SpeedupClass::kMatMulEpilogue, 0), 0.01, 1e-12);
  // R = 50·64 / 1000 = 3.2 > 2: θ_1 = 20 − 2·1.2 = 17.6.
  EXPECT_NEAR(p.threshold(1), 17.6, 1e-9);
}

// The default seeds (session 20, tier_policy.cc): against tier 0's packed products and row
// kernels, compiled MatMul code is predicted slower at tier 2 (0.71x) and no faster at tier 3
// (0.99x), so a MatMul region is declined however hot; a LayerNorm / Softmax region skips tier 1
// (0.35x) and is weighed for tier 2 (1.57x). speedup_class_named maps the option's kind names.
TEST(TierPolicy, DefaultSeedsFollowTodaysTierZero) {
  TierPolicy p;
  use_test_seeds(p);
  const SpeedupModel& m = p.speedups();
  EXPECT_NEAR(m.speedup_between(SpeedupClass::kMatMulEpilogue, 0, 2), 0.71, 1e-9);
  EXPECT_NEAR(m.speedup_between(SpeedupClass::kMatMulEpilogue, 0, 3), 0.994, 1e-9);
  EXPECT_NEAR(m.speedup_between(SpeedupClass::kReduction, 0, 2), 1.575, 1e-9);
  RegionInfo gemm{1, "gemm_1", RegionKind::kMatMulEpilogue, 2};
  RegionInfo norm{2, "layernormalization_2", RegionKind::kReduction, 1};
  Profile prof;
  model_calls(prof, 100000, 1000);
  PromotionDecision g = p.consider_promotion(gemm, prof, 0);
  EXPECT_FALSE(g.promote);
  EXPECT_EQ(g.to_tier, 3);
  ASSERT_TRUE(g.record.has_value());
  EXPECT_NE(g.record->message.find("tier 2 skipped (predicted speedup 0.71 over tier 0)"),
            std::string::npos) << g.record->message;
  PromotionDecision r = p.consider_promotion(norm, prof, 0);
  EXPECT_TRUE(r.promote) << (r.record ? r.record->message : "");
  EXPECT_EQ(r.to_tier, 2);
  EXPECT_EQ(speedup_class_named("matmul_epilogue"), SpeedupClass::kMatMulEpilogue);
  EXPECT_EQ(speedup_class_named("conv"), SpeedupClass::kConv);
  EXPECT_EQ(speedup_class_named("elementwise"), SpeedupClass::kElementwise);
  EXPECT_EQ(speedup_class_named("reduction"), SpeedupClass::kReduction);
  EXPECT_EQ(speedup_class_named("recurrent"), SpeedupClass::kRecurrent);
  EXPECT_EQ(speedup_class(RegionKind::kRecurrent), SpeedupClass::kRecurrent);
  EXPECT_FALSE(speedup_class_named("opaque").has_value());
  EXPECT_FALSE(speedup_class_named("MatMul").has_value());
}

// expected_gain: log S ~ N(mu, sigma^2), hand-computed from the closed forms (and a 2M-sample
// Monte Carlo run, not part of the test: 0.45695 / 0.023576 for mu = ln 2, sigma = 0.5).
TEST(TierPolicy, ExpectedGainOfAnUncertainSpeedup) {
  ExpectedGain g = expected_gain(std::log(2.0), 0);  // exactly 2x: half the time saved
  EXPECT_NEAR(g.gain, 0.5, 1e-12);
  EXPECT_NEAR(g.loss, 0, 1e-12);
  g = expected_gain(std::log(0.5), 0);  // exactly 2x slower: a trial call costs t more
  EXPECT_NEAR(g.gain, 0, 1e-12);
  EXPECT_NEAR(g.loss, 1, 1e-12);
  g = expected_gain(0, 1);  // Phi(0) - e^0.5 Phi(-1); e^0.5 Phi(1) - Phi(0)
  EXPECT_NEAR(g.gain, 0.2384217081, 1e-9);
  EXPECT_NEAR(g.loss, 0.8871429788, 1e-9);
  g = expected_gain(std::log(2.0), 0.5);
  EXPECT_NEAR(g.gain, 0.4569599300, 1e-9);
  EXPECT_NEAR(g.loss, 0.0235341565, 1e-9);
  g = expected_gain(std::log(2.0), 1e-9);  // the limit sigma -> 0
  EXPECT_NEAR(g.gain, 0.5, 1e-6);
  EXPECT_NEAR(g.loss, 0, 1e-6);
}

// A depthwise-conv region whose kind's mean speedup is 1.0 at every tier is never compiled on
// the mean alone; with a spread of 1.0 (in log) of its kind's speedups over tier 0 at tier 1 it
// is tried: benefit N 64 x t 1000 us x gain 0.238422 - 8 trial calls x 1000 us x loss 0.887143 -
// C_1 (2000 + 300 x 2) = 5561.85 us > 0. Without the spread option it is declined again.
TEST(TierPolicy, SpreadOfTheKindsSpeedupsEarnsATrial) {
  TierPolicy p;
  use_test_seeds(p);
  for (int t = 0; t < 3; ++t) p.speedups().set_seed(SpeedupClass::kConvDepthwise, t, 1.0);
  RegionInfo dw{4, "conv_4", RegionKind::kMatMulEpilogue, 2, /*conv_anchor=*/true};
  dw.conv_class = SpeedupClass::kConvDepthwise;
  Profile prof;
  model_calls(prof, 64, 1000);
  PromotionDecision d = p.consider_promotion(dw, prof, 0);
  EXPECT_FALSE(d.promote);
  p.speedups().set_spread(SpeedupClass::kConvDepthwise, 1, 1.0);
  EXPECT_DOUBLE_EQ(p.speedups().spread_from_tier0(SpeedupClass::kConvDepthwise, 1), 1.0);
  d = p.consider_promotion(dw, prof, 0);
  ASSERT_TRUE(d.record.has_value());
  EXPECT_TRUE(d.promote) << d.record->message;
  EXPECT_EQ(d.to_tier, 1);
  EXPECT_NEAR(d.benefit_us, 64 * 1000 * 0.2384217081 - 8 * 1000 * 0.8871429788 - 2600, 1e-3);
  EXPECT_NE(d.record->message.find("spread 1"), std::string::npos) << d.record->message;
  // A region already compiled at tier 1 weighs tier 2 on the mean (its time is measured).
  EXPECT_FALSE(p.consider_promotion(dw, prof, 1).promote);
  TierPolicyOptions no_spread;
  no_spread.weigh_spread = false;
  TierPolicy q(no_spread);
  use_test_seeds(q);
  for (int t = 0; t < 3; ++t) q.speedups().set_seed(SpeedupClass::kConvDepthwise, t, 1.0);
  q.speedups().set_spread(SpeedupClass::kConvDepthwise, 1, 1.0);
  EXPECT_FALSE(q.consider_promotion(dw, prof, 0).promote);
  // The build's seed data carries the spreads (speedup_seeds/*.json "spread_from_tier0").
  EXPECT_GT(measured_seeds().spread[static_cast<int>(SpeedupClass::kConvDepthwise)][1], 0);
}

TEST(TierPolicy, SpecializationsAllStaticAndTier1) {
  TierPolicy p;
  use_test_seeds(p);
  DimTracker t;
  for (int i = 0; i < 5; ++i) t.observe(sig(8));
  auto exact = p.choose_specializations(t, 2);
  ASSERT_EQ(exact.size(), 1u);
  EXPECT_EQ(exact[0].spec.level, SpecLevel::kExact);
  EXPECT_EQ(exact[0].spec.key(), sig(8).exact_key());
  auto t1 = p.choose_specializations(t, 1);
  ASSERT_EQ(t1.size(), 1u);
  EXPECT_EQ(t1[0].spec.level, SpecLevel::kGeneric);
  EXPECT_TRUE(p.choose_specializations(DimTracker(), 2).empty());
}

TEST(TierPolicy, SpecializationsDynamicThetaSpec) {
  // 64 calls, dim 0 dynamic: [8] 32 (50%), [3] 16 (25%), [16] 8 (12.5%), [100] 4 and [120] 4
  // (6.25% each, same bucket 128 -> 12.5%), 64 static.
  DimTracker t;
  auto feed = [&](int64_t s, int n) {
    for (int i = 0; i < n; ++i) t.observe(sig(s));
  };
  feed(100, 4);
  feed(120, 4);
  feed(16, 8);
  feed(3, 16);
  feed(8, 32);
  TierPolicy p;
  use_test_seeds(p);
  auto req = p.choose_specializations(t, 2);
  // generic; exact [8] 50%, [3] 25%, [16] 12.5% (> θ_spec 10%); class 128 12.5% (no exact
  // shape inside it; [100] and [120] at 6.25% each stay below θ_spec); buckets 8, 4 and 16 add
  // nothing beyond their exact shapes. Ties: exact first.
  ASSERT_EQ(req.size(), 5u);
  EXPECT_EQ(req[0].spec.level, SpecLevel::kGeneric);
  EXPECT_EQ(req[1].spec.key(), sig(8).exact_key());
  EXPECT_EQ(req[2].spec.key(), sig(3).exact_key());
  EXPECT_EQ(req[3].spec.key(), sig(16).exact_key());
  EXPECT_EQ(req[4].spec.level, SpecLevel::kShapeClass);
  EXPECT_EQ(req[4].spec.to_string(), "shape_class float32[<=128,64]");
  EXPECT_EQ(req[1].reason, "shape (float32[8,64]) has 50% of the last 64 calls (> θ_spec 10%)");
  // Cap 3: generic plus the two biggest shares.
  TierPolicy capped({.version_cap = 3});
  use_test_seeds(capped);
  auto small = capped.choose_specializations(t, 2);
  ASSERT_EQ(small.size(), 3u);
  EXPECT_EQ(small[2].spec.key(), sig(3).exact_key());
}

TEST(TierPolicy, SpecializationsNoHotShape) {
  // 64 distinct sizes 1..64: no shape above 10%; buckets 33..64 hold 32/64 = 50%, 17..32 25%,
  // 9..16 12.5% -> three class versions; 5..8 6.25% and smaller stay generic.
  DimTracker t;
  for (int64_t s = 1; s <= 64; ++s) t.observe(sig(s));
  TierPolicy p;
  use_test_seeds(p);
  auto req = p.choose_specializations(t, 2);
  ASSERT_EQ(req.size(), 4u);
  EXPECT_EQ(req[1].spec.to_string(), "shape_class float32[<=64,64]");
  EXPECT_EQ(req[2].spec.to_string(), "shape_class float32[<=32,64]");
  EXPECT_EQ(req[3].spec.to_string(), "shape_class float32[<=16,64]");
}

}  // namespace
}  // namespace tierjit::runtime

namespace tierjit::runtime {
namespace {

// Conv nodes by family: the constant weight [M, C/group, kH, kW] and the group attribute decide.
TEST(TierPolicy, ConvFamiliesFromTheNode) {
  passes::testing::GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, passes::testing::dims({passes::testing::S("N"),
                                                                      passes::testing::C(8),
                                                                      passes::testing::C(10),
                                                                      passes::testing::C(10)}));
  auto conv = [&](const char* name, Shape wshape, int64_t group) {
    ir::Value* w = b.constant(std::string(name) + "_w", Tensor::zeros(DType::kFloat32, wshape));
    return b.node_n(ir::OpKind::Conv, {x, w}, name, 1, {{"group", passes::testing::attr_int(group)}});
  };
  EXPECT_EQ(conv_speedup_class(*conv("pw", {16, 8, 1, 1}, 1)), SpeedupClass::kConvPointwise);
  EXPECT_EQ(conv_speedup_class(*conv("dw", {8, 1, 3, 3}, 8)), SpeedupClass::kConvDepthwise);
  EXPECT_EQ(conv_speedup_class(*conv("dw1x1", {8, 1, 1, 1}, 8)), SpeedupClass::kConvDepthwise);
  EXPECT_EQ(conv_speedup_class(*conv("k3", {16, 8, 3, 3}, 1)), SpeedupClass::kConv);
  EXPECT_EQ(conv_speedup_class(*conv("grouped", {16, 4, 1, 1}, 2)), SpeedupClass::kConv);
}

// After the k-th eviction at call c the region is weighed again at c * 4^k: 140 -> 560 after
// the first, 560 -> 8960 after the second; call 0 counts as 1; no overflow.
TEST(TierPolicy, RetryAfterEvictionBacksOffGeometrically) {
  EXPECT_EQ(TierPolicy::retry_after_eviction(140, 1), 560u);
  EXPECT_EQ(TierPolicy::retry_after_eviction(560, 2), 8960u);
  EXPECT_EQ(TierPolicy::retry_after_eviction(0, 1), 4u);
  EXPECT_EQ(TierPolicy::retry_after_eviction(uint64_t{1} << 62, 3), std::numeric_limits<uint64_t>::max());
}

}  // namespace
}  // namespace tierjit::runtime
