// oneDNN convolutions (see dnnl_util.h): a least-recently-used cache of convolution primitives
// keyed by geometry, run on per-thread reused buffers (dnnl_internal.h). oneDNN exceptions are
// caught here and become a Status.
#include "interp/kernels/dnnl_util.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "interp/kernels/dnnl_internal.h"

namespace tierjit::interp::nn {
namespace {

using namespace dnnl_glue;

using Dims = dnnl::memory::dims;

Dims to_dims(const std::vector<int64_t>& v) { return Dims(v.begin(), v.end()); }

bool is_pointwise(const ConvGeometry& g) {
  for (int64_t k : g.kernel)
    if (k != 1) return false;
  return true;
}

dnnl::memory::format_tag plain_tag(size_t rank) {
  using T = dnnl::memory::format_tag;
  switch (rank) {
    case 3: return T::ncw;
    case 4: return T::nchw;
    default: return T::ncdhw;
  }
}

dnnl::memory::format_tag channels_last_tag(size_t rank) {
  using T = dnnl::memory::format_tag;
  switch (rank) {
    case 3: return T::nwc;
    case 4: return T::nhwc;
    default: return T::ndhwc;
  }
}

dnnl::memory::format_tag blocked8_tag(size_t rank) {
  using T = dnnl::memory::format_tag;
  switch (rank) {
    case 3: return T::nCw8c;
    case 4: return T::nChw8c;
    default: return T::nCdhw8c;
  }
}

dnnl::memory::format_tag layout_tag(ActLayout l, size_t rank) {
  switch (l) {
    case ActLayout::kChannelsLast: return channels_last_tag(rank);
    case ActLayout::kBlocked8: return blocked8_tag(rank);
    default: return plain_tag(rank);
  }
}

dnnl::memory::format_tag grouped_weight_tag(size_t rank) {  // rank of the ungrouped weights
  using T = dnnl::memory::format_tag;
  switch (rank) {
    case 3: return T::goiw;
    case 4: return T::goihw;
    default: return T::goidhw;
  }
}

// True if `md`, a layout oneDNN chose for a tensor of `dims` [N, C, spatial...], stores it
// exactly as `l` (kChannelsLast or kBlocked8) does: that layout itself or, for channels-last, a
// channel-blocked layout (nChw16c, nChw8c, ...) whose one block holds all C channels, e.g. a
// 16-channel nChw16c tensor.
bool stores_as(const dnnl::memory::desc& md, const Dims& dims, ActLayout l) {
  using T = dnnl::memory::format_tag;
  const size_t rank = dims.size();
  if (md == dnnl::memory::desc(dims, dnnl::memory::data_type::f32, layout_tag(l, rank))) return true;
  if (l != ActLayout::kChannelsLast) return false;
  const T blocked[3][3] = {{T::nCw16c, T::nChw16c, T::nCdhw16c},
                           {T::nCw8c, T::nChw8c, T::nCdhw8c},
                           {T::nCw4c, T::nChw4c, T::nCdhw4c}};
  const int64_t blocks[3] = {16, 8, 4};
  for (int b = 0; b < 3; ++b)
    if (dims[1] == blocks[b] && rank >= 3 && rank <= 5 &&
        md == dnnl::memory::desc(dims, dnnl::memory::data_type::f32, blocked[b][rank - 3]))
      return true;
  return false;
}

// A convolution primitive with the memory descriptors it runs on. Kernels other than 1x1 run
// in oneDNN's preferred (blocked) layouts, with the source / destination reordered per call
// (measured 1.3-4x faster for 3x3, 7x7 and depthwise); 1x1 kernels run directly on the plain
// layout (its GEMM path is faster there), and so does the source of convolutions with at most 4
// input channels. Weights are reordered per call, or once per constant
// weight tensor (weights_in_layout).
struct ConvEntry {
  dnnl::convolution_forward prim;
  dnnl::memory::desc user_src_md, user_dst_md, user_w_md, src_md, dst_md, w_md, bias_md;
  bool src_reorder = false, dst_reorder = false, w_reorder = false;
  dnnl::reorder src_r, dst_r, w_r;
  dnnl::memory::desc scratch_md;  // per-call scratchpad: concurrent runs share no buffers
  std::string impl;                // oneDNN's implementation name
  // With a post-op: 1 if the entry without it runs the same implementation on the same layouts
  // (dnnl_conv_f32_same_kernel), 0 if not, -1 not yet known.
  std::atomic<int> same_kernel_as_plain{-1};
};

struct ConvKey {
  ConvGeometry g;
  bool has_bias;
  int threads = 1;  // a primitive runs with the OpenMP thread count it was created with
  ConvPostOp post;  // baked into the primitive (oneDNN 2.x post-op parameters are not runtime)
  ActLayout x_layout = ActLayout::kPlain, y_layout = ActLayout::kPlain;
  bool operator<(const ConvKey& o) const {
    auto tie = [](const ConvKey& k) {
      return std::tie(k.g.batch, k.g.in_channels, k.g.out_channels, k.g.group, k.g.in_spatial,
                      k.g.out_spatial, k.g.kernel, k.g.strides, k.g.dilations, k.g.pad_begin,
                      k.g.pad_end, k.has_bias, k.threads, k.post.kind, k.post.alpha,
                      k.post.beta, k.post.sum, k.x_layout, k.y_layout);
    };
    return tie(*this) < tie(o);
  }
};

// The convolution of `g` reading x as `xl` and writing y as `yl` (dnnl_util.h). A
// kChannelsLast destination has the primitive write kChannelsLast and read a kChannelsLast
// source as it is, a kPlain one in the layout it prefers (tag::any, reordered); if oneDNN then
// offers only its reference kernel (or none), it runs on the layouts it prefers with reorders.
// A kPlain destination picks the layouts as always.
std::shared_ptr<ConvEntry> make_conv(const ConvGeometry& g, bool has_bias, const ConvPostOp& post,
                                     ActLayout xl, ActLayout yl, bool with_primitive = true) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const size_t rank = g.in_spatial.size() + 2;
  Dims src_dims{g.batch, g.in_channels};
  Dims dst_dims{g.batch, g.out_channels};
  for (size_t i = 0; i < g.in_spatial.size(); ++i) {
    src_dims.push_back(g.in_spatial[i]);
    dst_dims.push_back(g.out_spatial[i]);
  }
  Dims w_dims{g.group, g.out_channels / g.group, g.in_channels / g.group};
  for (int64_t k : g.kernel) w_dims.push_back(k);
  Dims strides = to_dims(g.strides), pad_l = to_dims(g.pad_begin), pad_r = to_dims(g.pad_end);
  Dims dil;
  for (int64_t d : g.dilations) dil.push_back(d - 1);  // oneDNN counts dilation from 0
  const bool pointwise = is_pointwise(g);
  // Few input channels (an image's first layer; not grouped): the plain source feeds oneDNN's
  // direct kernel without a reorder (8x1x28x28 -> 16 channels 3x3: 20.5 vs 32.7 us).
  const bool plain_src = pointwise || (g.group == 1 && g.in_channels <= 4);
  const bool chain = yl != ActLayout::kPlain;  // a conv chain's layout (channels-last or blocked)

  auto e = std::make_shared<ConvEntry>();
  e->user_src_md = dnnl::memory::desc(src_dims, dt::f32, layout_tag(xl, rank));
  e->user_dst_md = dnnl::memory::desc(dst_dims, dt::f32, layout_tag(yl, rank));
  e->user_w_md = dnnl::memory::desc(w_dims, dt::f32, grouped_weight_tag(rank));
  const dnnl::memory::desc src_any(src_dims, dt::f32, tag::any), dst_any(dst_dims, dt::f32, tag::any);
  dnnl::memory::desc src_q, dst_q;
  if (chain) {
    src_q = xl == yl ? e->user_src_md : src_any;
    dst_q = e->user_dst_md;
  } else {
    src_q = plain_src ? e->user_src_md : src_any;
    dst_q = pointwise ? dnnl::memory::desc(dst_dims, dt::f32, plain_tag(rank)) : dst_any;
  }
  dnnl::memory::desc w_any(w_dims, dt::f32, tag::any);
  e->bias_md = has_bias ? dnnl::memory::desc({g.out_channels}, dt::f32, tag::x) : dnnl::memory::desc();
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (post.kind != ConvPostOp::Kind::kNone || post.sum) {
    dnnl::post_ops ops;
    if (post.sum) ops.append_sum(1.0f);
    if (post.kind != ConvPostOp::Kind::kNone)
      ops.append_eltwise(1.0f, post.kind == ConvPostOp::Kind::kClip ? dnnl::algorithm::eltwise_clip
                                                                     : dnnl::algorithm::eltwise_relu,
                         post.alpha, post.beta);
    attr.set_post_ops(ops);
  }
  auto make_pd = [&](const dnnl::memory::desc& sq, const dnnl::memory::desc& dq) {
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                      dnnl::algorithm::convolution_direct, sq, w_any, e->bias_md,
                                      dq, strides, dil, pad_l, pad_r);
    return dnnl::convolution_forward::primitive_desc(d, attr, cpu_engine());
  };
  dnnl::convolution_forward::primitive_desc pd;
  // A chain's first layer of few channels: oneDNN's direct kernel reads the plain source (a
  // one-channel source is stored the same either way) and writes channel blocks; when one
  // block holds all output channels that is channels-last, byte for byte (convnet_small's
  // 1 -> 16 channels, 128x1x28x28: 104 us against 212 us for the reorder and brgemm kernel), and
  // blocks of 8 are the kBlocked8 layout itself.
  bool chosen = false;
  if (chain && !pointwise && g.group == 1 && g.in_channels <= 4 &&
      (xl == ActLayout::kPlain || g.in_channels == 1)) {
    try {
      const dnnl::memory::desc plain(src_dims, dt::f32, plain_tag(rank));
      dnnl::convolution_forward::primitive_desc first = make_pd(plain, dst_any);
      if (std::string(first.impl_info_str()).rfind("ref", 0) != 0 &&
          stores_as(first.dst_desc(), dst_dims, yl)) {
        e->user_src_md = plain;
        e->user_dst_md = first.dst_desc();
        pd = first;
        chosen = true;
      }
    } catch (const dnnl::error&) {
      // not offered: the channels-last request below
    }
  }
  if (chosen) {
    // the first layer's kernel, above
  } else if (chain) {
    try {
      pd = make_pd(src_q, dst_q);
      if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0) pd = make_pd(src_any, dst_any);
    } catch (const dnnl::error&) {
      pd = make_pd(src_any, dst_any);
    }
  } else {
    pd = make_pd(src_q, dst_q);
  }
  e->scratch_md = pd.scratchpad_desc();
  e->impl = pd.impl_info_str();
  e->src_md = pd.src_desc();
  e->dst_md = pd.dst_desc();
  e->w_md = pd.weights_desc();
  e->src_reorder = e->src_md != e->user_src_md;
  e->dst_reorder = e->dst_md != e->user_dst_md;
  e->w_reorder = e->w_md != e->user_w_md;
  if (!with_primitive) return e;  // a descriptor to compare with (dnnl_conv_f32_same_kernel)
  if (e->src_reorder) e->src_r = make_reorder(e->user_src_md, e->src_md);
  if (e->dst_reorder) e->dst_r = make_reorder(e->dst_md, e->user_dst_md);
  if (e->w_reorder) e->w_r = make_reorder(e->user_w_md, e->w_md);
  e->prim = dnnl::convolution_forward(pd);  // generates the kernels
  return e;
}

// This thread's memory objects for a convolution entry (ThreadBindings, dnnl_internal.h).
struct BoundConv {
  std::shared_ptr<ConvEntry> entry;
  dnnl::memory user_src, user_dst, src, dst, w, bias, scratch;
};

BoundConv bind_conv(const std::shared_ptr<ConvEntry>& e) {
  dnnl::engine& eng = cpu_engine();
  auto bound = [&](const dnnl::memory::desc& md, bool used) {
    return used ? dnnl::memory(md, eng, nullptr) : dnnl::memory();
  };
  BoundConv m;
  m.entry = e;
  m.user_src = bound(e->user_src_md, true);
  m.user_dst = bound(e->user_dst_md, true);
  m.src = bound(e->src_md, e->src_reorder);
  m.dst = bound(e->dst_md, e->dst_reorder);
  m.w = bound(e->user_w_md, !e->w_reorder);
  m.bias = bound(e->bias_md, e->bias_md.get_size() != 0);
  m.scratch = bound(e->scratch_md, e->scratch_md.get_size() != 0);
  return m;
}

}  // namespace

bool dnnl_conv_fuses_post_ops(const ConvGeometry& g) { return !is_pointwise(g); }

Status dnnl_conv_f32(const ConvGeometry& g, const float* x, const float* w,
                     const Tensor* constant_w, const float* bias, float* y, int threads) {
  return dnnl_conv_f32(g, x, w, constant_w, bias, y, threads, ConvPostOp{});
}

Status dnnl_conv_f32(const ConvGeometry& g, const float* x, const float* w,
                     const Tensor* constant_w, const float* bias, float* y, int threads,
                     const ConvPostOp& post) {
  return dnnl_conv_f32(g, x, ActLayout::kPlain, w, constant_w, bias, y, ActLayout::kPlain, threads,
                       post);
}

namespace {

// dnnl_conv_f32 (layout form); with `applied` non-null, `post` only where the kernel without it
// is the same (dnnl_conv_f32_same_kernel), *applied telling whether it was.
Status run_conv(const ConvGeometry& g, const float* x, ActLayout x_layout, const float* w,
                const Tensor* constant_w, const float* bias, float* y, ActLayout y_layout,
                int threads, const ConvPostOp& post, bool* applied) {
  static PrimitiveCache<ConvKey, ConvEntry> cache(kPrimitiveCacheEntries);
  int64_t macs = g.batch * g.out_channels * (g.in_channels / g.group);
  for (size_t i = 0; i < g.kernel.size(); ++i) macs *= g.kernel[i] * g.out_spatial[i];
  const int used_threads = parallel_threads(macs, threads);
  set_dnnl_threads(used_threads);
  try {
    ConvKey key{g, bias != nullptr, used_threads, post, x_layout, y_layout};
    std::shared_ptr<ConvEntry> e = cache.get(
        key, [&] { return make_conv(g, bias != nullptr, post, x_layout, y_layout); });
    if (applied) {
      *applied = post.kind != ConvPostOp::Kind::kNone || post.sum;
      if (*applied && post.sum && e->dst_reorder) {  // y is not written in place: leave it
        *applied = false;
        return Status();
      }
      if (*applied && e->same_kernel_as_plain.load(std::memory_order_relaxed) != 1) {
        int same = e->same_kernel_as_plain.load(std::memory_order_relaxed);
        if (same < 0) {
          // The plain convolution's descriptor only: its kernel and layouts, without generating
          // its code (that doubled the creation cost of every new shape: mobilenet_v2's 1x and
          // 2x first calls created 52 1x1 primitives in 14.4 ms instead of 38 in 3.9 ms).
          const std::shared_ptr<ConvEntry> plain =
              make_conv(g, bias != nullptr, ConvPostOp{}, x_layout, y_layout, false);
          same = e->impl == plain->impl && e->src_md == plain->src_md &&
                 e->dst_md == plain->dst_md && e->w_md == plain->w_md &&
                 e->user_src_md == plain->user_src_md && e->user_dst_md == plain->user_dst_md;
          e->same_kernel_as_plain.store(same, std::memory_order_relaxed);
        }
        if (!same && post.sum) {  // nothing written: the caller adds separately
          *applied = false;
          return Status();
        }
        if (!same) {
          ConvKey plain_key = key;
          plain_key.post = ConvPostOp{};
          e = cache.get(plain_key, [&] {
            return make_conv(g, bias != nullptr, ConvPostOp{}, x_layout, y_layout);
          });
          *applied = false;
        }
      }
    }
    thread_local ThreadBindings<ConvEntry, BoundConv> bindings;
    BoundConv& m = bindings.get(e, bind_conv);
    dnnl::stream& s = thread_stream();
    m.user_src.set_data_handle(const_cast<float*>(x));
    m.user_dst.set_data_handle(y);
    // Blocked copies and the scratchpad on this thread's reused buffers (one-call memories when
    // larger than those).
    dnnl::memory src = m.user_src, dst = m.user_dst, scratch;
    auto on_buffer = [](CallSlot slot, dnnl::memory& bound, const dnnl::memory::desc& md) {
      if (void* p = call_buffer_data(slot, md.get_size())) {
        bound.set_data_handle(p);
        return bound;
      }
      return call_buffer(slot, md);
    };
    if (e->src_reorder) {
      src = on_buffer(CallSlot::kSrc, m.src, e->src_md);
      e->src_r.execute(s, m.user_src, src);
    }
    if (e->dst_reorder) dst = on_buffer(CallSlot::kDst, m.dst, e->dst_md);
    dnnl::memory wm;  // constant weights in the primitive's layout (held by the weight cache)
    if (e->w_reorder) {
      wm = weights_in_layout(e->user_w_md, e->w_md, e->w_r, w, constant_w, s);
    } else {
      m.w.set_data_handle(const_cast<float*>(w));
      wm = m.w;
    }
    dnnl_exec_arg_t args[5];
    int n = 0;
    args[n++] = {DNNL_ARG_SRC, src.get()};
    args[n++] = {DNNL_ARG_WEIGHTS, wm.get()};
    args[n++] = {DNNL_ARG_DST, dst.get()};
    if (bias) {
      m.bias.set_data_handle(const_cast<float*>(bias));
      args[n++] = {DNNL_ARG_BIAS, m.bias.get()};
    }
    if (m.scratch) {
      scratch = on_buffer(CallSlot::kScratch, m.scratch, e->scratch_md);
      args[n++] = {DNNL_ARG_SCRATCHPAD, scratch.get()};
    }
    dnnl::error::wrap_c_api(dnnl_primitive_execute(e->prim.get(), s.get(), n, args),
                            "could not execute a convolution");
    if (e->dst_reorder) e->dst_r.execute(s, dst, m.user_dst);
    s.wait();
  } catch (const dnnl::error& err) {
    return internal_error("oneDNN convolution failed: {}", err.what());
  }
  return Status();
}

}  // namespace

Status dnnl_conv_f32(const ConvGeometry& g, const float* x, ActLayout x_layout, const float* w,
                     const Tensor* constant_w, const float* bias, float* y, ActLayout y_layout,
                     int threads, const ConvPostOp& post) {
  return run_conv(g, x, x_layout, w, constant_w, bias, y, y_layout, threads, post, nullptr);
}

Expected<bool> dnnl_conv_f32_same_kernel(const ConvGeometry& g, const float* x, ActLayout x_layout,
                                         const float* w, const Tensor* constant_w,
                                         const float* bias, float* y, ActLayout y_layout,
                                         int threads, const ConvPostOp& post) {
  bool applied = false;
  TJ_RETURN_IF_ERROR(
      run_conv(g, x, x_layout, w, constant_w, bias, y, y_layout, threads, post, &applied));
  return applied;
}

Expected<bool> dnnl_conv_f32_accumulate(const ConvGeometry& g, const float* x, ActLayout x_layout,
                                        const float* w, const Tensor* constant_w,
                                        const float* bias, float* y, ActLayout y_layout,
                                        int threads, const ConvPostOp& post) {
  if (!post.sum) return internal_error("dnnl_conv_f32_accumulate: post-op without sum");
  if (y_layout == ActLayout::kPlain)
    return internal_error("dnnl_conv_f32_accumulate: a plain destination");
  bool applied = false;
  TJ_RETURN_IF_ERROR(run_conv(g, x, x_layout, w, constant_w, bias, y, y_layout, threads, post,
                              &applied));
  return applied;
}

}  // namespace tierjit::interp::nn
