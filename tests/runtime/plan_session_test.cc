// Session over Plans: pinned tiers 1/2/3 give tier 0's outputs (models built in memory, written
// to a temp .onnx), plans are reused per signature, a data-dependent shape (NonZero feeding an
// elementwise op) stays correct and turns its signature interpret-only, 8 threads with mixed
// shapes are correct, the plan LRU stays bounded, verify mode never changes results.
// Reference = ExecutionMode::kInterpretOnly (tier 0). Tolerance: rtol 1e-4 + atol 1e-5 for float
// results (compiled code may reassociate sums and use FMA; inputs are O(1)), exact for int64.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <thread>

#include "onnx/model_builder.h"
#include "tierjit/session.h"

namespace tierjit {
namespace {

using namespace onnx_test;  // NOLINT

constexpr int32_t kF32 = onnx::TensorProto_DataType_FLOAT;

std::vector<float> iota_values(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(static_cast<int>(i % 7) - 3);
  return v;
}

// x[N,8] -> Add(bias) -> Mul(x) -> Relu -> MatMul(w[8,5]) -> Add(b2) -> Tanh -> Softmax(axis -1)
// -> y[N,5]; also z = ReduceSum(x, axes=[1], keepdims=1) -> Sigmoid (a reduction region).
std::string write_mixed_model(const TempDir& dir) {
  onnx::GraphProto g;
  add_input(g, "x", kF32, {"N", 8});
  add_float_init(g, "bias", {8}, iota_values(8, 0.25f));
  add_float_init(g, "w", {8, 5}, iota_values(40, 0.1f));
  add_float_init(g, "b2", {5}, iota_values(5, 0.5f));
  add_node(g, "Add", {"x", "bias"}, {"a"});
  add_node(g, "Mul", {"a", "x"}, {"m"});
  add_node(g, "Relu", {"m"}, {"r"});
  add_node(g, "MatMul", {"r", "w"}, {"mm"});
  add_node(g, "Add", {"mm", "b2"}, {"mb"});
  add_node(g, "Tanh", {"mb"}, {"t"});
  attr_int(add_node(g, "Softmax", {"t"}, {"y"}), "axis", -1);
  add_int64_init(g, "axes", {1});
  attr_int(add_node(g, "ReduceSum", {"x", "axes"}, {"s"}), "keepdims", 1);
  add_node(g, "Sigmoid", {"s"}, {"z"});
  add_output(g, "y", kF32, {"N", 5});
  add_output(g, "z", kF32, {"N", 1});
  dir.write("mixed.onnx", serialize(make_model(g)));
  return dir.file("mixed.onnx");
}

// x[N] float -> NonZero -> [1, K] int64 -> Cast float -> Add(c) -> y[1, K]. K depends on the
// values of x, not its shape.
std::string write_nonzero_model(const TempDir& dir) {
  onnx::GraphProto g;
  add_input(g, "x", kF32, {"N"});
  add_float_init(g, "c", {1}, {10.f});
  add_node(g, "NonZero", {"x"}, {"nz"});
  attr_int(add_node(g, "Cast", {"nz"}, {"f"}), "to", kF32);
  add_node(g, "Add", {"f", "c"}, {"y"});
  add_output(g, "y", kF32, {1, "K"});
  dir.write("nonzero.onnx", serialize(make_model(g)));
  return dir.file("nonzero.onnx");
}

Tensor random_input(int64_t n, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  Shape s = cols < 0 ? Shape{n} : Shape{n, cols};
  Tensor t = Tensor::empty(DType::kFloat32, s);
  for (float& v : t.span<float>()) v = u(rng);
  return t;
}

void expect_same(const NamedTensors& got, const NamedTensors& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t o = 0; o < want.size(); ++o) {
    const Tensor& g = got[o].second;
    const Tensor& w = want[o].second;
    ASSERT_EQ(got[o].first, want[o].first) << what;
    ASSERT_EQ(g.dtype(), w.dtype()) << what;
    ASSERT_EQ(g.shape(), w.shape()) << what << " output " << o;
    for (int64_t i = 0; i < w.numel(); ++i) {
      double a = g.value_as_double(i), b = w.value_as_double(i);
      if (std::isnan(b)) {
        EXPECT_TRUE(std::isnan(a)) << what << " output " << o << " [" << i << "]";
        continue;
      }
      EXPECT_LE(std::fabs(a - b), 1e-5 + 1e-4 * std::fabs(b))
          << what << " output " << o << " [" << i << "]: " << a << " vs " << b;
    }
  }
}

SessionOptions pinned(int tier, bool verify = false) {
  SessionOptions o;
  o.mode = ExecutionMode::kPinnedTier;
  o.pinned_tier = tier;
  o.verify = verify;
  return o;
}

SessionOptions interpret_only() {
  SessionOptions o;
  o.mode = ExecutionMode::kInterpretOnly;
  return o;
}

class PlanSessionTest : public ::testing::Test {
 protected:
  TempDir dir_{"plan_session"};
};

TEST_F(PlanSessionTest, PinnedTiersMatchTierZero) {
  const std::string model = write_mixed_model(dir_);
  Session ref(model, interpret_only());
  for (int tier : {1, 2, 3}) {
    for (bool verify : {false, true}) {
      Session s(model, pinned(tier, verify));
      for (int64_t n : {0, 1, 3, 17, 64, 3}) {
        Tensor x = random_input(n, 8, static_cast<uint32_t>(n + 7));
        expect_same(s.run({{"x", x}}), ref.run({{"x", x}}),
                    "tier " + std::to_string(tier) + (verify ? " verify" : "") + " N=" +
                        std::to_string(n));
      }
      SessionStats st = s.stats();
      EXPECT_EQ(st.calls, 6u);
      EXPECT_EQ(st.plan_misses, 5u);  // N = 3 twice
      EXPECT_EQ(st.plan_hits, 1u);
      EXPECT_GT(st.regions, 2u);
      EXPECT_EQ(st.interpreted_calls, 0u);
      // Every compile failure has its reason in the decision log (the region stayed on tier 0).
      if (st.compile_failures > 0) {
        EXPECT_NE(s.decision_log_json().find("stays on tier 0"), std::string::npos);
      }
    }
  }
}

TEST_F(PlanSessionTest, InterpretOnlyUsesNoPlans) {
  const std::string model = write_mixed_model(dir_);
  Session s(model, interpret_only());
  Tensor x = random_input(4, 8, 1);
  s.run({{"x", x}});
  s.run({{"x", x}});
  SessionStats st = s.stats();
  EXPECT_EQ(st.calls, 2u);
  EXPECT_EQ(st.interpreted_calls, 2u);
  EXPECT_EQ(st.plan_hits + st.plan_misses, 0u);
  EXPECT_EQ(st.plans_cached, 0u);
}

TEST_F(PlanSessionTest, PlansAreReusedPerSignature) {
  const std::string model = write_mixed_model(dir_);
  Session ref(model, interpret_only());
  Session s(model);  // adaptive: plans with tier-0 regions until promotion
  for (int rep = 0; rep < 5; ++rep)
    for (int64_t n : {2, 9}) {
      Tensor x = random_input(n, 8, static_cast<uint32_t>(rep * 100 + n));
      expect_same(s.run({{"x", x}}), ref.run({{"x", x}}), "adaptive N=" + std::to_string(n));
    }
  SessionStats st = s.stats();
  EXPECT_EQ(st.plan_misses, 2u);
  EXPECT_EQ(st.plan_hits, 8u);
  EXPECT_EQ(st.plans_cached, 2u);
}

TEST_F(PlanSessionTest, DataDependentShapeFallsBackToTierZero) {
  const std::string model = write_nonzero_model(dir_);
  Session ref(model, interpret_only());
  for (SessionOptions o : {SessionOptions{}, pinned(1), pinned(2)}) {
    Session s(model, o);
    // Same signature (float32[6]), different non-zero counts: 3, then 5, then 3 again.
    std::vector<std::vector<float>> xs = {{0, 1, 0, 2, 0, 3}, {1, 1, 1, 0, 1, 1}, {0, 0, 4, 4, 4, 0}};
    for (const auto& v : xs) {
      Tensor x = Tensor::from_vector<float>({6}, v);
      expect_same(s.run({{"x", x}}), ref.run({{"x", x}}), "nonzero");
    }
    SessionStats st = s.stats();
    EXPECT_EQ(st.plan_misses, 1u);
    EXPECT_EQ(st.interpreted_calls, 2u);  // the call that found the change, and the next one
    EXPECT_NE(s.decision_log_json().find("data-dependent"), std::string::npos);
  }
}

// x[B, T] + m[B, T] fed [1, 5] and [3, 5] (or [4, 6] and [4, 1]): the declared shapes say B (T)
// has one value, the feeds give two. The compiled tiers' generic code read past m's end (found by
// a tester: tier 1 returned values of 1e21); the signature now runs on tier 0, which broadcasts as
// ONNX Runtime does, and the decision log says why.
TEST_F(PlanSessionTest, FeedsGivingASharedSymbolTwoValuesRunOnTierZero) {
  onnx::GraphProto g;
  add_input(g, "x", kF32, {"B", "T"});
  add_input(g, "m", kF32, {"B", "T"});
  add_node(g, "Add", {"x", "m"}, {"a"});
  add_node(g, "Relu", {"a"}, {"y"});
  add_output(g, "y", kF32, {"B", "T"});
  dir_.write("shared.onnx", serialize(make_model(g)));
  const std::string model = dir_.file("shared.onnx");
  Session ref(model, interpret_only());
  for (SessionOptions o : {SessionOptions{}, pinned(1), pinned(2), pinned(3)}) {
    Session s(model, o);
    for (int rep = 0; rep < 3; ++rep)
      for (const auto& [xs, ms] : std::vector<std::pair<Shape, Shape>>{{{1, 5}, {3, 5}}, {{4, 6}, {4, 1}},
                                                                       {{3, 1}, {3, 4}}, {{2, 3}, {2, 3}}}) {
        const Tensor x = random_input(xs[0], xs[1], 7), m = random_input(ms[0], ms[1], 8);
        const NamedTensors want = ref.run({{"x", x}, {"m", m}});
        ASSERT_EQ(want[0].second.shape(), (Shape{std::max(xs[0], ms[0]), std::max(xs[1], ms[1])}));
        expect_same(s.run({{"x", x}, {"m", m}}), want, "shared symbol");
      }
    EXPECT_NE(s.decision_log_json().find("give symbolic dim 'B' the values 1 and 3"), std::string::npos);
    EXPECT_NE(s.decision_log_json().find("give symbolic dim 'T' the values 6 and 1"), std::string::npos);
  }
}

TEST_F(PlanSessionTest, ConcurrentCallsWithMixedShapes) {
  const std::string model = write_mixed_model(dir_);
  Session ref(model, interpret_only());
  for (SessionOptions o : {SessionOptions{}, pinned(1), pinned(2)}) {
    Session s(model, o);
    const std::vector<int64_t> sizes = {1, 5, 16, 33};
    std::vector<Tensor> xs;
    std::vector<NamedTensors> want;
    for (size_t i = 0; i < sizes.size(); ++i) {
      xs.push_back(random_input(sizes[i], 8, static_cast<uint32_t>(i + 40)));
      want.push_back(ref.run({{"x", xs.back()}}));
    }
    std::atomic<int> bad{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&, t] {
        for (int k = 0; k < 40; ++k) {
          size_t i = static_cast<size_t>(t + k) % sizes.size();
          NamedTensors got = s.run({{"x", xs[i]}});
          for (size_t o = 0; o < got.size(); ++o) {
            const Tensor& g = got[o].second;
            const Tensor& w = want[i][o].second;
            if (g.shape() != w.shape()) {
              ++bad;
              continue;
            }
            for (int64_t e = 0; e < w.numel(); ++e)
              if (std::fabs(g.value_as_double(e) - w.value_as_double(e)) >
                  1e-5 + 1e-4 * std::fabs(w.value_as_double(e)))
                ++bad;
          }
        }
      });
    for (auto& th : threads) th.join();
    EXPECT_EQ(bad.load(), 0);
    EXPECT_EQ(s.stats().calls, 320u);
    EXPECT_EQ(s.stats().plans_cached, sizes.size());
  }
}

TEST_F(PlanSessionTest, PlanCacheIsBounded) {
  const std::string model = write_mixed_model(dir_);
  Session ref(model, interpret_only());
  SessionOptions o;
  o.max_plans = 4;
  Session s(model, o);
  for (int64_t n = 1; n <= 20; ++n) {
    Tensor x = random_input(n, 8, static_cast<uint32_t>(n));
    expect_same(s.run({{"x", x}}), ref.run({{"x", x}}), "N=" + std::to_string(n));
  }
  SessionStats st = s.stats();
  EXPECT_EQ(st.plans_cached, 4u);
  EXPECT_EQ(st.plans_evicted, 16u);
  // Byte budget: a tiny budget keeps only the newest plan.
  SessionOptions tiny;
  tiny.code_cache_bytes = 1;
  Session t(model, tiny);
  for (int64_t n = 1; n <= 5; ++n) t.run({{"x", random_input(n, 8, 3)}});
  EXPECT_EQ(t.stats().plans_cached, 1u);
  EXPECT_EQ(t.stats().plans_evicted, 4u);
}

TEST_F(PlanSessionTest, BadPinnedTierIsAnError) {
  const std::string model = write_mixed_model(dir_);
  EXPECT_THROW(Session(model, pinned(4)), Error);
  EXPECT_THROW(Session(model, pinned(0)), Error);
}

}  // namespace
}  // namespace tierjit
