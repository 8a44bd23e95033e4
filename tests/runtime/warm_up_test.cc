// Warm-up at session creation (SessionOptions::warm_up, docs/runtime.md "Warm-up at session
// creation"): the constructor runs every node once at tier 0 on zeros with symbolic dims 1 and
// caches nothing for that signature, so a session with it gives the same outputs, bit for bit, as
// one without, in every mode and at every batch size; a model whose dims cannot be 1, or whose
// input has no declared shape, is served the same with the warm-up skipped and the reason logged.
#include <gtest/gtest.h>

#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "interp/executor.h"
#include "onnx/model_builder.h"
#include "tierjit/session.h"

namespace tierjit {
namespace {

using namespace onnx_test;  // NOLINT

constexpr int32_t kF32 = onnx::TensorProto_DataType_FLOAT;

std::vector<float> ramp(size_t n, float scale, float shift = 0.f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * (static_cast<float>(i % 11) - 5.f) + shift;
  return v;
}

// x[N,64] -> MatMul(w1[64,1100]) -> Add(b1) -> Relu -> MatMul(w2[1100,8]) -> y[N,8]   (w1 is
// large enough for the packed panels at any N)
// img[N,3,8,8] -> Conv(3->4, 3x3, pad 1) -> Relu -> img_out
std::string write_model(const TempDir& dir) {
  onnx::GraphProto g;
  add_input(g, "x", kF32, {"N", 64});
  add_input(g, "img", kF32, {"N", 3, 8, 8});
  add_float_init(g, "w1", {64, 1100}, ramp(64 * 1100, 0.01f));
  add_float_init(g, "b1", {1100}, ramp(1100, 0.1f));
  add_float_init(g, "w2", {1100, 8}, ramp(1100 * 8, 0.02f, 0.01f));
  add_float_init(g, "cw", {4, 3, 3, 3}, ramp(4 * 3 * 9, 0.1f));
  add_float_init(g, "cb", {4}, {0.5f, -0.5f, 0.25f, -1.f});
  add_node(g, "MatMul", {"x", "w1"}, {"h"}, "mm1");
  add_node(g, "Add", {"h", "b1"}, {"hb"}, "bias");
  add_node(g, "Relu", {"hb"}, {"hr"}, "relu");
  add_node(g, "MatMul", {"hr", "w2"}, {"y"}, "mm2");
  attr_ints(add_node(g, "Conv", {"img", "cw", "cb"}, {"conv"}, "conv"), "pads", {1, 1, 1, 1});
  add_node(g, "Relu", {"conv"}, {"img_out"}, "conv_relu");
  add_output(g, "y", kF32, {"N", 8});
  add_output(g, "img_out", kF32, {"N", 4, 8, 8});
  dir.write("warm.onnx", serialize(make_model(g)));
  return dir.file("warm.onnx");
}

NamedTensors feeds(int64_t n) {
  return {{"x", Tensor::from_vector<float>({n, 64}, ramp(static_cast<size_t>(n * 64), 0.3f))},
          {"img", Tensor::from_vector<float>({n, 3, 8, 8}, ramp(static_cast<size_t>(n * 192), 0.7f))}};
}

void expect_same(const NamedTensors& a, const NamedTensors& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    ASSERT_EQ(a[i].second.shape(), b[i].second.shape()) << a[i].first;
    EXPECT_EQ(std::memcmp(a[i].second.raw_data(), b[i].second.raw_data(), a[i].second.nbytes()), 0)
        << a[i].first;
  }
}

// Kernel runs the interpreter reports (interp::set_kernel_observer_for_testing).
std::mutex g_mu;
size_t g_runs = 0;
void observe(const ir::Node&) {
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_runs;
}
size_t take_runs() {
  std::lock_guard<std::mutex> lock(g_mu);
  return std::exchange(g_runs, 0);
}

SessionOptions with(ExecutionMode mode, bool warm_up, int threads = 2) {
  SessionOptions o;
  o.mode = mode;
  o.warm_up = warm_up;
  o.intra_op_threads = threads;
  o.synchronous_compilation = true;  // adaptive: promotions, if any, compile in the call
  return o;
}

TEST(WarmUp, SameOutputsWithAndWithoutInEveryModeAndBatch) {
  TempDir dir("warm_up_same");
  const std::string path = write_model(dir);
  for (ExecutionMode mode :
       {ExecutionMode::kAdaptive, ExecutionMode::kInterpretOnly, ExecutionMode::kPinnedTier}) {
    for (int threads : {1, 2}) {
      const Session cold(path, with(mode, false, threads));
      const Session warm(path, with(mode, true, threads));
      EXPECT_EQ(cold.stats().warm_up_ms, -1);
      EXPECT_GE(warm.stats().warm_up_ms, 0);
      // Batch 1 is the warm-up's own signature; 3 and 1 again after it. Several calls each, so
      // adaptive sessions also run the plans they cached.
      for (int64_t n : {1, 3, 1, 3, 1, 3}) {
        SCOPED_TRACE("mode " + std::to_string(static_cast<int>(mode)) + " threads " +
                     std::to_string(threads) + " N " + std::to_string(n));
        expect_same(cold.run(feeds(n)), warm.run(feeds(n)));
      }
      // The warm-up caches no plan and counts no call.
      EXPECT_EQ(warm.stats().calls, cold.stats().calls);
      EXPECT_EQ(warm.stats().plan_misses, cold.stats().plan_misses);
      EXPECT_EQ(warm.stats().plans_cached, cold.stats().plans_cached);
    }
  }
}

TEST(WarmUp, RunsEveryNodeOnceAtCreationOnlyWhenAsked) {
  TempDir dir("warm_up_nodes");
  const std::string path = write_model(dir);
  take_runs();
  interp::set_kernel_observer_for_testing(observe);
  { const Session s(path, with(ExecutionMode::kAdaptive, false)); }
  const size_t without = take_runs();
  { const Session s(path, with(ExecutionMode::kAdaptive, true)); }
  const size_t with_warm_up = take_runs();
  interp::set_kernel_observer_for_testing(nullptr);
  EXPECT_EQ(without, 0u);
  EXPECT_EQ(with_warm_up, 6u);  // the model's six nodes, once each
}

// img[N,3,H,W] -> Conv(3->4, 3x3, pad 1) -> Relu -> MaxPool(2x2, pad 1) -> img_out: spatial dims the
// graph leaves symbolic (the warm-up's Conv writes zeros there, ExecOptions::warm_up).
TEST(WarmUp, SymbolicSpatialDimsSameOutputs) {
  TempDir dir("warm_up_spatial");
  onnx::GraphProto g;
  add_input(g, "img", kF32, {"N", 3, "H", "W"});
  add_float_init(g, "cw", {4, 3, 3, 3}, ramp(4 * 3 * 9, 0.1f));
  add_float_init(g, "cb", {4}, {0.5f, -0.5f, 0.25f, -1.f});
  attr_ints(add_node(g, "Conv", {"img", "cw", "cb"}, {"conv"}, "conv"), "pads", {1, 1, 1, 1});
  add_node(g, "Relu", {"conv"}, {"act"}, "relu");
  auto* pool = add_node(g, "MaxPool", {"act"}, {"img_out"}, "pool");
  attr_ints(pool, "kernel_shape", {2, 2});
  attr_ints(pool, "strides", {2, 2});
  attr_ints(pool, "pads", {1, 1, 1, 1});
  add_output(g, "img_out", kF32, {"N", 4, "H2", "W2"});
  dir.write("spatial.onnx", serialize(make_model(g)));
  const std::string path = dir.file("spatial.onnx");
  for (ExecutionMode mode : {ExecutionMode::kAdaptive, ExecutionMode::kInterpretOnly}) {
    const Session cold(path, with(mode, false));
    const Session warm(path, with(mode, true));
    EXPECT_GE(warm.stats().warm_up_ms, 0) << warm.decision_log_json();
    for (int64_t n : {1, 2, 1}) {
      const NamedTensors in = {
          {"img", Tensor::from_vector<float>({n, 3, 10, 6}, ramp(static_cast<size_t>(n * 180), 0.4f))}};
      expect_same(cold.run(in), warm.run(in));
    }
  }
}

// x[N,T] -> Reshape([-1, 4]) -> y: a warm-up input x[1,1] cannot be reshaped to rows of 4.
std::string write_reshape_model(const TempDir& dir) {
  onnx::GraphProto g;
  add_input(g, "x", kF32, {"N", "T"});
  add_int64_init(g, "rows_of_4", {-1, 4});
  add_node(g, "Reshape", {"x", "rows_of_4"}, {"y"}, "reshape");
  add_output(g, "y", kF32, {"R", 4});
  dir.write("reshape.onnx", serialize(make_model(g)));
  return dir.file("reshape.onnx");
}

TEST(WarmUp, SkippedWithItsReasonWhenDimsOfOneBreakTheModel) {
  TempDir dir("warm_up_reshape");
  const std::string path = write_reshape_model(dir);
  for (ExecutionMode mode : {ExecutionMode::kAdaptive, ExecutionMode::kInterpretOnly}) {
    const Session warm(path, with(mode, true));
    const Session cold(path, with(mode, false));
    EXPECT_EQ(warm.stats().warm_up_ms, -1);
    EXPECT_NE(warm.decision_log_json().find("warm-up skipped: "), std::string::npos)
        << warm.decision_log_json();
    EXPECT_EQ(cold.decision_log_json().find("warm-up"), std::string::npos);
    const NamedTensors in = {{"x", Tensor::from_vector<float>({2, 6}, ramp(12, 1.f))}};
    const NamedTensors out = warm.run(in);
    ASSERT_EQ(out[0].second.shape(), (Shape{3, 4}));
    expect_same(out, cold.run(in));
  }
}

TEST(WarmUp, SkippedForAnInputWithoutDeclaredShape) {
  TempDir dir("warm_up_untyped");
  onnx::GraphProto g;
  auto* in = g.add_input();
  in->set_name("x");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(kF32);  // a dtype, no shape
  add_node(g, "Relu", {"x"}, {"y"}, "relu");
  add_untyped_output(g, "y");
  dir.write("untyped.onnx", serialize(make_model(g)));
  const Session s(dir.file("untyped.onnx"), with(ExecutionMode::kAdaptive, true));
  EXPECT_EQ(s.stats().warm_up_ms, -1);
  EXPECT_NE(s.decision_log_json().find("warm-up skipped: input 'x' has no declared shape"),
            std::string::npos)
      << s.decision_log_json();
  const NamedTensors out = s.run({{"x", Tensor::from_vector<float>({2}, {-1.f, 2.f})}});
  EXPECT_EQ(out[0].second.shape(), (Shape{2}));
}

}  // namespace
}  // namespace tierjit
