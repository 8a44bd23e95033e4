// Tier-0 conv chains (interp/kernels/conv_chain.h): graphs of Convs with activations and
// residual Adds between them give what their kernels give one node at a time: bit for bit
// where oneDNN runs the same convolution kernel (dense 3x3-style kernels: both paths use its
// blocked direct kernel), within 1e-5 relative + 1e-5 absolute where the chain runs 1x1 and
// depthwise convolutions on oneDNN's blocked kernels instead of its GEMM / NHWC ones (the same
// products summed in another order: at most 9 * C float32 terms of magnitude <= a few units).
// Odd channel counts (3, 17: padding lanes), NaN inputs, strides, pads, dilations, groups,
// batch 0 and 1, rank 3, an intermediate that is also a graph output, fallbacks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>

#include "interp/executor.h"
#include "interp/kernels/conv_chain.h"
#include "kernels/cpu_features.h"
#include "interp/kernels/direct_conv.h"
#include "node_runner.h"
#include "ref_graph_builder.h"
#include "support/cpu_load.h"

namespace tierjit::testing {
namespace {

using ir::OpKind;
using Attrs = RefGraphBuilder::Attrs;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
using nn_layout = interp::nn::ActLayout;

// The graph and its reference values (ref_graph_builder.h), with Convs of random weights.
class Builder : public RefGraphBuilder {
 public:
  Builder() : RefGraphBuilder("chain") {}
  ir::Value* conv(ir::Value* x, int64_t cin, int64_t cout, std::vector<int64_t> kernel,
                  Attrs attrs = {}, int64_t group = 1, bool bias = true) {
    Shape ws{cout, cin / group};
    ws.insert(ws.end(), kernel.begin(), kernel.end());
    std::vector<ir::Value*> in{x, constant(random_f32(ws, seed_++, 0, 0.5f))};
    if (bias) in.push_back(constant(random_f32({cout}, seed_++)));
    if (group != 1) attrs.push_back({"group", attr_int(group)});
    return node(OpKind::Conv, in, attrs);
  }

 private:
  uint32_t seed_ = 100;
};

std::vector<const ir::Node*> node_list(const ir::Graph& g) {
  std::vector<const ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  return nodes;
}

// The largest finite |value| of a float32 tensor (0 for none).
double max_abs(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = std::fabs(t.value_as_double(i));
    if (std::isfinite(v)) m = std::max(m, v);
  }
  return m;
}

void expect_equal(const Tensor& got, const Tensor& want, bool exact) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape());
  if (exact)
    EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), want.nbytes()), 0)
        << "chain result differs bitwise from the kernels one by one";
  else  // another summation order: an error on the scale of the output's largest values (deep
          // residual chains cancel large terms; oneDNN's AVX2 kernels differ from the AVX-512 ones)
    expect_tensor_near(got, want, 1e-5, 3e-5 * std::max(1.0, max_abs(want)));
}

// Runs b's graph through run_graph and run_nodes, compares every graph output with the
// reference (bitwise when `exact`, unless a direct convolution ran: its sums run in another
// order); returns the number of conv chains planned.
size_t check_once(Builder& b, bool exact, int threads) {
  EXPECT_TRUE(b.ok);
  const uint64_t direct_before = interp::nn::direct_conv_runs();
  auto exact_now = [&] { return exact && interp::nn::direct_conv_runs() == direct_before; };
  interp::ExecOptions opt;
  opt.intra_op_threads = threads;
  auto out = interp::run_graph(b.g, b.feeds, opt);
  EXPECT_TRUE(out.ok()) << out.status().message();
  if (!out.ok()) return 0;
  for (size_t i = 0; i < b.g.outputs().size(); ++i) expect_equal((*out)[i], b.ref[b.g.outputs()[i]], exact_now());

  const std::vector<const ir::Node*> nodes = node_list(b.g);
  const interp::FusionPlan plan = interp::plan_fusion(nodes, b.g);
  interp::Frame frame;
  interp::init_frame(frame, b.g);
  for (size_t i = 0; i < b.feeds.size(); ++i) frame.values[b.g.inputs()[i]->id()] = b.feeds[i];
  Status st = interp::run_nodes(nodes, plan, frame, opt);
  EXPECT_TRUE(st.ok()) << st.message();
  if (!st.ok()) return 0;
  for (const ir::Value* v : b.g.outputs()) expect_equal(frame.values[v->id()], b.ref[v], exact_now());
  // Every node output holds a tensor of the reference's shape and dtype (for recordings).
  for (const auto& n : b.g.nodes()) {
    const Tensor& t = frame.values[n->output(0)->id()];
    EXPECT_TRUE(t.defined());
    EXPECT_EQ(t.shape(), b.ref[n->output(0)].shape());
    EXPECT_EQ(t.dtype(), b.ref[n->output(0)].dtype());
  }
  return plan.conv_chains.size();
}

// check_once with the chains' convolutions on oneDNN alone, then with tier 0's direct
// convolution for few channels where it applies (interp/kernels/direct_conv.h; AVX2 CPUs).
size_t check(Builder& b, bool exact, int threads = 1) {
  size_t chains = 0;
  for (bool direct : {false, true}) {
    SCOPED_TRACE(direct ? "with direct convolutions" : "oneDNN convolutions only");
    interp::nn::set_direct_conv_enabled(direct);
    chains = check_once(b, exact, threads);
  }
  interp::nn::set_direct_conv_enabled(true);
  return chains;
}

// x[n, 3, 19, 21] -> 3x3 conv to C (pads 1) -> Relu -> 3x3 conv C -> C (pads 1) -> Add the Relu
// output -> Sigmoid -> 3x3 conv C -> 16, stride 2, dilation 2 -> LeakyRelu -> 3x3 conv 16 -> D
// with pads 0/1 -> Clip -> 2x2 conv D -> C -> MaxPool 3x3 stride 2 pads 1 ceil_mode -> Relu ->
// 3x3 conv C -> D -> MaxPool 2x2 -> Tanh. Dense kernels only. With C, D = 32, 16 oneDNN picks its
// blocked direct kernel for every Conv alone too (bit-identical); with odd C, D = 17, 5 alone it
// picks its NHWC brgemm kernel (other summation order).
void dense_chain(Builder& b, int64_t n, int64_t nan_every, int64_t c = 32, int64_t d = 16) {
  ir::Value* x = b.input(random_f32({n, 3, 19, 21}, 1, nan_every));
  ir::Value* a = b.node(OpKind::Relu, {b.conv(x, 3, c, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}})});
  ir::Value* cc = b.conv(a, c, c, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}});
  ir::Value* s = b.node(OpKind::Sigmoid, {b.node(OpKind::Add, {cc, a})});
  ir::Value* dd = b.conv(s, c, 16, {3, 3}, {{"strides", attr_ints({2, 2})}, {"dilations", attr_ints({2, 2})},
                                            {"pads", attr_ints({2, 1, 2, 1})}});
  ir::Value* l = b.node(OpKind::LeakyRelu, {dd}, {{"alpha", attr_float(0.1f)}}, 16);
  ir::Value* e = b.conv(l, 16, d, {3, 3}, {{"pads", attr_ints({0, 1, 0, 1})}}, 1, false);
  ir::Value* cl = b.node(OpKind::Clip, {e, b.constant(Tensor::from_vector<float>({}, {-0.5f})),
                                        b.constant(Tensor::from_vector<float>({}, {0.5f}))});
  ir::Value* p = b.node(OpKind::MaxPool, {b.conv(cl, d, c, {2, 2})},
                       {{"kernel_shape", attr_ints({3, 3})}, {"strides", attr_ints({2, 2})},
                        {"pads", attr_ints({1, 1, 1, 1})}, {"ceil_mode", attr_int(1)}});
  ir::Value* q = b.conv(b.node(OpKind::Relu, {p}), c, d, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}});
  b.output(b.node(OpKind::Tanh, {b.node(OpKind::MaxPool, {q}, {{"kernel_shape", attr_ints({2, 2})}})}));
}

TEST(ConvChain, DenseChainIsBitIdentical) {
  for (int64_t n : {1, 2}) {
    Builder b;
    dense_chain(b, n, 0);
    EXPECT_EQ(check(b, true), 1u);
    EXPECT_EQ(check(b, true, 2), 1u);
  }
}

TEST(ConvChain, OddChannelCounts) {
  for (int64_t n : {1, 2}) {
    Builder b;
    dense_chain(b, n, 13, 17, 5);
    EXPECT_EQ(check(b, false), 1u);
    EXPECT_EQ(check(b, false, 2), 1u);
  }
}

TEST(ConvChain, NaNInputs) {
  Builder b;
  dense_chain(b, 2, 7);
  EXPECT_EQ(check(b, true), 1u);
  // NaN reached the chain: the first Conv's output has some (its Relu maps them to 0).
  bool any_nan = false;
  for (float v : b.ref[b.g.nodes()[0]->output(0)].span<float>()) any_nan = any_nan || std::isnan(v);
  EXPECT_TRUE(any_nan);
}

// mobilenet-style inverted residual blocks: 1x1 expand (Clip 0..6), depthwise 3x3 (Clip), 1x1
// project, residual Add; a strided depthwise block; grouped conv (4 groups).
TEST(ConvChain, PointwiseDepthwiseGroupedResiduals) {
  for (int64_t n : {1, 3}) {
    Builder b;
    auto relu6 = [&](ir::Value* v) {
      return b.node(OpKind::Clip, {v, b.constant(Tensor::from_vector<float>({}, {0.0f})),
                                   b.constant(Tensor::from_vector<float>({}, {6.0f}))});
    };
    ir::Value* x = b.input(random_f32({n, 3, 13, 12}, 2, 31));
    ir::Value* h = relu6(b.conv(x, 3, 17, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}, {"strides", attr_ints({2, 2})}}));
    ir::Value* e = relu6(b.conv(h, 17, 34, {1, 1}));
    ir::Value* dw = relu6(b.conv(e, 34, 34, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}}, 34));
    ir::Value* p = b.conv(dw, 34, 17, {1, 1});
    ir::Value* r = b.node(OpKind::Add, {h, p});
    ir::Value* dw2 = b.node(OpKind::Relu, {b.conv(r, 17, 17, {3, 3}, {{"strides", attr_ints({2, 2})}, {"pads", attr_ints({1, 1, 1, 1})}}, 17)});
    // 17 channels do not split into 4 groups: a 1x1 to 16 channels first.
    ir::Value* q = b.conv(dw2, 17, 16, {1, 1});
    ir::Value* g4 = b.node(OpKind::Relu, {b.conv(q, 16, 32, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}}, 4)});
    b.output(b.conv(g4, 32, 3, {1, 1}));
    EXPECT_GE(check(b, false), 1u);
    EXPECT_GE(check(b, false, 2), 1u);
  }
}

// An intermediate that is also a graph output (or read by a node outside the chain) is not
// fused away: it holds its exact value, and the chain splits around it.
TEST(ConvChain, IntermediateGraphOutputKeepsItsValue) {
  Builder b;
  dense_chain(b, 1, 11);
  // The Add's output (the Sigmoid's input) becomes a graph output too.
  const ir::Value* add = nullptr;
  for (const auto& n : b.g.nodes())
    if (n->op() == OpKind::Add) add = n->output(0);
  ASSERT_NE(add, nullptr);
  b.output(const_cast<ir::Value*>(add));
  EXPECT_EQ(check(b, true), 2u);  // Conv, Relu, Conv, Add | Sigmoid ... Tanh
}

TEST(ConvChain, SecondReaderOutsideTheChain) {
  Builder b;
  dense_chain(b, 1, 0);
  const ir::Value* relu = nullptr;
  for (const auto& n : b.g.nodes())
    if (n->op() == OpKind::Relu) relu = n->output(0);
  b.output(b.node(OpKind::Neg, {const_cast<ir::Value*>(relu)}));
  check(b, true);
}

TEST(ConvChain, BatchZeroAndOneRunTheKernels) {
  for (int64_t n : {0, 1}) {
    Builder b;
    dense_chain(b, n, 0);
    EXPECT_EQ(check(b, true), 1u);
  }
}

TEST(ConvChain, Rank3Convolutions) {
  Builder b;
  ir::Value* x = b.input(random_f32({2, 5, 40}, 3, 17));
  ir::Value* a = b.node(OpKind::Relu, {b.conv(x, 5, 17, {5}, {{"pads", attr_ints({2, 2})}})});
  ir::Value* c = b.conv(a, 17, 17, {3}, {{"dilations", attr_ints({3})}, {"pads", attr_ints({3, 3})}});
  b.output(b.conv(b.node(OpKind::Add, {a, c}), 17, 4, {3}, {{"strides", attr_ints({3})}}));
  EXPECT_EQ(check(b, true), 1u);
}

// A 1-D chain: Conv 6 -> 16 (kernel 3), MaxPool 3 stride 2, Conv 16 -> 16 on [3, 6, 50].
void pool_chain_1d(Builder& b) {
  ir::Value* x = b.input(random_f32({3, 6, 50}, 8, 9));
  ir::Value* p = b.node(OpKind::MaxPool, {b.conv(x, 6, 16, {3})}, {{"kernel_shape", attr_ints({3})}, {"strides", attr_ints({2})}});
  b.output(b.conv(p, 16, 16, {3}));
}

// A 3-D chain: Conv 5 -> 16 (3x3x3, pads 1), MaxPool 2x2x2 stride 2, 1x1x1 Conv on [1, 5, 6, 7, 8].
void pool_chain_3d(Builder& b) {
  ir::Value* x = b.input(random_f32({1, 5, 6, 7, 8}, 9, 11));
  ir::Value* p = b.node(OpKind::MaxPool, {b.conv(x, 5, 16, {3, 3, 3}, {{"pads", attr_ints({1, 1, 1, 1, 1, 1})}})},
                        {{"kernel_shape", attr_ints({2, 2, 2})}, {"strides", attr_ints({2, 2, 2})}});
  b.output(b.conv(p, 16, 16, {1, 1, 1}));
}

// MaxPool inside chains: NaN and -inf in windows (no activation before the pool), channel
// counts with and without a tail of the 8-lane vectors (8, 17, 24), dilations, pads, ceil_mode,
// windows partly in the padding, 1-D and 3-D pools. (Pads >= the kernel are an error since
// session 5, as in ONNX Runtime: PoolsRejectPadsNotSmallerThanTheKernel.)
TEST(ConvChain, MaxPoolNaNTailsAndRanks) {
  for (int64_t c : {8, 17, 24}) {
    Builder b;
    Tensor xt = random_f32({2, 4, 15, 13}, 7, 5);
    for (int64_t i = 3; i < xt.numel(); i += 37) xt.data<float>()[i] = -std::numeric_limits<float>::infinity();
    ir::Value* x = b.input(xt);
    ir::Value* a = b.conv(x, 4, c, {1, 1});  // 1x1 on the plain input: NaN and -inf pass through
    ir::Value* p = b.node(OpKind::MaxPool, {a}, {{"kernel_shape", attr_ints({3, 2})}, {"strides", attr_ints({2, 1})},
                                                {"dilations", attr_ints({2, 2})}, {"pads", attr_ints({2, 1, 1, 0})},
                                                {"ceil_mode", attr_int(1)}});
    ir::Value* q = b.node(OpKind::MaxPool, {b.conv(p, c, c, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}})},
                          {{"kernel_shape", attr_ints({2, 2})}, {"pads", attr_ints({1, 1, 1, 1})}});
    b.output(b.conv(q, c, 3, {1, 1}));
    EXPECT_EQ(check(b, false), 1u);
    bool nan = false;
    for (float v : b.ref[p].span<float>()) nan = nan || std::isnan(v);
    EXPECT_TRUE(nan);
  }
  {
    Builder b;
    pool_chain_1d(b);
    EXPECT_EQ(check(b, true), 1u);
  }
  {
    Builder b;
    pool_chain_3d(b);
    EXPECT_EQ(check(b, false), 1u);
  }
}

// A MaxPool whose pads are not smaller than its kernel (windows wholly in the padding) is an
// error in a chain as alone, with the pool kernel's message; the graph is not run by the chain.
TEST(ConvChain, PoolsRejectPadsNotSmallerThanTheKernel) {
  Builder b;
  ir::Value* x = b.input(random_f32({1, 3, 8, 8}, 4, 3));
  ir::Value* c1 = b.conv(x, 3, 8, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}});
  // Added to the graph only (Builder::node would run the failing kernel as its reference).
  ir::Value* bad = b.g.add_value("bad_pool");
  ir::Node* n = b.g.add_node(OpKind::MaxPool, {c1}, {bad}, "bad_pool");
  n->set_opset(17);
  n->set_attr("kernel_shape", attr_ints({2, 2}));
  n->set_attr("pads", attr_ints({2, 0, 0, 0}));
  ir::Value* w = b.g.add_value("w_after");
  w->set_constant(random_f32({4, 8, 3, 3}, 5, 2));
  ir::Value* y = b.g.add_value("y_after");
  b.g.add_node(OpKind::Conv, {bad, w}, {y}, "conv_after")->set_opset(17);
  b.g.outputs().push_back(y);
  interp::ExecOptions opt;
  auto out = interp::run_graph(b.g, b.feeds, opt);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("must be smaller than the kernel"), std::string::npos)
      << out.status().message();
}

TEST(ConvChain, AddWithBroadcastingRunsTheKernels) {
  Builder b;
  ir::Value* x = b.input(random_f32({1, 8, 6, 6}, 4));
  ir::Value* c1 = b.conv(x, 8, 16, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}});
  ir::Value* c2 = b.conv(c1, 16, 16, {1, 6});  // [1, 16, 6, 1]: Add broadcasts along W
  b.output(b.conv(b.node(OpKind::Add, {c1, c2}), 16, 4, {3, 3}));
  EXPECT_EQ(check(b, false), 1u);
}

TEST(ConvChain, Float64RunsTheKernels) {
  Builder b;
  Tensor xf = random_f32({1, 4, 7, 7}, 5, 9);
  Tensor xd = Tensor::empty(DType::kFloat64, xf.shape());
  for (int64_t i = 0; i < xf.numel(); ++i) xd.data<double>()[i] = xf.data<float>()[i];
  ir::Value* x = b.input(xd);
  auto conv64 = [&](ir::Value* v, int64_t cin, int64_t cout) {
    Tensor w = random_f32({cout, cin, 3, 3}, 9);
    Tensor wd = Tensor::empty(DType::kFloat64, w.shape());
    for (int64_t i = 0; i < w.numel(); ++i) wd.data<double>()[i] = w.data<float>()[i];
    return b.node(OpKind::Conv, {v, b.constant(wd)}, {{"pads", attr_ints({1, 1, 1, 1})}});
  };
  b.output(conv64(b.node(OpKind::Relu, {conv64(x, 4, 6)}), 6, 3));
  EXPECT_EQ(check(b, true), 1u);
}

TEST(ConvChain, InvalidConvReportsTheKernelsError) {
  Builder b;
  ir::Value* x = b.input(random_f32({1, 4, 7, 7}, 5));
  ir::Value* c1 = b.conv(x, 4, 8, {3, 3});
  // W expects 6 input channels: the Conv kernel's error, not a chain's.
  ir::Value* w = b.constant(random_f32({8, 6, 3, 3}, 6));
  ir::Value* y = b.g.add_value("y");
  b.g.add_node(OpKind::Conv, {c1, w}, {y}, "bad")->set_opset(17);
  b.output(y);
  auto out = interp::run_graph(b.g, b.feeds, interp::ExecOptions{});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("channel mismatch"), std::string::npos) << out.status().message();
}

// A chain's first layer of few input channels runs oneDNN's direct kernel on the plain source;
// with one block of output channels (16, or 8 without AVX-512) its blocked output is the
// channels-last one, the same kernel as the Conv alone (bit-identical). A one-channel source
// is channels-last as it is (no copy), and so is an exit of one channel or one position.
TEST(ConvChain, FirstLayerOfFewChannels) {
  struct Case { int64_t cin, cout, h, w; bool exact; };
  // exact: the same kernels as one node at a time; (1, 32) runs the brgemm kernel on the
  // one-channel source read as channels-last, where the Conv alone runs the direct kernel.
  for (const Case& k : {Case{1, 16, 28, 28, true}, Case{3, 16, 13, 11, true}, Case{4, 16, 9, 7, true},
                        Case{1, 8, 12, 12, false}, Case{1, 32, 10, 9, false}, Case{2, 17, 8, 8, false}}) {
    for (int64_t n : {1, 3}) {
      SCOPED_TRACE(::testing::Message() << "cin " << k.cin << " cout " << k.cout << " n " << n);
      Builder b;
      ir::Value* x = b.input(random_f32({n, k.cin, k.h, k.w}, 5, 23));
      ir::Value* a = b.node(OpKind::Relu, {b.conv(x, k.cin, k.cout, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}})});
      ir::Value* p = b.node(OpKind::MaxPool, {a}, {{"kernel_shape", attr_ints({2, 2})}, {"strides", attr_ints({2, 2})}});
      b.output(b.node(OpKind::Relu, {b.conv(p, k.cout, 24, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}})}));
      EXPECT_EQ(check(b, k.exact), 1u);
      EXPECT_EQ(check(b, k.exact, 2), 1u);
    }
  }
}

// A MaxPool that alone reads a Conv (or the Relu after it) and whose windows tile the Conv's
// output (strides equal to the kernel, no pads) runs inside tier 0's direct convolution on AVX2
// CPUs (direct_conv.h, MaxPoolAfter): the kernels' values one node at a time, with and without
// the Relu (NaN inputs: the pool's fold), odd sizes (a row and a column no window reads), calls
// split by images; overlapping or padded windows and a Conv read twice run the MaxPool kernel.
TEST(ConvChain, MaxPoolsTilingTheDirectConvolutionsOutput) {
  support::override_foreign_busy_cores(0);
  struct Case { std::vector<int64_t> kernel, strides, pads; bool relu, fused; };
  for (const Case& k : {Case{{2, 2}, {2, 2}, {0, 0, 0, 0}, true, true}, Case{{2, 2}, {2, 2}, {0, 0, 0, 0}, false, true},
                        Case{{3, 2}, {3, 2}, {0, 0, 0, 0}, true, true}, Case{{3, 3}, {2, 2}, {0, 0, 0, 0}, true, false},
                        Case{{2, 2}, {2, 2}, {1, 1, 1, 1}, true, false}}) {
    for (auto [n, threads] : {std::pair<int64_t, int>{1, 1}, {4, 2}, {3, 2}}) {
      SCOPED_TRACE(::testing::Message() << "window " << k.kernel[0] << "x" << k.kernel[1] << " stride "
                                        << k.strides[0] << " pad " << k.pads[0] << (k.relu ? " after Relu" : "")
                                        << ", n " << n << ", threads " << threads);
      Builder b;
      ir::Value* x = b.input(random_f32({n, 1, 15, 17}, 5, 31));
      ir::Value* a = b.conv(x, 1, 16, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}});
      if (k.relu) a = b.node(OpKind::Relu, {a});
      ir::Value* p = b.node(OpKind::MaxPool, {a}, {{"kernel_shape", attr_ints(k.kernel)}, {"strides", attr_ints(k.strides)},
                                                 {"pads", attr_ints(k.pads)}});
      b.output(b.node(OpKind::Relu, {b.conv(p, 16, 24, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}})}));
      const uint64_t before = interp::nn::direct_conv_pool_runs();
      EXPECT_EQ(check(b, false, threads), 1u);
      if (!kernels::cpu_has_avx512f() && k.fused)
        EXPECT_GT(interp::nn::direct_conv_pool_runs(), before) << "the MaxPool ran in the convolution";
      else
        EXPECT_EQ(interp::nn::direct_conv_pool_runs(), before);
    }
  }
  {  // the Conv's value read by the MaxPool and by an Add: stored, the MaxPool kernel runs
    Builder b;
    ir::Value* x = b.input(random_f32({2, 8, 12, 12}, 5, 37));
    ir::Value* a = b.conv(x, 8, 16, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}});
    ir::Value* p = b.node(OpKind::MaxPool, {a}, {{"kernel_shape", attr_ints({2, 2})}, {"strides", attr_ints({2, 2})}});
    ir::Value* q = b.conv(p, 16, 16, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}});
    ir::Value* u = b.node(OpKind::Add, {b.conv(a, 16, 16, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}}), a});
    b.output(q);
    b.output(u);
    const uint64_t before = interp::nn::direct_conv_pool_runs();
    check(b, false);
    EXPECT_EQ(interp::nn::direct_conv_pool_runs(), before);
  }
  support::override_foreign_busy_cores(-1);
}

TEST(ConvChain, ExitOfOneChannelOrOnePosition) {
  for (int64_t n : {1, 2}) {
    {  // [n, 1, 6, 5] out: one channel
      Builder b;
      ir::Value* x = b.input(random_f32({n, 16, 6, 5}, 6, 19));
      ir::Value* a = b.node(OpKind::Relu, {b.conv(x, 16, 16, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}})});
      b.output(b.conv(a, 16, 1, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}}));
      EXPECT_EQ(check(b, false), 1u);
    }
    {  // [n, 16, 1, 1] out: one position
      Builder b;
      ir::Value* x = b.input(random_f32({n, 8, 5, 5}, 7, 0));
      ir::Value* a = b.node(OpKind::Relu, {b.conv(x, 8, 16, {3, 3})});
      b.output(b.conv(a, 16, 16, {3, 3}));
      EXPECT_EQ(check(b, false), 1u);
    }
  }
}

// One planned chain called with shapes changing from call to call (batch and spatial size,
// recurring and new): each call resolves its own shapes (ConvChain::resolved, kept per distinct
// input shape, at most kResolvedKept) and equals the kernels one by one on the same feed.
TEST(ConvChain, ShapesChangingBetweenCallsOfOnePlan) {
  Builder b;
  dense_chain(b, 1, 0);
  const std::vector<const ir::Node*> nodes = node_list(b.g);
  const interp::FusionPlan plan = interp::plan_fusion(nodes, b.g);
  ASSERT_EQ(plan.conv_chains.size(), 1u);
  const interp::ConvChain& chain = *plan.conv_chains[0];
  interp::ExecOptions opt;
  opt.intra_op_threads = 2;
  struct Call { int64_t n, h, w; };
  std::vector<Call> calls{{1, 19, 21}, {3, 19, 21}, {1, 19, 21}, {2, 9, 11}, {3, 19, 21}, {1, 9, 11}};
  for (int64_t n = 4; n < 4 + static_cast<int64_t>(interp::ConvChain::kResolvedKept); ++n) calls.push_back({n, 12, 13});
  calls.push_back({1, 19, 21});  // dropped from the list by now: resolved again
  uint32_t seed = 40;
  for (const Call& k : calls) {
    const Tensor x = random_f32({k.n, 3, k.h, k.w}, seed++, k.n == 3 ? 17 : 0);
    interp::Frame fused, plain;
    for (interp::Frame* f : {&fused, &plain}) {
      interp::init_frame(*f, b.g);
      f->values[b.g.inputs()[0]->id()] = x;
    }
    ASSERT_TRUE(interp::run_nodes(nodes, plan, fused, opt).ok());
    ASSERT_TRUE(interp::run_nodes(nodes, interp::FusionPlan(), plain, opt).ok());
    const ir::Value* y = b.g.outputs()[0];
    expect_equal(fused.values[y->id()], plain.values[y->id()], false);
    std::lock_guard<std::mutex> lock(chain.resolved_mu);
    EXPECT_LE(chain.resolved.size(), interp::ConvChain::kResolvedKept);
  }
  std::lock_guard<std::mutex> lock(chain.resolved_mu);
  EXPECT_EQ(chain.resolved.size(), interp::ConvChain::kResolvedKept);
}

// Residual Adds run as their Convs' oneDNN sum post-op (ConvChain::Step::sum_add), with the
// Relu after them (resnet18's blocks) or none (mobilenet_v2's): the Conv, Add and Relu kernels
// one by one within the chain tolerance (its 1x1 layers run other oneDNN kernels than alone;
// the sum itself is the Add's one float32 addition: resnet18 and mobilenet_v2 at N=3 gave the
// same bytes with and without it), NaN inputs included; residuals the sum must not overwrite (a
// chain input, a value read again later) run the Add kernel.
// resnet-like: conv-relu-conv + skip, relu, twice; then mobilenet-like: 1x1 expand, depthwise,
// 1x1 project + skip (no activation after). Three residual Adds a chain sums in place.
void residual_net(Builder& b, int64_t n, int64_t nan_every) {
  ir::Value* x = b.input(random_f32({n, 16, 14, 13}, 8, nan_every));
  ir::Value* s = b.node(OpKind::Relu, {b.conv(x, 16, 32, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}})});
  for (int k = 0; k < 2; ++k) {
    ir::Value* h = b.node(OpKind::Relu, {b.conv(s, 32, 32, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}})});
    ir::Value* c2 = b.conv(h, 32, 32, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}});
    s = b.node(OpKind::Relu, {b.node(OpKind::Add, {c2, s})});
  }
  ir::Value* e = b.node(OpKind::Relu, {b.conv(s, 32, 64, {1, 1})});
  ir::Value* d = b.node(OpKind::Relu, {b.conv(e, 64, 64, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}}, 64)});
  ir::Value* p = b.node(OpKind::Add, {s, b.conv(d, 64, 32, {1, 1})});
  b.output(b.conv(p, 32, 16, {1, 1}));
}

TEST(ConvChain, ResidualSumsIntoTheSkipBuffer) {
  for (int64_t n : {1, 2})
    for (int64_t nan_every : {0, 23}) {
      Builder b;
      residual_net(b, n, nan_every);
      const uint64_t before = interp::conv_chain_residual_sums();
      EXPECT_EQ(check(b, false), 1u);
      // check() runs the graph four times (run_graph and run_nodes, without and with direct
      // convolutions): 3 Adds each.
      EXPECT_EQ(interp::conv_chain_residual_sums() - before, 12u) << "every Add summed in place";
      EXPECT_EQ(check(b, false, 2), 1u);
    }
}

TEST(ConvChain, ResidualsTheSumMustNotOverwriteRunTheAdd) {
  {  // the skip is the chain's input (the caller's tensor)
    Builder b;
    ir::Value* x = b.input(random_f32({1, 16, 9, 9}, 9, 0));
    ir::Value* h = b.node(OpKind::Relu, {b.conv(x, 16, 16, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}})});
    ir::Value* r = b.node(OpKind::Add, {b.conv(h, 16, 16, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}}), x});
    b.output(r);
    const Tensor x_before = b.feeds[0].clone();
    const uint64_t before = interp::conv_chain_residual_sums();
    EXPECT_EQ(check(b, true), 1u);
    EXPECT_EQ(interp::conv_chain_residual_sums(), before);
    EXPECT_EQ(std::memcmp(b.feeds[0].raw_data(), x_before.raw_data(), x_before.nbytes()), 0);
  }
  {  // the skip is read again after the Add
    Builder b;
    ir::Value* x = b.input(random_f32({1, 8, 9, 9}, 10, 0));
    ir::Value* s = b.node(OpKind::Relu, {b.conv(x, 8, 16, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}})});
    ir::Value* h = b.node(OpKind::Relu, {b.conv(s, 16, 16, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}})});
    ir::Value* r = b.node(OpKind::Add, {b.conv(h, 16, 16, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}}), s});
    ir::Value* t = b.node(OpKind::Add, {b.conv(r, 16, 16, {1, 1}), s});  // s read again: r adds
    b.output(t);
    const uint64_t before = interp::conv_chain_residual_sums();
    EXPECT_EQ(check(b, false), 1u);
    EXPECT_EQ(interp::conv_chain_residual_sums() - before, 4u);  // the second Add, in all 4 runs
  }
}

}  // namespace
}  // namespace tierjit::testing

namespace tierjit::testing {
namespace {

// convnet-like (1 -> 16 channels, MaxPool), then a resnet-like residual block and a MaxPool.
void small_images_net(Builder& b, int64_t n) {
  ir::Value* x = b.input(random_f32({n, 1, 28, 28}, 5, 97));
  ir::Value* a = b.node(OpKind::Relu, {b.conv(x, 1, 16, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}})});
  ir::Value* p = b.node(OpKind::MaxPool, {a}, {{"kernel_shape", attr_ints({2, 2})}, {"strides", attr_ints({2, 2})}});
  ir::Value* s = b.node(OpKind::Relu, {b.conv(p, 16, 32, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}})});
  ir::Value* h = b.node(OpKind::Relu, {b.conv(s, 32, 32, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}})});
  ir::Value* r = b.node(OpKind::Relu, {b.node(OpKind::Add, {b.conv(h, 32, 32, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}}), s})});
  b.output(b.node(OpKind::MaxPool, {r}, {{"kernel_shape", attr_ints({2, 2})}, {"strides", attr_ints({2, 2})}}));
}

// Calls of several images run split by images (each thread every step on its share of
// the batch in pieces of 8, 4, 2 and 1 images, one-thread kernels): the chain gives the
// kernels' values one node at a time within the chain tolerance, residual sums and NaN
// included, for even and uneven shares (21 images: 10 + 11 = 8 + 2 and 8 + 2 + 1); 3 images on
// 2 threads (uneven and fewer than 4 per thread) and one image run unsplit.
TEST(ConvChain, SmallImagesRunSplitByImages) {
  if (support::usable_cores() < 2) GTEST_SKIP() << "needs 2 usable cores";
  support::override_foreign_busy_cores(0);  // free cores, whatever the machine is doing
  for (int64_t n : {1, 2, 3, 4, 9, 21}) {
    SCOPED_TRACE("batch " + std::to_string(n));
    Builder b;
    small_images_net(b, n);
    const uint64_t before = interp::conv_chain_image_splits();
    EXPECT_EQ(check(b, false, 2), 1u);
    // check() runs the chain four times (run_graph and run_nodes, without and with direct
    // convolutions).
    EXPECT_EQ(interp::conv_chain_image_splits() - before, n == 1 || n == 3 ? 0u : 4u);
    const uint64_t one_thread = interp::conv_chain_image_splits();
    EXPECT_EQ(check(b, false, 1), 1u);
    EXPECT_EQ(interp::conv_chain_image_splits(), one_thread) << "one thread: never split";
  }
  support::override_foreign_busy_cores(-1);
}

// Both layouts a chain keeps its intermediates in (channels-last, the AVX-512 choice; blocks of
// 8 channels, the AVX2 one; conv_chain.h), forced on whatever CPU runs the tests, give the
// kernels' values one node at a time: dense chains (32 / 16 channels, and 17 / 5, which keep
// channels-last even when blocks are asked for), residual sums in place, pointwise / depthwise
// layers, MaxPools of 8 and 24 channels and 1-D / 3-D ones, first layers of 1-4 channels,
// an exit of one position, a skip that is the chain's input, and calls split by images.
TEST(ConvChain, BothLayoutsGiveTheKernelsValues) {
  support::override_foreign_busy_cores(0);
  for (nn_layout l : {nn_layout::kChannelsLast, nn_layout::kBlocked8}) {
    SCOPED_TRACE(l == nn_layout::kBlocked8 ? "blocks of 8" : "channels-last");
    interp::set_conv_chain_layout_for_testing(l);
    for (int64_t n : {1, 2}) {
      for (auto [c, d] : {std::pair<int64_t, int64_t>{32, 16}, {17, 5}}) {
        Builder b;
        dense_chain(b, n, 13, c, d);
        EXPECT_EQ(check(b, false), 1u);
        EXPECT_EQ(check(b, false, 2), 1u);
      }
      Builder r;
      residual_net(r, n, 23);
      const uint64_t sums = interp::conv_chain_residual_sums();
      EXPECT_EQ(check(r, false), 1u);
      // Every Add summed in place (seen with both layouts on AVX2, channels-last on AVX-512);
      // blocks of 8 on AVX-512 may run a kernel with a destination reorder, where the Add
      // kernel runs instead (values unchanged).
      if (l == nn_layout::kChannelsLast || !kernels::cpu_has_avx512f()) {
        EXPECT_EQ(interp::conv_chain_residual_sums() - sums, 12u) << "every Add summed in place";
      }
    }
    for (int64_t c : {8, 24}) {
      Builder b;
      ir::Value* x = b.input(random_f32({2, 4, 15, 13}, 7, 5));
      ir::Value* p = b.node(OpKind::MaxPool, {b.conv(x, 4, c, {1, 1})},
                            {{"kernel_shape", attr_ints({3, 2})}, {"strides", attr_ints({2, 1})},
                             {"pads", attr_ints({2, 1, 1, 0})}, {"ceil_mode", attr_int(1)}});
      b.output(b.conv(b.node(OpKind::Relu, {p}), c, 3, {1, 1}));
      EXPECT_EQ(check(b, false), 1u);
    }
    for (auto pool_chain : {pool_chain_1d, pool_chain_3d}) {
      Builder b;
      pool_chain(b);
      EXPECT_EQ(check(b, false), 1u);
    }
    for (auto [cin, cout] : {std::pair<int64_t, int64_t>{1, 16}, {3, 16}, {4, 8}, {1, 24}}) {
      Builder b;
      ir::Value* x = b.input(random_f32({3, cin, 13, 11}, 5, 23));
      ir::Value* a = b.node(OpKind::Relu, {b.conv(x, cin, cout, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}})});
      ir::Value* p = b.node(OpKind::MaxPool, {a}, {{"kernel_shape", attr_ints({2, 2})}, {"strides", attr_ints({2, 2})}});
      b.output(b.node(OpKind::Relu, {b.conv(p, cout, 24, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}})}));
      EXPECT_EQ(check(b, false), 1u);
      EXPECT_EQ(check(b, false, 2), 1u);
    }
    {
      Builder b;  // [2, 16, 1, 1] out: one position (stored alike in every layout)
      ir::Value* x = b.input(random_f32({2, 8, 5, 5}, 7, 0));
      b.output(b.conv(b.node(OpKind::Relu, {b.conv(x, 8, 16, {3, 3})}), 16, 16, {3, 3}));
      EXPECT_EQ(check(b, false), 1u);
    }
    {
      Builder b;  // the skip is the chain's input: the Add reads it in the chain's layout
      ir::Value* x = b.input(random_f32({2, 16, 9, 9}, 9, 0));
      ir::Value* h = b.node(OpKind::Relu, {b.conv(x, 16, 16, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}})});
      b.output(b.node(OpKind::Add, {b.conv(h, 16, 16, {3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}}), x}));
      const Tensor x_before = b.feeds[0].clone();
      EXPECT_EQ(check(b, false), 1u);
      EXPECT_EQ(std::memcmp(b.feeds[0].raw_data(), x_before.raw_data(), x_before.nbytes()), 0);
    }
    if (support::usable_cores() >= 2)
      for (int64_t n : {4, 9}) {
        Builder b;
        small_images_net(b, n);
        const uint64_t before = interp::conv_chain_image_splits();
        EXPECT_EQ(check(b, false, 2), 1u);
        EXPECT_EQ(interp::conv_chain_image_splits() - before, 4u);
      }
  }
  interp::set_conv_chain_layout_for_testing(std::nullopt);
  support::override_foreign_busy_cores(-1);
}

}  // namespace
}  // namespace tierjit::testing
