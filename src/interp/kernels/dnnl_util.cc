// oneDNN convolutions (see dnnl_util.h): a least-recently-used cache of convolution primitives
// keyed by geometry, run on per-thread reused buffers (dnnl_internal.h). oneDNN exceptions are
// caught here and become a Status.
#include "interp/kernels/dnnl_util.h"

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
  ConvPostOp post;  // baked into the primitive (oneDNN 2.x post-op parameters are not runtime)
  bool operator<(const ConvKey& o) const {
    auto tie = [](const ConvKey& k) {
      return std::tie(k.g.batch, k.g.in_channels, k.g.out_channels, k.g.group, k.g.in_spatial,
                      k.g.out_spatial, k.g.kernel, k.g.strides, k.g.dilations, k.g.pad_begin,
                      k.g.pad_end, k.has_bias, k.threads, k.post.kind, k.post.alpha,
                      k.post.beta);
    };
    return tie(*this) < tie(o);
  }
};

std::shared_ptr<ConvEntry> make_conv(const ConvGeometry& g, bool has_bias, const ConvPostOp& post) {
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
  dnnl::memory::desc src_q = plain_src ? e->user_src_md : dnnl::memory::desc(src_dims, dt::f32, tag::any);
  dnnl::memory::desc dst_q = pointwise ? e->user_dst_md : dnnl::memory::desc(dst_dims, dt::f32, tag::any);
  dnnl::memory::desc w_any(w_dims, dt::f32, tag::any);
  e->bias_md = has_bias ? dnnl::memory::desc({g.out_channels}, dt::f32, tag::x) : dnnl::memory::desc();
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                    dnnl::algorithm::convolution_direct, src_q, w_any, e->bias_md,
                                    dst_q, strides, dil, pad_l, pad_r);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (post.kind != ConvPostOp::Kind::kNone) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, post.kind == ConvPostOp::Kind::kClip ? dnnl::algorithm::eltwise_clip
                                                                   : dnnl::algorithm::eltwise_relu,
                       post.alpha, post.beta);
    attr.set_post_ops(ops);
  }
  dnnl::convolution_forward::primitive_desc pd(d, attr, cpu_engine());
  e->scratch_md = pd.scratchpad_desc();
  e->src_md = pd.src_desc();
  e->dst_md = pd.dst_desc();
  e->w_md = pd.weights_desc();
  if ((e->src_reorder = e->src_md != e->user_src_md)) e->src_r = make_reorder(e->user_src_md, e->src_md);
  if ((e->dst_reorder = e->dst_md != e->user_dst_md)) e->dst_r = make_reorder(e->dst_md, e->user_dst_md);
  if ((e->w_reorder = e->w_md != e->user_w_md)) e->w_r = make_reorder(e->user_w_md, e->w_md);
  e->prim = dnnl::convolution_forward(pd);
  return e;
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
  static PrimitiveCache<ConvKey, ConvEntry> cache(kPrimitiveCacheEntries);
  int64_t macs = g.batch * g.out_channels * (g.in_channels / g.group);
  for (size_t i = 0; i < g.kernel.size(); ++i) macs *= g.kernel[i] * g.out_spatial[i];
  const int used_threads = parallel_threads(macs, threads);
  set_dnnl_threads(used_threads);
  try {
    ConvKey key{g, bias != nullptr, used_threads, post};
    std::shared_ptr<ConvEntry> e = cache.get(key, [&] { return make_conv(g, bias != nullptr, post); });
    dnnl::engine& eng = cpu_engine();
    dnnl::stream s(eng);
    dnnl::memory user_src(e->user_src_md, eng, const_cast<float*>(x));
    dnnl::memory user_dst(e->user_dst_md, eng, y);
    dnnl::memory src = user_src, dst = user_dst;
    if (e->src_reorder) {
      src = call_buffer(CallSlot::kSrc, e->src_md);
      e->src_r.execute(s, user_src, src);
    }
    if (e->dst_reorder) dst = call_buffer(CallSlot::kDst, e->dst_md);
    dnnl::memory wm = e->w_reorder
        ? weights_in_layout(e->user_w_md, e->w_md, e->w_r, w, constant_w, s)
        : dnnl::memory(e->user_w_md, eng, const_cast<float*>(w));
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, dst}};
    if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(e->bias_md, eng, const_cast<float*>(bias)));
    if (e->scratch_md.get_size() != 0)
      args.emplace(DNNL_ARG_SCRATCHPAD, call_buffer(CallSlot::kScratch, e->scratch_md));
    e->prim.execute(s, args);
    if (e->dst_reorder) e->dst_r.execute(s, dst, user_dst);
    s.wait();
  } catch (const dnnl::error& err) {
    return internal_error("oneDNN convolution failed: {}", err.what());
  }
  return Status();
}

}  // namespace tierjit::interp::nn
