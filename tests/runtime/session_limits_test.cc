// Limits and checks every tier applies alike (models built in memory, written to a temp .onnx):
// an integer Div or Mod by zero raises at tier 0, pinned tiers 1 and 2 and in adaptive mode while
// float division stays IEEE; arena_limit_bytes refuses a signature whose live intermediates pass
// it (and the session goes on serving smaller ones); memory_limit_bytes applies to feeds; every
// SessionOptions field is range-checked by tierjit::validate with a one-line message.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "onnx/model_builder.h"
#include "tierjit/session.h"

namespace tierjit {
namespace {

using namespace onnx_test;  // NOLINT

constexpr int32_t kF32 = onnx::TensorProto_DataType_FLOAT;
constexpr int32_t kI32 = onnx::TensorProto_DataType_INT32;

struct Mode {
  std::string name;
  SessionOptions options;
};

std::vector<Mode> every_tier() {
  std::vector<Mode> modes;
  SessionOptions t0;
  t0.mode = ExecutionMode::kInterpretOnly;
  modes.push_back({"tier0", t0});
  for (int tier : {1, 2}) {
    SessionOptions p;
    p.mode = ExecutionMode::kPinnedTier;
    p.pinned_tier = tier;
    modes.push_back({"pinned" + std::to_string(tier), p});
  }
  SessionOptions a;  // adaptive, promoting on the first calls, compiles waited for
  a.synchronous_compilation = true;
  a.theta0 = 1;
  a.benefit_horizon_windows = 1e6;
  a.slower_margin = -1;
  a.whole_plan_calls = 2;
  modes.push_back({"adaptive", a});
  return modes;
}

// x, y int32[N] -> a = Add(x, y) -> q = OP(a, y) -> z = Mul(q, x): the integer op between two
// compilable elementwise ops.
std::string write_int_model(const TempDir& dir, const std::string& op) {
  onnx::GraphProto g;
  add_input(g, "x", kI32, {"N"});
  add_input(g, "y", kI32, {"N"});
  add_node(g, "Add", {"x", "y"}, {"a"});
  add_node(g, op, {"a", "y"}, {"q"});
  add_node(g, "Mul", {"q", "x"}, {"z"});
  add_output(g, "z", kI32, {"N"});
  dir.write(op + ".onnx", serialize(make_model(g)));
  return dir.file(op + ".onnx");
}

Tensor ints(std::vector<int32_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::from_vector<int32_t>({n}, std::move(v));
}

TEST(SessionLimits, IntegerDivisionByZeroRaisesAtEveryTier) {
  TempDir dir("limits_div");
  for (const std::string op : {"Div", "Mod"}) {
    const std::string model = write_int_model(dir, op);
    for (const Mode& m : every_tier()) {
      Session s(model, m.options);
      const NamedTensors good = {{"x", ints({7, -9, 4, 5})}, {"y", ints({2, 4, -3, 1})}};
      // a = x + y = {9, -5, 1, 6}; Div truncates: {4, -1, 0, 6}; Mod floors: {1, 3, -2, 0}.
      const std::vector<int32_t> want =
          op == "Div" ? std::vector<int32_t>{4 * 7, -1 * -9, 0 * 4, 6 * 5}
                      : std::vector<int32_t>{1 * 7, 3 * -9, -2 * 4, 0 * 5};
      for (int call = 0; call < 4; ++call) {  // adaptive: the later calls run compiled code
        auto out = s.run(good);
        ASSERT_EQ(out.size(), 1u);
        const auto got = out[0].second.span<const int32_t>();
        EXPECT_EQ(std::vector<int32_t>(got.begin(), got.end()), want) << op << " " << m.name;
      }
      const NamedTensors zero = {{"x", ints({7, -9, 4, 5})}, {"y", ints({2, 0, -3, 1})}};
      try {
        s.run(zero);
        ADD_FAILURE() << op << " " << m.name << ": no error for a zero divisor";
      } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_EQ(e.code(), StatusCode::kInvalidArgument) << msg;
        EXPECT_NE(msg.find("integer division by zero"), std::string::npos) << m.name << ": " << msg;
        EXPECT_NE(msg.find("(" + op + ")"), std::string::npos) << msg;  // the node
        EXPECT_NE(msg.find(model), std::string::npos) << msg;
        EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
      }
      auto again = s.run(good);  // the session goes on serving
      const auto got = again[0].second.span<const int32_t>();
      EXPECT_EQ(std::vector<int32_t>(got.begin(), got.end()), want) << op << " " << m.name;
    }
  }
}

TEST(SessionLimits, FloatDivisionByZeroStaysIeee) {
  TempDir dir("limits_fdiv");
  onnx::GraphProto g;
  add_input(g, "x", kF32, {"N"});
  add_input(g, "y", kF32, {"N"});
  add_node(g, "Relu", {"x"}, {"r"});
  add_node(g, "Div", {"r", "y"}, {"z"});
  add_output(g, "z", kF32, {"N"});
  dir.write("fdiv.onnx", serialize(make_model(g)));
  for (const Mode& m : every_tier()) {
    Session s(dir.file("fdiv.onnx"), m.options);
    for (int call = 0; call < 3; ++call) {
      auto out = s.run({{"x", Tensor::from_vector<float>({3}, {1, 2, 0})},
                        {"y", Tensor::from_vector<float>({3}, {0, 0, 0})}});
      const float* z = out[0].second.data<float>();
      EXPECT_EQ(z[0], std::numeric_limits<float>::infinity()) << m.name;
      EXPECT_EQ(z[1], std::numeric_limits<float>::infinity()) << m.name;
      EXPECT_TRUE(std::isnan(z[2])) << m.name;
    }
  }
}

// x[N, 256] float -> three unary ops of x, all alive until the two Adds: the peak of live
// intermediates is about 4 x N x 1 KiB.
std::string write_wide_model(const TempDir& dir) {
  onnx::GraphProto g;
  add_input(g, "x", kF32, {"N", 256});
  add_node(g, "Relu", {"x"}, {"a"});
  add_node(g, "Sigmoid", {"x"}, {"b"});
  add_node(g, "Tanh", {"x"}, {"c"});
  add_node(g, "Add", {"a", "b"}, {"ab"});
  add_node(g, "Add", {"ab", "c"}, {"y"});
  add_output(g, "y", kF32, {"N", 256});
  dir.write("wide.onnx", serialize(make_model(g)));
  return dir.file("wide.onnx");
}

Tensor ones(int64_t n) {
  Tensor t = Tensor::empty(DType::kFloat32, {n, 256});
  for (float& v : t.span<float>()) v = 1.f;
  return t;
}

TEST(SessionLimits, ArenaLimitRefusesAPlanOverItAndKeepsServing) {
  TempDir dir("limits_arena");
  const std::string model = write_wide_model(dir);
  constexpr int64_t kLimit = 64 << 10;  // N = 4: 4 KiB per value, well under; N = 64: 64 KiB each
  for (Mode m : every_tier()) {
    m.options.arena_limit_bytes = kLimit;
    Session s(model, m.options);
    const float want = 1.f + 1.f / (1.f + std::exp(-1.f)) + std::tanh(1.f);
    for (int call = 0; call < 3; ++call) {
      auto out = s.run({{"x", ones(4)}});
      EXPECT_NEAR(out[0].second.data<float>()[0], want, 1e-5f) << m.name;
    }
    for (int call = 0; call < 2; ++call) {  // refused each time, the same way
      try {
        s.run({{"x", ones(64)}});
        ADD_FAILURE() << m.name << ": no error over the arena limit";
      } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_EQ(e.code(), StatusCode::kResourceExhausted) << msg;
        EXPECT_NE(msg.find(model + ": signature (float32[64,256])"), std::string::npos) << m.name << ": " << msg;
        EXPECT_NE(msg.find("live intermediates need"), std::string::npos) << msg;
        EXPECT_NE(msg.find("over the arena limit of 65536 bytes (arena_limit_bytes)"), std::string::npos) << msg;
        EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
      }
    }
    // One intermediate alone over the limit (N = 4096: 4 MiB each) is refused before it is
    // allocated, naming the node and its bytes.
    try {
      s.run({{"x", ones(4096)}});
      ADD_FAILURE() << m.name << ": no error for an intermediate over the arena limit";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(e.code(), StatusCode::kResourceExhausted) << msg;
      EXPECT_NE(msg.find("output of shape [4096, 256] (float32) is 4194304 bytes alone, over the "
                         "arena limit of 65536 bytes (arena_limit_bytes)"),
                std::string::npos) << m.name << ": " << msg;
    }
    auto out = s.run({{"x", ones(8)}});  // other shapes still served
    EXPECT_NEAR(out[0].second.data<float>()[8 * 256 - 1], want, 1e-5f) << m.name;
    // No limit (the default): the large shape runs.
    Session unlimited(model, every_tier()[0].options);
    EXPECT_EQ(unlimited.run({{"x", ones(64)}})[0].second.numel(), 64 * 256);
  }
}

TEST(SessionLimits, MemoryLimitAppliesToFeeds) {
  TempDir dir("limits_feed");
  const std::string model = write_wide_model(dir);
  for (Mode m : every_tier()) {
    m.options.memory_limit_bytes = 16 << 10;  // 16 rows of 1 KiB
    Session s(model, m.options);
    EXPECT_EQ(s.run({{"x", ones(16)}})[0].second.numel(), 16 * 256);
    try {
      s.run({{"x", ones(17)}});
      ADD_FAILURE() << m.name << ": a feed over memory_limit_bytes passed";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(e.code(), StatusCode::kResourceExhausted) << msg;
      EXPECT_NE(msg.find("input 'x': float32[17, 256] is 17408 bytes, over the memory limit of 16384 bytes"),
                std::string::npos) << msg;
    }
    EXPECT_EQ(s.run({{"x", ones(2)}})[0].second.numel(), 2 * 256);
  }
}

// Each field's bad values, with the message naming the field, its range and the value.
TEST(SessionLimits, EveryOptionIsRangeChecked) {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  struct Bad {
    void (*set)(SessionOptions&);
    std::string message;
  };
  const Bad bad[] = {
      {[](SessionOptions& o) { o.theta_spec = 2; }, "theta_spec must be a number in [0, 1], got 2"},
      {[](SessionOptions& o) { o.theta_spec = -0.5; }, "theta_spec must be a number in [0, 1], got -0.5"},
      {[](SessionOptions& o) { o.theta_spec = std::nan(""); }, "theta_spec must be a number in [0, 1], got nan"},
      {[](SessionOptions& o) { o.demotion_epsilon = 5; }, "demotion_epsilon must be a number in [0, 1], got 5"},
      {[](SessionOptions& o) { o.demotion_epsilon = std::nan(""); }, "demotion_epsilon must be a number in [0, 1], got nan"},
      {[](SessionOptions& o) { o.theta0 = std::nan(""); }, "theta0 must be a finite number >= 0 (calls), got nan"},
      {[](SessionOptions& o) { o.theta0 = -1; }, "theta0 must be a finite number >= 0 (calls), got -1"},
      {[](SessionOptions& o) { o.theta0 = std::numeric_limits<double>::infinity(); }, "theta0 must be a finite number >= 0 (calls), got inf"},
      {[](SessionOptions& o) { o.gamma = std::nan(""); }, "gamma must be a finite number >= 1, got nan"},
      {[](SessionOptions& o) { o.gamma = 0.5; }, "gamma must be a finite number >= 1, got 0.5"},
      {[](SessionOptions& o) { o.version_cap = 0; }, "version_cap must be >= 1, got 0"},
      {[](SessionOptions& o) { o.max_plans = -3; }, "max_plans must be >= 1, got -3"},
      {[](SessionOptions& o) { o.memory_limit_bytes = 0; }, "memory_limit_bytes must be >= 1 (bytes), got 0"},
      {[](SessionOptions& o) { o.arena_limit_bytes = -1; }, "arena_limit_bytes must be >= 0 (bytes; 0 = no limit), got -1"},
      {[](SessionOptions& o) { o.code_cache_bytes = -1; }, "code_cache_bytes must be >= 0 (bytes), got -1"},
      {[](SessionOptions& o) { o.demotion_cold_calls = -1; }, "demotion_cold_calls must be >= 0 (0 disables), got -1"},
      {[](SessionOptions& o) { o.slower_margin = std::nan(""); }, "slower_margin must be a number (negative: never remove), got nan"},
      {[](SessionOptions& o) { o.pinned_tier = 0; }, "pinned_tier must be 1, 2 or 3, got 0"},
      {[](SessionOptions& o) { o.pinned_tier = 4; }, "pinned_tier must be 1, 2 or 3, got 4"},
      {[](SessionOptions& o) { o.mode = static_cast<ExecutionMode>(7); }, "mode must be kAdaptive, kInterpretOnly or kPinnedTier, got 7"},
      {[](SessionOptions& o) { o.intra_op_threads = -1; }, "intra_op_threads must be 0 (all cores) to 1024, got -1"},
      {[](SessionOptions& o) { o.compile_threads = 257; }, "compile_threads must be 0 (default) to 256, got 257"},
      {[](SessionOptions& o) { o.whole_plan_calls = -1; }, "whole_plan_calls must be >= 0 (0 disables), got -1"},
      {[](SessionOptions& o) { o.whole_plan_max_us = std::nan(""); }, "whole_plan_max_us must be a number >= 0, got nan"},
      {[](SessionOptions& o) { o.benefit_horizon_windows = std::numeric_limits<double>::infinity(); },
       "benefit_horizon_windows must be a finite number >= 0, got inf"},
  };
  (void)nan;
  (void)inf;
  for (const Bad& b : bad) {
    SessionOptions o;
    b.set(o);
    try {
      validate(o);
      ADD_FAILURE() << "accepted: " << b.message;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
      EXPECT_EQ(std::string(e.what()), b.message);
    }
  }
  // Edges that are valid.
  SessionOptions edge;
  edge.theta_spec = 1;
  edge.demotion_epsilon = 0;
  edge.theta0 = 0;
  edge.gamma = 1;
  edge.slower_margin = -inf;
  edge.arena_limit_bytes = 0;
  EXPECT_NO_THROW(validate(edge));
  EXPECT_NO_THROW(validate(SessionOptions{}));
  // The Session refuses the same values, naming the model first.
  TempDir dir("limits_options");
  const std::string model = write_wide_model(dir);
  SessionOptions o;
  o.theta_spec = 2;
  try {
    Session s(model, o);
    ADD_FAILURE() << "Session accepted theta_spec = 2";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), model + ": theta_spec must be a number in [0, 1], got 2");
  }
}

}  // namespace
}  // namespace tierjit
