// oneDNN convolutions (see dnnl_util.h): a least-recently-used cache of convolution primitives
// keyed by geometry, run on per-thread reused buffers (dnnl_internal.h); a batch size's first
// call runs image by image on the batch-1 primitive, so only batch sizes that come back pay for
// a primitive of their own. oneDNN exceptions are caught here and become a Status.
#include "interp/kernels/dnnl_util.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
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

dnnl::memory::format_tag grouped_weight_tag(size_t rank) {  // rank of the ungrouped weights
  using T = dnnl::memory::format_tag;
  switch (rank) {
    case 3: return T::goiw;
    case 4: return T::goihw;
    default: return T::goidhw;
  }
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
};

struct ConvKey {
  ConvGeometry g;
  bool has_bias;
  int threads = 1;  // a primitive runs with the OpenMP thread count it was created with
  bool operator<(const ConvKey& o) const {
    auto tie = [](const ConvKey& k) {
      return std::tie(k.g.batch, k.g.in_channels, k.g.out_channels, k.g.group, k.g.in_spatial,
                      k.g.out_spatial, k.g.kernel, k.g.strides, k.g.dilations, k.g.pad_begin,
                      k.g.pad_end, k.has_bias, k.threads);
    };
    return tie(*this) < tie(o);
  }
};

// The convolution of `g` on plain (ONNX-layout) x and y, in the layouts described at ConvEntry.
std::shared_ptr<ConvEntry> make_conv(const ConvGeometry& g, bool has_bias) {
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

  auto e = std::make_shared<ConvEntry>();
  e->user_src_md = dnnl::memory::desc(src_dims, dt::f32, plain_tag(rank));
  e->user_dst_md = dnnl::memory::desc(dst_dims, dt::f32, plain_tag(rank));
  e->user_w_md = dnnl::memory::desc(w_dims, dt::f32, grouped_weight_tag(rank));
  const dnnl::memory::desc src_any(src_dims, dt::f32, tag::any), dst_any(dst_dims, dt::f32, tag::any);
  const dnnl::memory::desc src_q = plain_src ? e->user_src_md : src_any;
  const dnnl::memory::desc dst_q = pointwise ? e->user_dst_md : dst_any;
  dnnl::memory::desc w_any(w_dims, dt::f32, tag::any);
  e->bias_md = has_bias ? dnnl::memory::desc({g.out_channels}, dt::f32, tag::x) : dnnl::memory::desc();
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                    dnnl::algorithm::convolution_direct, src_q, w_any, e->bias_md,
                                    dst_q, strides, dil, pad_l, pad_r);
  dnnl::convolution_forward::primitive_desc pd(d, attr, cpu_engine());
  e->scratch_md = pd.scratchpad_desc();
  e->src_md = pd.src_desc();
  e->dst_md = pd.dst_desc();
  e->w_md = pd.weights_desc();
  e->src_reorder = e->src_md != e->user_src_md;
  e->dst_reorder = e->dst_md != e->user_dst_md;
  e->w_reorder = e->w_md != e->user_w_md;
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

PrimitiveCache<ConvKey, ConvEntry>& conv_cache() {
  static PrimitiveCache<ConvKey, ConvEntry> cache(kPrimitiveCacheEntries);
  return cache;
}

// The key of the primitive that runs `g` now (its thread count follows the load).
ConvKey conv_key(const ConvGeometry& g, bool has_bias, int threads) {
  int64_t macs = g.batch * g.out_channels * (g.in_channels / g.group);
  for (size_t i = 0; i < g.kernel.size(); ++i) macs *= g.kernel[i] * g.out_spatial[i];
  return ConvKey{g, has_bias, parallel_threads(macs, threads)};
}

// Runs `key`'s primitive `e` (when null: the cached one, created on a miss) on x, w, bias -> y.
Status run_conv(const ConvKey& key, std::shared_ptr<ConvEntry> e, const float* x, const float* w,
                const Tensor* constant_w, const float* bias, float* y) {
  const ConvGeometry& g = key.g;
  set_dnnl_threads(key.threads);
  try {
    if (!e) e = conv_cache().get(key, [&] { return make_conv(g, bias != nullptr); });
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

// Calls of each batched geometry that found no primitive of its own (bounded like the
// primitives: a batch size evicted from here counts as new again).
PrimitiveCache<ConvKey, std::atomic<uint32_t>>& sightings() {
  static PrimitiveCache<ConvKey, std::atomic<uint32_t>> seen(kPrimitiveCacheEntries);
  return seen;
}

}  // namespace

Status dnnl_conv_f32(const ConvGeometry& g, const float* x, const float* w,
                     const Tensor* constant_w, const float* bias, float* y, int threads) {
  const ConvKey key = conv_key(g, bias != nullptr, threads);
  std::shared_ptr<ConvEntry> e;
  if (g.batch > 1 && g.batch <= kConvImagesApartMax && !(e = conv_cache().find(key)) &&
      sightings().get(key, [] { return std::make_shared<std::atomic<uint32_t>>(0); })->fetch_add(1) == 0) {
    // A batch size's first call: image by image on the geometry's batch-1 primitive (made by the
    // session's warm-up, or by an earlier first call); its own primitive from its second call on.
    ConvGeometry one = g;
    one.batch = 1;
    const ConvKey key1 = conv_key(one, bias != nullptr, threads);
    int64_t in_stride = g.in_channels, out_stride = g.out_channels;
    for (size_t i = 0; i < g.in_spatial.size(); ++i) {
      in_stride *= g.in_spatial[i];
      out_stride *= g.out_spatial[i];
    }
    for (int64_t b = 0; b < g.batch; ++b)
      TJ_RETURN_IF_ERROR(run_conv(key1, nullptr, x + b * in_stride, w, constant_w, bias, y + b * out_stride));
    return Status();
  }
  return run_conv(key, std::move(e), x, w, constant_w, bias, y);
}

}  // namespace tierjit::interp::nn
