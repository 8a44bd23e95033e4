// Tier-0 conv chains (see conv_chain.h), running: every intermediate in the chain's layout
// (channels-last, or blocks of 8 channels on AVX2-only CPUs: chain_layout), shapes resolved once
// per distinct set of input shapes, calls of several images split by images over the intra-op
// threads. The activations and Adds run their own tier-0 kernels on the chain's buffers
// (elementwise on equal shapes: the layout does not matter, results are bit-identical).
// Planning: conv_chain.cc.
#include "interp/kernels/conv_chain.h"

#include <algorithm>
#include <atomic>
#include <optional>

#include "interp/executor.h"
#include "interp/kernels/conv_chain_bounds.h"
#include "interp/kernels/conv_fusion.h"
#include "kernels/cpu_features.h"
#include "interp/kernels/direct_conv.h"
#include "interp/kernels/nn_common.h"
#include "kernels/parallel_for.h"
#include "interp/kernels/tensor_internal.h"
#include "interp/registry.h"
#include "support/cpu_load.h"

namespace tierjit::interp {

using nn::ActLayout;

namespace {
std::atomic<uint64_t> g_residual_sums{0};  // conv_chain_residual_sums()
std::atomic<uint64_t> g_image_splits{0};   // conv_chain_image_splits()
// set_conv_chain_layout_for_testing: -1 the CPU's choice, else an ActLayout.
std::atomic<int> g_forced_layout{-1};
}  // namespace

void set_conv_chain_layout_for_testing(std::optional<nn::ActLayout> layout) {
  g_forced_layout.store(layout ? static_cast<int>(*layout) : -1);
}

uint64_t conv_chain_residual_sums() { return g_residual_sums.load(std::memory_order_relaxed); }
uint64_t conv_chain_image_splits() { return g_image_splits.load(std::memory_order_relaxed); }

struct ConvChain::Resolved {
  std::vector<int64_t> key;           // call_key()
  std::vector<Shape> shapes;          // per slot, plain
  std::vector<nn::ConvGeometry> geo;  // per step: its convolution (kConv steps)
  std::vector<nn::Window> win;        // per step: its window (kMaxPool steps)
  int64_t most = 0;                   // elements of the largest intermediate but the exit
  ActLayout inner = ActLayout::kChannelsLast;  // the intermediates' layout (chain_layout)
};

namespace {

// A value while a chain runs: `buf` holds it in `layout` (a tensor of the plain `shape` either
// way); `inner` caches the copy of a plain one in the chain's layout.
struct Slot {
  Tensor buf, inner;
  ActLayout layout = ActLayout::kPlain;
  Shape shape;
};

// A Conv step's operands: the source in the layout it is at hand in (the chain's layout `l` when
// it is or has a copy so), the weights (and whether they are the graph's constant, so packed copies
// can be kept), the bias or null.
struct ConvOperands {
  ActLayout xl;
  const float* x;
  const float* w;
  const Tensor* constant_w;
  const float* bias;
};

ConvOperands conv_operands(const Slot& a, const ir::Node& n, const Frame& frame, ActLayout l) {
  ConvOperands o;
  o.xl = a.layout == l || a.inner.defined() ? l : ActLayout::kPlain;
  o.x = o.xl == a.layout ? a.buf.data<float>() : a.inner.data<float>();
  const ir::Value* wv = n.input(1);
  const Tensor& w = frame.values[wv->id()];
  o.w = w.data<float>();
  o.constant_w = wv->is_constant() && w.shares_storage_with(wv->constant()) ? &w : nullptr;
  const Tensor* b = n.input(2) ? &frame.values[n.input(2)->id()] : nullptr;
  o.bias = b && b->defined() ? b->data<float>() : nullptr;
  return o;
}

// True if a tensor of plain shape `s` [N, C, spatial...] is stored the same plain and in `l`:
// one position (for kBlocked8, of a multiple of 8 channels: no padding), or (channels-last) one
// channel.
bool layouts_coincide(const Shape& s, ActLayout l) {
  if (l == ActLayout::kChannelsLast && s[1] == 1) return true;
  if (l == ActLayout::kBlocked8 && s[1] % 8 != 0) return false;
  return std::all_of(s.begin() + 2, s.end(), [](int64_t d) { return d == 1; });
}

bool fits(const Tensor& t) {
  if (!t.defined() || t.dtype() != DType::kFloat32 || t.rank() < 3 || t.rank() > 5) return false;
  for (int64_t d : t.shape())
    if (d <= 0) return false;
  return true;
}

// Element strides of a tensor of plain shape `s` [N, C, spatial...] stored in layout `l`
// (kPlain or kChannelsLast).
void layout_strides(const Shape& s, ActLayout l, int64_t* strides) {
  const size_t r = s.size();
  int64_t step = 1;
  if (l == ActLayout::kPlain) {
    for (size_t d = r; d-- > 0;) {
      strides[d] = step;
      step *= s[d];
    }
    return;
  }
  strides[1] = 1;  // channels-last: [N, spatial..., C]
  step = s[1];
  for (size_t d = r; d-- > 2;) {
    strides[d] = step;
    step *= s[d];
  }
  strides[0] = step;
}

// Element strides of a tensor of plain shape `s` [N, C, spatial...] (C a multiple of 8) stored
// in layout `l`, seen as [N, C / 8, 8, spatial...] (one dim more: a kBlocked8 tensor is no
// strided view of the plain shape).
void split_strides(const Shape& s, ActLayout l, int64_t* strides) {
  const size_t r = s.size();
  int64_t positions = 1;
  for (size_t d = 2; d < r; ++d) positions *= s[d];
  int64_t inner = l == ActLayout::kPlain ? 1 : l == ActLayout::kChannelsLast ? s[1] : 8;
  for (size_t d = r; d-- > 2;) {  // spatial dims: row-major, times the channels stored per position
    strides[d + 1] = inner;
    inner *= s[d];
  }
  strides[0] = s[1] * positions;
  if (l == ActLayout::kPlain) {
    strides[1] = 8 * positions;
    strides[2] = positions;
  } else {
    strides[1] = l == ActLayout::kChannelsLast ? 8 : 8 * positions;
    strides[2] = 1;
  }
}

// Copies the float32 tensor of plain shape `shape` (rank 3-5) from layout `from` at x to
// layout `to` at y: a transpose by register tiles (strided_copy_plain), no oneDNN reorder to
// create per shape.
void copy_layout(const Shape& shape, ActLayout from, const float* x, ActLayout to, float* y,
                 int threads) {
  int64_t xs[6], ys[6];
  if (from == ActLayout::kBlocked8 || to == ActLayout::kBlocked8) {
    Shape split{shape[0], shape[1] / 8, 8};
    split.insert(split.end(), shape.begin() + 2, shape.end());
    split_strides(shape, from, xs);
    split_strides(shape, to, ys);
    strided_copy_plain(y, ys, x, xs, split.data(), split.size(), sizeof(float), threads);
    return;
  }
  layout_strides(shape, from, xs);
  layout_strides(shape, to, ys);
  strided_copy_plain(y, ys, x, xs, shape.data(), shape.size(), sizeof(float), threads);
}

// Slot `s` in the chain's layout `l` (the copy made once for a plain one).
const Tensor* as_inner(Slot& s, ActLayout l, int threads) {
  if (s.layout == l) return &s.buf;
  if (!s.inner.defined()) {
    s.inner = Tensor::empty(DType::kFloat32, s.shape);
    copy_layout(s.shape, ActLayout::kPlain, s.buf.data<float>(), l, s.inner.data<float>(), threads);
  }
  return &s.inner;
}

// MaxPool of window `w` on x of plain shape `shape` in the chain's layout `l` into y (the same
// layout): a kBlocked8 tensor is the channels-last tensor [N * C / 8, 8, spatial...].
void max_pool_inner(const nn::Window& w, const Shape& shape, const float* x, float* y,
                    ActLayout l, int threads) {
  if (l == ActLayout::kChannelsLast) return max_pool_channels_last(w, shape, x, y, threads);
  Shape blocks = shape;
  blocks[0] = shape[0] * shape[1] / 8;
  blocks[1] = 8;
  max_pool_channels_last(w, blocks, x, y, threads);
}

// MaxPool window `w` on the output of convolution `g` as a pool the direct kernel applies
// before storing (nn::MaxPoolAfter): 2-D windows tiling the output (strides equal to the
// kernel, no pads, dilation 1, floor-sized, at least one window per axis); else nullopt.
std::optional<nn::MaxPoolAfter> pool_after(const nn::ConvGeometry& g, const nn::Window& w) {
  if (w.kernel.size() != 2 || g.out_spatial.size() != 2 || w.out.size() != 2) return std::nullopt;
  for (size_t i = 0; i < 2; ++i) {
    const int64_t k = w.kernel[i];
    if (k < 1 || w.strides[i] != k || w.dilations[i] != 1 || w.pad_begin[i] != 0 ||
        w.pad_end[i] != 0 || w.out[i] < 1 || w.out[i] != g.out_spatial[i] / k)
      return std::nullopt;
  }
  return nn::MaxPoolAfter{w.kernel[0], w.kernel[1]};
}

// The layout a chain keeps its intermediates in for a call of slot shapes `shapes`
// (conv_chain.h, set_conv_chain_layout_for_testing): kBlocked8 on CPUs without AVX-512F when
// every value that may be laid out so has a multiple of 8 channels (the internal ones, and the
// external ones a step other than a Conv reads: a Conv reads a plain source as it is).
ActLayout chain_layout(const ConvChain& c, const std::vector<Shape>& shapes) {
  const int forced = g_forced_layout.load(std::memory_order_relaxed);
  const ActLayout want = forced >= 0          ? static_cast<ActLayout>(forced)
                         : kernels::cpu_has_avx512f() ? ActLayout::kChannelsLast
                                             : ActLayout::kBlocked8;
  if (want != ActLayout::kBlocked8) return ActLayout::kChannelsLast;
  std::vector<bool> converted(c.values.size(), false);
  for (size_t i = 0; i < c.values.size(); ++i) converted[i] = !c.external[i];
  for (const ConvChain::Step& st : c.steps)
    if (st.kind != ConvChain::Kind::kConv)
      for (int s : st.in)
        if (s >= 0) converted[static_cast<size_t>(s)] = true;
  for (size_t i = 0; i < shapes.size(); ++i)
    if (converted[i] && shapes[i][1] % 8 != 0) return ActLayout::kChannelsLast;
  return ActLayout::kBlocked8;
}

// The tensors of a call's external slots (undefined for internal ones): the frame's values, or
// batch slices of them when the chain runs split by images (run_conv_chain).
using ExternalTensors = std::vector<Tensor>;

ExternalTensors external_tensors(const ConvChain& c, const Frame& frame) {
  ExternalTensors ext(c.values.size());
  for (size_t i = 0; i < c.values.size(); ++i)
    if (c.external[i]) ext[i] = frame.values[c.values[i]->id()];
  return ext;
}

// The key of a call's shapes: the memory limit, then dtype, rank and dims of every external
// slot's tensor and of each Conv's W and B (all that resolve() reads besides constant
// attributes).
void call_key(const ConvChain& c, const ExternalTensors& ext, const Frame& frame,
              const ExecOptions& options, std::vector<int64_t>& key) {
  key.clear();
  key.push_back(options.memory_limit_bytes);
  auto add = [&](const Tensor* t) {
    if (!t || !t->defined()) {
      key.push_back(-1);
      return;
    }
    key.push_back(static_cast<int64_t>(t->dtype()));
    key.push_back(t->rank());
    key.insert(key.end(), t->shape().begin(), t->shape().end());
  };
  for (size_t i = 0; i < c.values.size(); ++i)
    if (c.external[i]) add(&ext[i]);
  for (const ConvChain::Step& st : c.steps)
    if (st.kind == ConvChain::Kind::kConv)
      for (size_t k = 1; k < st.node->num_inputs(); ++k)
        add(st.node->input(k) ? &frame.values[st.node->input(k)->id()] : nullptr);
}

// Resolves the shapes of a call (keyed `key`), or null when anything is unexpected: the
// chain then leaves the call to the kernels, before any work.
std::shared_ptr<const ConvChain::Resolved> resolve(const ConvChain& c, const ExternalTensors& ext,
                                                   const Frame& frame, const ExecOptions& options,
                                                   const SubgraphRunner& runner,
                                                   const std::vector<int64_t>& key) {
  using Kind = ConvChain::Kind;
  auto r = std::make_shared<ConvChain::Resolved>();
  r->key = key;
  r->shapes.resize(c.values.size());
  r->geo.resize(c.steps.size());
  r->win.resize(c.steps.size());
  std::vector<Tensor> none;
  std::vector<const Tensor*> in_ptrs;
  for (size_t i = 0; i < c.values.size(); ++i) {
    if (!c.external[i]) continue;
    if (!fits(ext[i])) return nullptr;
    r->shapes[i] = ext[i].shape();
  }
  for (size_t si = 0; si < c.steps.size(); ++si) {
    const ConvChain::Step& st = c.steps[si];
    const Shape& x = r->shapes[static_cast<size_t>(st.in[0])];
    Shape& y = r->shapes[static_cast<size_t>(st.out)];
    if (st.kind == Kind::kConv) {
      in_ptrs.assign(st.node->num_inputs(), nullptr);
      for (size_t k = 1; k < st.node->num_inputs(); ++k)
        if (st.node->input(k)) in_ptrs[k] = &frame.values[st.node->input(k)->id()];
      KernelContext ctx(*st.node, in_ptrs, none, options, &runner);
      Expected<nn::ConvGeometry> g = nn::conv_chain_geometry(ctx, x);
      if (!g.ok()) return nullptr;
      r->geo[si] = std::move(*g);
      y = {r->geo[si].batch, r->geo[si].out_channels};
      y.insert(y.end(), r->geo[si].out_spatial.begin(), r->geo[si].out_spatial.end());
      if (x.size() != y.size() || !ctx.check_size(DType::kFloat32, y).ok()) return nullptr;
    } else if (st.kind == Kind::kMaxPool) {
      in_ptrs.clear();
      KernelContext ctx(*st.node, in_ptrs, none, options, &runner);
      const std::vector<int64_t> spatial(x.begin() + 2, x.end());
      Expected<nn::Window> w = nn::resolve_window(ctx, spatial, st.node->attr_ints("kernel_shape"),
                                                  st.node->attr_int("ceil_mode", 0) != 0);
      if (!w.ok() || !nn::check_pool_pads(ctx, *w).ok()) return nullptr;  // the kernel's error
      r->win[si] = std::move(*w);
      y = {x[0], x[1]};
      y.insert(y.end(), r->win[si].out.begin(), r->win[si].out.end());
      if (shape_numel(y) == 0) return nullptr;
    } else {
      if (st.kind == Kind::kAdd && r->shapes[static_cast<size_t>(st.in[1])] != x) return nullptr;
      y = x;
    }
  }
  const size_t exit = static_cast<size_t>(c.steps.back().out);
  for (size_t i = 0; i < c.values.size(); ++i)
    if (!c.external[i] && i != exit) r->most = std::max(r->most, shape_numel(r->shapes[i]));
  r->inner = chain_layout(c, r->shapes);
  return r;
}

// The call's resolved shapes: from the chain's list when seen before (moved to the front),
// else resolved and added (the least recently used dropped past ConvChain::kResolvedKept).
std::shared_ptr<const ConvChain::Resolved> resolved_for(const ConvChain& c,
                                                        const ExternalTensors& ext,
                                                        const Frame& frame,
                                                        const ExecOptions& options,
                                                        const SubgraphRunner& runner) {
  thread_local std::vector<int64_t> key;
  call_key(c, ext, frame, options, key);
  {
    std::lock_guard<std::mutex> lock(c.resolved_mu);
    auto& list = c.resolved;
    for (size_t i = 0; i < list.size(); ++i)
      if (list[i]->key == key) {
        std::rotate(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(i),
                    list.begin() + static_cast<std::ptrdiff_t>(i) + 1);
        return list.front();
      }
  }
  std::shared_ptr<const ConvChain::Resolved> r = resolve(c, ext, frame, options, runner, key);
  if (!r) return nullptr;
  std::lock_guard<std::mutex> lock(c.resolved_mu);
  c.resolved.insert(c.resolved.begin(), r);
  if (c.resolved.size() > ConvChain::kResolvedKept) c.resolved.pop_back();
  return r;
}

}  // namespace

namespace {

// The slots of a call whose external values are `ext` (shapes from `r`).
std::vector<Slot> make_slots(const ConvChain& c, const ConvChain::Resolved& r,
                             const ExternalTensors& ext) {
  std::vector<Slot> slots(c.values.size());
  for (size_t i = 0; i < slots.size(); ++i) {
    slots[i].shape = r.shapes[i];
    if (!c.external[i]) continue;
    slots[i].buf = ext[i];
    if (layouts_coincide(slots[i].shape, r.inner)) slots[i].layout = r.inner;  // no copy needed
  }
  return slots;
}

// Runs every step of `c` on `slots` (made by make_slots; the exit value ends in its slot),
// on options.intra_op_threads threads. `fused`: the Clips proven exact as post-ops (may be
// cleared where oneDNN would change its kernel for one).
Status run_steps(const ConvChain& c, const ConvChain::Resolved& resolved, std::vector<Slot>& slots,
                 std::vector<uint8_t>& fused, const Frame& frame, const ExecOptions& options,
                 const SubgraphRunner& runner) {
  using Kind = ConvChain::Kind;
  const int threads = options.intra_op_threads;
  const ActLayout inner = resolved.inner;
  const std::vector<nn::ConvGeometry>& geo = resolved.geo;
  const std::vector<nn::Window>& win = resolved.win;
  std::vector<const Tensor*> in_ptrs;
  auto is_fused = [&](size_t si) { return !fused.empty() && fused[si] != 0; };
  // Residual sums done by their Convs (sum_add): takes[si] = the slot whose buffer step si's
  // output is (the residual's, now holding the sum), -1: the step runs.
  std::vector<int> takes;
  // Whether the Conv of step si may write the residual `res` in place: a chain buffer no other
  // value still to be read (or outside the chain) shares.
  auto summable = [&](int res, size_t si) {
    const Slot& r = slots[static_cast<size_t>(res)];
    if (c.external[static_cast<size_t>(res)] || r.layout != inner || !r.buf.defined())
      return false;
    for (size_t k = 0; k < slots.size(); ++k) {
      if (static_cast<int>(k) == res) continue;
      const bool shares = (slots[k].buf.defined() && slots[k].buf.shares_storage_with(r.buf)) ||
                          (slots[k].inner.defined() && slots[k].inner.shares_storage_with(r.buf));
      if (shares && (c.external[k] || c.last_use[k] >= static_cast<int>(si))) return false;
    }
    return true;
  };

  // The run. Dead internal buffers are dropped (or reused in place) as soon as possible.
  const KernelRegistry& reg = KernelRegistry::global();
  auto reusable = [&](int s, size_t si, ActLayout want) {
    return !c.external[static_cast<size_t>(s)] && c.last_use[static_cast<size_t>(s)] == static_cast<int>(si) &&
           slots[static_cast<size_t>(s)].layout == want;
  };
  std::vector<Tensor> outs;
  for (size_t si = 0; si < c.steps.size(); ++si) {
    const ConvChain::Step& st = c.steps[si];
    Slot& out = slots[static_cast<size_t>(st.out)];
    Slot& a = slots[static_cast<size_t>(st.in[0])];
    const ir::Node& n = *st.node;
    bool summed = false;
    if (!takes.empty() && takes[si] >= 0) {  // an Add (or its activation), a MaxPool its Conv did
      if (takes[si] != st.out) out.buf = slots[static_cast<size_t>(takes[si])].buf;
      out.layout = inner;
    } else if (st.kind == Kind::kConv && st.sum_add >= 0 && !is_fused(si)) {
      const ConvChain::Step& add = c.steps[static_cast<size_t>(st.sum_add)];
      const int res = add.in[0] == st.out ? add.in[1] : add.in[0];
      if (summable(res, si)) {
        const ConvOperands o = conv_operands(a, n, frame, inner);
        Slot& r = slots[static_cast<size_t>(res)];
        if (nn::direct_conv_supports(geo[si], o.xl, inner, st.sum_post)) {
          nn::direct_conv_f32(geo[si], o.x, o.xl, o.w, o.constant_w, o.bias,
                              r.buf.data<float>(), threads, st.sum_post);
          summed = true;
        } else {
          TJ_ASSIGN_OR_RETURN(summed, nn::dnnl_conv_f32_accumulate(
                                          geo[si], o.x, o.xl, o.w, o.constant_w, o.bias,
                                          r.buf.data<float>(), inner, threads, st.sum_post));
        }
        if (summed) {  // the Conv's own value is not kept: its slot gets a buffer for its shape
          g_residual_sums.fetch_add(1, std::memory_order_relaxed);
          out.buf = r.buf;
          out.layout = inner;
          if (takes.empty()) takes.assign(c.steps.size(), -1);
          takes[static_cast<size_t>(st.sum_add)] = res;
          if (st.sum_act >= 0) takes[static_cast<size_t>(st.sum_act)] = add.out;
        }
      }
    }
    if ((!takes.empty() && takes[si] >= 0) || summed) {
      // done above
    } else if (st.kind == Kind::kConv) {
      const ConvOperands o = conv_operands(a, n, frame, inner);
      const std::optional<nn::MaxPoolAfter> pool =
          st.pool >= 0 && !is_fused(si) ? pool_after(geo[si], win[static_cast<size_t>(st.pool)])
                                        : std::nullopt;
      const bool pools = pool && nn::direct_conv_supports(geo[si], o.xl, inner, st.post);
      if (!pools) {
        out.buf = Tensor::empty(DType::kFloat32, out.shape);
        out.layout = inner;
      }
      if (pools) {
        // The MaxPool's value, pooled as the Conv stores it; the Conv's own is never stored
        // (the MaxPool alone reads it).
        const int pooled = c.steps[static_cast<size_t>(st.pool)].out;
        Slot& p = slots[static_cast<size_t>(pooled)];
        p.buf = Tensor::empty(DType::kFloat32, p.shape);
        p.layout = inner;
        nn::direct_conv_f32(geo[si], o.x, o.xl, o.w, o.constant_w, o.bias, p.buf.data<float>(),
                            threads, st.post, &*pool);
        if (takes.empty()) takes.assign(c.steps.size(), -1);
        takes[static_cast<size_t>(st.pool)] = pooled;
      } else if (is_fused(si) && nn::direct_conv_supports(geo[si], o.xl, inner,
                                                     c.clip_proof->steps[si].post)) {
        // the direct kernel's sums are the same with the Clip as without it
        nn::direct_conv_f32(geo[si], o.x, o.xl, o.w, o.constant_w, o.bias, out.buf.data<float>(),
                            threads, c.clip_proof->steps[si].post);
      } else if (is_fused(si)) {  // the Clip as post-op where oneDNN keeps its kernel, else in place
        const ChainClipProof::Step& p = c.clip_proof->steps[si];
        TJ_ASSIGN_OR_RETURN(
            const bool applied,
            nn::dnnl_conv_f32_same_kernel(geo[si], o.x, o.xl, o.w, o.constant_w, o.bias,
                                          out.buf.data<float>(), inner, threads,
                                          p.post));
        if (!applied) fused[static_cast<size_t>(p.clip)] = 0;
      } else if (nn::direct_conv_supports(geo[si], o.xl, inner, st.post)) {
        nn::direct_conv_f32(geo[si], o.x, o.xl, o.w, o.constant_w, o.bias, out.buf.data<float>(),
                            threads, st.post);
      } else {
        TJ_RETURN_IF_ERROR(nn::dnnl_conv_f32(geo[si], o.x, o.xl, o.w, o.constant_w, o.bias,
                                             out.buf.data<float>(), inner,
                                             threads, st.post));
      }
    } else if (st.kind == Kind::kMaxPool) {
      const Tensor* xc = as_inner(a, inner, threads);
      out.buf = Tensor::empty(DType::kFloat32, out.shape);
      out.layout = inner;
      max_pool_inner(win[si], a.shape, xc->data<float>(), out.buf.data<float>(), inner, threads);
    } else if (st.aliased || is_fused(si)) {
      out.buf = a.buf;
      out.layout = a.layout;
    } else {
      KernelFn fn = reg.find(n.op());
      if (!fn) return unsupported("{}: no tier-0 kernel", n.describe());
      const Tensor* pa = &a.buf;
      const Tensor* pb = nullptr;
      ActLayout layout = a.layout;
      if (st.kind == Kind::kAdd) {
        Slot& bs = slots[static_cast<size_t>(st.in[1])];
        if (a.layout != bs.layout) layout = inner;
        if (layout == inner) {
          pa = as_inner(a, inner, threads);
          pb = as_inner(bs, inner, threads);
        } else {
          pb = &bs.buf;
        }
      }
      outs.assign(1, Tensor());
      if (reusable(st.in[0], si, layout)) outs[0] = a.buf;
      else if (st.kind == Kind::kAdd && reusable(st.in[1], si, layout))
        outs[0] = slots[static_cast<size_t>(st.in[1])].buf;
      else outs[0] = Tensor::empty(DType::kFloat32, pa->shape());
      in_ptrs.assign(n.num_inputs(), nullptr);
      in_ptrs[0] = pa;
      if (st.kind == Kind::kAdd) in_ptrs[1] = pb;
      for (size_t k = conv_chain_data_inputs(n); k < n.num_inputs(); ++k)
        if (n.input(k)) in_ptrs[k] = &frame.values[n.input(k)->id()];
      {
        KernelContext ctx(n, in_ptrs, outs, options, &runner);
        TJ_RETURN_IF_ERROR(fn(ctx));
      }
      if (!outs[0].defined()) return internal_error("{}: kernel produced no output 0", n.describe());
      out.buf = std::move(outs[0]);
      out.layout = layout;
    }
    for (int s : st.in)
      if (s >= 0 && !c.external[static_cast<size_t>(s)] && c.last_use[static_cast<size_t>(s)] == static_cast<int>(si))
        slots[static_cast<size_t>(s)].buf = Tensor();  // a reused buffer lives on in `out`
  }

  return Status();
}

// The largest piece of images a thread runs the chain on at once when a call is split by
// images: 2^kPieceLog2 = 8 (convnet_small, 2 threads, per-shape p50 cycling batch 1-128: pieces
// of 1 image cost 10-20% more at batch >= 16, of 4 images 2%, of 8 and 16 the same as whole
// shares).
constexpr int kPieceLog2 = 3;

// The number of image groups to run call `r` as (1: not split): the intra-op threads when every
// value has the call's images first, the images split evenly over the threads or are at least
// 4 per thread, and the cores are free (as for oneDNN's own threads, nn::parallel_threads).
// Measured on the shared models at 2 threads (docs/performance.md, "Conv chains split by
// images"): split faster at every even batch (convnet_small 2-8%, mobilenet_v2 3-8%, resnet18
// 2-8%, more on a contended machine), 10-30% slower at 3, 5 and 7 images (a share of one
// image more on one thread).
int image_groups(const ConvChain& c, const ConvChain::Resolved& r, int threads) {
  if (threads < 2) return 1;
  const int64_t images = r.shapes[static_cast<size_t>(c.steps.front().in[0])][0];
  if (images < threads || (images % threads != 0 && images < 4 * threads)) return 1;
  for (const Shape& s : r.shapes)
    if (s.empty() || s[0] != images) return 1;
  return support::team_for(threads) == threads ? threads : 1;
}

}  // namespace

Expected<bool> run_conv_chain(const ConvChain& c, Frame& frame, const ExecOptions& options,
                              const SubgraphRunner& runner) {
  const int threads = options.intra_op_threads;
  // Shapes first: anything unexpected leaves the chain to the kernels, before any work.
  const ExternalTensors ext = external_tensors(c, frame);
  const std::shared_ptr<const ConvChain::Resolved> resolved =
      resolved_for(c, ext, frame, options, runner);
  if (!resolved) return false;
  // Clips proven exact as oneDNN post-ops for this call's values (fused[si]: Conv and Clip).
  std::vector<uint8_t> fused;
  if (c.clip_proof) prove_clip_post_ops(c, *c.clip_proof, frame, threads, fused);
  const int exit = c.steps.back().out;
  const Shape& exit_shape = resolved->shapes[static_cast<size_t>(exit)];
  Tensor y;

  // Split by images: group g's share of the images (an even split) cut in pieces of
  // 2^kPieceLog2 images and, for the rest, of the powers of two its count is made of (so a
  // chain creates one-thread primitives for 4 batch sizes at most, whatever the calls' sizes:
  // oneDNN's creation costs 0.1-0.6 ms per Conv and batch size); each piece runs on one thread,
  // a thread taking the pieces of a late one's share it has not begun (kernels::parallel_for_stealing).
  const int groups = image_groups(c, *resolved, threads);
  // piece[k]: the shapes of a piece of 2^k images, k <= kPieceLog2.
  std::shared_ptr<const ConvChain::Resolved> piece[kPieceLog2 + 1];
  ExecOptions one = options;
  one.intra_op_threads = 1;
  auto slices = [&](int64_t begin, int64_t end) {
    ExternalTensors e(c.values.size());
    for (size_t i = 0; i < c.values.size(); ++i)
      if (c.external[i]) e[i] = ext[i].slice_rows(begin, end);
    return e;
  };
  auto piece_log2 = [](int64_t left) {  // the largest piece for `left` images
    int k = kPieceLog2;
    while ((int64_t{1} << k) > left) --k;
    return k;
  };
  bool split = groups > 1;
  // The pieces, in image order: (first image, log2 of its size).
  std::vector<std::pair<int64_t, int>> pieces;
  if (split) {
    const int64_t images = exit_shape[0];
    for (int g = 0; g < groups && split; ++g)
      for (int64_t b = images * g / groups, end = images * (g + 1) / groups; b < end && split;) {
        const int k = piece_log2(end - b);
        if (!piece[k]) piece[k] = resolved_for(c, slices(0, int64_t{1} << k), frame, one, runner);
        split = piece[k] != nullptr;
        pieces.emplace_back(b, k);
        b += int64_t{1} << k;
      }
  }
  if (split) {
    y = Tensor::empty(DType::kFloat32, exit_shape);
    const int64_t per_image = shape_numel(exit_shape) / exit_shape[0];
    std::vector<Status> status(pieces.size());
    // Each thread starts on its group's pieces, then takes those a late thread has not begun.
    kernels::parallel_for_stealing(groups, static_cast<int64_t>(pieces.size()), [&](int64_t i) {
      const auto [b, k] = pieces[static_cast<size_t>(i)];
      const int64_t end = b + (int64_t{1} << k);
      std::vector<Slot> slots = make_slots(c, *piece[k], slices(b, end));
      std::vector<uint8_t> piece_fused = fused;
      Status& st = status[static_cast<size_t>(i)];
      st = run_steps(c, *piece[k], slots, piece_fused, frame, one, runner);
      if (!st.ok()) return;
      const Slot& e = slots[static_cast<size_t>(exit)];
      float* rows = y.data<float>() + b * per_image;
      if (e.layout != ActLayout::kPlain && !layouts_coincide(e.shape, e.layout))
        copy_layout(e.shape, e.layout, e.buf.data<float>(), ActLayout::kPlain, rows, 1);
      else
        std::copy_n(e.buf.data<float>(), shape_numel(e.shape), rows);
    });
    for (const Status& st : status) TJ_RETURN_IF_ERROR(st);
    g_image_splits.fetch_add(1, std::memory_order_relaxed);
  } else {
    std::vector<Slot> slots = make_slots(c, *resolved, ext);
    TJ_RETURN_IF_ERROR(run_steps(c, *resolved, slots, fused, frame, options, runner));
    // The exit value, plain.
    Slot& e = slots[static_cast<size_t>(exit)];
    y = e.buf;
    if (e.layout != ActLayout::kPlain && !layouts_coincide(e.shape, e.layout)) {
      y = Tensor::empty(DType::kFloat32, e.shape);
      copy_layout(e.shape, e.layout, e.buf.data<float>(), ActLayout::kPlain,
                  y.data<float>(), threads);
    }
  }
  // Every intermediate a view of one buffer of its shape (contents unspecified).
  const Tensor holder = Tensor::empty(DType::kFloat32, {resolved->most});
  for (size_t i = 0; i < c.values.size(); ++i)
    if (!c.external[i] && static_cast<int>(i) != exit)
      frame.values[c.values[i]->id()] = holder.slice_rows(0, shape_numel(resolved->shapes[i]))
                                            .reshaped(resolved->shapes[i]);
  frame.values[c.values[static_cast<size_t>(exit)]->id()] = std::move(y);
  return true;
}

}  // namespace tierjit::interp
