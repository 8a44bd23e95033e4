// Tier 0's small-batch LSTM (interp/kernels/lstm_small.h) against tier 0's reference path
// (rnn.cc with set_rnn_dnnl_enabled(false)) and a double-precision loop: sequence lengths,
// batches, hidden and input sizes that are not multiples of the 16-lane blocks, directions,
// layouts, initial states given and absent, bias absent, constant and fed weights, NaN / Inf,
// outputs not wanted, the AVX2 version; which LSTMs it takes; its sigmoid / tanh accuracy.
// Tolerance against both: rtol 1e-5, atol 1e-5, as rnn_dnnl_test.cc's for oneDNN (each gate is a
// float32 sum of I + H products whose rounding differs between the paths; the bias is summed
// first, Wb + Rb; sigmoid / tanh within 4 ulp), with weights of PyTorch's initialization scale
// (lstm_small's), where the recurrence contracts: the largest differences seen here are ~2e-6
// against double. With larger weights it amplifies rounding over the steps, the reference's as
// much as lstm_small's (AmplifyingRecurrenceNoWorseThanReference).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "interp/executor.h"
#include "interp/kernels/lstm_small.h"
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

struct Case {
  int64_t S = 3, N = 2, I = 4, H = 5;
  std::string direction = "forward";
  bool layout1 = false, bias = true, peep = false, h0 = false, c0 = false, constants = false;
  bool outputs[3] = {true, true, true};
  uint32_t seed = 1;
  float scale = 0;  // W, R, B uniform in +-scale; 0: 1 / sqrt(H), PyTorch's LSTM initialization
  int threads = 1;
};

int64_t dirs(const Case& c) { return c.direction == "bidirectional" ? 2 : 1; }

std::string describe(const Case& c) {
  return fmt::format("S={} N={} I={} H={} {} layout{} bias={} peep={} h0={} c0={} constants={}",
                     c.S, c.N, c.I, c.H, c.direction, c.layout1 ? 1 : 0, c.bias, c.peep, c.h0,
                     c.c0, c.constants);
}

// X, W, R, B, sequence_lens, initial_h, initial_c, P (undefined Tensors where absent).
std::vector<Tensor> inputs(const Case& c) {
  const int64_t D = dirs(c), G = 4 * c.H;
  const uint32_t k = c.seed * 16;
  const float ws = c.scale > 0 ? c.scale : 1.f / std::sqrt(static_cast<float>(c.H));
  const Shape state = c.layout1 ? Shape{c.N, D, c.H} : Shape{D, c.N, c.H};
  auto f = [](Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), std::move(v)); };
  return {f(c.layout1 ? Shape{c.N, c.S, c.I} : Shape{c.S, c.N, c.I}, pseudo(c.S * c.N * c.I, k + 1, 1.5f)),
          f({D, G, c.I}, pseudo(D * G * c.I, k + 2, ws)),
          f({D, G, c.H}, pseudo(D * G * c.H, k + 3, ws)),
          c.bias ? f({D, 2 * G}, pseudo(D * 2 * G, k + 4, ws)) : Tensor(),
          Tensor(),
          c.h0 ? f(state, pseudo(D * c.N * c.H, k + 6)) : Tensor(),
          c.c0 ? f(state, pseudo(D * c.N * c.H, k + 7, 1.2f)) : Tensor(),
          c.peep ? f({D, 3 * c.H}, pseudo(D * 3 * c.H, k + 8)) : Tensor()};
}

// Runs one LSTM node on tier 0; `fast` false runs the reference path (rnn.cc).
Expected<std::vector<Tensor>> run_lstm(const Case& c, const std::vector<Tensor>& ins, bool fast) {
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
  for (int i = 0; i < 3; ++i) {
    if (!c.outputs[i]) { outs.push_back(nullptr); continue; }
    outs.push_back(g.add_value("out" + std::to_string(i)));
    g.outputs().push_back(outs.back());
  }
  ir::Node* n = g.add_node(ir::OpKind::LSTM, vals, outs, "lstm");
  n->set_opset(14);
  n->set_attr("hidden_size", attr_int(c.H));
  n->set_attr("direction", attr_string(c.direction));
  if (c.layout1) n->set_attr("layout", attr_int(1));
  interp::ExecOptions options;
  options.intra_op_threads = c.threads;
  interp::nn::set_rnn_dnnl_enabled(fast);
  auto out = interp::run_graph(g, feeds, options);
  interp::nn::set_rnn_dnnl_enabled(true);
  return out;
}

// The ONNX LSTM in double (default activations), outputs in the case's layout.
std::vector<std::vector<double>> lstm_double(const Case& c, const std::vector<Tensor>& ins) {
  const int64_t S = c.S, N = c.N, I = c.I, H = c.H, D = dirs(c);
  const float* x = ins[0].data<float>();
  const float* w = ins[1].data<float>();
  const float* r = ins[2].data<float>();
  const float* b = c.bias ? ins[3].data<float>() : nullptr;
  const float* h0 = c.h0 ? ins[5].data<float>() : nullptr;
  const float* c0 = c.c0 ? ins[6].data<float>() : nullptr;
  std::vector<double> y(S * D * N * H), yh(D * N * H), yc(D * N * H);
  auto xi = [&](int64_t t, int64_t n, int64_t k) { return x[(c.layout1 ? n * S + t : t * N + n) * I + k]; };
  auto st = [&](int64_t d, int64_t n) { return (c.layout1 ? n * D + d : d * N + n) * H; };
  auto yi = [&](int64_t t, int64_t d, int64_t n) { return (c.layout1 ? (n * S + t) * D + d : (t * D + d) * N + n) * H; };
  auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
  for (int64_t d = 0; d < D; ++d)
    for (int64_t n = 0; n < N; ++n) {
      std::vector<double> h(H), cs(H), gate(4 * H);
      for (int64_t j = 0; j < H; ++j) {
        h[j] = h0 ? h0[st(d, n) + j] : 0;
        cs[j] = c0 ? c0[st(d, n) + j] : 0;
      }
      for (int64_t step = 0; step < S; ++step) {
        const int64_t t = d == 1 || c.direction == "reverse" ? S - 1 - step : step;
        for (int64_t gj = 0; gj < 4 * H; ++gj) {
          double v = b ? double(b[d * 8 * H + gj]) + b[d * 8 * H + 4 * H + gj] : 0;
          for (int64_t k = 0; k < I; ++k) v += double(xi(t, n, k)) * w[(d * 4 * H + gj) * I + k];
          for (int64_t k = 0; k < H; ++k) v += h[k] * r[(d * 4 * H + gj) * H + k];
          gate[gj] = v;
        }
        for (int64_t j = 0; j < H; ++j) {  // gates i, o, f, c
          cs[j] = sig(gate[2 * H + j]) * cs[j] + sig(gate[j]) * std::tanh(gate[3 * H + j]);
          h[j] = sig(gate[H + j]) * std::tanh(cs[j]);
          y[yi(t, d, n) + j] = h[j];
        }
      }
      for (int64_t j = 0; j < H; ++j) {
        yh[st(d, n) + j] = h[j];
        yc[st(d, n) + j] = cs[j];
      }
    }
  return {y, yh, yc};
}

Tensor to_tensor(const std::vector<double>& v, const Shape& s) {
  return Tensor::from_vector<float>(s, std::vector<float>(v.begin(), v.end()));
}

// Runs `c` on the fast path (expecting lstm_small to run iff `want_small`), the reference path
// and in double; all within the tolerance.
void compare(const Case& c, bool want_small = true) {
  const std::vector<Tensor> ins = inputs(c);
  const uint64_t before = interp::nn::lstm_small_runs();
  auto fast = run_lstm(c, ins, true);
  ASSERT_TRUE(fast.ok()) << fast.status().message();
  EXPECT_EQ(interp::nn::lstm_small_runs() - before, want_small ? 1u : 0u);
  auto ref = run_lstm(c, ins, false);
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  EXPECT_EQ(interp::nn::lstm_small_runs() - before, want_small ? 1u : 0u);
  ASSERT_EQ(fast->size(), ref->size());
  const std::vector<std::vector<double>> dbl = c.peep ? std::vector<std::vector<double>>{} : lstm_double(c, ins);
  size_t wanted = 0;
  for (int i = 0; i < 3; ++i) {
    if (!c.outputs[i]) continue;
    SCOPED_TRACE("output " + std::to_string(i));
    const Tensor& got = (*fast)[wanted];
    expect_tensor_near(got, (*ref)[wanted], kRtol, kAtol);
    if (!dbl.empty()) expect_tensor_near(got, to_tensor(dbl[i], got.shape()), kRtol, kAtol);
    ++wanted;
  }
}

TEST(LstmSmall, MatchesReferenceAndDoubleAcrossSizes) {
  int variant = 0;
  for (int64_t S : {1, 2, 7, 33})
    for (int64_t N : {1, 2, 3, 8, 13})
      for (int64_t H : {1, 3, 16, 128})
        for (int64_t I : {1, 5, 64}) {
          Case c;
          c.S = S; c.N = N; c.H = H; c.I = I;
          // Cycle the options so that every one meets every size class.
          const int v = variant++;
          c.direction = v % 3 == 0 ? "forward" : v % 3 == 1 ? "reverse" : "bidirectional";
          c.layout1 = v % 2 == 1;
          c.bias = v % 4 != 3;
          c.h0 = v % 5 >= 2;
          c.c0 = v % 5 >= 3 || v % 7 == 0;
          c.constants = v % 3 != 2 || v % 4 == 0;
          c.seed = static_cast<uint32_t>(v + 1);
          SCOPED_TRACE(describe(c));
          compare(c);
        }
}

// Weights of +-0.6 at H = 128 make the recurrence amplify rounding differences over the steps:
// at S = 33 the reference path and oneDNN's RNN are up to 6e-5 away from double (which of them
// is closer varies with N and layout; lstm_small 8e-5). lstm_small must stay within 3x the
// larger of their distances from double (+ 1e-6).
TEST(LstmSmall, AmplifyingRecurrenceNoWorseThanReference) {
  for (int64_t N : {1, 3, 8})
    for (bool layout1 : {false, true}) {
      Case c;
      c.S = 33; c.N = N; c.I = 1; c.H = 128; c.scale = 0.6f; c.layout1 = layout1;
      c.h0 = c.c0 = true; c.constants = true;
      SCOPED_TRACE(describe(c));
      const std::vector<Tensor> ins = inputs(c);
      auto fast = run_lstm(c, ins, true);
      auto ref = run_lstm(c, ins, false);
      interp::nn::set_lstm_small_enabled(false);
      auto dnnl = run_lstm(c, ins, true);
      interp::nn::set_lstm_small_enabled(true);
      ASSERT_TRUE(fast.ok() && ref.ok() && dnnl.ok());
      const std::vector<std::vector<double>> dbl = lstm_double(c, ins);
      for (size_t i = 0; i < 3; ++i) {
        double fast_err = 0, ref_err = 0;
        for (int64_t e = 0; e < (*fast)[i].numel(); ++e) {
          fast_err = std::max(fast_err, std::fabs((*fast)[i].data<float>()[e] - dbl[i][e]));
          ref_err = std::max({ref_err, std::fabs((*ref)[i].data<float>()[e] - dbl[i][e]),
                              std::fabs((*dnnl)[i].data<float>()[e] - dbl[i][e])});
        }
        EXPECT_LE(fast_err, 3 * ref_err + 1e-6) << "output " << i;
      }
    }
}

TEST(LstmSmall, EveryDirectionLayoutAndStateOption) {
  for (const char* dir : {"forward", "reverse", "bidirectional"})
    for (bool layout1 : {false, true})
      for (int states = 0; states < 4; ++states)
        for (bool bias : {false, true}) {
          Case c;
          c.S = 5; c.N = 3; c.I = 7; c.H = 19;
          c.direction = dir; c.layout1 = layout1; c.bias = bias;
          c.h0 = states & 1; c.c0 = states & 2;
          c.constants = states == 1;
          c.seed = static_cast<uint32_t>(states + 4 * bias + 8 * layout1 + 100);
          SCOPED_TRACE(describe(c));
          compare(c);
        }
}

TEST(LstmSmall, ModelGeometry) {  // lstm_small: I 64, H 128, zero initial states, constant weights
  for (int64_t N : {1, 8, 16}) {
    Case c;
    c.S = 32; c.N = N; c.I = 64; c.H = 128; c.h0 = c.c0 = true; c.constants = true;
    SCOPED_TRACE(describe(c));
    compare(c);
  }
}

// The baseline AVX2 version (the same operations on two 8-lane halves) gives the AVX-512 bits.
TEST(LstmSmall, Avx2VersionGivesTheSameBits) {
  for (int64_t H : {5, 16, 37}) {
    Case c;
    c.S = 9; c.N = 5; c.I = 11; c.H = H; c.direction = "bidirectional"; c.h0 = c.c0 = true;
    const std::vector<Tensor> ins = inputs(c);
    auto wide = run_lstm(c, ins, true);
    interp::nn::set_lstm_small_force_avx2(true);
    auto narrow = run_lstm(c, ins, true);
    interp::nn::set_lstm_small_force_avx2(false);
    ASSERT_TRUE(wide.ok() && narrow.ok());
    for (size_t i = 0; i < 3; ++i) expect_tensor_near((*narrow)[i], (*wide)[i], 0, 0);
    SCOPED_TRACE("AVX2 against the reference");
    interp::nn::set_lstm_small_force_avx2(true);
    compare(c);
    interp::nn::set_lstm_small_force_avx2(false);
  }
}

// Two threads (a direction each, half of the batch rows each, or half of the hidden blocks each
// with a wait per step) give the bits of one: every output column is computed by the same
// operations either way.
TEST(LstmSmall, TwoThreadsMatchOneBitForBit) {
  support::override_foreign_busy_cores(0);
  struct Shape4 { int64_t S, N, I, H; const char* dir; bool split; };
  const Shape4 shapes[] = {{32, 1, 64, 128, "forward", true}, {7, 3, 5, 64, "reverse", true},
                           {9, 2, 7, 100, "forward", true},   {5, 8, 3, 37, "forward", true},
                           // half of the batch rows per thread (N >= 6), odd and even halves
                           {4, 6, 64, 128, "forward", true},  {9, 13, 5, 40, "reverse", true},
                           {3, 16, 64, 128, "forward", true},
                           {6, 1, 4, 21, "forward", false},  // a step < 2^15 multiply-adds
                           {33, 2, 64, 128, "bidirectional", true},
                           {4, 3, 5, 9, "bidirectional", false}};  // < 2^16 multiply-adds
  for (const Shape4& sh : shapes)
    for (bool layout1 : {false, true}) {
      Case c;
      c.S = sh.S; c.N = sh.N; c.I = sh.I; c.H = sh.H; c.direction = sh.dir; c.layout1 = layout1;
      c.h0 = c.c0 = true; c.constants = true;
      SCOPED_TRACE(describe(c));
      const std::vector<Tensor> ins = inputs(c);
      auto one = run_lstm(c, ins, true);
      const uint64_t before = interp::nn::lstm_small_two_thread_runs();
      c.threads = 2;
      auto two = run_lstm(c, ins, true);
      ASSERT_TRUE(one.ok() && two.ok());
      EXPECT_EQ(interp::nn::lstm_small_two_thread_runs() - before, sh.split ? 1u : 0u);
      for (size_t i = 0; i < 3; ++i) expect_tensor_near((*two)[i], (*one)[i], 0, 0);
      compare(c);
    }
  support::override_foreign_busy_cores(-1);
}

// The packing of constant weights nobody else holds any more (their model is gone) is dropped
// at the next packing: a service that loads and drops models keeps only the live ones'.
TEST(LstmSmall, PackingsOfDroppedWeightsAreFreed) {
  Case c;
  c.S = 2; c.N = 1; c.I = 64; c.H = 256; c.constants = true;
  size_t one = 0;
  for (uint32_t k = 0; k < 30; ++k) {
    c.seed = 500 + k;
    const std::vector<Tensor> ins = inputs(c);  // new weight tensors, dropped after the call
    ASSERT_TRUE(run_lstm(c, ins, true).ok());
    if (k == 0) one = interp::nn::lstm_small_packed_bytes();
    EXPECT_EQ(interp::nn::lstm_small_packed_bytes(), one) << "after model " << k;
  }
  EXPECT_GT(one, size_t{0});
}

// NaN / Inf in X: the same outputs turn NaN (and the same stay finite) as on the reference path.
TEST(LstmSmall, NanAndInfInInput) {
  for (const char* dir : {"forward", "reverse", "bidirectional"})
    for (bool layout1 : {false, true}) {
      Case c;
      c.S = 4; c.N = 3; c.I = 5; c.H = 18; c.direction = dir; c.layout1 = layout1;
      std::vector<Tensor> ins = inputs(c);
      float* x = ins[0].data<float>();
      auto at = [&](int64_t t, int64_t n, int64_t k) { return (layout1 ? n * c.S + t : t * c.N + n) * c.I + k; };
      x[at(1, 0, 2)] = std::numeric_limits<float>::quiet_NaN();
      x[at(2, 2, 0)] = std::numeric_limits<float>::infinity();
      x[at(0, 1, 4)] = -std::numeric_limits<float>::infinity();
      const uint64_t before = interp::nn::lstm_small_runs();
      auto fast = run_lstm(c, ins, true);
      auto ref = run_lstm(c, ins, false);
      ASSERT_TRUE(fast.ok() && ref.ok());
      EXPECT_EQ(interp::nn::lstm_small_runs() - before, 1u);
      int nans = 0;
      for (int64_t i = 0; i < (*ref)[0].numel(); ++i) nans += std::isnan((*ref)[0].data<float>()[i]);
      EXPECT_GT(nans, 0) << dir;
      for (size_t i = 0; i < 3; ++i) expect_tensor_near((*fast)[i], (*ref)[i], kRtol, kAtol);
    }
}

TEST(LstmSmall, SomeOutputsOnly) {
  for (int mask = 1; mask < 7; ++mask)
    for (bool layout1 : {false, true}) {
      Case c;
      c.S = 3; c.N = 2; c.I = 2; c.H = 21; c.direction = "bidirectional"; c.layout1 = layout1; c.h0 = true;
      for (int i = 0; i < 3; ++i) c.outputs[i] = (mask >> i) & 1;
      SCOPED_TRACE(describe(c) + " mask " + std::to_string(mask));
      compare(c);
    }
}

// Fed weights are read on every call; constant ones are packed once per tensor, and two
// constant weight sets of one shape do not mix; both give the same bits.
TEST(LstmSmall, WeightsFedOrConstant) {
  Case c;
  c.S = 3; c.N = 4; c.I = 6; c.H = 9; c.h0 = true;
  for (bool constants : {false, true}) {
    c.constants = constants;
    for (uint32_t seed : {3u, 4u, 3u}) {
      c.seed = seed;
      SCOPED_TRACE(describe(c) + " seed " + std::to_string(seed));
      compare(c);
    }
  }
  c.constants = false;
  const std::vector<Tensor> ins = inputs(c);
  auto fed = run_lstm(c, ins, true);
  c.constants = true;
  auto cst = run_lstm(c, ins, true);
  ASSERT_TRUE(fed.ok() && cst.ok());
  for (size_t i = 0; i < 3; ++i) expect_tensor_near((*fed)[i], (*cst)[i], 0, 0);
}

// Peepholes and batches / hidden sizes above the limits go to oneDNN (and still match).
TEST(LstmSmall, OtherLstmsStayOnOneDnn) {
  { Case c; c.peep = true; c.h0 = c.c0 = true; SCOPED_TRACE("peepholes"); compare(c, false); }
  {
    Case c; c.N = interp::nn::kLstmSmallMaxBatch + 1; c.S = 4; c.H = 17;
    SCOPED_TRACE("batch 17"); compare(c, false);
  }
  {
    Case c; c.H = interp::nn::kLstmSmallMaxHidden + 1; c.S = 2; c.N = 1;
    SCOPED_TRACE("hidden 257"); compare(c, false);
  }
  interp::nn::set_lstm_small_enabled(false);
  { Case c; SCOPED_TRACE("disabled"); compare(c, false); }
  interp::nn::set_lstm_small_enabled(true);
}

// Units in the last place between a float and the double it approximates (rounded to float).
double ulps(float got, double want) {
  const float w = static_cast<float>(want);
  if (got == w) return 0;
  const double ulp = std::nextafter(std::fabs(w), std::numeric_limits<float>::infinity()) - std::fabs(w);
  return std::fabs(static_cast<double>(got) - want) / ulp;
}

// sigmoid within 3 ulp, tanh within 4 ulp of double on [-20, 20] (2^20 points, plus tiny
// magnitudes down to subnormals); special values; both versions give the same bits.
TEST(LstmSmall, ActivationAccuracy) {
  std::vector<float> x;
  for (int i = 0; i <= (1 << 20); ++i) x.push_back(-20.f + 40.f * static_cast<float>(i) / (1 << 20));
  for (float v = 1e-30f; v < 1.f; v *= 1.37f) { x.push_back(v); x.push_back(-v); }
  x.push_back(std::numeric_limits<float>::denorm_min());
  x.push_back(-87.f); x.push_back(-103.f); x.push_back(-104.5f);  // sigmoid's subnormal results
  x.push_back(9.5f); x.push_back(-9.1f);
  const size_t n = x.size();
  std::vector<float> s(n), t(n), s2(n), t2(n);
  interp::nn::lstm_small_sigmoid(x.data(), s.data(), static_cast<int64_t>(n));
  interp::nn::lstm_small_tanh(x.data(), t.data(), static_cast<int64_t>(n));
  interp::nn::lstm_small_sigmoid(x.data(), s2.data(), static_cast<int64_t>(n), true);
  interp::nn::lstm_small_tanh(x.data(), t2.data(), static_cast<int64_t>(n), true);
  double max_s = 0, max_t = 0;
  for (size_t i = 0; i < n; ++i) {
    const double xd = x[i];
    max_s = std::max(max_s, ulps(s[i], 1 / (1 + std::exp(-xd))));
    max_t = std::max(max_t, ulps(t[i], std::tanh(xd)));
    ASSERT_EQ(std::memcmp(&s[i], &s2[i], 4), 0) << x[i];
    ASSERT_EQ(std::memcmp(&t[i], &t2[i], 4), 0) << x[i];
  }
  EXPECT_LE(max_s, 3.0);
  EXPECT_LE(max_t, 4.0);
  std::printf("max error: sigmoid %.2f ulp, tanh %.2f ulp\n", max_s, max_t);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float sp[5] = {nan, inf, -inf, 0.f, -0.f};
  float so[5], to[5];
  interp::nn::lstm_small_sigmoid(sp, so, 5);
  interp::nn::lstm_small_tanh(sp, to, 5);
  EXPECT_TRUE(std::isnan(so[0]));
  EXPECT_TRUE(std::isnan(to[0]));
  EXPECT_EQ(so[1], 1.f);
  EXPECT_EQ(so[2], 0.f);
  EXPECT_EQ(so[3], 0.5f);
  EXPECT_EQ(so[4], 0.5f);
  EXPECT_EQ(to[1], 1.f);
  EXPECT_EQ(to[2], -1.f);
  EXPECT_EQ(to[3], 0.f);
  EXPECT_TRUE(std::signbit(to[4]));
}

}  // namespace
}  // namespace tierjit::testing
