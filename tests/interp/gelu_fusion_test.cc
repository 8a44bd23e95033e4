// Tier-0 fusion of the erf-form GELU chain (interp/kernels/gelu_fusion.h, executor.cc):
// Div(x, c1) -> Erf -> Add(c2) -> Mul(x) -> Mul(c3) gives bit for bit what the five kernels give
// one node at a time (each run as its own one-node graph): NaN, +-inf, size 0 and 1, odd sizes,
// a tensor large enough for the parallel loop, constants of rank 0 and 1, operands in either
// order. A chain whose intermediate has a second use or is a graph output is not fused, nor one
// that would widen a rank-0 x; whether it fused is seen through run_nodes (the intermediate
// slots share the output's storage).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "interp/executor.h"
#include "node_runner.h"

namespace tierjit::testing {
namespace {

using ir::OpKind;

Tensor random_f32(Shape s, uint32_t seed) {
  Tensor t = Tensor::empty(DType::kFloat32, std::move(s));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-6.0f, 6.0f);
  float* p = t.data<float>();
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), 0.f, -0.f, 1e-30f, -1e30f};
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = i % 13 == 5 ? specials[(i / 13) % 7] : d(rng);
  return t;
}

Tensor constant(float v, bool rank1) {
  return rank1 ? Tensor::from_vector<float>({1}, {v}) : Tensor::from_vector<float>({}, {v});
}

struct Chain {
  bool rank1_constants = false;
  bool swap_operands = false;       // Add(c2, e), Mul(a, x), Mul(c3, m)
  bool erf_out_is_output = false;   // disables the fusion
  bool second_use_of_add = false;   // Neg(add) as another output: disables the fusion
};

struct Built {
  ir::Graph g{"gelu"};
  ir::Value *x = nullptr, *div_out = nullptr, *y = nullptr;
};

void build(Built& b, const Chain& c) {
  ir::Graph& g = b.g;
  auto konst = [&](const std::string& name, float v) {
    ir::Value* k = g.add_value(name, {DType::kFloat32, std::nullopt});
    k->set_constant(constant(v, c.rank1_constants));
    return k;
  };
  auto node = [&](OpKind op, std::vector<ir::Value*> in, const std::string& out) {
    ir::Value* v = g.add_value(out);
    g.add_node(op, std::move(in), {v}, out)->set_opset(17);
    return v;
  };
  b.x = g.add_value("x", {DType::kFloat32, std::nullopt});
  g.inputs().push_back(b.x);
  b.div_out = node(OpKind::Div, {b.x, konst("c1", 1.4142135f)}, "div");
  ir::Value* e = node(OpKind::Erf, {b.div_out}, "erf");
  ir::Value* c2 = konst("c2", 1.0f);
  ir::Value* a = node(OpKind::Add, c.swap_operands ? std::vector<ir::Value*>{c2, e}
                                                   : std::vector<ir::Value*>{e, c2}, "add");
  ir::Value* m = node(OpKind::Mul, c.swap_operands ? std::vector<ir::Value*>{a, b.x}
                                                   : std::vector<ir::Value*>{b.x, a}, "mul");
  ir::Value* c3 = konst("c3", 0.5f);
  b.y = node(OpKind::Mul, c.swap_operands ? std::vector<ir::Value*>{c3, m}
                                          : std::vector<ir::Value*>{m, c3}, "y");
  g.outputs().push_back(b.y);
  if (c.erf_out_is_output) g.outputs().push_back(e);
  if (c.second_use_of_add) g.outputs().push_back(node(OpKind::Neg, {a}, "neg"));
}

// The five kernels one at a time (one-node graphs), as tier 0 runs them unfused.
Tensor unfused(const Tensor& x, const Chain& c) {
  auto one = [](OpKind op, std::vector<Tensor> in) {
    auto r = run_node(NodeSpec{op, std::move(in), 1, {}, 17});
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? (*r)[0] : Tensor();
  };
  const Tensor t = one(OpKind::Div, {x, constant(1.4142135f, c.rank1_constants)});
  const Tensor e = one(OpKind::Erf, {t});
  const Tensor a = one(OpKind::Add, {e, constant(1.0f, c.rank1_constants)});
  const Tensor m = one(OpKind::Mul, {x, a});
  return one(OpKind::Mul, {m, constant(0.5f, c.rank1_constants)});
}

void expect_bitwise_equal(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(std::memcmp(got.raw_data(), want.raw_data(), want.nbytes()), 0)
      << "fused GELU differs from the five kernels";
}

// Runs the chain with run_graph and run_nodes (two threads: the parallel loop for big x); both
// must equal the unfused kernels. Returns whether it fused.
bool check(const Tensor& x, const Chain& c) {
  const Tensor want = unfused(x, c);
  Built b;
  build(b, c);
  interp::ExecOptions options;
  options.intra_op_threads = 2;
  auto out = interp::run_graph(b.g, {x}, options);
  EXPECT_TRUE(out.ok()) << out.status().message();
  if (!out.ok()) return false;
  expect_bitwise_equal((*out)[0], want);
  interp::Frame frame;
  interp::init_frame(frame, b.g);
  frame.values[b.x->id()] = x;
  std::vector<const ir::Node*> nodes;
  for (const auto& n : b.g.nodes()) nodes.push_back(n.get());
  Status st = interp::run_nodes(nodes, frame, options);
  EXPECT_TRUE(st.ok()) << st.message();
  if (!st.ok()) return false;
  const Tensor& y = frame.values[b.y->id()];
  expect_bitwise_equal(y, want);
  const Tensor& d = frame.values[b.div_out->id()];
  return d.defined() && d.shares_storage_with(y);
}

TEST(GeluFusion, MatchesTheFiveKernelsBitForBit) {
  for (const Shape& s :
       {Shape{0}, Shape{1}, Shape{7}, Shape{3, 17}, Shape{2, 1, 1000}, Shape{9, 1031}, Shape{70001}})
    for (bool rank1 : {false, true})
      for (bool swap : {false, true}) {
        SCOPED_TRACE(shape_to_string(s) + (rank1 ? " rank-1 constants" : "") + (swap ? " swapped" : ""));
        EXPECT_TRUE(check(random_f32(s, 3), Chain{rank1, swap}));
      }
}

TEST(GeluFusion, NotFusedWhenAnIntermediateIsReadElsewhere) {
  const Tensor x = random_f32({4, 33}, 5);
  EXPECT_FALSE(check(x, Chain{false, false, /*erf_out_is_output=*/true}));
  EXPECT_FALSE(check(x, Chain{false, false, false, /*second_use_of_add=*/true}));
}

TEST(GeluFusion, ScalarInputWithRank1ConstantsRunsUnfused) {
  // [] op [1] broadcasts to [1]: the nodes run one by one (the fused kernel keeps x's shape).
  const Tensor x = Tensor::from_vector<float>({}, {0.75f});
  EXPECT_FALSE(check(x, Chain{/*rank1_constants=*/true}));
  EXPECT_TRUE(check(x, Chain{/*rank1_constants=*/false}));
}

}  // namespace
}  // namespace tierjit::testing
