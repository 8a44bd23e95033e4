// Tier-0 fusion of Add + LayerNormalization (interp/kernels/layer_norm_fusion.h, executor.cc):
// the fused pass gives bit for bit what the two kernels give (the same graph with the Add's
// output also a graph output, which disables the fusion): residuals of the same shape, a
// position-embedding-like operand repeating over the batch on either side, a row-length
// operand, normalizing over two axes, no B input, NaN, no rows, a tensor large enough for the
// parallel loop. An operand that does not repeat over whole rows and float64 run unfused and
// stay right. Whether it fused is seen through run_nodes (the Add's slot shares the output).
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>

#include "interp/executor.h"
#include "node_runner.h"
#include "support/cpu_load.h"

namespace tierjit::testing {
namespace {

using ir::OpKind;

Tensor random_f32(const Shape& s, uint32_t seed) {
  Tensor t = Tensor::empty(DType::kFloat32, s);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

Tensor to_f64(const Tensor& t) {
  Tensor d = Tensor::empty(DType::kFloat64, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) d.data<double>()[i] = t.data<float>()[i];
  return d;
}

struct Case {
  Shape a, b;
  int64_t axis = -1;
  bool b_first = false;    // Add(b, a)
  bool with_bias = true;   // LayerNormalization's B input
  bool nan = false;
  bool f64 = false;
};

struct Result {
  Tensor y;
  bool fused = false;
};

Result run(const Case& c, bool disable) {
  ir::Graph g("add_ln");
  const DType dt = c.f64 ? DType::kFloat64 : DType::kFloat32;
  ir::Value* a = g.add_value("a", {dt, std::nullopt});
  ir::Value* b = g.add_value("b", {dt, std::nullopt});
  g.inputs().push_back(a);
  g.inputs().push_back(b);
  Shape norm(c.a.end() + (c.axis < 0 ? c.axis : c.axis - static_cast<int64_t>(c.a.size())), c.a.end());
  ir::Value* scale = g.add_value("scale", {dt, std::nullopt});
  Tensor sc = random_f32(norm, 7), bi = random_f32(norm, 8);
  scale->set_constant(c.f64 ? to_f64(sc) : sc);
  ir::Value* bias = nullptr;
  if (c.with_bias) {
    bias = g.add_value("bias", {dt, std::nullopt});
    bias->set_constant(c.f64 ? to_f64(bi) : bi);
  }
  ir::Value* sum = g.add_value("sum");
  g.add_node(OpKind::Add, c.b_first ? std::vector<ir::Value*>{b, a} : std::vector<ir::Value*>{a, b},
             {sum}, "add")->set_opset(17);
  ir::Value* y = g.add_value("y");
  std::vector<ir::Value*> ln_in{sum, scale};
  if (bias) ln_in.push_back(bias);
  ir::Node* ln = g.add_node(OpKind::LayerNormalization, ln_in, {y}, "ln");
  ln->set_opset(17);
  ln->set_attr("axis", attr_int(c.axis));
  g.outputs().push_back(y);
  if (disable) g.outputs().push_back(sum);
  Tensor at = random_f32(c.a, 1), bt = random_f32(c.b, 2);
  if (c.nan && at.numel() > 5) at.data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
  if (c.f64) {
    at = to_f64(at);
    bt = to_f64(bt);
  }
  interp::ExecOptions options;
  options.intra_op_threads = 2;
  interp::Frame frame;
  interp::init_frame(frame, g);
  frame.values[a->id()] = at;
  frame.values[b->id()] = bt;
  std::vector<const ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  Status st = interp::run_nodes(nodes, frame, options);
  EXPECT_TRUE(st.ok()) << st.message();
  Result r;
  r.y = frame.values[y->id()];
  r.fused = r.y.defined() && frame.values[sum->id()].shares_storage_with(r.y);
  return r;
}

bool check(const Case& c) {
  const Result fused = run(c, false), plain = run(c, true);
  EXPECT_FALSE(plain.fused);
  EXPECT_EQ(fused.y.shape(), plain.y.shape());
  if (fused.y.shape() == plain.y.shape() && fused.y.dtype() == plain.y.dtype()) {
    EXPECT_EQ(std::memcmp(fused.y.raw_data(), plain.y.raw_data(), plain.y.nbytes()), 0)
        << "fused Add + LayerNormalization differs from the two kernels";
  }
  return fused.fused;
}

class LayerNormFusion : public ::testing::Test {
 protected:
  void SetUp() override { support::override_foreign_busy_cores(0); }  // the parallel loop
  void TearDown() override { support::override_foreign_busy_cores(-1); }
};

TEST_F(LayerNormFusion, MatchesTheTwoKernelsBitForBit) {
  std::vector<Case> cases = {
      {{2, 5, 33}, {2, 5, 33}},             // residual
      {{4, 7, 128}, {1, 7, 128}},           // position embeddings over the batch
      {{4, 7, 128}, {7, 128}},
      {{3, 9, 33}, {33}},                   // one row's worth
      {{2, 5, 33}, {2, 5, 33}, -2},         // normalized over [5, 33]
      {{2, 5, 33}, {5, 33}, 1},
      {{0, 33}, {33}},                      // no rows
      {{1, 1}, {1}},
      {{64, 128, 128}, {64, 128, 128}},     // 1M elements: the parallel loop
  };
  for (const Case& base : cases)
    for (bool b_first : {false, true})
      for (bool nan : {false, true}) {
        Case c = base;
        c.b_first = b_first;
        c.nan = nan;
        c.with_bias = !nan;  // both forms of the node
        SCOPED_TRACE(shape_to_string(c.a) + " + " + shape_to_string(c.b) + " axis " +
                     std::to_string(c.axis) + (b_first ? " b first" : "") + (nan ? " NaN" : ""));
        EXPECT_TRUE(check(c));
      }
}

TEST_F(LayerNormFusion, RunsUnfusedWhereItDoesNotApply) {
  EXPECT_FALSE(check({{2, 5, 33}, {2, 5, 1}}));  // broadcast inside a row
  EXPECT_FALSE(check({{2, 5, 33}, {2, 1, 33}}));  // not a trailing part of a's shape
  Case f64{{2, 5, 33}, {2, 5, 33}};
  f64.f64 = true;
  EXPECT_FALSE(check(f64));
}

TEST_F(LayerNormFusion, HandComputedRow) {
  // a + b = [1, 2, 3, 6] (mean 3, variance 3.5), scale 1, bias 0, epsilon 0:
  // (x - 3) / sqrt(3.5) = [-1.0690, -0.5345, 0, 1.6036].
  ir::Graph g("hand");
  ir::Value* a = g.add_value("a", {DType::kFloat32, std::nullopt});
  ir::Value* b = g.add_value("b", {DType::kFloat32, std::nullopt});
  g.inputs().push_back(a);
  g.inputs().push_back(b);
  ir::Value* scale = g.add_value("scale", {DType::kFloat32, std::nullopt});
  scale->set_constant(Tensor::from_vector<float>({4}, {1, 1, 1, 1}));
  ir::Value* sum = g.add_value("sum");
  g.add_node(OpKind::Add, {a, b}, {sum}, "add")->set_opset(17);
  ir::Value* y = g.add_value("y");
  ir::Node* ln = g.add_node(OpKind::LayerNormalization, {sum, scale}, {y}, "ln");
  ln->set_opset(17);
  ln->set_attr("epsilon", attr_float(0.f));
  g.outputs().push_back(y);
  auto out = interp::run_graph(g, {Tensor::from_vector<float>({1, 4}, {0, 1, 2, 5}),
                                   Tensor::from_vector<float>({4}, {1, 1, 1, 1})}, {});
  ASSERT_TRUE(out.ok()) << out.status().message();
  expect_tensor_near((*out)[0], Tensor::from_vector<float>({1, 4}, {-1.0690450f, -0.5345225f, 0.f, 1.6035675f}),
                     1e-6, 1e-6);
}

}  // namespace
}  // namespace tierjit::testing
