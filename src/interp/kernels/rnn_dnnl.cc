// oneDNN LSTM glue (rnn_dnnl.h): ONNX LSTM -> dnnl::lstm_forward. Primitives are cached per
// geometry and thread count (PrimitiveCache, dnnl_internal.h); the weights are permuted from
// ONNX's gate order (i, o, f, c) to oneDNN's (i, f, c~, o) and reordered into the primitive's
// blocked layout, once per set of constant weight tensors (a small cache here) or per call.
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

struct LstmKey {
  int64_t seq, batch, input, hidden, dirs;
  bool reverse, layout1, has_peep, has_init;
  int threads;
  bool operator<(const LstmKey& o) const {
    auto tie = [](const LstmKey& k) {
      return std::tie(k.seq, k.batch, k.input, k.hidden, k.dirs, k.reverse, k.layout1, k.has_peep,
                      k.has_init, k.threads);
    };
    return tie(*this) < tie(o);
  }
};

struct LstmEntry {
  dnnl::lstm_forward prim;
  dnnl::memory::desc src_md, dst_md, state_md, wl_md, wi_md, bias_md, peep_md, scratch_md;
};

std::shared_ptr<LstmEntry> make_lstm(const LstmKey& k) {
  const int64_t D = k.dirs, H = k.hidden;
  auto e = std::make_shared<LstmEntry>();
  const tag data_tag = k.layout1 ? tag::ntc : tag::tnc;
  e->src_md = dnnl::memory::desc({k.seq, k.batch, k.input}, dt::f32, data_tag);
  e->dst_md = dnnl::memory::desc({k.seq, k.batch, D * H}, dt::f32, data_tag);
  e->state_md = dnnl::memory::desc({1, D, k.batch, H}, dt::f32, tag::ldnc);
  const dnnl::memory::desc init_md = k.has_init ? e->state_md : dnnl::memory::desc();
  const dnnl::memory::desc wl_any({1, D, k.input, 4, H}, dt::f32, tag::any);
  const dnnl::memory::desc wi_any({1, D, H, 4, H}, dt::f32, tag::any);
  // Always a bias (zeros without B): oneDNN 2.6 finds no LSTM implementation without one.
  e->bias_md = dnnl::memory::desc({1, D, 4, H}, dt::f32, tag::ldgo);
  if (k.has_peep) e->peep_md = dnnl::memory::desc({1, D, 3, H}, dt::f32, tag::ldgo);
  const dnnl::rnn_direction dir = D == 2 ? dnnl::rnn_direction::bidirectional_concat
                                  : k.reverse ? dnnl::rnn_direction::unidirectional_right2left
                                              : dnnl::rnn_direction::unidirectional_left2right;
  dnnl::lstm_forward::desc d(dnnl::prop_kind::forward_inference, dir, e->src_md, init_md, init_md,
                             wl_any, wi_any, e->peep_md, e->bias_md, e->dst_md, e->state_md,
                             e->state_md);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::lstm_forward::primitive_desc pd(d, attr, cpu_engine());
  e->wl_md = pd.weights_layer_desc();
  e->wi_md = pd.weights_iter_desc();
  e->scratch_md = pd.scratchpad_desc();
  e->prim = dnnl::lstm_forward(pd);
  return e;
}

// The weights of one LSTM in the primitive's layouts (bias = Wb + Rb, peepholes permuted).
struct PreparedWeights {
  dnnl::memory wl, wi, bias, peep;
  Tensor keep_w, keep_r, keep_b, keep_p;  // constant tensors: their storage stays ours
  size_t bytes = 0;
};

// `src` [D][4][H*K] in ONNX gate order -> `dst` in oneDNN gate order.
void permute_gates(const float* src, int64_t D, int64_t hk, float* dst) {
  for (int64_t d = 0; d < D; ++d)
    for (int g = 0; g < 4; ++g)
      std::copy(src + (d * 4 + kLstmFrom[g]) * hk, src + (d * 4 + kLstmFrom[g] + 1) * hk,
                dst + (d * 4 + g) * hk);
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

std::shared_ptr<PreparedWeights> prepare(const LstmDnnlArgs& a, const LstmEntry& e, dnnl::stream& s) {
  const int64_t D = a.dirs, H = a.hidden, I = a.input;
  auto pw = std::make_shared<PreparedWeights>();
  std::vector<float> tmp(static_cast<size_t>(D * 4 * H * std::max(I, H)));
  permute_gates(a.w, D, H * I, tmp.data());
  pw->wl = reordered(dnnl::memory::desc({1, D, I, 4, H}, dt::f32, tag::ldgoi), e.wl_md, tmp.data(), s);
  permute_gates(a.r, D, H * H, tmp.data());
  pw->wi = reordered(dnnl::memory::desc({1, D, H, 4, H}, dt::f32, tag::ldgoi), e.wi_md, tmp.data(), s);
  pw->bytes = e.wl_md.get_size() + e.wi_md.get_size();
  // oneDNN adds one bias: Wb + Rb, summed here in float32 (see rnn.cc on rounding); zeros
  // without B.
  pw->bias = dnnl::memory(e.bias_md, cpu_engine());
  float* bias = static_cast<float*>(pw->bias.get_data_handle());
  for (int64_t d = 0; d < D; ++d)
    for (int g = 0; g < 4; ++g)
      for (int64_t j = 0; j < H; ++j)
        bias[(d * 4 + g) * H + j] =
            a.b ? a.b[(d * 8 + kLstmFrom[g]) * H + j] + a.b[(d * 8 + 4 + kLstmFrom[g]) * H + j] : 0.f;
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
  std::shared_ptr<PreparedWeights> get(const LstmDnnlArgs& a, const LstmEntry& e, dnnl::stream& s) {
    const Key key{a.w, a.r, a.b, a.p};
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = items_.find(key);
      if (it != items_.end())
        for (const Item& item : it->second)
          if (item.wl_md == e.wl_md && item.wi_md == e.wi_md) return item.weights;
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
    items_[key].push_back(Item{e.wl_md, e.wi_md, pw});
    bytes_ += pw->bytes;
    return pw;
  }

 private:
  using Key = std::tuple<const float*, const float*, const float*, const float*>;
  struct Item {
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
// than one thread (128x16x64: 3.58 vs 1.94 ms p50; with the CLI's short spin 1.15 ms).
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

void set_lstm_dnnl_enabled(bool enabled) { g_enabled.store(enabled); }
bool lstm_dnnl_enabled() { return g_enabled.load(std::memory_order_relaxed); }
uint64_t lstm_dnnl_runs() { return g_runs.load(std::memory_order_relaxed); }

Status dnnl_lstm_f32(const LstmDnnlArgs& a) {
  static PrimitiveCache<LstmKey, LstmEntry> cache(kPrimitiveCacheEntries);
  static WeightsCache weights_cache;
  const int64_t S = a.seq, N = a.batch, H = a.hidden, D = a.dirs;
  // The thread count follows one step's products (every step is a parallel region).
  const int used_threads =
      openmp_threads_sleep() ? 1 : parallel_threads(D * N * 4 * H * (a.input + H), a.threads);
  set_dnnl_threads(used_threads);
  try {
    const bool has_init = a.h0 || a.c0;
    const LstmKey key{S, N, a.input, H, D, a.reverse, a.layout1, a.p != nullptr, has_init,
                      used_threads};
    std::shared_ptr<LstmEntry> e = cache.get(key, [&] { return make_lstm(key); });
    dnnl::engine& eng = cpu_engine();
    dnnl::stream s(eng);
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
      args.emplace(DNNL_ARG_SRC_ITER_C, dnnl::memory(e->state_md, eng, state_in(a.c0, 1)));
    }
    args.emplace(DNNL_ARG_BIAS, pw->bias);
    if (a.p) args.emplace(DNNL_ARG_WEIGHTS_PEEPHOLE, pw->peep);
    // Y: layout 1 ([N, S, D, H]) and layout 0 with D = 1 are oneDNN's dst_layer as they are;
    // layout 0 bidirectional ([S, D, N, H]) is copied from [S, N, D*H].
    const bool copy_y = !a.y || (!a.layout1 && D == 2);
    float* ydst = copy_y ? temp(4, S * N * D * H) : a.y;
    float* yh = a.yh && !copy_states ? a.yh : temp(2, state_n);
    float* yc = a.yc && !copy_states ? a.yc : temp(3, state_n);
    args.emplace(DNNL_ARG_DST_LAYER, dnnl::memory(e->dst_md, eng, ydst));
    args.emplace(DNNL_ARG_DST_ITER, dnnl::memory(e->state_md, eng, yh));
    args.emplace(DNNL_ARG_DST_ITER_C, dnnl::memory(e->state_md, eng, yc));
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
      if (a.yc) swap01(yc, D, N, H, a.yc);
    }
  } catch (const dnnl::error& err) {
    return internal_error("oneDNN LSTM failed for S={} N={} I={} H={} D={}: {}", S, N, a.input, H,
                          D, err.what());
  }
  g_runs.fetch_add(1, std::memory_order_relaxed);
  return Status();
}

}  // namespace tierjit::interp::nn
