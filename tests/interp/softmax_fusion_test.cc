// Tier-0 fusion of a Softmax with its elementwise prologue (interp/kernels/softmax_fusion.h,
// executor.cc): BERT's Softmax(Add(Div(scores, c), mask)) and its kin give bit for bit what the
// kernels give one node at a time (each run as its own one-node graph): NaN, +-inf, rows of 1
// and odd lengths, a tensor large enough for the parallel loop, operands broadcast on every axis
// (scalar, per-row, over the last axis, full), operands on either side of Sub and Div, four-step
// prologues, opsets 11 and 13. Chains the kernel cannot take (another axis, an operand that
// widens the shape, an operand computed after the chain's first node, an intermediate read
// elsewhere, float64) run node by node with the same results; whether it fused is seen through
// run_nodes (the prologue's slots share the Softmax output's storage).
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>

#include "interp/executor.h"
#include "node_runner.h"

namespace tierjit::testing {
namespace {

using ir::OpKind;

Tensor random_f32(Shape s, uint32_t seed, bool specials = true) {
  Tensor t = Tensor::empty(DType::kFloat32, std::move(s));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-8.0f, 8.0f);
  float* p = t.data<float>();
  const float special[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(), 0.f, -0.f, 1e-30f, -1e30f};
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = specials && i % 97 == 5 ? special[(i / 97) % 7] : d(rng);
  return t;
}

struct Step {
  OpKind op;
  Tensor operand;
  bool chain_left = true;  // op(chain, operand); false: op(operand, chain)
};

struct Chain {
  std::vector<Step> steps;
  int opset = 17;
  int64_t axis = -1;
  bool has_axis = true;
  bool intermediate_is_output = false;  // the first step's output also a graph output
  bool operand_computed_late = false;   // the last step's operand = Neg(input), a node added
                                        // just before that step's (after step 0's)
};

ir::Attribute axis_attr(int64_t a) { return attr_int(a); }

// The kernels one at a time (one-node graphs), as tier 0 runs them unfused.
Tensor unfused(const Tensor& x, const Chain& c) {
  auto one = [&](OpKind op, std::vector<Tensor> in, std::vector<std::pair<std::string, ir::Attribute>> attrs = {}) {
    auto r = run_node(NodeSpec{op, std::move(in), 1, std::move(attrs), c.opset});
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? (*r)[0] : Tensor();
  };
  Tensor t = x;
  for (size_t k = 0; k < c.steps.size(); ++k) {
    Tensor b = c.steps[k].operand;
    if (c.operand_computed_late && k + 1 == c.steps.size()) b = one(OpKind::Neg, {b});
    t = c.steps[k].chain_left ? one(c.steps[k].op, {t, b}) : one(c.steps[k].op, {b, t});
  }
  std::vector<std::pair<std::string, ir::Attribute>> attrs;
  if (c.has_axis) attrs.push_back({"axis", axis_attr(c.axis)});
  return one(OpKind::Softmax, {t}, attrs);
}

struct Built {
  ir::Graph g{"softmax_chain"};
  std::vector<ir::Value*> inputs;  // x, then each step's operand
  ir::Value* first_out = nullptr;
  ir::Value* y = nullptr;
};

void build(Built& b, const Chain& c) {
  ir::Graph& g = b.g;
  auto node = [&](OpKind op, std::vector<ir::Value*> in, const std::string& out) {
    ir::Value* v = g.add_value(out);
    g.add_node(op, std::move(in), {v}, out)->set_opset(c.opset);
    return v;
  };
  auto input = [&](const std::string& name) {
    ir::Value* v = g.add_value(name, {DType::kFloat32, std::nullopt});
    g.inputs().push_back(v);
    b.inputs.push_back(v);
    return v;
  };
  ir::Value* t = input("x");
  std::vector<ir::Value*> operands;
  for (size_t k = 0; k < c.steps.size(); ++k) operands.push_back(input("b" + std::to_string(k)));
  for (size_t k = 0; k < c.steps.size(); ++k) {
    ir::Value* o = operands[k];
    if (c.operand_computed_late && k + 1 == c.steps.size()) o = node(OpKind::Neg, {o}, "late");
    const std::string name = "t" + std::to_string(k);
    t = c.steps[k].chain_left ? node(c.steps[k].op, {t, o}, name) : node(c.steps[k].op, {o, t}, name);
    if (k == 0) b.first_out = t;
  }
  b.y = g.add_value("y");
  ir::Node* sm = g.add_node(OpKind::Softmax, {t}, {b.y}, "softmax");
  sm->set_opset(c.opset);
  if (c.has_axis) sm->set_attr("axis", axis_attr(c.axis));
  g.outputs().push_back(b.y);
  if (c.intermediate_is_output) g.outputs().push_back(b.first_out);
}

void expect_bitwise_equal(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(std::memcmp(got.raw_data(), want.raw_data(), want.nbytes()), 0)
      << "fused Softmax chain differs from its kernels";
}

// Runs the chain with run_graph and run_nodes (two threads); both must equal the unfused kernels.
// Returns whether it fused.
bool check(const Tensor& x, const Chain& c) {
  const Tensor want = unfused(x, c);
  Built b;
  build(b, c);
  std::vector<Tensor> feeds = {x};
  for (const Step& s : c.steps) feeds.push_back(s.operand);
  interp::ExecOptions options;
  options.intra_op_threads = 2;
  auto out = interp::run_graph(b.g, feeds, options);
  EXPECT_TRUE(out.ok()) << out.status().message();
  if (!out.ok()) return false;
  expect_bitwise_equal((*out)[0], want);
  interp::Frame frame;
  interp::init_frame(frame, b.g);
  for (size_t k = 0; k < feeds.size(); ++k) frame.values[b.inputs[k]->id()] = feeds[k];
  std::vector<const ir::Node*> nodes;
  for (const auto& n : b.g.nodes()) nodes.push_back(n.get());
  Status st = interp::run_nodes(nodes, frame, options);
  EXPECT_TRUE(st.ok()) << st.message();
  if (!st.ok()) return false;
  const Tensor& y = frame.values[b.y->id()];
  expect_bitwise_equal(y, want);
  const Tensor& t0 = frame.values[b.first_out->id()];
  return t0.defined() && t0.shares_storage_with(y);
}

Tensor scalar(float v) { return Tensor::from_vector<float>({}, {v}); }

// BERT's attention: scores [N, H, S, S] / sqrt(d) + mask [N, 1, 1, S].
Chain bert(int64_t n, int64_t s, uint32_t seed) {
  return Chain{{{OpKind::Div, scalar(8.0f)}, {OpKind::Add, random_f32({n, 1, 1, s}, seed, false)}}};
}

TEST(SoftmaxFusion, BertAttentionMatchesTheKernelsBitForBit) {
  for (int64_t s : {1, 2, 7, 16, 33, 256}) {
    SCOPED_TRACE("S = " + std::to_string(s));
    EXPECT_TRUE(check(random_f32({2, 2, s, s}, 3), bert(2, s, 4)));
  }
  // Large enough for the parallel loop, and rows longer than one chunk.
  EXPECT_TRUE(check(random_f32({1, 4, 64, 512}, 5), bert(1, 512, 6)));
  EXPECT_TRUE(check(random_f32({1, 1, 3, 3000}, 7), bert(1, 3000, 8)));
}

TEST(SoftmaxFusion, OperandsBroadcastOnEveryAxis) {
  const Shape s = {2, 3, 5, 9};
  const Tensor x = random_f32(s, 11);
  for (const Shape& b : {Shape{}, Shape{1}, Shape{9}, Shape{5, 1}, Shape{3, 1, 1}, Shape{2, 1, 1, 1},
                         Shape{1, 3, 1, 9}, Shape{2, 1, 5, 1}, Shape{2, 3, 5, 9}, Shape{1, 1, 1, 1}})
    for (OpKind op : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div})
      for (bool left : {true, false}) {
        SCOPED_TRACE(shape_to_string(b) + (left ? " chain left" : " chain right") + " op " +
                     std::to_string(static_cast<int>(op)));
        EXPECT_TRUE(check(x, Chain{{{op, random_f32(b, 12, false), left}}}));
      }
}

TEST(SoftmaxFusion, FourStepPrologueAndBothOpsets) {
  const Tensor x = random_f32({3, 4, 17}, 21);
  Chain c{{{OpKind::Mul, scalar(0.125f)},
           {OpKind::Sub, random_f32({17}, 22), false},
           {OpKind::Add, random_f32({3, 1, 17}, 23)},
           {OpKind::Div, random_f32({4, 1}, 24, false)}}};
  EXPECT_TRUE(check(x, c));
  c.opset = 11;  // coerced 2-D rows: the last axis when axis = rank - 1
  c.axis = 2;
  EXPECT_TRUE(check(x, c));
  c.has_axis = false;  // opset 11's default axis 1: rows of 4 x 17, not the last axis
  EXPECT_FALSE(check(x, c));
  c.opset = 13;  // opset 13's default: the last axis
  EXPECT_TRUE(check(x, c));
}

TEST(SoftmaxFusion, ChainsTheKernelCannotTakeRunNodeByNode) {
  const Tensor x = random_f32({2, 3, 6}, 31);
  // Softmax over another axis.
  EXPECT_FALSE(check(x, Chain{{{OpKind::Add, random_f32({6}, 32)}}, 17, 1}));
  // A later operand that widens the shape (rank 4 against rank 3; a dim of 2 against 1), and
  // first inputs neither of which has the broadcast shape.
  EXPECT_FALSE(check(x, Chain{{{OpKind::Mul, scalar(0.5f)}, {OpKind::Add, random_f32({2, 2, 3, 6}, 33)}}}));
  EXPECT_FALSE(check(random_f32({1, 3, 6}, 44),
                     Chain{{{OpKind::Mul, scalar(0.5f)}, {OpKind::Add, random_f32({2, 1, 1}, 43)}}}));
  EXPECT_FALSE(check(random_f32({2, 1, 6}, 34), Chain{{{OpKind::Add, random_f32({3, 1}, 35)}}}));
  // First input smaller than the other: the chain is the right operand.
  EXPECT_TRUE(check(random_f32({6}, 36), Chain{{{OpKind::Sub, random_f32({2, 3, 6}, 37)}}}));
  // Size 0.
  EXPECT_FALSE(check(random_f32({2, 0, 6}, 38), Chain{{{OpKind::Add, scalar(1.0f)}}}));
  // An intermediate that is also a graph output.
  Chain out = bert(2, 6, 39);
  out.intermediate_is_output = true;
  EXPECT_FALSE(check(random_f32({2, 2, 6, 6}, 40), out));
}

TEST(SoftmaxFusion, OperandComputedAfterTheFirstNodeIsNotFused) {
  Chain c = bert(1, 5, 41);
  c.operand_computed_late = true;  // mask = Neg(input) sits between Div and Add
  EXPECT_FALSE(check(random_f32({1, 2, 5, 5}, 42), c));
}

TEST(SoftmaxFusion, OtherDtypesRunNodeByNode) {
  // float64 scores: the kernels one by one (same values as the one-node graphs).
  Tensor x = Tensor::from_vector<double>({2, 3}, {1, 2, 3, -1, 0, 1});
  Tensor m = Tensor::from_vector<double>({3}, {0, -1e9, 0});
  auto r = run_node(NodeSpec{OpKind::Add, {x, m}, 1, {}});
  ASSERT_TRUE(r.ok());
  auto want = run_node(NodeSpec{OpKind::Softmax, {(*r)[0]}, 1, {{"axis", attr_int(-1)}}});
  ASSERT_TRUE(want.ok());
  Built b;
  build(b, Chain{{{OpKind::Add, scalar(0.f)}}});
  auto out = interp::run_graph(b.g, {x, m}, {});
  ASSERT_TRUE(out.ok()) << out.status().message();
  expect_tensor_near((*out)[0], (*want)[0], 0, 0);
}

}  // namespace
}  // namespace tierjit::testing
