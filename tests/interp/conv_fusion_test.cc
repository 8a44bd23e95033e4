// Tier-0 Conv + activation fusion (interp/kernels/conv_fusion.h, executor.cc): a Conv followed by
// Relu / Clip / LeakyRelu / Sigmoid / Tanh gives bit for bit what the two kernels give apart
// (each run as its own one-node graph), NaN and odd / size-1 spatial dims included; a Conv whose
// output has a second use or is a graph output is not fused. Whether a pair fused is seen through
// run_nodes: a fused Conv's output slot shares the activation output's storage.
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

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

Tensor random_f32(Shape s, uint32_t seed, float nan_every = 0) {
  Tensor t = Tensor::empty(DType::kFloat32, std::move(s));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  if (nan_every > 0)
    for (int64_t i = 0; i < t.numel(); i += static_cast<int64_t>(nan_every)) t.data<float>()[i] = kNaN;
  return t;
}

Tensor scalar_f32(float v) { return Tensor::from_vector<float>({}, {v}); }

// One activation after the Conv: op, attributes, constant extra inputs (undefined = omitted).
struct Act {
  OpKind op;
  int opset = 17;
  std::vector<std::pair<std::string, ir::Attribute>> attrs = {};
  std::vector<Tensor> extra = {};
};

struct ConvCase {
  Tensor x, w, b;  // b may be undefined
  std::vector<std::pair<std::string, ir::Attribute>> conv_attrs;
};

// Conv(x, w[, b]) -> act, with w and b as graph constants. `conv_out_is_output` adds the Conv's
// output to the graph outputs; `second_use` adds Neg(conv_out) as another output.
struct FusionGraph {
  ir::Graph g{"fusion"};
  ir::Value *x = nullptr, *conv_out = nullptr, *act_out = nullptr;
};

void build(FusionGraph& fg, const ConvCase& c, const Act& a, bool conv_out_is_output,
           bool second_use) {
  ir::Graph& g = fg.g;
  fg.x = g.add_value("x", {c.x.dtype(), std::nullopt});
  g.inputs().push_back(fg.x);
  ir::Value* w = g.add_value("w", {c.w.dtype(), std::nullopt});
  w->set_constant(c.w);
  std::vector<ir::Value*> conv_in{fg.x, w};
  if (c.b.defined()) {
    ir::Value* b = g.add_value("b", {c.b.dtype(), std::nullopt});
    b->set_constant(c.b);
    conv_in.push_back(b);
  }
  fg.conv_out = g.add_value("conv_out");
  ir::Node* conv = g.add_node(OpKind::Conv, conv_in, {fg.conv_out}, "conv");
  conv->set_opset(17);
  for (const auto& [k, v] : c.conv_attrs) conv->set_attr(k, v);
  std::vector<ir::Value*> act_in{fg.conv_out};
  for (size_t i = 0; i < a.extra.size(); ++i) {
    if (!a.extra[i].defined()) { act_in.push_back(nullptr); continue; }
    ir::Value* v = g.add_value("extra" + std::to_string(i), {a.extra[i].dtype(), std::nullopt});
    v->set_constant(a.extra[i]);
    act_in.push_back(v);
  }
  fg.act_out = g.add_value("act_out");
  ir::Node* act = g.add_node(a.op, act_in, {fg.act_out}, "act");
  act->set_opset(a.opset);
  for (const auto& [k, v] : a.attrs) act->set_attr(k, v);
  g.outputs().push_back(fg.act_out);
  if (conv_out_is_output) g.outputs().push_back(fg.conv_out);
  if (second_use) {
    ir::Value* neg = g.add_value("neg");
    g.add_node(OpKind::Neg, {fg.conv_out}, {neg}, "neg")->set_opset(17);
    g.outputs().push_back(neg);
  }
}

// The two kernels apart: Conv as a one-node graph, then the activation on its output.
Tensor unfused(const ConvCase& c, const Act& a) {
  NodeSpec conv{OpKind::Conv, {c.x, c.w}, 1, c.conv_attrs};
  if (c.b.defined()) conv.inputs.push_back(c.b);
  auto y = run_node(conv);
  EXPECT_TRUE(y.ok()) << y.status().message();
  if (!y.ok()) return Tensor();
  NodeSpec act{a.op, {(*y)[0]}, 1, a.attrs, a.opset};
  for (const Tensor& t : a.extra) act.inputs.push_back(t);
  auto z = run_node(act);
  EXPECT_TRUE(z.ok()) << z.status().message();
  return z.ok() ? (*z)[0] : Tensor();
}

void expect_bitwise_equal(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(std::memcmp(got.raw_data(), want.raw_data(), want.nbytes()), 0)
      << "fused result differs from Conv then activation";
}

// Runs the graph with run_nodes (fusion visible) and with run_graph; both must equal the
// kernels apart. Returns whether the pair fused.
bool check_case(const ConvCase& c, const Act& a, bool conv_out_is_output = false,
                bool second_use = false) {
  const Tensor want = unfused(c, a);
  FusionGraph fg;
  build(fg, c, a, conv_out_is_output, second_use);
  auto graph_out = interp::run_graph(fg.g, {c.x}, interp::ExecOptions{});
  EXPECT_TRUE(graph_out.ok()) << graph_out.status().message();
  if (!graph_out.ok()) return false;
  expect_bitwise_equal((*graph_out)[0], want);

  interp::Frame frame;
  interp::init_frame(frame, fg.g);
  frame.values[fg.x->id()] = c.x;
  std::vector<const ir::Node*> nodes;
  for (const auto& n : fg.g.nodes()) nodes.push_back(n.get());
  Status st = interp::run_nodes(nodes, frame, interp::ExecOptions{});
  EXPECT_TRUE(st.ok()) << st.message();
  if (!st.ok()) return false;
  const Tensor& act = frame.values[fg.act_out->id()];
  expect_bitwise_equal(act, want);
  const Tensor& conv = frame.values[fg.conv_out->id()];
  EXPECT_TRUE(conv.defined());
  return conv.shares_storage_with(act);
}

// 2 images, 3 -> 5 channels, 5x7 (odd), 3x3 kernel, pads 1, bias, a NaN every 29 inputs.
ConvCase nan_case() {
  return ConvCase{random_f32({2, 3, 5, 7}, 1, 29), random_f32({5, 3, 3, 3}, 2),
                  random_f32({5}, 3), {{"pads", attr_ints({1, 1, 1, 1})}}};
}
// 16 -> 8 channels (blocked oneDNN layouts), 9x11, 3x3 stride 2, no bias.
ConvCase blocked_case() {
  return ConvCase{random_f32({1, 16, 9, 11}, 4, 101), random_f32({8, 16, 3, 3}, 5), Tensor(),
                  {{"strides", attr_ints({2, 2})}}};
}
// 1x1 kernel (oneDNN on the plain layout), 8 -> 12 channels.
ConvCase pointwise_case() {
  return ConvCase{random_f32({3, 8, 3, 5}, 6, 17), random_f32({12, 8, 1, 1}, 7), random_f32({12}, 8), {}};
}
// Depthwise 3x3 with pads on a 1x1 image (size-1 spatial dims), 8 channels.
ConvCase depthwise_size1_case() {
  return ConvCase{random_f32({2, 8, 1, 1}, 9), random_f32({8, 1, 3, 3}, 10), random_f32({8}, 11),
                  {{"group", attr_int(8)}, {"pads", attr_ints({1, 1, 1, 1})}}};
}

std::vector<ConvCase> all_cases() {
  return {nan_case(), blocked_case(), pointwise_case(), depthwise_size1_case()};
}

TEST(ConvFusion, ReluAsPostOpMapsNaNToZeroLikeTier0) {
  for (const ConvCase& c : all_cases()) EXPECT_TRUE(check_case(c, Act{OpKind::Relu}));
  // NaN really reached the activation: the unfused result has zeros where the Conv gave NaN.
  NodeSpec conv{OpKind::Conv, {nan_case().x, nan_case().w, nan_case().b}, 1, nan_case().conv_attrs};
  auto y = run_node(conv);
  ASSERT_TRUE(y.ok());
  bool any_nan = false;
  for (int64_t i = 0; i < (*y)[0].numel(); ++i) any_nan = any_nan || std::isnan((*y)[0].data<float>()[i]);
  EXPECT_TRUE(any_nan);
}

TEST(ConvFusion, ClipBothOpsetForms) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<Act> acts = {
      Act{OpKind::Clip, 6, {{"min", attr_float(0)}, {"max", attr_float(0.5f)}}, {}},
      Act{OpKind::Clip, 6, {{"min", attr_float(-0.25f)}}, {}},
      Act{OpKind::Clip, 6, {{"max", attr_float(0.25f)}}, {}},
      Act{OpKind::Clip, 13, {}, {scalar_f32(0), scalar_f32(0.5f)}},
      Act{OpKind::Clip, 13, {}, {scalar_f32(-0.1f)}},             // min only
      Act{OpKind::Clip, 13, {}, {Tensor(), scalar_f32(0.1f)}},    // max only
      Act{OpKind::Clip, 11, {}, {}},                              // no bounds
      Act{OpKind::Clip, 13, {}, {scalar_f32(0.3f), scalar_f32(-0.3f)}},  // min > max: max
      Act{OpKind::Clip, 13, {}, {scalar_f32(-inf), scalar_f32(inf)}},
  };
  for (const ConvCase& c : all_cases())
    for (const Act& a : acts) EXPECT_TRUE(check_case(c, a));
}

TEST(ConvFusion, LeakyReluSigmoidTanh) {
  std::vector<Act> acts = {
      Act{OpKind::LeakyRelu, 16, {{"alpha", attr_float(0.1f)}}, {}},   // post-op
      Act{OpKind::LeakyRelu, 16, {}, {}},                               // default alpha 0.01
      Act{OpKind::LeakyRelu, 16, {{"alpha", attr_float(0.0f)}}, {}},   // in place
      Act{OpKind::LeakyRelu, 16, {{"alpha", attr_float(-0.5f)}}, {}},  // in place
      Act{OpKind::Sigmoid}, Act{OpKind::Tanh},
  };
  for (const ConvCase& c : all_cases())
    for (const Act& a : acts) EXPECT_TRUE(check_case(c, a));
}

TEST(ConvFusion, NotFusedWhenConvOutputHasAnotherUseOrIsAGraphOutput) {
  for (const ConvCase& c : all_cases()) {
    EXPECT_FALSE(check_case(c, Act{OpKind::Relu}, /*conv_out_is_output=*/true));
    EXPECT_FALSE(check_case(c, Act{OpKind::Relu}, false, /*second_use=*/true));
    EXPECT_FALSE(check_case(c, Act{OpKind::Clip, 13, {}, {scalar_f32(0)}}, true));
  }
  // The graph output is the plain convolution, not the activated one.
  const ConvCase c = nan_case();
  FusionGraph fg;
  build(fg, c, Act{OpKind::Relu}, true, false);
  auto out = interp::run_graph(fg.g, {c.x}, interp::ExecOptions{});
  ASSERT_TRUE(out.ok()) << out.status().message();
  NodeSpec conv{OpKind::Conv, {c.x, c.w, c.b}, 1, c.conv_attrs};
  auto y = run_node(conv);
  ASSERT_TRUE(y.ok());
  expect_bitwise_equal((*out)[1], (*y)[0]);
}

TEST(ConvFusion, NonFloat32ConvRunsTheActivationAfterwards) {
  // float64 runs Conv on loops (no oneDNN post-op): the activation still runs (in place).
  ConvCase c = nan_case();
  auto to_f64 = [](const Tensor& t) {
    Tensor d = Tensor::empty(DType::kFloat64, t.shape());
    for (int64_t i = 0; i < t.numel(); ++i) d.data<double>()[i] = t.data<float>()[i];
    return d;
  };
  c.x = to_f64(c.x);
  c.w = to_f64(c.w);
  c.b = to_f64(c.b);
  EXPECT_TRUE(check_case(c, Act{OpKind::Relu}));
  EXPECT_TRUE(check_case(c, Act{OpKind::LeakyRelu, 16, {{"alpha", attr_float(0.2f)}}, {}}));
}

TEST(ConvFusion, ZeroBatch) {
  ConvCase c = blocked_case();
  c.x = Tensor::empty(DType::kFloat32, {0, 16, 9, 11});
  EXPECT_TRUE(check_case(c, Act{OpKind::Relu}));
}

}  // namespace
}  // namespace tierjit::testing
