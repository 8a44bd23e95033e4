// Tier-0 LSTM / GRU / RNN against a straightforward per-element loop implementation written
// here (forward, reverse, bidirectional, peepholes, initial states, sequence_lens, layout 1,
// GRU linear_before_reset, clip), plus bad-input errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <utility>

#include "nn_test_util.h"
#include "node_runner.h"
#include "support/cpu_load.h"

namespace tierjit::testing {
namespace {

using ir::OpKind;
using nn_test::Attrs;
using nn_test::f32;
using nn_test::run;

std::vector<float> pseudo(size_t n, int seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(static_cast<float>(i * 7 + seed * 13)) * 0.6f;
  return v;
}

float sig(float x) { return 1.f / (1.f + std::exp(-x)); }

enum class Kind { kLstm, kGru, kRnn };

// Reference: layout 0, returns Y [S, D, N, H], Y_h, Y_c. Gates as the ONNX spec writes them.
struct Ref {
  std::vector<float> y, yh, yc;
};
Ref reference(Kind kind, int S, int N, int I, int H, int D, const std::vector<float>& x,
              const std::vector<float>& w, const std::vector<float>& r, const std::vector<float>& b,
              const std::vector<float>& p, const std::vector<float>& h0, const std::vector<float>& c0,
              const std::vector<int>& lens, bool lbr, float clip) {
  const int G = kind == Kind::kLstm ? 4 : kind == Kind::kGru ? 3 : 1;
  Ref out;
  out.y.assign(static_cast<size_t>(S * D * N * H), 0.f);
  out.yh.assign(static_cast<size_t>(D * N * H), 0.f);
  out.yc.assign(static_cast<size_t>(D * N * H), 0.f);
  auto cl = [&](float v) { return clip > 0 ? std::max(-clip, std::min(clip, v)) : v; };
  for (int d = 0; d < D; ++d)
    for (int n = 0; n < N; ++n) {
      std::vector<float> h(H), c(H);
      for (int j = 0; j < H; ++j) {
        h[j] = h0.empty() ? 0 : h0[(d * N + n) * H + j];
        c[j] = c0.empty() ? 0 : c0[(d * N + n) * H + j];
      }
      for (int step = 0; step < lens[n]; ++step) {
        const int t = d == 1 ? lens[n] - 1 - step : step;
        // xw[g*H + j] = x_t . W[g*H+j] + Wb ; hr = h . R[g*H+j] + Rb
        std::vector<float> xw(G * H), hr(G * H);
        for (int q = 0; q < G * H; ++q) {
          float s = b.empty() ? 0 : b[d * 2 * G * H + q];
          for (int k = 0; k < I; ++k) s += x[(t * N + n) * I + k] * w[(d * G * H + q) * I + k];
          xw[q] = s;
          float s2 = b.empty() ? 0 : b[d * 2 * G * H + G * H + q];
          for (int k = 0; k < H; ++k) s2 += h[k] * r[(d * G * H + q) * H + k];
          hr[q] = s2;
        }
        std::vector<float> hn(H), cn(H);
        for (int j = 0; j < H; ++j) {
          if (kind == Kind::kLstm) {
            const float pi = p.empty() ? 0 : p[d * 3 * H + j], po = p.empty() ? 0 : p[d * 3 * H + H + j],
                        pf = p.empty() ? 0 : p[d * 3 * H + 2 * H + j];
            const float i = sig(cl(xw[j] + hr[j] + pi * c[j]));
            const float f = sig(cl(xw[2 * H + j] + hr[2 * H + j] + pf * c[j]));
            const float g = std::tanh(cl(xw[3 * H + j] + hr[3 * H + j]));
            cn[j] = f * c[j] + i * g;
            const float o = sig(cl(xw[H + j] + hr[H + j] + po * cn[j]));
            hn[j] = o * std::tanh(cn[j]);
          } else if (kind == Kind::kGru) {
            const float z = sig(cl(xw[j] + hr[j]));
            const float rr = sig(cl(xw[H + j] + hr[H + j]));
            float hh;
            if (lbr) {
              hh = std::tanh(cl(xw[2 * H + j] + rr * hr[2 * H + j]));
            } else {
              // (r * h) . Rh[j] + Rbh
              float s3 = b.empty() ? 0 : b[d * 2 * G * H + G * H + 2 * H + j];
              for (int k = 0; k < H; ++k) {
                const float rk = sig(cl(xw[H + k] + hr[H + k]));
                s3 += rk * h[k] * r[(d * G * H + 2 * H + j) * H + k];
              }
              hh = std::tanh(cl(xw[2 * H + j] + s3));
            }
            hn[j] = (1 - z) * hh + z * h[j];
            cn[j] = c[j];
          } else {
            hn[j] = std::tanh(cl(xw[j] + hr[j]));
            cn[j] = c[j];
          }
        }
        h = hn;
        c = cn;
        for (int j = 0; j < H; ++j) out.y[((t * D + d) * N + n) * H + j] = h[j];
      }
      for (int j = 0; j < H; ++j) {
        out.yh[(d * N + n) * H + j] = h[j];
        out.yc[(d * N + n) * H + j] = c[j];
      }
    }
  return out;
}

struct Case {
  Kind kind;
  int S = 3, N = 2, I = 3, H = 4;
  std::string direction = "forward";
  bool bias = true, peep = false, init = false, lens = false, lbr = false, layout1 = false;
  float clip = 0;
  int threads = 1;  // intra-op threads (2: the time steps' two parts run on two threads)
};

void check(const Case& c) {
  const int G = c.kind == Kind::kLstm ? 4 : c.kind == Kind::kGru ? 3 : 1;
  const int D = c.direction == "bidirectional" ? 2 : 1;
  const int S = c.S, N = c.N, I = c.I, H = c.H;
  std::vector<float> x = pseudo(S * N * I, 1), w = pseudo(D * G * H * I, 2), r = pseudo(D * G * H * H, 3);
  std::vector<float> b = c.bias ? pseudo(D * 2 * G * H, 4) : std::vector<float>();
  std::vector<float> p = c.peep ? pseudo(D * 3 * H, 5) : std::vector<float>();
  std::vector<float> h0 = c.init ? pseudo(D * N * H, 6) : std::vector<float>();
  std::vector<float> c0 = c.init && c.kind == Kind::kLstm ? pseudo(D * N * H, 7) : std::vector<float>();
  std::vector<int> lens(N, S);
  if (c.lens)  // row 0 runs all steps, row 1 one, the others 0..S (0: outputs zeros, state h0)
    for (int n = 1; n < N; ++n) lens[n] = n == 1 ? 1 : (n - 2) % (S + 1);
  // The reference is written for forward (d = 0) and reverse (d = 1); map "reverse" to d = 1.
  Ref ref;
  if (c.direction == "reverse") {
    std::vector<float> w2(w), r2(r), b2(b), p2(p), h2(h0), c2(c0);
    w2.insert(w2.begin(), w.begin(), w.end()); r2.insert(r2.begin(), r.begin(), r.end());
    if (!b.empty()) b2.insert(b2.begin(), b.begin(), b.end());
    if (!p.empty()) p2.insert(p2.begin(), p.begin(), p.end());
    if (!h0.empty()) h2.insert(h2.begin(), h0.begin(), h0.end());
    if (!c0.empty()) c2.insert(c2.begin(), c0.begin(), c0.end());
    Ref both = reference(c.kind, S, N, I, H, 2, x, w2, r2, b2, p2, h2, c2, lens, c.lbr, c.clip);
    for (int t = 0; t < S; ++t)
      for (int i = 0; i < N * H; ++i) ref.y.push_back(both.y[(t * 2 + 1) * N * H + i]);
    ref.yh.assign(both.yh.begin() + N * H, both.yh.end());
    ref.yc.assign(both.yc.begin() + N * H, both.yc.end());
  } else {
    ref = reference(c.kind, S, N, I, H, D, x, w, r, b, p, h0, c0, lens, c.lbr, c.clip);
  }
  // Layout 1 transposes X [S,N,I] -> [N,S,I], states [D,N,H] -> [N,D,H], Y -> [N,S,D,H].
  auto to_l1 = [](const std::vector<float>& v, int a, int bb, int rest) {
    std::vector<float> o(v.size());
    for (int i = 0; i < a; ++i)
      for (int j = 0; j < bb; ++j)
        for (int k = 0; k < rest; ++k) o[(j * a + i) * rest + k] = v[(i * bb + j) * rest + k];
    return o;
  };
  std::vector<Tensor> ins = {
      c.layout1 ? f32({N, S, I}, to_l1(x, S, N, I)) : f32({S, N, I}, x),
      f32({D, G * H, I}, w), f32({D, G * H, H}, r),
      c.bias ? f32({D, 2 * G * H}, b) : Tensor(),
      c.lens ? Tensor::from_vector<int32_t>({N}, std::vector<int32_t>(lens.begin(), lens.end())) : Tensor(),
      c.init ? (c.layout1 ? f32({N, D, H}, to_l1(h0, D, N, H)) : f32({D, N, H}, h0)) : Tensor()};
  if (c.kind == Kind::kLstm) {
    ins.push_back(c.init ? (c.layout1 ? f32({N, D, H}, to_l1(c0, D, N, H)) : f32({D, N, H}, c0)) : Tensor());
    ins.push_back(c.peep ? f32({D, 3 * H}, p) : Tensor());
  }
  Attrs attrs = {{"hidden_size", attr_int(H)}, {"direction", attr_string(c.direction)}};
  if (c.layout1) attrs.push_back({"layout", attr_int(1)});
  if (c.lbr) attrs.push_back({"linear_before_reset", attr_int(1)});
  if (c.clip > 0) attrs.push_back({"clip", attr_float(c.clip)});
  const OpKind op = c.kind == Kind::kLstm ? OpKind::LSTM : c.kind == Kind::kGru ? OpKind::GRU : OpKind::RNN;
  interp::ExecOptions options;
  options.intra_op_threads = c.threads;
  const size_t outs = c.kind == Kind::kLstm ? 3 : 2;
  auto out = run_node(NodeSpec{op, ins, outs, attrs, 14}, options);
  ASSERT_TRUE(out.ok()) << out.status().message();
  if (c.threads > 1) {  // the same values, bit for bit, as on one thread
    auto serial = run_node(NodeSpec{op, ins, outs, attrs, 14});
    ASSERT_TRUE(serial.ok()) << serial.status().message();
    for (size_t i = 0; i < outs; ++i) expect_tensor_near((*out)[i], (*serial)[i], 0, 0);
  }
  if (c.layout1) {
    // Y [S, D, N, H] -> [N, S, D, H]
    std::vector<float> y(ref.y.size());
    for (int t = 0; t < S; ++t)
      for (int d = 0; d < D; ++d)
        for (int n = 0; n < N; ++n)
          for (int j = 0; j < H; ++j) y[((n * S + t) * D + d) * H + j] = ref.y[((t * D + d) * N + n) * H + j];
    expect_tensor_near((*out)[0], f32({N, S, D, H}, y), 1e-4, 1e-5);
    expect_tensor_near((*out)[1], f32({N, D, H}, to_l1(ref.yh, D, N, H)), 1e-4, 1e-5);
  } else {
    expect_tensor_near((*out)[0], f32({S, D, N, H}, ref.y), 1e-4, 1e-5);
    expect_tensor_near((*out)[1], f32({D, N, H}, ref.yh), 1e-4, 1e-5);
    if (c.kind == Kind::kLstm) expect_tensor_near((*out)[2], f32({D, N, H}, ref.yc), 1e-4, 1e-5);
  }
}

TEST(NnLstm, Forward) { check({Kind::kLstm}); }
TEST(NnLstm, NoBias) { Case c{Kind::kLstm}; c.bias = false; check(c); }
TEST(NnLstm, PeepholesAndInitialState) { Case c{Kind::kLstm}; c.peep = true; c.init = true; check(c); }
TEST(NnLstm, Reverse) { Case c{Kind::kLstm}; c.direction = "reverse"; c.init = true; check(c); }
TEST(NnLstm, BidirectionalWithSequenceLens) {
  Case c{Kind::kLstm}; c.direction = "bidirectional"; c.lens = true; c.peep = true; check(c);
}
TEST(NnLstm, Layout1) { Case c{Kind::kLstm}; c.layout1 = true; c.init = true; check(c); }
TEST(NnLstm, Clip) { Case c{Kind::kLstm}; c.clip = 0.3f; check(c); }
// Two intra-op threads must give the values of one, bit for bit (the machine's load, which may
// decide how kernels use threads, is ignored here: support::override_foreign_busy_cores); odd
// hidden sizes, sequence_lens ending rows early (0 included), peepholes, clip, both directions.
class NnRnnThreads : public ::testing::Test {
 protected:
  void SetUp() override { support::override_foreign_busy_cores(0); }
  void TearDown() override { support::override_foreign_busy_cores(-1); }
};
TEST_F(NnRnnThreads, LstmMatchesReferenceAndOneThread) {
  Case c{Kind::kLstm}; c.S = 5; c.N = 9; c.I = 7; c.H = 33; c.threads = 2;
  c.direction = "bidirectional"; c.lens = true; c.peep = true; c.init = true; c.clip = 0.9f;
  check(c);
}
TEST_F(NnRnnThreads, LstmLayout1) {
  Case c{Kind::kLstm}; c.S = 4; c.N = 16; c.I = 5; c.H = 32; c.threads = 2; c.layout1 = true;
  check(c);
}
TEST_F(NnRnnThreads, RnnMatchesReferenceAndOneThread) {
  Case c{Kind::kRnn}; c.S = 6; c.N = 33; c.I = 4; c.H = 64; c.threads = 2; c.direction = "reverse";
  c.init = true; check(c);
}
TEST_F(NnRnnThreads, GruRunsItsStepsWhole) {
  Case c{Kind::kGru}; c.S = 4; c.N = 12; c.I = 3; c.H = 40; c.threads = 2; c.lens = true;
  c.direction = "bidirectional"; check(c);
}

TEST(NnGru, Forward) { check({Kind::kGru}); }
TEST(NnGru, LinearBeforeReset) { Case c{Kind::kGru}; c.lbr = true; c.init = true; check(c); }
TEST(NnGru, BidirectionalWithSequenceLens) { Case c{Kind::kGru}; c.direction = "bidirectional"; c.lens = true; check(c); }
TEST(NnRnn, Forward) { check({Kind::kRnn}); }
TEST(NnRnn, ReverseLayout1) { Case c{Kind::kRnn}; c.direction = "reverse"; c.layout1 = true; c.init = true; check(c); }

// `layout` must be 0 or 1 and exists from opset 14 (ONNX Runtime rejects both cases); it is an
// error for LSTM, GRU and RNN alike, while layout 1 at opset 14 runs (NnLstm.Layout1).
TEST(NnLstm, LayoutAttributeIsChecked) {
  Tensor x = f32({2, 1, 3}, pseudo(6, 1));
  struct Op { OpKind op; int64_t gates; };
  for (Op o : {Op{OpKind::LSTM, 4}, Op{OpKind::GRU, 3}, Op{OpKind::RNN, 1}}) {
    Tensor w = f32({1, 4 * o.gates, 3}, pseudo(12 * o.gates, 2));
    Tensor r = f32({1, 4 * o.gates, 4}, pseudo(16 * o.gates, 3));
    auto two = run(o.op, {x, w, r}, 1, {{"hidden_size", attr_int(4)}, {"layout", attr_int(2)}}, 14);
    ASSERT_FALSE(two.ok());
    EXPECT_NE(two.status().message().find("'layout' is 2, must be 0 or 1"), std::string::npos)
        << two.status().message();
    auto old = run(o.op, {x, w, r}, 1, {{"hidden_size", attr_int(4)}, {"layout", attr_int(1)}}, 13);
    ASSERT_FALSE(old.ok());
    EXPECT_NE(old.status().message().find("defined from opset 14"), std::string::npos)
        << old.status().message();
    auto zero = run(o.op, {x, w, r}, 1, {{"hidden_size", attr_int(4)}, {"layout", attr_int(0)}}, 14);
    EXPECT_TRUE(zero.ok()) << zero.status().message();
  }
}

TEST(NnLstm, Errors) {
  Tensor x = f32({2, 1, 3}, pseudo(6, 1));
  Tensor w = f32({1, 16, 3}, pseudo(48, 2)), r = f32({1, 16, 4}, pseudo(64, 3));
  // W with the wrong hidden size
  auto bad_w = run(OpKind::LSTM, {x, f32({1, 12, 3}, pseudo(36, 2)), r}, 3, {{"hidden_size", attr_int(4)}});
  ASSERT_FALSE(bad_w.ok());
  EXPECT_NE(bad_w.status().message().find("W"), std::string::npos);
  // sequence_lens beyond the sequence
  auto bad_len = run(OpKind::LSTM, {x, w, r, Tensor(), Tensor::from_vector<int32_t>({1}, {5})}, 3,
                     {{"hidden_size", attr_int(4)}});
  EXPECT_FALSE(bad_len.ok());
  auto bad_dir = run(OpKind::LSTM, {x, w, r}, 3, {{"direction", attr_string("sideways")}});
  EXPECT_FALSE(bad_dir.ok());
  auto bad_act = run(OpKind::LSTM, {x, w, r}, 3, {{"activations", [] {
                                                  ir::Attribute a; a.kind = ir::Attribute::Kind::kStrings;
                                                  a.strings = {"Sigmoid", "Nope", "Tanh"}; return a; }()}});
  EXPECT_FALSE(bad_act.ok());
  // size-0 batch runs and gives empty outputs
  auto empty = run(OpKind::LSTM, {f32({2, 0, 3}, {}), w, r}, 3);
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  EXPECT_EQ((*empty)[0].shape(), (Shape{2, 1, 0, 4}));
}

TEST(NnRecurrent, HugeHiddenSizeIsAClearError) {
  // gates x hidden_size x 2 must fit int64: 2^62 - 1 once wrapped to an "expected [1, -4, 4]"
  // shape for W. Now the error names hidden_size, for each of LSTM (4 gates), GRU (3) and RNN (1).
  const int64_t huge[] = {(int64_t{1} << 62) - 1, int64_t{1} << 61, std::numeric_limits<int64_t>::max()};
  const std::pair<OpKind, int64_t> ops[] = {{OpKind::LSTM, 4}, {OpKind::GRU, 3}, {OpKind::RNN, 1}};
  for (const auto& [op, gates] : ops)
    for (int64_t h : huge) {
      if (gates == 1 && h <= std::numeric_limits<int64_t>::max() / 2) continue;  // RNN: fits
      Tensor x = f32({2, 1, 3}, pseudo(6, 1));
      Tensor w = f32({1, gates, 3}, pseudo(static_cast<size_t>(3 * gates), 2));
      Tensor r = f32({1, gates, 1}, pseudo(static_cast<size_t>(gates), 3));
      auto res = run(op, {x, w, r}, op == OpKind::LSTM ? 3 : 2, {{"hidden_size", attr_int(h)}});
      ASSERT_FALSE(res.ok()) << h;
      const std::string msg = res.status().message();
      EXPECT_NE(msg.find("hidden_size " + std::to_string(h) + " is too large"), std::string::npos) << msg;
      EXPECT_EQ(msg.find("-4"), std::string::npos) << msg;
    }
}

}  // namespace
}  // namespace tierjit::testing
