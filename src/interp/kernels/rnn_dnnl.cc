// oneDNN RNN glue (rnn_dnnl.h): ONNX LSTM -> dnnl::lstm_forward, GRU -> dnnl::gru_forward
// (linear_before_reset = 0) or lbr_gru_forward (= 1). Primitives are cached per geometry and
// thread count (PrimitiveCache, dnnl_internal.h); LSTM weights are permuted from ONNX's gate
// order (i, o, f, c) to oneDNN's (i, f, c~, o) (GRU's z, r, h is oneDNN's u, r, o) and reordered
// into the primitive's blocked layout, once per set of constant weight tensors (a small cache
// here) or per call.
#include "interp/kernels/rnn_dnnl.h"

#include <strings.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "interp/kernels/dnnl_internal.h"
#include "interp/kernels/dnnl_util.h"

namespace tierjit::interp::nn {
namespace {

using namespace dnnl_glue;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

std::atomic<bool> g_enabled{true};
std::atomic<uint64_t> g_runs{0};

// oneDNN gate g takes ONNX gate kLstmFrom[g] (ONNX: i, o, f, c; oneDNN: i, f, c~, o); the
// peepholes likewise with kPeepFrom (ONNX: i, o, f; oneDNN: i, f, o).
constexpr int kLstmFrom[4] = {0, 2, 3, 1};
constexpr int kPeepFrom[3] = {0, 2, 1};

// Batch-1 calls run oneDNN's brgemm implementation until this many of them have run in the
// process, then its GEMM-based one (make_rnn: ~40% faster per call at batch 1), whose first
// call generates oneDNN's GEMM kernels: lstm_small's first 32x1x64 request took 22 ms that way,
// later new lengths 3-15 ms. At ~44 us saved per call (32 steps) that pays after ~500 calls.
// (GRUs: oneDNN 2.6 has no brgemm GRU; any-format weights give the GEMM-based one anyway.)
constexpr uint64_t kGemmRnnAfterCalls = 512;
std::atomic<uint64_t> g_gemm_after{kGemmRnnAfterCalls};
std::atomic<uint64_t> g_batch1_calls{0};

struct RnnKey {
  RnnCell cell;
  int64_t seq, batch, input, hidden, dirs;
  bool reverse, layout1, has_peep, has_init;
  int threads;
  bool gemm;  // batch 1 on the GEMM-based implementation (plain ldigo weights)
  bool operator<(const RnnKey& o) const {
    auto tie = [](const RnnKey& k) {
      return std::tie(k.cell, k.seq, k.batch, k.input, k.hidden, k.dirs, k.reverse, k.layout1,
                      k.has_peep, k.has_init, k.threads, k.gemm);
    };
    return tie(*this) < tie(o);
  }
};

struct RnnEntry {
  dnnl::primitive prim;
  dnnl::memory::desc src_md, dst_md, state_md, wl_md, wi_md, bias_md, peep_md, scratch_md;
};

int64_t gates(RnnCell c) { return c == RnnCell::kLstm ? 4 : 3; }
int64_t bias_gates(RnnCell c) { return c == RnnCell::kGru ? 3 : 4; }  // lbr: + Rbh

std::shared_ptr<RnnEntry> make_rnn(const RnnKey& k) {
  const int64_t D = k.dirs, H = k.hidden, G = gates(k.cell);
  auto e = std::make_shared<RnnEntry>();
  const tag data_tag = k.layout1 ? tag::ntc : tag::tnc;
  e->src_md = dnnl::memory::desc({k.seq, k.batch, k.input}, dt::f32, data_tag);
  e->dst_md = dnnl::memory::desc({k.seq, k.batch, D * H}, dt::f32, data_tag);
  e->state_md = dnnl::memory::desc({1, D, k.batch, H}, dt::f32, tag::ldnc);
  const dnnl::memory::desc init_md = k.has_init ? e->state_md : dnnl::memory::desc();
  // The plain ldigo weights select oneDNN's GEMM-based implementation: lstm_small 32x1x64 /
  // 128x1x64 took 65 / 258 us on one thread there, 109 / 427 us with the brgemm one that
  // any-format weights select (from batch 2 brgemm is as fast or faster: 32x2x64 117 vs 126 us,
  // 128x16x64 1.97 vs 2.04 ms). Batch 1 uses it once it pays (kGemmRnnAfterCalls).
  const tag w_tag = k.gemm ? tag::ldigo : tag::any;
  const dnnl::memory::desc wl_any({1, D, k.input, G, H}, dt::f32, w_tag);
  const dnnl::memory::desc wi_any({1, D, H, G, H}, dt::f32, w_tag);
  // Always a bias (zeros without B): oneDNN 2.6 found no LSTM implementation without one.
  e->bias_md = dnnl::memory::desc({1, D, bias_gates(k.cell), H}, dt::f32, tag::ldgo);
  if (k.has_peep) e->peep_md = dnnl::memory::desc({1, D, 3, H}, dt::f32, tag::ldgo);
  const dnnl::rnn_direction dir = D == 2 ? dnnl::rnn_direction::bidirectional_concat
                                  : k.reverse ? dnnl::rnn_direction::unidirectional_right2left
                                              : dnnl::rnn_direction::unidirectional_left2right;
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  auto finish = [&](const auto& pd) {
    e->wl_md = pd.weights_layer_desc();
    e->wi_md = pd.weights_iter_desc();
    e->scratch_md = pd.scratchpad_desc();
  };
  const auto fwd = dnnl::prop_kind::forward_inference;
  if (k.cell == RnnCell::kLstm) {
    dnnl::lstm_forward::desc d(fwd, dir, e->src_md, init_md, init_md, wl_any, wi_any, e->peep_md,
                               e->bias_md, e->dst_md, e->state_md, e->state_md);
    dnnl::lstm_forward::primitive_desc pd(d, attr, cpu_engine());
    finish(pd);
    e->prim = dnnl::lstm_forward(pd);
  } else if (k.cell == RnnCell::kGru) {
    dnnl::gru_forward::desc d(fwd, dir, e->src_md, init_md, wl_any, wi_any, e->bias_md, e->dst_md,
                              e->state_md);
    dnnl::gru_forward::primitive_desc pd(d, attr, cpu_engine());
    finish(pd);
    e->prim = dnnl::gru_forward(pd);
  } else {
    dnnl::lbr_gru_forward::desc d(fwd, dir, e->src_md, init_md, wl_any, wi_any, e->bias_md,
                                  e->dst_md, e->state_md);
    dnnl::lbr_gru_forward::primitive_desc pd(d, attr, cpu_engine());
    finish(pd);
    e->prim = dnnl::lbr_gru_forward(pd);
  }
  return e;
}

// The weights of one LSTM / GRU in the primitive's layouts (bias = Wb + Rb, peepholes permuted).
struct PreparedWeights {
  dnnl::memory wl, wi, bias, peep;
  Tensor keep_w, keep_r, keep_b, keep_p;  // constant tensors: their storage stays ours
  size_t bytes = 0;
};

// ONNX gate of oneDNN gate g.
int onnx_gate(RnnCell c, int g) { return c == RnnCell::kLstm ? kLstmFrom[g] : g; }

// `src` [D][G][H*K] in ONNX gate order -> `dst` in oneDNN gate order.
void permute_gates(RnnCell c, const float* src, int64_t D, int64_t hk, float* dst) {
  const int G = static_cast<int>(gates(c));
  for (int64_t d = 0; d < D; ++d)
    for (int g = 0; g < G; ++g)
      std::copy(src + (d * G + onnx_gate(c, g)) * hk, src + (d * G + onnx_gate(c, g) + 1) * hk,
                dst + (d * G + g) * hk);
}

// `user` (a plain layout on `data`) reordered into a new memory of `want`.
dnnl::memory reordered(const dnnl::memory::desc& user, const dnnl::memory::desc& want, float* data,
                       dnnl::stream& s) {
  dnnl::memory src(user, cpu_engine(), data);
  dnnl::memory out(want, cpu_engine());
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::reorder::primitive_desc rpd(cpu_engine(), user, cpu_engine(), want, attr);
  dnnl::memory scratch(rpd.scratchpad_desc(), cpu_engine());
  dnnl::reorder(rpd).execute(s, {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, out}, {DNNL_ARG_SCRATCHPAD, scratch}});
  s.wait();
  return out;
}

std::shared_ptr<PreparedWeights> prepare(const RnnDnnlArgs& a, const RnnEntry& e, dnnl::stream& s) {
  const int64_t D = a.dirs, H = a.hidden, I = a.input, G = gates(a.cell), BG = bias_gates(a.cell);
  auto pw = std::make_shared<PreparedWeights>();
  std::vector<float> tmp(static_cast<size_t>(D * G * H * std::max(I, H)));
  permute_gates(a.cell, a.w, D, H * I, tmp.data());
  pw->wl = reordered(dnnl::memory::desc({1, D, I, G, H}, dt::f32, tag::ldgoi), e.wl_md, tmp.data(), s);
  permute_gates(a.cell, a.r, D, H * H, tmp.data());
  pw->wi = reordered(dnnl::memory::desc({1, D, H, G, H}, dt::f32, tag::ldgoi), e.wi_md, tmp.data(), s);
  pw->bytes = e.wl_md.get_size() + e.wi_md.get_size();
  // oneDNN adds one bias per gate: Wb + Rb, summed here in float32 (see rnn.cc on rounding);
  // zeros without B. linear_before_reset keeps Rbh apart (oneDNN's fourth bias, added to
  // R_h * h before the reset gate multiplies it) and Wbh alone as the third.
  pw->bias = dnnl::memory(e.bias_md, cpu_engine());
  float* bias = static_cast<float*>(pw->bias.get_data_handle());
  for (int64_t d = 0; d < D; ++d)
    for (int g = 0; g < BG; ++g)
      for (int64_t j = 0; j < H; ++j) {
        float v = 0.f;
        if (a.b) {
          const float* bd = a.b + d * 2 * G * H;
          if (a.cell == RnnCell::kLbrGru && g == 2) v = bd[2 * H + j];             // Wbh
          else if (a.cell == RnnCell::kLbrGru && g == 3) v = bd[(G + 2) * H + j];  // Rbh
          else v = bd[onnx_gate(a.cell, g) * H + j] + bd[(G + onnx_gate(a.cell, g)) * H + j];
        }
        bias[(d * BG + g) * H + j] = v;
      }
  pw->bytes += e.bias_md.get_size();
  if (a.p) {
    pw->peep = dnnl::memory(e.peep_md, cpu_engine());
    float* peep = static_cast<float*>(pw->peep.get_data_handle());
    for (int64_t d = 0; d < D; ++d)
      for (int g = 0; g < 3; ++g)
        std::copy(a.p + (d * 3 + kPeepFrom[g]) * H, a.p + (d * 3 + kPeepFrom[g] + 1) * H,
                  peep + (d * 3 + g) * H);
    pw->bytes += e.peep_md.get_size();
  }
  return pw;
}

// Prepared weights of constant tensors, by their data pointers (the entries hold the tensors,
// so the storage cannot be reused while cached) and the primitive's weight layouts. Bounded in
// bytes: cleared whole past the budget.
class WeightsCache {
 public:
  std::shared_ptr<PreparedWeights> get(const RnnDnnlArgs& a, const RnnEntry& e, dnnl::stream& s) {
    const Key key{a.w, a.r, a.b, a.p};
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = items_.find(key);
      if (it != items_.end())
        for (const Item& item : it->second)
          if (item.cell == a.cell && item.wl_md == e.wl_md && item.wi_md == e.wi_md) return item.weights;
    }
    std::shared_ptr<PreparedWeights> pw = prepare(a, e, s);
    pw->keep_w = *a.constant_w;
    pw->keep_r = *a.constant_r;
    if (a.constant_b) pw->keep_b = *a.constant_b;
    if (a.constant_p) pw->keep_p = *a.constant_p;
    std::lock_guard<std::mutex> lock(mu_);
    if (bytes_ + pw->bytes > kBudget) {
      items_.clear();
      bytes_ = 0;
    }
    items_[key].push_back(Item{a.cell, e.wl_md, e.wi_md, pw});
    bytes_ += pw->bytes;
    return pw;
  }

 private:
  using Key = std::tuple<const float*, const float*, const float*, const float*>;
  struct Item {
    RnnCell cell;
    dnnl::memory::desc wl_md, wi_md;
    std::shared_ptr<PreparedWeights> weights;
  };
  static constexpr size_t kBudget = size_t{64} << 20;
  std::mutex mu_;
  std::map<Key, std::vector<Item>> items_;
  size_t bytes_ = 0;
};

// True when OpenMP's idle threads sleep at once (OMP_WAIT_POLICY=passive or GOMP_SPINCOUNT=0;
// libgomp reads both when it loads, so once is enough). The LSTM opens a parallel region per
// time step: with sleeping threads each pays a futex wake, and a team made lstm_small 3x slower
// than one thread (128x16x64: 3.58 vs 1.94 ms p50; with the CLI's spin, then 1,000
// iterations, 1.15 ms).
bool openmp_threads_sleep() {
  static const bool sleep = [] {
    const char* policy = std::getenv("OMP_WAIT_POLICY");
    const char* spin = std::getenv("GOMP_SPINCOUNT");
    return (policy && strcasecmp(policy, "passive") == 0) || (spin && std::strcmp(spin, "0") == 0);
  }();
  return sleep;
}

// Per-thread reused float buffers for the copies a layout needs (no allocation per call):
// slots 0 / 1 initial h / c, 2 / 3 final h / c, 4 Y.
float* temp(int slot, int64_t n) {
  thread_local std::vector<float> bufs[5];
  std::vector<float>& b = bufs[slot];
  if (b.size() < static_cast<size_t>(n)) b.resize(static_cast<size_t>(n));
  return b.data();
}

// [a, b, rest] -> [b, a, rest].
void swap01(const float* src, int64_t a, int64_t b, int64_t rest, float* dst) {
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j)
      std::copy(src + (i * b + j) * rest, src + (i * b + j + 1) * rest, dst + (j * a + i) * rest);
}

}  // namespace

void set_rnn_dnnl_enabled(bool enabled) { g_enabled.store(enabled); }
bool rnn_dnnl_enabled() { return g_enabled.load(std::memory_order_relaxed); }
uint64_t rnn_dnnl_runs() { return g_runs.load(std::memory_order_relaxed); }
void set_rnn_gemm_after_batch1_calls(uint64_t calls) { g_gemm_after.store(calls); }

Status dnnl_rnn_f32(const RnnDnnlArgs& a) {
  static PrimitiveCache<RnnKey, RnnEntry> cache(kPrimitiveCacheEntries);
  static WeightsCache weights_cache;
  const int64_t S = a.seq, N = a.batch, H = a.hidden, D = a.dirs;
  const bool lstm = a.cell == RnnCell::kLstm;
  // The thread count follows one step's products (every step is a parallel region).
  const int used_threads = openmp_threads_sleep()
      ? 1 : parallel_threads(D * N * gates(a.cell) * H * (a.input + H), a.threads);
  set_dnnl_threads(used_threads);
  try {
    const bool has_init = a.h0 || (lstm && a.c0);
    const bool gemm = N == 1 && g_batch1_calls.fetch_add(1, std::memory_order_relaxed) >=
                                    g_gemm_after.load(std::memory_order_relaxed);
    const RnnKey key{a.cell, S, N, a.input, H, D, a.reverse, a.layout1, a.p != nullptr, has_init,
                     used_threads, gemm};
    std::shared_ptr<RnnEntry> e = cache.get(key, [&] { return make_rnn(key); });
    dnnl::engine& eng = cpu_engine();
    dnnl::stream& s = thread_stream();
    const bool constant = a.constant_w && a.constant_r && (!a.b || a.constant_b) && (!a.p || a.constant_p);
    std::shared_ptr<PreparedWeights> pw = constant ? weights_cache.get(a, *e, s) : prepare(a, *e, s);

    // States: ldnc [1, D, N, H] is layout 0's [D, N, H]; layout 1's [N, D, H] is the same
    // memory when D = 1, else copied.
    const int64_t state_n = D * N * H;
    const bool copy_states = a.layout1 && D == 2;
    auto state_in = [&](const float* v, int slot) -> float* {
      float* t = temp(slot, state_n);
      if (!v) std::fill(t, t + state_n, 0.f);
      else if (copy_states) swap01(v, N, D, H, t);
      else return const_cast<float*>(v);
      return t;
    };
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC_LAYER, dnnl::memory(e->src_md, eng, const_cast<float*>(a.x))},
        {DNNL_ARG_WEIGHTS_LAYER, pw->wl},
        {DNNL_ARG_WEIGHTS_ITER, pw->wi}};
    if (has_init) {
      args.emplace(DNNL_ARG_SRC_ITER, dnnl::memory(e->state_md, eng, state_in(a.h0, 0)));
      if (lstm) args.emplace(DNNL_ARG_SRC_ITER_C, dnnl::memory(e->state_md, eng, state_in(a.c0, 1)));
    }
    args.emplace(DNNL_ARG_BIAS, pw->bias);
    if (lstm && a.p) args.emplace(DNNL_ARG_WEIGHTS_PEEPHOLE, pw->peep);
    // Y: layout 1 ([N, S, D, H]) and layout 0 with D = 1 are oneDNN's dst_layer as they are;
    // layout 0 bidirectional ([S, D, N, H]) is copied from [S, N, D*H].
    const bool copy_y = !a.y || (!a.layout1 && D == 2);
    float* ydst = copy_y ? temp(4, S * N * D * H) : a.y;
    float* yh = a.yh && !copy_states ? a.yh : temp(2, state_n);
    float* yc = a.yc && !copy_states ? a.yc : temp(3, state_n);
    args.emplace(DNNL_ARG_DST_LAYER, dnnl::memory(e->dst_md, eng, ydst));
    args.emplace(DNNL_ARG_DST_ITER, dnnl::memory(e->state_md, eng, yh));
    if (lstm) args.emplace(DNNL_ARG_DST_ITER_C, dnnl::memory(e->state_md, eng, yc));
    if (e->scratch_md.get_size() != 0)
      args.emplace(DNNL_ARG_SCRATCHPAD, call_buffer(CallSlot::kScratch, e->scratch_md));
    e->prim.execute(s, args);
    s.wait();
    if (a.y && copy_y)
      for (int64_t t = 0; t < S; ++t)
        for (int64_t n = 0; n < N; ++n)
          for (int64_t d = 0; d < D; ++d)
            std::copy(ydst + ((t * N + n) * D + d) * H, ydst + ((t * N + n) * D + d + 1) * H,
                      a.y + ((t * D + d) * N + n) * H);
    if (copy_states) {
      if (a.yh) swap01(yh, D, N, H, a.yh);
      if (lstm && a.yc) swap01(yc, D, N, H, a.yc);
    }
  } catch (const dnnl::error& err) {
    return internal_error("oneDNN {} failed for S={} N={} I={} H={} D={}: {}", lstm ? "LSTM" : "GRU",
                          S, N, a.input, H, D, err.what());
  }
  g_runs.fetch_add(1, std::memory_order_relaxed);
  return Status();
}

}  // namespace tierjit::interp::nn
