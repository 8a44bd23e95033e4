// Tier-0 kernels: LSTM, GRU and RNN (forward / reverse / bidirectional, sequence_lens,
// initial states, layout 0/1, activations with alpha/beta, clip; LSTM peepholes and input_forget;
// GRU linear_before_reset). Source: ONNX operator spec, LSTM 1/7/14, GRU 1/3/7/14, RNN 1/7/14.
//
// Float32 LSTMs and GRUs that oneDNN computes as the spec writes them (default activations:
// LSTM Sigmoid, Tanh, Tanh; GRU Sigmoid, Tanh; no clip; no input_forget; sequence_lens absent or
// all equal to the sequence length; S, N, I >= 1; any direction, layout, initial states, bias,
// LSTM peepholes, GRU linear_before_reset 0 or 1) run oneDNN's RNN primitives (rnn_dnnl.h):
// lstm_small at 32x8x64 / 128x16x64 took 0.55 / 4.3 ms per call on the reference path below,
// 0.25 / 1.9 ms on one thread with oneDNN (docs/performance.md, "Tier 0"). Their results differ
// from the reference path in rounding: oneDNN adds one bias Wb + Rb per gate (summed first;
// GRU with linear_before_reset keeps Rbh apart, as the spec) after both GEMMs, where the
// reference adds Wb and Rb to x*W before h*R, and its sigmoid / tanh are its own (within a few
// ulp); tests/interp/rnn_dnnl_test.cc compares both with rtol 1e-5, atol 1e-5: each gate is a
// float32 sum of I + H products, and the two paths' differences grow with it (max 2.4e-7 at
// I + H <= 40, 1.3e-6 (LSTM) / 2.5e-6 (GRU) at lstm_small's 192; the gates contract, they do not
// amplify). NaN and Inf inputs give NaN in the same outputs. (The hand-written small-batch LSTM
// that ran before oneDNN is gone: the compiled tiers fuse the cell, kir/lower/lower_recurrent.cc.)
// Everything else, and any oneDNN failure, runs the reference path: the input projection of all time steps is one GEMM per
// direction (oneDNN sgemm for float32); each step adds one GEMM of the hidden state with R^T.
#include <cmath>
#include <string>
#include <type_traits>

#include "interp/kernels/dnnl_util.h"
#include "interp/kernels/nn_common.h"
#include "interp/kernels/nn_kernels.h"
#include "interp/kernels/rnn_dnnl.h"
#include "kernels/vec_math.h"
#include "support/checked_math.h"

namespace tierjit::interp::nn {
namespace {

enum class Cell { kLstm, kGru, kRnn };

struct Activation {
  enum Kind { kSigmoid, kTanh, kRelu, kAffine, kLeakyRelu, kThresholdedRelu, kScaledTanh,
              kHardSigmoid, kElu, kSoftsign, kSoftplus } kind = kSigmoid;
  float alpha = 0, beta = 0;
};

template <class T>
void apply(const Activation& a, T* v, int64_t n) {
  const T al = static_cast<T>(a.alpha), be = static_cast<T>(a.beta);
  if constexpr (std::is_same_v<T, float>) {  // the gate activations, 8 lanes at a time (SLEEF)
    if (a.kind == Activation::kSigmoid) return kernels::sigmoid_f32(v, v, n);
    if (a.kind == Activation::kTanh) return kernels::tanh_f32(v, v, n);
  }
  switch (a.kind) {
    case Activation::kSigmoid: for (int64_t i = 0; i < n; ++i) v[i] = T(1) / (T(1) + std::exp(-v[i])); break;
    case Activation::kTanh: for (int64_t i = 0; i < n; ++i) v[i] = std::tanh(v[i]); break;
    case Activation::kRelu: for (int64_t i = 0; i < n; ++i) v[i] = std::max(v[i], T(0)); break;
    case Activation::kAffine: for (int64_t i = 0; i < n; ++i) v[i] = al * v[i] + be; break;
    case Activation::kLeakyRelu: for (int64_t i = 0; i < n; ++i) v[i] = v[i] >= 0 ? v[i] : al * v[i]; break;
    case Activation::kThresholdedRelu: for (int64_t i = 0; i < n; ++i) v[i] = v[i] > al ? v[i] : T(0); break;
    case Activation::kScaledTanh: for (int64_t i = 0; i < n; ++i) v[i] = al * std::tanh(be * v[i]); break;
    case Activation::kHardSigmoid:
      for (int64_t i = 0; i < n; ++i) v[i] = std::clamp(al * v[i] + be, T(0), T(1));
      break;
    case Activation::kElu: for (int64_t i = 0; i < n; ++i) v[i] = v[i] >= 0 ? v[i] : al * (std::exp(v[i]) - 1); break;
    case Activation::kSoftsign: for (int64_t i = 0; i < n; ++i) v[i] = v[i] / (T(1) + std::fabs(v[i])); break;
    case Activation::kSoftplus: for (int64_t i = 0; i < n; ++i) v[i] = std::log1p(std::exp(v[i])); break;
  }
}

// Parses `activations` / `activation_alpha` / `activation_beta` (defaults per op) into
// `per_dir` functions for each of the `dirs` directions.
Expected<std::vector<Activation>> parse_activations(const KernelContext& ctx, Cell cell, int64_t dirs) {
  const ir::Node& node = ctx.node();
  std::vector<std::string> names = node.attr_strings("activations");
  const size_t per_dir = cell == Cell::kLstm ? 3 : cell == Cell::kGru ? 2 : 1;
  if (names.empty()) {
    const std::vector<std::string> dflt =
        cell == Cell::kLstm ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
        : cell == Cell::kGru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                             : std::vector<std::string>{"Tanh"};
    for (int64_t d = 0; d < dirs; ++d) names.insert(names.end(), dflt.begin(), dflt.end());
  } else if (names.size() == per_dir && dirs == 2) {
    std::vector<std::string> twice = names;
    names.insert(names.end(), twice.begin(), twice.end());
  }
  if (names.size() != per_dir * static_cast<size_t>(dirs))
    return ctx.fail("activations has {} entries, expected {}", names.size(), per_dir * dirs);
  std::vector<float> alphas = node.attr_floats("activation_alpha");
  std::vector<float> betas = node.attr_floats("activation_beta");
  size_t ai = 0, bi = 0;
  std::vector<Activation> out;
  for (const std::string& n : names) {
    Activation a;
    std::string l;
    for (char ch : n) l.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
    auto take = [](const std::vector<float>& v, size_t& i, float dflt) { return i < v.size() ? v[i++] : dflt; };
    if (l == "sigmoid") a.kind = Activation::kSigmoid;
    else if (l == "tanh") a.kind = Activation::kTanh;
    else if (l == "relu") a.kind = Activation::kRelu;
    else if (l == "affine") { a.kind = Activation::kAffine; a.alpha = take(alphas, ai, 1.f); a.beta = take(betas, bi, 0.f); }
    else if (l == "leakyrelu") { a.kind = Activation::kLeakyRelu; a.alpha = take(alphas, ai, 0.01f); }
    else if (l == "thresholdedrelu") { a.kind = Activation::kThresholdedRelu; a.alpha = take(alphas, ai, 1.f); }
    else if (l == "scaledtanh") { a.kind = Activation::kScaledTanh; a.alpha = take(alphas, ai, 1.f); a.beta = take(betas, bi, 1.f); }
    else if (l == "hardsigmoid") { a.kind = Activation::kHardSigmoid; a.alpha = take(alphas, ai, 0.2f); a.beta = take(betas, bi, 0.5f); }
    else if (l == "elu") { a.kind = Activation::kElu; a.alpha = take(alphas, ai, 1.f); }
    else if (l == "softsign") a.kind = Activation::kSoftsign;
    else if (l == "softplus") a.kind = Activation::kSoftplus;
    else return ctx.fail("unknown activation '{}'", n);
    out.push_back(a);
  }
  return out;
}

// C[m,n] (+)= A[m,k] * B[n,k]^T, row-major with leading dims.
template <class T>
void gemm_nt(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
             bool accumulate, T* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    (void)sgemm(false, true, m, n, k, 1.f, a, lda, b, ldb, accumulate ? 1.f : 0.f, c, ldc);
  } else {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        T s = 0;
        for (int64_t p = 0; p < k; ++p) s += a[i * lda + p] * b[j * ldb + p];
        c[i * ldc + j] = accumulate ? c[i * ldc + j] + s : s;
      }
  }
}

struct RnnShape {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1, gates = 1;
  bool layout1 = false;
};

// Checks one optional/required operand shape; `what` names it.
Status expect_shape(const KernelContext& ctx, const Tensor* t, const Shape& want, const char* what) {
  if (t && t->shape() != want)
    return ctx.fail("{} has shape {}, expected {}", what, shape_to_string(t->shape()), shape_to_string(want));
  return Status();
}

// [a, b, rest] <-> [b, a, rest] (layout 1 <-> layout 0).
template <class T>
std::vector<T> swap01(const T* src, int64_t a, int64_t b, int64_t rest) {
  std::vector<T> out(static_cast<size_t>(a * b * rest));
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j)
      std::copy(src + (i * b + j) * rest, src + (i * b + j + 1) * rest, out.begin() + (j * a + i) * rest);
  return out;
}

template <class T>
Status run_rnn(KernelContext& ctx, Cell cell, const RnnShape& s, const std::vector<Activation>& acts) {
  const ir::Node& node = ctx.node();
  const int64_t S = s.seq, N = s.batch, I = s.input, H = s.hidden, D = s.dirs, G = s.gates;
  const int64_t GH = G * H;
  const Tensor* xt = ctx.input(0);
  const T* w = ctx.input(1)->data<T>();
  const T* r = ctx.input(2)->data<T>();
  const Tensor* bt = ctx.input(3);
  const Tensor* lens_t = ctx.input(4);
  const Tensor* h0_t = ctx.input(5);
  const Tensor* c0_t = cell == Cell::kLstm ? ctx.input(6) : nullptr;
  const Tensor* p_t = cell == Cell::kLstm ? ctx.input(7) : nullptr;
  const float clip = node.attr_float("clip", 0.f);
  const bool has_clip = node.has_attr("clip");
  const bool input_forget = node.attr_int("input_forget", 0) != 0;
  const bool lbr = node.attr_int("linear_before_reset", 0) != 0;
  const std::string direction = node.attr_string("direction", "forward");

  std::vector<int64_t> lens(static_cast<size_t>(N), S);
  if (lens_t) {
    TJ_ASSIGN_OR_RETURN(lens, read_int64s(ctx, *lens_t, "sequence_lens"));
    for (int64_t b = 0; b < N; ++b)
      if (lens[b] < 0 || lens[b] > S)
        return ctx.fail("sequence_lens[{}] = {} is out of range [0, {}]", b, lens[b], S);
  }
  // Inputs in layout 0.
  std::vector<T> x_l0, h0_l0, c0_l0;
  const T* x = xt->data<T>();
  const T* h0 = h0_t ? h0_t->data<T>() : nullptr;
  const T* c0 = c0_t ? c0_t->data<T>() : nullptr;
  if (s.layout1) {
    x_l0 = swap01(x, N, S, I); x = x_l0.data();
    if (h0) { h0_l0 = swap01(h0, N, D, H); h0 = h0_l0.data(); }
    if (c0) { c0_l0 = swap01(c0, N, D, H); c0 = c0_l0.data(); }
  }
  std::vector<T> y(static_cast<size_t>(S * D * N * H), T(0));    // [S, D, N, H]
  std::vector<T> yh(static_cast<size_t>(D * N * H)), yc(static_cast<size_t>(D * N * H));

  std::vector<T> xd(static_cast<size_t>(S * N * I)), xw(static_cast<size_t>(S * N * GH));
  std::vector<T> gates(static_cast<size_t>(N * GH)), hbuf(static_cast<size_t>(N * H)),
      cbuf(static_cast<size_t>(N * H)), tmp(static_cast<size_t>(N * H)), rh(static_cast<size_t>(N * H));
  for (int64_t d = 0; d < D; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    const T* wd = w + d * GH * I;
    const T* rd = r + d * GH * H;
    const T* bd = bt ? bt->data<T>() + d * 2 * GH : nullptr;
    const T* pd = p_t ? p_t->data<T>() + d * 3 * H : nullptr;
    const Activation* act = &acts[static_cast<size_t>(d) * (cell == Cell::kLstm ? 3 : cell == Cell::kGru ? 2 : 1)];
    // Time-ordered input of this direction: reverse reads each sequence backwards within its length.
    const T* xin = x;
    if (reverse) {
      std::fill(xd.begin(), xd.end(), T(0));
      for (int64_t b = 0; b < N; ++b)
        for (int64_t t = 0; t < lens[b]; ++t)
          std::copy(x + ((lens[b] - 1 - t) * N + b) * I, x + ((lens[b] - 1 - t) * N + b + 1) * I,
                    xd.begin() + (t * N + b) * I);
      xin = xd.data();
    }
    gemm_nt<T>(S * N, GH, I, xin, I, wd, I, false, xw.data(), GH);
    if (bd) {
      for (int64_t row = 0; row < S * N; ++row) {
        T* p = xw.data() + row * GH;
        for (int64_t j = 0; j < GH; ++j) p[j] += bd[j];
        const int64_t rb_end = cell == Cell::kGru ? 2 * H : GH;  // GRU's Rbh stays with R*h
        for (int64_t j = 0; j < rb_end; ++j) p[j] += bd[GH + j];
      }
    }
    for (int64_t i = 0; i < N * H; ++i) {
      hbuf[i] = h0 ? h0[d * N * H + i] : T(0);
      cbuf[i] = c0 ? c0[d * N * H + i] : T(0);
    }
    for (int64_t t = 0; t < S; ++t) {
      std::copy(xw.begin() + t * N * GH, xw.begin() + (t + 1) * N * GH, gates.begin());
      const int64_t rec = cell == Cell::kGru ? 2 * H : GH;
      gemm_nt<T>(N, rec, H, hbuf.data(), H, rd, H, true, gates.data(), GH);
      if (cell == Cell::kGru) {
        // Batched over all rows: z, r; then the h gate's recurrent term (one GEMM).
        const T* rbh = bd ? bd + GH + 2 * H : nullptr;
        const T* rhw = rd + 2 * H * H;  // Rh [H, H]
        for (int64_t b = 0; b < N; ++b) {
          T* g = gates.data() + b * GH;
          if (has_clip)
            for (int64_t j = 0; j < 2 * H; ++j) g[j] = std::clamp(g[j], static_cast<T>(-clip), static_cast<T>(clip));
          apply(act[0], g, 2 * H);
          if (!lbr)
            for (int64_t j = 0; j < H; ++j) tmp[b * H + j] = g[H + j] * hbuf[b * H + j];
        }
        gemm_nt<T>(N, H, H, lbr ? hbuf.data() : tmp.data(), H, rhw, H, false, rh.data(), H);
        for (int64_t b = 0; b < N; ++b) {
          T* g = gates.data() + b * GH;
          for (int64_t j = 0; j < H; ++j) {
            const T rec = rh[b * H + j] + (rbh ? rbh[j] : T(0));
            g[2 * H + j] += lbr ? g[H + j] * rec : rec;
          }
        }
      }
      for (int64_t b = 0; b < N; ++b) {
        if (t >= lens[b]) continue;
        T* g = gates.data() + b * GH;
        T* hb = hbuf.data() + b * H;
        T* cb = cbuf.data() + b * H;
        auto do_clip = [&](T* v, int64_t n) {
          if (has_clip)
            for (int64_t i = 0; i < n; ++i) v[i] = std::clamp(v[i], static_cast<T>(-clip), static_cast<T>(clip));
        };
        if (cell == Cell::kLstm) {  // gate order i, o, f, c
          T *gi = g, *go = g + H, *gf = g + 2 * H, *gc = g + 3 * H;
          if (pd)
            for (int64_t j = 0; j < H; ++j) { gi[j] += pd[j] * cb[j]; gf[j] += pd[2 * H + j] * cb[j]; }
          do_clip(gi, H); do_clip(gf, H); do_clip(gc, H);
          apply(act[0], gi, H);
          if (input_forget) for (int64_t j = 0; j < H; ++j) gf[j] = T(1) - gi[j];
          else apply(act[0], gf, H);
          apply(act[1], gc, H);
          for (int64_t j = 0; j < H; ++j) cb[j] = gf[j] * cb[j] + gi[j] * gc[j];
          if (pd) for (int64_t j = 0; j < H; ++j) go[j] += pd[H + j] * cb[j];
          do_clip(go, H);
          apply(act[0], go, H);
          for (int64_t j = 0; j < H; ++j) tmp[j] = cb[j];
          apply(act[2], tmp.data(), H);
          for (int64_t j = 0; j < H; ++j) hb[j] = go[j] * tmp[j];
        } else if (cell == Cell::kGru) {  // gate order z, r, h; z and r activated above
          T *gz = g, *gh = g + 2 * H;
          do_clip(gh, H);
          apply(act[1], gh, H);
          for (int64_t j = 0; j < H; ++j) hb[j] = (T(1) - gz[j]) * gh[j] + gz[j] * hb[j];
        } else {
          do_clip(g, H);
          apply(act[0], g, H);
          std::copy(g, g + H, hb);
        }
        const int64_t time = reverse ? lens[b] - 1 - t : t;
        std::copy(hb, hb + H, y.begin() + ((time * D + d) * N + b) * H);
      }
    }
    std::copy(hbuf.begin(), hbuf.end(), yh.begin() + d * N * H);
    std::copy(cbuf.begin(), cbuf.end(), yc.begin() + d * N * H);
  }
  // Outputs (layout 1: Y [N, S, D, H], Y_h / Y_c [N, D, H]).
  const DType dt = xt->dtype();
  if (ctx.wants_output(0)) {
    TJ_ASSIGN_OR_RETURN(Tensor * yt, ctx.output(0, dt, s.layout1 ? Shape{N, S, D, H} : Shape{S, D, N, H}));
    T* yo = yt->data<T>();
    for (int64_t t = 0; t < S; ++t)
      for (int64_t d = 0; d < D; ++d)
        for (int64_t b = 0; b < N; ++b) {
          const int64_t dst = s.layout1 ? ((b * S + t) * D + d) * H : ((t * D + d) * N + b) * H;
          std::copy(y.begin() + ((t * D + d) * N + b) * H, y.begin() + ((t * D + d) * N + b + 1) * H, yo + dst);
        }
  }
  auto put_state = [&](size_t i, std::vector<T>& v) -> Status {
    if (!ctx.wants_output(i)) return Status();
    TJ_ASSIGN_OR_RETURN(Tensor * o, ctx.output(i, dt, s.layout1 ? Shape{N, D, H} : Shape{D, N, H}));
    if (s.layout1) v = swap01(v.data(), D, N, H);
    std::copy(v.begin(), v.end(), o->data<T>());
    return Status();
  };
  TJ_RETURN_IF_ERROR(put_state(1, yh));
  if (cell == Cell::kLstm) TJ_RETURN_IF_ERROR(put_state(2, yc));
  return Status();
}

// Runs a float32 LSTM or GRU through oneDNN (rnn_dnnl.h) when it is one oneDNN computes as the
// spec writes it (see the file header). Returns true when it did; false (outputs untouched or to
// be overwritten) when the reference path must run.
Expected<bool> try_dnnl_rnn(KernelContext& ctx, Cell cell, const RnnShape& s,
                            const std::vector<Activation>& acts) {
  const ir::Node& node = ctx.node();
  if (cell == Cell::kRnn || !rnn_dnnl_enabled() || ctx.input(0)->dtype() != DType::kFloat32) return false;
  if (node.has_attr("clip") || node.attr_int("input_forget", 0) != 0) return false;
  if (s.seq < 1 || s.batch < 1 || s.input < 1) return false;
  const bool lstm = cell == Cell::kLstm;
  const size_t per_dir = lstm ? 3 : 2;  // Sigmoid first, then Tanh
  for (size_t i = 0; i < acts.size(); ++i)
    if (acts[i].kind != (i % per_dir == 0 ? Activation::kSigmoid : Activation::kTanh)) return false;
  if (const Tensor* lens_t = ctx.input(4)) {
    TJ_ASSIGN_OR_RETURN(std::vector<int64_t> lens, read_int64s(ctx, *lens_t, "sequence_lens"));
    for (int64_t len : lens)
      if (len != s.seq) return false;
  }
  const int64_t S = s.seq, N = s.batch, D = s.dirs, H = s.hidden;
  RnnDnnlArgs a;
  a.cell = lstm ? RnnCell::kLstm
           : node.attr_int("linear_before_reset", 0) != 0 ? RnnCell::kLbrGru : RnnCell::kGru;
  a.seq = S; a.batch = N; a.input = s.input; a.hidden = H; a.dirs = D;
  a.reverse = node.attr_string("direction", "forward") == "reverse";
  a.layout1 = s.layout1;
  auto data = [&](size_t i) { return ctx.input(i) ? ctx.input(i)->data<float>() : nullptr; };
  a.x = data(0); a.w = data(1); a.r = data(2); a.b = data(3); a.h0 = data(5);
  if (lstm) { a.c0 = data(6); a.p = data(7); }
  a.constant_w = graph_constant(ctx, 1, ctx.input(1));
  a.constant_r = graph_constant(ctx, 2, ctx.input(2));
  a.constant_b = graph_constant(ctx, 3, ctx.input(3));
  if (lstm) a.constant_p = graph_constant(ctx, 7, ctx.input(7));
  a.threads = ctx.options().intra_op_threads;
  const Shape state = s.layout1 ? Shape{N, D, H} : Shape{D, N, H};
  if (ctx.wants_output(0)) {
    TJ_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, DType::kFloat32, s.layout1 ? Shape{N, S, D, H} : Shape{S, D, N, H}));
    a.y = y->data<float>();
  }
  if (ctx.wants_output(1)) {
    TJ_ASSIGN_OR_RETURN(Tensor * yh, ctx.output(1, DType::kFloat32, state));
    a.yh = yh->data<float>();
  }
  if (lstm && ctx.wants_output(2)) {
    TJ_ASSIGN_OR_RETURN(Tensor * yc, ctx.output(2, DType::kFloat32, state));
    a.yc = yc->data<float>();
  }
  // A oneDNN failure (an unimplemented geometry) leaves the reference path to compute the same.
  return dnnl_rnn_f32(a).ok();
}

Status rnn_family(KernelContext& ctx, Cell cell) {
  const ir::Node& node = ctx.node();
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* w, ctx.required_input(1));
  TJ_ASSIGN_OR_RETURN(const Tensor* r, ctx.required_input(2));
  RnnShape s;
  s.gates = cell == Cell::kLstm ? 4 : cell == Cell::kGru ? 3 : 1;
  // `layout` exists from opset 14 (LSTM/GRU/RNN-14) and takes 0 or 1; ONNX Runtime rejects it
  // otherwise, and running it would change the outputs' shapes silently.
  if (node.has_attr("layout")) {
    const int64_t layout = node.attr_int("layout", 0);
    if (node.opset() < 14)
      return ctx.fail("attribute 'layout' is defined from opset 14; this node has opset {}",
                      node.opset());
    if (layout != 0 && layout != 1) return ctx.fail("attribute 'layout' is {}, must be 0 or 1", layout);
    s.layout1 = layout == 1;
  }
  const std::string direction = node.attr_string("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return ctx.fail("direction '{}' is not forward, reverse or bidirectional", direction);
  s.dirs = direction == "bidirectional" ? 2 : 1;
  if (x->rank() != 3) return ctx.fail("input X must be 3-D, got {}", shape_to_string(x->shape()));
  s.seq = s.layout1 ? x->dim(1) : x->dim(0);
  s.batch = s.layout1 ? x->dim(0) : x->dim(1);
  s.input = x->dim(2);
  if (r->rank() != 3) return ctx.fail("R must be 3-D, got {}", shape_to_string(r->shape()));
  s.hidden = node.attr_int("hidden_size", r->dim(2));
  if (s.hidden <= 0) return ctx.fail("hidden_size must be positive, got {}", s.hidden);
  // Every size derived from hidden_size must fit int64 (B holds 2 * gates * hidden_size values).
  const std::optional<int64_t> gh = support::checked_mul(s.gates, s.hidden);
  if (!gh || !support::checked_mul(*gh, 2))
    return ctx.fail("hidden_size {} is too large: {} gates x hidden_size x 2 overflows int64",
                    s.hidden, s.gates);
  const int64_t GH = *gh, D = s.dirs, N = s.batch, H = s.hidden;
  for (size_t i = 1; i < ctx.num_inputs(); ++i)
    if (ctx.input(i) && i != 4 && ctx.input(i)->dtype() != x->dtype())
      return ctx.fail("input {} is {} but X is {}", i, dtype_name(ctx.input(i)->dtype()), dtype_name(x->dtype()));
  TJ_RETURN_IF_ERROR(expect_shape(ctx, w, {D, GH, s.input}, "W"));
  TJ_RETURN_IF_ERROR(expect_shape(ctx, r, {D, GH, H}, "R"));
  TJ_RETURN_IF_ERROR(expect_shape(ctx, ctx.input(3), {D, 2 * GH}, "B"));
  TJ_RETURN_IF_ERROR(expect_shape(ctx, ctx.input(4), {N}, "sequence_lens"));
  const Shape state = s.layout1 ? Shape{N, D, H} : Shape{D, N, H};
  TJ_RETURN_IF_ERROR(expect_shape(ctx, ctx.input(5), state, "initial_h"));
  if (cell == Cell::kLstm) {
    TJ_RETURN_IF_ERROR(expect_shape(ctx, ctx.input(6), state, "initial_c"));
    TJ_RETURN_IF_ERROR(expect_shape(ctx, ctx.input(7), {D, 3 * H}, "P"));
  }
  TJ_ASSIGN_OR_RETURN(std::vector<Activation> acts, parse_activations(ctx, cell, D));
  TJ_ASSIGN_OR_RETURN(bool done, try_dnnl_rnn(ctx, cell, s, acts));
  if (done) return Status();
  set_dnnl_threads(ctx.options().intra_op_threads);
  switch (x->dtype()) {
    case DType::kFloat32: return run_rnn<float>(ctx, cell, s, acts);
    case DType::kFloat64: return run_rnn<double>(ctx, cell, s, acts);
    default: return ctx.unsupported_here("dtype {} is not supported", dtype_name(x->dtype()));
  }
}

Status lstm_kernel(KernelContext& ctx) { return rnn_family(ctx, Cell::kLstm); }
Status gru_kernel(KernelContext& ctx) { return rnn_family(ctx, Cell::kGru); }
Status rnn_kernel(KernelContext& ctx) { return rnn_family(ctx, Cell::kRnn); }

}  // namespace

void register_rnn_kernels(KernelRegistry& r) {
  r.add(ir::OpKind::LSTM, lstm_kernel);
  r.add(ir::OpKind::GRU, gru_kernel);
  r.add(ir::OpKind::RNN, rnn_kernel);
}

}  // namespace tierjit::interp::nn
