// Tier-0 fusion of MatMul + constant bias Add (interp/kernels/matmul_fusion.h, executor.cc):
// the fused product gives bit for bit what the two nodes give (the same graph with the
// MatMul's output also a graph output, which disables the fusion): batch folding, per-batch
// products, row counts that split across two threads, a rank-1 A, bias of rank 1-3 on either
// side of the Add, NaN, size-0 rows. K = 0, a bias that widens the shape, float64 and a
// MatMul output read twice run unfused and stay right. Whether it fused is seen through
// run_nodes (the MatMul's slot shares the Add's output storage).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "interp/executor.h"
#include "node_runner.h"
#include "support/cpu_load.h"

namespace tierjit::testing {
namespace {

using ir::OpKind;

Tensor random_f32(Shape s, uint32_t seed) {
  Tensor t = Tensor::empty(DType::kFloat32, std::move(s));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = d(rng);
  return t;
}

struct Case {
  Shape x, w, bias;
  bool bias_first = false;     // Add(bias, mm)
  bool mm_is_output = false;   // the MatMul's output also a graph output: no fusion
  bool nan = false;            // a NaN in x
  DType dtype = DType::kFloat32;
};

struct Result {
  Tensor y;
  bool fused = false;
};

Tensor cast_to(const Tensor& t, DType dt) {
  if (dt == DType::kFloat32) return t;
  Tensor d = Tensor::empty(dt, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) d.data<double>()[i] = t.data<float>()[i];
  return d;
}

Result run(const Case& c, bool disable) {
  ir::Graph g("mm_bias");
  ir::Value* x = g.add_value("x", {c.dtype, std::nullopt});
  g.inputs().push_back(x);
  ir::Value* w = g.add_value("w", {c.dtype, std::nullopt});
  w->set_constant(cast_to(random_f32(c.w, 2), c.dtype));
  ir::Value* b = g.add_value("b", {c.dtype, std::nullopt});
  b->set_constant(cast_to(random_f32(c.bias, 3), c.dtype));
  ir::Value* mm = g.add_value("mm");
  g.add_node(OpKind::MatMul, {x, w}, {mm}, "mm")->set_opset(17);
  ir::Value* y = g.add_value("y");
  g.add_node(OpKind::Add, c.bias_first ? std::vector<ir::Value*>{b, mm} : std::vector<ir::Value*>{mm, b},
             {y}, "add")->set_opset(17);
  g.outputs().push_back(y);
  if (disable || c.mm_is_output) g.outputs().push_back(mm);
  Tensor xt = random_f32(c.x, 1);
  if (c.nan && xt.numel() > 3) xt.data<float>()[3] = std::numeric_limits<float>::quiet_NaN();
  xt = cast_to(xt, c.dtype);
  interp::ExecOptions options;
  options.intra_op_threads = 2;
  interp::Frame frame;
  interp::init_frame(frame, g);
  frame.values[x->id()] = xt;
  std::vector<const ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  Status st = interp::run_nodes(nodes, frame, options);
  EXPECT_TRUE(st.ok()) << st.message();
  Result r;
  r.y = frame.values[y->id()];
  r.fused = r.y.defined() && frame.values[mm->id()].shares_storage_with(r.y);
  // run_graph plans the same fusion: same values.
  auto out = interp::run_graph(g, {xt}, options);
  EXPECT_TRUE(out.ok()) << out.status().message();
  if (out.ok()) {
    EXPECT_EQ((*out)[0].shape(), r.y.shape());
    if ((*out)[0].shape() == r.y.shape()) {
      EXPECT_EQ(std::memcmp((*out)[0].raw_data(), r.y.raw_data(), r.y.nbytes()), 0);
    }
  }
  return r;
}

// Returns whether the fused run fused; asserts it equals the unfused run bit for bit.
bool check(const Case& c) {
  const Result fused = run(c, false), plain = run(c, true);
  EXPECT_FALSE(plain.fused);
  EXPECT_EQ(fused.y.dtype(), plain.y.dtype());
  EXPECT_EQ(fused.y.shape(), plain.y.shape());
  if (fused.y.shape() == plain.y.shape() && fused.y.dtype() == plain.y.dtype()) {
    EXPECT_EQ(std::memcmp(fused.y.raw_data(), plain.y.raw_data(), plain.y.nbytes()), 0)
        << "fused MatMul + bias differs from the two kernels";
  }
  return fused.fused;
}

class MatMulFusion : public ::testing::Test {
 protected:
  void SetUp() override { support::override_foreign_busy_cores(0); }  // the two-thread paths
  void TearDown() override { support::override_foreign_busy_cores(-1); }
};

TEST_F(MatMulFusion, MatchesTheTwoKernelsBitForBit) {
  const std::vector<Case> cases = {
      {{1, 5}, {5, 3}, {3}},
      {{2, 7, 40}, {40, 33}, {33}},              // batch folded into 14 rows
      {{3, 64, 40}, {40, 33}, {1, 33}},          // 192 rows: shared across two threads
      {{4, 16, 128}, {128, 512}, {1, 1, 512}},   // BERT feed-forward shape, bias of rank 3
      {{2, 7, 40}, {2, 40, 33}, {33}},           // per-batch products
      {{40}, {40, 33}, {33}},                    // rank-1 A: output [33]
      {{0, 40}, {40, 33}, {33}},                 // no rows
      {{5, 1}, {1, 1}, {1}},                     // N = 1
  };
  for (const Case& c : cases)
    for (bool bias_first : {false, true})
      for (bool nan : {false, true}) {
        Case k = c;
        k.bias_first = bias_first;
        k.nan = nan;
        SCOPED_TRACE(shape_to_string(k.x) + " x " + shape_to_string(k.w) + " + " +
                     shape_to_string(k.bias) + (bias_first ? " bias first" : "") + (nan ? " NaN" : ""));
        EXPECT_TRUE(check(k));
      }
}

TEST_F(MatMulFusion, RunsUnfusedWhereItDoesNotApply) {
  EXPECT_FALSE(check({{2, 0}, {0, 33}, {33}}));                     // K = 0: y = bias
  EXPECT_FALSE(check({{40}, {40, 33}, {1, 1, 33}}));                // the Add widens [33]
  EXPECT_FALSE(check({{3, 4}, {4, 6}, {6}, false, false, false, DType::kFloat64}));
  EXPECT_FALSE(check({{3, 4}, {4, 6}, {6}, false, /*mm_is_output=*/true}));
}

TEST_F(MatMulFusion, BiasIsAddedToEveryRow) {
  // [[1, 2], [3, 4]] x I + [10, 20] = [[11, 22], [13, 24]] (hand-computed).
  ir::Graph g("hand");
  ir::Value* x = g.add_value("x", {DType::kFloat32, std::nullopt});
  g.inputs().push_back(x);
  ir::Value* w = g.add_value("w", {DType::kFloat32, std::nullopt});
  w->set_constant(Tensor::from_vector<float>({2, 2}, {1, 0, 0, 1}));
  ir::Value* b = g.add_value("b", {DType::kFloat32, std::nullopt});
  b->set_constant(Tensor::from_vector<float>({2}, {10, 20}));
  ir::Value* mm = g.add_value("mm");
  g.add_node(OpKind::MatMul, {x, w}, {mm}, "mm")->set_opset(17);
  ir::Value* y = g.add_value("y");
  g.add_node(OpKind::Add, {mm, b}, {y}, "add")->set_opset(17);
  g.outputs().push_back(y);
  auto out = interp::run_graph(g, {Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4})}, {});
  ASSERT_TRUE(out.ok()) << out.status().message();
  expect_tensor_near((*out)[0], Tensor::from_vector<float>({2, 2}, {11, 22, 13, 24}), 0, 0);
}

}  // namespace
}  // namespace tierjit::testing
