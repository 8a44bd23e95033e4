// Conv chains across regions (runtime/plan.cc, GraphLayout::merged_runs): planned once per
// Session and shared by the plans of every signature. A model whose Convs, Clips and residual
// Add form one chain over several regions, called with batch and image sizes changing from call
// to call (recurring and new, 1 and 2 threads, NaN inputs), gives the interpret-only Session's
// outputs every time. Tolerance rtol 1e-5 + atol 1e-5: both run tier 0's chains, but the plans'
// chain may take oneDNN's post-op paths (Clip, residual sum) that interpret-only takes too, so
// the results are expected equal; the tolerance only absorbs a kernel choice that differs by
// thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "onnx/model_builder.h"
#include "tierjit/session.h"

namespace tierjit {
namespace {

using namespace onnx_test;  // NOLINT

constexpr int32_t kF32 = onnx::TensorProto_DataType_FLOAT;

std::vector<float> values(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// x[N, 8, H, W] -> Conv 8->16 3x3 pad 1 -> Clip(0, 6) -> Conv 16->16 depthwise 3x3 pad 1 ->
// Clip(0, 6) -> Conv 16->8 1x1 -> Add(x) -> Conv 8->8 3x3 pad 1 -> Relu -> y.
std::string write_model(const TempDir& dir) {
  onnx::GraphProto g;
  add_input(g, "x", kF32, {"N", 8, "H", "W"});
  add_float_init(g, "w1", {16, 8, 3, 3}, values(16 * 8 * 9, 1, 0.3f));
  add_float_init(g, "b1", {16}, values(16, 2, 1.f));
  add_float_init(g, "w2", {16, 1, 3, 3}, values(16 * 9, 3, 0.5f));
  add_float_init(g, "b2", {16}, values(16, 4, 1.f));
  add_float_init(g, "w3", {8, 16, 1, 1}, values(8 * 16, 5, 0.3f));
  add_float_init(g, "b3", {8}, values(8, 6, 1.f));
  add_float_init(g, "w4", {8, 8, 3, 3}, values(8 * 8 * 9, 7, 0.3f));
  add_float_init(g, "b4", {8}, values(8, 8, 1.f));
  add_float_init(g, "lo", {}, {0.f});
  add_float_init(g, "hi", {}, {6.f});
  attr_ints(add_node(g, "Conv", {"x", "w1", "b1"}, {"c1"}), "pads", {1, 1, 1, 1});
  add_node(g, "Clip", {"c1", "lo", "hi"}, {"r1"});
  auto* dw = add_node(g, "Conv", {"r1", "w2", "b2"}, {"c2"});
  attr_ints(dw, "pads", {1, 1, 1, 1});
  attr_int(dw, "group", 16);
  add_node(g, "Clip", {"c2", "lo", "hi"}, {"r2"});
  add_node(g, "Conv", {"r2", "w3", "b3"}, {"c3"});
  add_node(g, "Add", {"c3", "x"}, {"s"});
  attr_ints(add_node(g, "Conv", {"s", "w4", "b4"}, {"c4"}), "pads", {1, 1, 1, 1});
  add_node(g, "Relu", {"c4"}, {"y"});
  add_output(g, "y", kF32, {"N", 8, "H", "W"});
  dir.write("chain.onnx", serialize(make_model(g)));
  return dir.file("chain.onnx");
}

Tensor input(int64_t n, int64_t h, int64_t w, uint32_t seed, bool nan) {
  Tensor t = Tensor::empty(DType::kFloat32, {n, 8, h, w});
  const std::vector<float> v = values(static_cast<size_t>(t.numel()), seed, 2.f);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i)
    p[i] = nan && i % 29 == 0 ? std::numeric_limits<float>::quiet_NaN() : v[static_cast<size_t>(i)];
  return t;
}

void expect_near(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.shape(), want.shape());
  int bad = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const float a = got.data<float>()[i], b = want.data<float>()[i];
    const bool ok = std::isnan(b) ? std::isnan(a) : std::fabs(a - b) <= 1e-5f + 1e-5f * std::fabs(b);
    if (!ok && bad++ < 5) ADD_FAILURE() << "element " << i << ": got " << a << ", want " << b;
  }
  EXPECT_EQ(bad, 0);
}

TEST(MergedRuns, ShapesChangingBetweenCallsShareOneChain) {
  TempDir dir{"merged_runs"};
  const std::string path = write_model(dir);
  for (int threads : {1, 2}) {
    SessionOptions adaptive, reference;
    adaptive.intra_op_threads = reference.intra_op_threads = threads;
    reference.mode = ExecutionMode::kInterpretOnly;
    const Session s(path, adaptive), ref(path, reference);
    struct Call {
      int64_t n, h, w;
      bool nan;
    };
    const Call calls[] = {{1, 9, 9, false}, {2, 9, 9, false}, {1, 9, 9, true},  {3, 6, 7, false},
                          {2, 9, 9, true},  {1, 1, 1, false}, {3, 6, 7, true},  {1, 9, 9, false}};
    uint32_t seed = 100;
    for (const Call& c : calls) {
      SCOPED_TRACE(::testing::Message() << "threads " << threads << " x " << c.n << "x8x" << c.h
                                        << "x" << c.w << (c.nan ? " NaN" : ""));
      const NamedTensors feeds{{"x", input(c.n, c.h, c.w, seed++, c.nan)}};
      const NamedTensors got = s.run(feeds), want = ref.run(feeds);
      ASSERT_EQ(got.size(), 1u);
      expect_near(got[0].second, want[0].second);
    }
  }
}

}  // namespace
}  // namespace tierjit
