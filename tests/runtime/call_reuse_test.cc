// What a call reuses from the calls before it (a Plan's pooled frame with the executor's scratch,
// interp::Frame::in_scratch / out_scratch; the load decision made once per call,
// ExecOptions::load_applied) must not leak into its results: a tensor handed to the caller keeps
// its values through later calls, consecutive calls with other shapes (size 0 and 1 included)
// match the interpreter, 8 threads alternating shapes on one Session stay correct, and a reused
// frame holds no tensor between calls (the multi-threaded tests are named *Concurrent* so that
// scripts/test-tsan.sh runs them). Reference = ExecutionMode::kInterpretOnly (tier 0, the
// same kernels): compared bit for bit, since the adaptive session here never compiles
// (theta0 = 1e18) and both run the same kernels node by node (executor.h).
// interp::GraphRunner (the interpret-only mode's runner: last uses found once, pooled frames) is
// checked against run_graph itself.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>

#include "interp/executor.h"
#include "onnx/model_builder.h"
#include "support/cpu_load.h"
#include "tierjit/session.h"

namespace tierjit {
namespace {

using namespace onnx_test;  // NOLINT

constexpr int32_t kF32 = onnx::TensorProto_DataType_FLOAT;

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(static_cast<int>(i % 5) - 2);
  return v;
}

// x[N,8] -> Add(r) -> LayerNormalization(axis -1) -> MatMul(w[8,5]) -> Add(b) -> Relu -> y[N,5]
// (regions: Add + LayerNormalization, MatMul + bias Add + Relu), and t = Transpose(y) [5,N] (an
// opaque region: always tier 0).
std::string write_model(const TempDir& dir) {
  onnx::GraphProto g;
  add_input(g, "x", kF32, {"N", 8});
  add_float_init(g, "r", {8}, ramp(8, 0.5f));
  add_float_init(g, "scale", {8}, ramp(8, 0.25f));
  add_float_init(g, "shift", {8}, ramp(8, 0.125f));
  add_float_init(g, "w", {8, 5}, ramp(40, 0.1f));
  add_float_init(g, "b", {5}, ramp(5, 0.3f));
  add_node(g, "Add", {"x", "r"}, {"a"});
  attr_int(add_node(g, "LayerNormalization", {"a", "scale", "shift"}, {"n"}), "axis", -1);
  add_node(g, "MatMul", {"n", "w"}, {"m"});
  add_node(g, "Add", {"m", "b"}, {"mb"});
  add_node(g, "Relu", {"mb"}, {"y"});
  add_node(g, "Transpose", {"y"}, {"t"});
  add_output(g, "y", kF32, {"N", 5});
  add_output(g, "t", kF32, {5, "N"});
  dir.write("reuse.onnx", serialize(make_model(g, 17)));
  return dir.file("reuse.onnx");
}

Tensor input(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-3.f, 3.f);
  Tensor t = Tensor::empty(DType::kFloat32, {n, 8});
  for (float& v : t.span<float>()) v = u(rng);
  return t;
}

SessionOptions never_compiles() {
  SessionOptions o;
  o.theta0 = 1e18;  // adaptive mode, every region stays on tier 0
  return o;
}

SessionOptions interpret_only() {
  SessionOptions o;
  o.mode = ExecutionMode::kInterpretOnly;
  return o;
}

// Bit-for-bit equality of two calls' outputs; "" when equal, else what differs.
std::string difference(const NamedTensors& got, const NamedTensors& want) {
  if (got.size() != want.size()) return "output count";
  for (size_t o = 0; o < want.size(); ++o) {
    const Tensor& g = got[o].second;
    const Tensor& w = want[o].second;
    if (got[o].first != want[o].first) return "name of output " + std::to_string(o);
    if (g.dtype() != w.dtype() || g.shape() != w.shape())
      return "shape of output " + std::to_string(o) + ": " + shape_to_string(g.shape()) + " vs " +
             shape_to_string(w.shape());
    if (w.nbytes() > 0 && std::memcmp(g.raw_data(), w.raw_data(), w.nbytes()) != 0)
      return "values of output " + std::to_string(o);
  }
  return "";
}

NamedTensors deep_copy(const NamedTensors& t) {
  NamedTensors c;
  for (const auto& [name, v] : t) c.emplace_back(name, v.clone());
  return c;
}

class CallReuseTest : public ::testing::Test {
 protected:
  TempDir dir_{"call_reuse"};
};

TEST_F(CallReuseTest, ReturnedTensorsSurviveLaterCalls) {
  const std::string model = write_model(dir_);
  Session ref(model, interpret_only());
  Session s(model, never_compiles());
  // Same shape every call: the plan's pooled frame, its scratch and the thread's small buffers
  // are reused; the outputs the caller holds must not be.
  std::vector<NamedTensors> held, want;
  for (uint32_t k = 0; k < 6; ++k) {
    Tensor x = input(3, 100 + k);
    held.push_back(s.run({{"x", x}}));
    want.push_back(deep_copy(ref.run({{"x", x}})));
  }
  for (size_t k = 0; k < held.size(); ++k) EXPECT_EQ(difference(held[k], want[k]), "") << "call " << k;
  // Outputs of different calls never share storage.
  for (size_t k = 1; k < held.size(); ++k)
    EXPECT_FALSE(held[k][0].second.shares_storage_with(held[k - 1][0].second));
  EXPECT_EQ(s.stats().plan_hits, held.size() - 1);
}

TEST_F(CallReuseTest, AlternatingShapesMatchTierZero) {
  const std::string model = write_model(dir_);
  Session ref(model, interpret_only());
  Session s(model, never_compiles());
  const std::vector<int64_t> sizes = {1, 4, 0, 17, 1, 4, 17, 0, 1};
  for (size_t k = 0; k < sizes.size(); ++k) {
    Tensor x = input(sizes[k], static_cast<uint32_t>(k));
    NamedTensors got = s.run({{"x", x}});
    NamedTensors want = ref.run({{"x", x}});
    EXPECT_EQ(difference(got, want), "") << "call " << k << ", N = " << sizes[k];
  }
  EXPECT_EQ(s.stats().plans_cached, 4u);
}

TEST_F(CallReuseTest, ConcurrentAlternatingShapes) {
  const std::string model = write_model(dir_);
  Session ref(model, interpret_only());
  Session s(model, never_compiles());
  const std::vector<int64_t> sizes = {1, 2, 7, 16, 0};
  std::vector<Tensor> xs;
  std::vector<NamedTensors> want;
  for (size_t i = 0; i < sizes.size(); ++i) {
    xs.push_back(input(sizes[i], static_cast<uint32_t>(50 + i)));
    want.push_back(deep_copy(ref.run({{"x", xs.back()}})));
  }
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      std::vector<std::pair<size_t, NamedTensors>> kept;  // held across later calls
      for (int k = 0; k < 50; ++k) {
        const size_t i = static_cast<size_t>(t * 3 + k) % sizes.size();
        NamedTensors got = s.run({{"x", xs[i]}});
        if (!difference(got, want[i]).empty()) ++bad;
        if (k % 10 == 0) kept.emplace_back(i, std::move(got));
      }
      for (const auto& [i, got] : kept)
        if (!difference(got, want[i]).empty()) ++bad;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(s.stats().calls, 400u);
}

TEST(ExecutorScratch, FrameKeepsNoTensorAfterRunNodes) {
  ir::Graph g{"scratch"};
  ir::Value* x = g.add_value("x", {DType::kFloat32, std::nullopt});
  g.inputs().push_back(x);
  ir::Value* r = g.add_value("r");
  ir::Value* y = g.add_value("y");
  ir::Node* relu = g.add_node(ir::OpKind::Relu, {x}, {r}, "relu");
  ir::Node* neg = g.add_node(ir::OpKind::Neg, {r}, {y}, "neg");
  relu->set_opset(17);
  neg->set_opset(17);
  g.outputs().push_back(y);
  interp::Frame frame;
  interp::init_frame(frame, g);
  const std::vector<const ir::Node*> nodes = {relu, neg};
  for (float v : {-2.f, 3.f}) {  // the second run reuses the frame and its scratch
    frame.values[x->id()] = Tensor::from_vector<float>({2}, {v, -v});
    ASSERT_TRUE(interp::run_nodes(nodes, frame, interp::ExecOptions{}).ok());
    const Tensor& out = frame.values[y->id()];
    ASSERT_EQ(out.shape(), Shape{2});
    EXPECT_EQ(out.data<float>()[0], v > 0 ? -v : 0.f);
    EXPECT_EQ(out.data<float>()[1], v > 0 ? 0.f : v);
    EXPECT_TRUE(frame.out_scratch.empty());  // no output tensor kept alive by the scratch
  }
}

// x[?] -> Relu -> Neg -> y; c (a constant output) and u (an input no node reads) beside it.
struct SmallGraph {
  ir::Graph g{"runner"};
  ir::Value *x = nullptr, *u = nullptr;
  SmallGraph() {
    x = g.add_value("x", {DType::kFloat32, std::nullopt});
    u = g.add_value("u", {DType::kFloat32, std::nullopt});
    g.inputs() = {x, u};
    ir::Value* r = g.add_value("r");
    ir::Value* y = g.add_value("y");
    g.add_node(ir::OpKind::Relu, {x}, {r}, "relu")->set_opset(17);
    g.add_node(ir::OpKind::Neg, {r}, {y}, "neg")->set_opset(17);
    ir::Value* c = g.add_value("c", {DType::kFloat32, std::nullopt});
    c->set_constant(Tensor::from_vector<float>({2}, {1.f, 2.f}));
    g.outputs() = {y, c};
  }
};

Tensor ramp_input(int64_t n, float scale) {
  Tensor t = Tensor::empty(DType::kFloat32, {n});
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = scale * static_cast<float>(i % 7 - 3);
  return t;
}

TEST(GraphRunner, MatchesRunGraphAcrossCallsAndShapes) {
  SmallGraph sg;
  interp::GraphRunner runner(sg.g);
  std::vector<std::vector<Tensor>> held, want;
  const std::vector<int64_t> sizes = {5, 1, 0, 33, 5};
  for (size_t k = 0; k < sizes.size(); ++k) {
    const Tensor x = ramp_input(sizes[k], static_cast<float>(k + 1));
    const Tensor u = ramp_input(3, 1.f);
    auto got = runner.run({x, u}, interp::ExecOptions{});
    auto ref = interp::run_graph(sg.g, {x, u}, interp::ExecOptions{});
    ASSERT_TRUE(got.ok()) << got.status().message();
    ASSERT_TRUE(ref.ok());
    held.push_back(std::move(got.value()));
    std::vector<Tensor> copy;
    for (const Tensor& t : ref.value()) copy.push_back(t.clone());
    want.push_back(std::move(copy));
  }
  for (size_t k = 0; k < held.size(); ++k) {  // after every later call: unchanged
    ASSERT_EQ(held[k].size(), 2u);
    for (size_t o = 0; o < 2; ++o) {
      ASSERT_EQ(held[k][o].shape(), want[k][o].shape()) << "call " << k;
      EXPECT_EQ(std::memcmp(held[k][o].raw_data(), want[k][o].raw_data(), want[k][o].nbytes()), 0)
          << "call " << k << " output " << o;
    }
  }
}

TEST(GraphRunner, MissingInputIsTheSameError) {
  SmallGraph sg;
  interp::GraphRunner runner(sg.g);
  auto got = runner.run({ramp_input(4, 1.f)}, interp::ExecOptions{});
  auto ref = interp::run_graph(sg.g, {ramp_input(4, 1.f)}, interp::ExecOptions{});
  ASSERT_FALSE(got.ok());
  ASSERT_FALSE(ref.ok());
  EXPECT_EQ(got.status().message(), ref.status().message());
  // The failed call's frame went back to the pool clean: the next call is right.
  auto ok = runner.run({ramp_input(4, -1.f), ramp_input(1, 1.f)}, interp::ExecOptions{});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok.value()[0].data<float>()[0], -3.f);  // -relu(-1 * -3)
}

TEST(GraphRunner, ConcurrentCalls) {
  SmallGraph sg;
  interp::GraphRunner runner(sg.g, 2);  // fewer pooled frames than threads
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 200; ++k) {
        const int64_t n = 1 + (t + k) % 9;
        const float scale = static_cast<float>(t + 1);
        auto got = runner.run({ramp_input(n, scale), ramp_input(1, 1.f)}, interp::ExecOptions{});
        if (!got.ok() || got.value()[0].numel() != n) {
          ++bad;
          continue;
        }
        for (int64_t i = 0; i < n; ++i) {
          const float x = scale * static_cast<float>(i % 7 - 3);
          if (got.value()[0].data<float>()[i] != -(x > 0 ? x : 0.f)) ++bad;
        }
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(ExecutorLoad, DecidedOnceWhenApplied) {
  interp::ExecOptions o;
  o.intra_op_threads = 2;
  support::override_foreign_busy_cores(0);
  const interp::ExecOptions idle = interp::under_current_load(o);
  EXPECT_TRUE(idle.load_applied);
  EXPECT_EQ(idle.intra_op_threads, support::usable_cores() >= 2 ? 2 : 1);
  support::override_foreign_busy_cores(64);  // every core busy elsewhere
  EXPECT_EQ(interp::under_current_load(o).intra_op_threads, 1);
  // Applied options are taken as they are: one decision per call, not per region.
  EXPECT_EQ(interp::under_current_load(idle).intra_op_threads, idle.intra_op_threads);
  support::override_foreign_busy_cores(-1);
}

}  // namespace
}  // namespace tierjit
