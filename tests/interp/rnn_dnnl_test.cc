// Tier-0 LSTM and GRU on oneDNN's RNN primitives (interp/kernels/rnn_dnnl.h) against tier 0's
// reference path (the same kernel with set_rnn_dnnl_enabled(false)) and a hand-computed cell:
// directions, layouts, S = 1, N = 1, odd N / H, initial states, peepholes, constant weights
// (cached) and fed ones, NaN / Inf inputs, threads; and the cases that must stay on the reference
// path (clip, input_forget, other activations, short sequence_lens, float64, S = 0).
// Tolerance against the reference: rtol 1e-5, atol 1e-5. oneDNN sums the bias once (Wb + Rb)
// after both GEMMs and uses its own sigmoid / tanh; each gate is a float32 sum of I + H products
// summed in another order, so differences grow with I + H: at most 2.4e-7 for I + H <= 40 and
// 1.3e-6 (LSTM) / 2.5e-6 (GRU) for I + H = 192 (lstm_small's sizes) in these tests (|h| < 1,
// |c| < ~3).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "interp/executor.h"
#include "interp/kernels/rnn_dnnl.h"
#include "node_runner.h"
#include "support/cpu_load.h"

namespace tierjit::testing {
namespace {

constexpr double kRtol = 1e-5, kAtol = 1e-5;

std::vector<float> pseudo(size_t n, uint32_t seed, float scale = 0.6f) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    v[i] = (static_cast<float>(s >> 8) / static_cast<float>(1u << 24) * 2.f - 1.f) * scale;
  }
  return v;
}

struct Lstm {  // an LSTM, or a GRU when `gru`
  bool gru = false, lbr = false;  // lbr: GRU's linear_before_reset
  int64_t S = 3, N = 2, I = 4, H = 5;
  std::string direction = "forward";
  bool layout1 = false, bias = true, peep = false, h0 = false, c0 = false;
  bool constants = false;  // W, R, B, P as graph initializers (cached oneDNN copies)
  DType dtype = DType::kFloat32;
  std::vector<int32_t> lens;  // sequence_lens when non-empty
  float clip = 0;
  bool input_forget = false;
  std::vector<std::string> activations;
  int threads = 1;
  uint32_t seed = 1;
  bool outputs[3] = {true, true, true};  // Y, Y_h, Y_c wanted
};

int64_t dirs(const Lstm& c) { return c.direction == "bidirectional" ? 2 : 1; }

Tensor make(DType dt, Shape s, const std::vector<float>& v) {
  if (dt == DType::kFloat64) return Tensor::from_vector<double>(std::move(s), std::vector<double>(v.begin(), v.end()));
  return Tensor::from_vector<float>(std::move(s), v);
}

// The LSTM's inputs in ONNX order (undefined Tensors for omitted ones).
std::vector<Tensor> inputs(const Lstm& c) {
  const int64_t D = dirs(c), G = (c.gru ? 3 : 4) * c.H;
  const uint32_t k = c.seed * 16;
  const Shape state = c.layout1 ? Shape{c.N, D, c.H} : Shape{D, c.N, c.H};
  std::vector<Tensor> v = {make(c.dtype, c.layout1 ? Shape{c.N, c.S, c.I} : Shape{c.S, c.N, c.I}, pseudo(c.S * c.N * c.I, k + 1, 1.5f)),
          make(c.dtype, {D, G, c.I}, pseudo(D * G * c.I, k + 2)),
          make(c.dtype, {D, G, c.H}, pseudo(D * G * c.H, k + 3)),
          c.bias ? make(c.dtype, {D, 2 * G}, pseudo(D * 2 * G, k + 4)) : Tensor(),
          c.lens.empty() ? Tensor() : Tensor::from_vector<int32_t>({c.N}, c.lens),
          c.h0 ? make(c.dtype, state, pseudo(D * c.N * c.H, k + 6)) : Tensor(),
          c.c0 ? make(c.dtype, state, pseudo(D * c.N * c.H, k + 7, 1.2f)) : Tensor(),
          c.peep ? make(c.dtype, {D, 3 * c.H}, pseudo(D * 3 * c.H, k + 8)) : Tensor()};
  if (c.gru) v.resize(6);  // GRU: no initial_c, no P
  return v;
}

// Runs one LSTM node on tier 0 with `ins` (W, R, B, P graph constants when c.constants).
Expected<std::vector<Tensor>> run_lstm(const Lstm& c, const std::vector<Tensor>& ins, bool dnnl) {
  ir::Graph g("lstm");
  std::vector<ir::Value*> vals;
  std::vector<Tensor> feeds;
  for (size_t i = 0; i < ins.size(); ++i) {
    if (!ins[i].defined()) { vals.push_back(nullptr); continue; }
    ir::Value* v = g.add_value("in" + std::to_string(i), {ins[i].dtype(), std::nullopt});
    if (c.constants && (i == 1 || i == 2 || i == 3 || i == 7)) {
      v->set_constant(ins[i]);
    } else {
      g.inputs().push_back(v);
      feeds.push_back(ins[i]);
    }
    vals.push_back(v);
  }
  std::vector<ir::Value*> outs;
  for (int i = 0; i < (c.gru ? 2 : 3); ++i) {
    if (!c.outputs[i]) { outs.push_back(nullptr); continue; }
    outs.push_back(g.add_value("out" + std::to_string(i)));
    g.outputs().push_back(outs.back());
  }
  ir::Node* n = g.add_node(c.gru ? ir::OpKind::GRU : ir::OpKind::LSTM, vals, outs, "rnn");
  if (c.lbr) n->set_attr("linear_before_reset", attr_int(1));
  n->set_opset(14);
  n->set_attr("hidden_size", attr_int(c.H));
  n->set_attr("direction", attr_string(c.direction));
  if (c.layout1) n->set_attr("layout", attr_int(1));
  if (c.clip > 0) n->set_attr("clip", attr_float(c.clip));
  if (c.input_forget) n->set_attr("input_forget", attr_int(1));
  if (!c.activations.empty()) {
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kStrings;
    a.strings = c.activations;
    n->set_attr("activations", a);
  }
  interp::ExecOptions options;
  options.intra_op_threads = c.threads;
  interp::nn::set_rnn_dnnl_enabled(dnnl);
  auto out = interp::run_graph(g, feeds, options);
  interp::nn::set_rnn_dnnl_enabled(true);
  return out;
}

// Runs `c` on both paths; expects the oneDNN path to have run iff `want_dnnl` and the outputs to
// agree (bit for bit when the reference path ran both times).
void compare(const Lstm& c, bool want_dnnl = true) {
  const std::vector<Tensor> ins = inputs(c);
  const uint64_t before = interp::nn::rnn_dnnl_runs();
  auto fast = run_lstm(c, ins, true);
  ASSERT_TRUE(fast.ok()) << fast.status().message();
  EXPECT_EQ(interp::nn::rnn_dnnl_runs() - before, want_dnnl ? 1u : 0u);
  auto ref = run_lstm(c, ins, false);
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  EXPECT_EQ(interp::nn::rnn_dnnl_runs() - before, want_dnnl ? 1u : 0u);
  ASSERT_EQ(fast->size(), ref->size());
  for (size_t i = 0; i < fast->size(); ++i) {
    SCOPED_TRACE("output " + std::to_string(i));
    if (want_dnnl) expect_tensor_near((*fast)[i], (*ref)[i], kRtol, kAtol);
    else expect_tensor_near((*fast)[i], (*ref)[i], 0, 0);
  }
}

std::string describe(const Lstm& c) {
  return fmt::format("{} S={} N={} I={} H={} {} layout{} bias={} peep={} h0={} c0={} constants={}",
                     c.gru ? (c.lbr ? "GRU lbr" : "GRU") : "LSTM", c.S,
                     c.N, c.I, c.H, c.direction, c.layout1 ? 1 : 0, c.bias, c.peep, c.h0, c.c0,
                     c.constants);
}

TEST(RnnDnnl, MatchesReferenceAcrossGeometries) {
  const int64_t shapes[][4] = {{1, 1, 1, 1}, {1, 1, 4, 3}, {5, 3, 7, 17}, {4, 16, 5, 32},
                               {3, 7, 64, 128}, {2, 1, 3, 3}};
  int variant = 0;
  for (const char* dir : {"forward", "reverse", "bidirectional"})
    for (bool layout1 : {false, true})
      for (const auto& sh : shapes) {
        Lstm c;
        c.S = sh[0]; c.N = sh[1]; c.I = sh[2]; c.H = sh[3];
        c.direction = dir;
        c.layout1 = layout1;
        // Cycle the optional inputs so every combination meets every direction and layout.
        const int v = variant++;
        c.bias = v % 4 != 3;
        c.peep = v % 3 == 1;
        c.h0 = v % 5 >= 2;
        c.c0 = v % 5 >= 3 || v % 7 == 0;
        c.constants = v % 3 != 1;
        c.seed = static_cast<uint32_t>(v + 1);
        SCOPED_TRACE(describe(c));
        compare(c);
      }
}

// Batch-1 LSTMs in every direction and layout against the reference (round: other values).
void batch_one_cases(int round) {
  for (const char* dir : {"forward", "reverse", "bidirectional"})
    for (bool layout1 : {false, true}) {
      Lstm c;
      c.S = 6; c.N = 1; c.I = 5; c.H = 19;
      c.direction = dir;
      c.layout1 = layout1;
      c.h0 = c.c0 = layout1;
      c.seed = static_cast<uint32_t>(round * 10 + (layout1 ? 1 : 2));
      SCOPED_TRACE(describe(c) + " round " + std::to_string(round));
      compare(c);
    }
}

// Batch 1 runs oneDNN's brgemm implementation for the process's first 512 batch-1 calls, then
// its GEMM-based one (rnn_dnnl.cc, kGemmRnnAfterCalls): both against the reference, and the
// switch itself after the default number of calls.
TEST(RnnDnnl, BatchOneOnBothImplementations) {
  interp::nn::set_rnn_gemm_after_batch1_calls(UINT64_MAX);
  batch_one_cases(0);
  interp::nn::set_rnn_gemm_after_batch1_calls(0);
  batch_one_cases(1);
  // The default switch: 520 batch-1 calls reach it whatever ran before in this process.
  interp::nn::set_rnn_gemm_after_batch1_calls(512);
  Lstm tiny;
  tiny.S = 1; tiny.N = 1; tiny.I = 1; tiny.H = 1;
  const std::vector<Tensor> ins = inputs(tiny);
  for (int i = 0; i < 520; ++i) ASSERT_TRUE(run_lstm(tiny, ins, true).ok());
  batch_one_cases(2);  // past the switch
}

TEST(RnnDnnl, ModelShapeWithZeroStates) {  // lstm_small: I 64, H 128, zero initial states
  Lstm c;
  c.S = 32; c.N = 8; c.I = 64; c.H = 128; c.h0 = true; c.c0 = true; c.constants = true;
  compare(c);
}

TEST(RnnDnnl, PeepholesAndStatesEveryDirection) {
  for (const char* dir : {"forward", "reverse", "bidirectional"})
    for (bool layout1 : {false, true}) {
      Lstm c;
      c.S = 6; c.N = 5; c.I = 3; c.H = 17; c.direction = dir; c.layout1 = layout1;
      c.peep = c.h0 = c.c0 = true;
      SCOPED_TRACE(describe(c));
      compare(c);
    }
}

// One unit, one input, two steps, by the ONNX formulas (gate order i, o, f, c).
TEST(RnnDnnl, HandComputedCell) {
  Lstm c;
  c.S = 2; c.N = 1; c.I = 1; c.H = 1; c.bias = true; c.peep = true;
  const std::vector<float> x = {0.5f, -1.f}, w = {0.1f, 0.2f, 0.3f, 0.4f}, r = {-0.2f, 0.3f, 0.5f, -0.6f};
  const std::vector<float> b = {0.01f, 0.02f, 0.03f, 0.04f, 0.05f, 0.06f, 0.07f, 0.08f};
  const std::vector<float> p = {0.3f, -0.4f, 0.2f};  // i, o, f
  std::vector<Tensor> ins = {Tensor::from_vector<float>({2, 1, 1}, x), Tensor::from_vector<float>({1, 4, 1}, w),
                             Tensor::from_vector<float>({1, 4, 1}, r), Tensor::from_vector<float>({1, 8}, b),
                             Tensor(), Tensor(), Tensor(), Tensor::from_vector<float>({1, 3}, p)};
  auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
  double h = 0, cs = 0;
  std::vector<float> y;
  for (int t = 0; t < 2; ++t) {
    auto pre = [&](int g) { return x[t] * w[g] + h * r[g] + b[g] + b[4 + g]; };
    const double i = sig(pre(0) + p[0] * cs), f = sig(pre(2) + p[2] * cs), g = std::tanh(pre(3));
    cs = f * cs + i * g;
    const double o = sig(pre(1) + p[1] * cs);
    h = o * std::tanh(cs);
    y.push_back(static_cast<float>(h));
  }
  const uint64_t before = interp::nn::rnn_dnnl_runs();
  auto out = run_lstm(c, ins, true);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(interp::nn::rnn_dnnl_runs() - before, 1u);
  expect_tensor_near((*out)[0], Tensor::from_vector<float>({2, 1, 1, 1}, y), kRtol, kAtol);
  expect_tensor_near((*out)[1], Tensor::from_vector<float>({1, 1, 1}, {y[1]}), kRtol, kAtol);
  expect_tensor_near((*out)[2], Tensor::from_vector<float>({1, 1, 1}, {static_cast<float>(cs)}), kRtol, kAtol);
}

// NaN / Inf in X: the same outputs turn NaN (and the same stay finite) as on the reference path.
TEST(RnnDnnl, NanAndInfInInput) {
  for (const char* dir : {"forward", "reverse", "bidirectional"}) {
    Lstm c;
    c.S = 4; c.N = 3; c.I = 5; c.H = 6; c.direction = dir;
    std::vector<Tensor> ins = inputs(c);
    float* x = ins[0].data<float>();
    x[(1 * c.N + 0) * c.I + 2] = std::numeric_limits<float>::quiet_NaN();   // t 1, row 0
    x[(2 * c.N + 2) * c.I + 0] = std::numeric_limits<float>::infinity();    // t 2, row 2
    x[(0 * c.N + 1) * c.I + 4] = -std::numeric_limits<float>::infinity();   // t 0, row 1
    auto fast = run_lstm(c, ins, true);
    auto ref = run_lstm(c, ins, false);
    ASSERT_TRUE(fast.ok() && ref.ok());
    int nans = 0;
    for (int64_t i = 0; i < (*ref)[0].numel(); ++i) nans += std::isnan((*ref)[0].data<float>()[i]);
    EXPECT_GT(nans, 0) << dir;
    for (size_t i = 0; i < 3; ++i) expect_tensor_near((*fast)[i], (*ref)[i], kRtol, kAtol);
  }
}

// Fed (non-constant) weights are read on every call; constant ones are cached per tensor, and
// two constant weight sets of one shape do not mix.
TEST(RnnDnnl, WeightsFedOrConstant) {
  Lstm c;
  c.S = 3; c.N = 4; c.I = 6; c.H = 9; c.peep = true; c.h0 = true;
  for (bool constants : {false, true}) {
    c.constants = constants;
    for (uint32_t seed : {3u, 4u, 3u}) {
      c.seed = seed;
      SCOPED_TRACE(describe(c) + " seed " + std::to_string(seed));
      compare(c);
    }
  }
  // The same input values give the same bits whether the weights are constants or fed.
  c.constants = false;
  const std::vector<Tensor> ins = inputs(c);
  auto fed = run_lstm(c, ins, true);
  c.constants = true;
  auto cst = run_lstm(c, ins, true);
  ASSERT_TRUE(fed.ok() && cst.ok());
  for (size_t i = 0; i < 3; ++i) expect_tensor_near((*fed)[i], (*cst)[i], 0, 0);
}

// Two intra-op threads give the bits of one (oneDNN's RNN splits its GEMMs by rows and
// columns, not along the reduction), for both implementations it runs (batch 1 and more).
TEST(RnnDnnl, TwoThreadsMatchOneBitForBit) {
  support::override_foreign_busy_cores(0);
  interp::nn::set_rnn_gemm_after_batch1_calls(0);  // one implementation for both runs
  for (int v = 0; v < 8; ++v) {  // batch 1 runs oneDNN's GEMM-based implementation
    Lstm c;
    c.gru = v & 1;
    c.direction = v & 2 ? "bidirectional" : "forward";
    c.S = 7; c.N = v & 4 ? 1 : 16; c.I = 64; c.H = 128; c.h0 = true; c.c0 = !c.gru;
    SCOPED_TRACE(describe(c));
    const std::vector<Tensor> ins = inputs(c);
    auto one = run_lstm(c, ins, true);
    c.threads = 2;
    auto two = run_lstm(c, ins, true);
    ASSERT_TRUE(one.ok() && two.ok());
    for (size_t i = 0; i < one->size(); ++i) expect_tensor_near((*two)[i], (*one)[i], 0, 0);
  }
  interp::nn::set_rnn_gemm_after_batch1_calls(512);
  support::override_foreign_busy_cores(-1);
}

// Unwanted outputs are not written (oneDNN writes them to scratch buffers); the wanted ones agree.
TEST(RnnDnnl, SomeOutputsOnly) {
  for (int mask = 1; mask < 7; ++mask)
    for (bool layout1 : {false, true}) {
      Lstm c;
      c.S = 3; c.N = 4; c.I = 2; c.H = 5; c.direction = "bidirectional"; c.layout1 = layout1; c.h0 = true;
      for (int i = 0; i < 3; ++i) c.outputs[i] = (mask >> i) & 1;
      const std::vector<Tensor> ins = inputs(c);
      const uint64_t before = interp::nn::rnn_dnnl_runs();
      auto fast = run_lstm(c, ins, true);
      auto ref = run_lstm(c, ins, false);
      ASSERT_TRUE(fast.ok() && ref.ok()) << mask;
      EXPECT_EQ(interp::nn::rnn_dnnl_runs() - before, 1u);
      ASSERT_EQ(fast->size(), ref->size());
      for (size_t i = 0; i < fast->size(); ++i) expect_tensor_near((*fast)[i], (*ref)[i], kRtol, kAtol);
    }
}

// GRU (linear_before_reset 0 and 1: oneDNN's gru / lbr_gru) across directions, layouts, odd
// sizes, initial state, bias, constant weights; NaN input; the fallbacks.
TEST(RnnDnnl, GruMatchesReference) {
  const int64_t shapes[][4] = {{1, 1, 1, 1}, {5, 3, 7, 17}, {4, 16, 64, 128}, {2, 1, 3, 3}};
  int variant = 0;
  for (bool lbr : {false, true})
    for (const char* dir : {"forward", "reverse", "bidirectional"})
      for (bool layout1 : {false, true})
        for (const auto& sh : shapes) {
          Lstm c;
          c.gru = true; c.lbr = lbr;
          c.S = sh[0]; c.N = sh[1]; c.I = sh[2]; c.H = sh[3];
          c.direction = dir;
          c.layout1 = layout1;
          const int v = variant++;
          c.bias = v % 4 != 3;
          c.h0 = v % 3 != 0;
          c.constants = v % 5 < 3;
          c.seed = static_cast<uint32_t>(v + 50);
          SCOPED_TRACE(describe(c));
          compare(c);
        }
}

TEST(RnnDnnl, GruNanAndFallbacks) {
  Lstm base;
  base.gru = true; base.S = 4; base.N = 3; base.I = 5; base.H = 7; base.h0 = true;
  for (bool lbr : {false, true}) {
    Lstm c = base; c.lbr = lbr; c.direction = "bidirectional";
    std::vector<Tensor> ins = inputs(c);
    ins[0].data<float>()[(1 * c.N + 2) * c.I + 1] = std::numeric_limits<float>::quiet_NaN();
    auto fast = run_lstm(c, ins, true);
    auto ref = run_lstm(c, ins, false);
    ASSERT_TRUE(fast.ok() && ref.ok());
    for (size_t i = 0; i < 2; ++i) expect_tensor_near((*fast)[i], (*ref)[i], kRtol, kAtol);
  }
  { Lstm c = base; c.lens = {4, 1, 3}; SCOPED_TRACE("short sequence_lens"); compare(c, false); }
  { Lstm c = base; c.clip = 0.5f; SCOPED_TRACE("clip"); compare(c, false); }
  { Lstm c = base; c.activations = {"Sigmoid", "Relu"}; SCOPED_TRACE("activations"); compare(c, false); }
  { Lstm c = base; c.dtype = DType::kFloat64; SCOPED_TRACE("float64"); compare(c, false); }
  { Lstm c = base; c.lens = {4, 4, 4}; c.lbr = true; SCOPED_TRACE("full sequence_lens"); compare(c, true); }
}

TEST(RnnDnnl, SequenceLensAllFullUseOneDnn) {
  Lstm c;
  c.S = 4; c.N = 3; c.direction = "bidirectional"; c.lens = {4, 4, 4};
  compare(c, true);
}

TEST(RnnDnnl, FallbackCasesStayOnReferencePath) {
  Lstm base;
  base.S = 4; base.N = 3; base.I = 5; base.H = 7; base.h0 = base.c0 = true;
  {
    Lstm c = base; c.lens = {4, 2, 0};
    SCOPED_TRACE("short sequence_lens"); compare(c, false);
  }
  {
    Lstm c = base; c.clip = 0.5f;
    SCOPED_TRACE("clip"); compare(c, false);
  }
  {
    Lstm c = base; c.input_forget = true;
    SCOPED_TRACE("input_forget"); compare(c, false);
  }
  {
    Lstm c = base; c.activations = {"HardSigmoid", "Tanh", "Tanh"};
    SCOPED_TRACE("activations"); compare(c, false);
  }
  {
    Lstm c = base; c.direction = "bidirectional"; c.activations = {"Sigmoid", "Tanh", "Tanh", "Sigmoid", "Tanh", "Relu"};
    SCOPED_TRACE("activations of the second direction"); compare(c, false);
  }
  {
    Lstm c = base; c.activations = {"sigmoid", "TANH", "Tanh"};  // the defaults, spelled out
    SCOPED_TRACE("default activations"); compare(c, true);
  }
  {
    Lstm c = base; c.dtype = DType::kFloat64;
    SCOPED_TRACE("float64"); compare(c, false);
  }
  {
    Lstm c = base; c.S = 0;
    SCOPED_TRACE("S = 0"); compare(c, false);
  }
  {
    Lstm c = base; c.N = 0; c.h0 = c.c0 = false;
    SCOPED_TRACE("N = 0"); compare(c, false);
  }
}

}  // namespace
}  // namespace tierjit::testing
