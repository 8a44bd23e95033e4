// oneDNN glue (see dnnl_util.h): sgemm wrapper and a mutex-protected cache of convolution
// primitives keyed by geometry. oneDNN exceptions are caught here and become a Status.
#include "interp/kernels/dnnl_util.h"

#include <omp.h>

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include <oneapi/dnnl/dnnl.hpp>

namespace tierjit::interp::nn {
namespace {

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

using Dims = dnnl::memory::dims;

Dims to_dims(const std::vector<int64_t>& v) { return Dims(v.begin(), v.end()); }

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

// A convolution primitive with the memory descriptors it runs on. Source/destination stay in the
// plain layout the tensors use; weights use the layout oneDNN prefers (reordered per call).
struct ConvEntry {
  dnnl::convolution_forward prim;
  dnnl::memory::desc src_md, dst_md, bias_md, user_w_md, w_md;
  bool needs_w_reorder = false;
  dnnl::reorder w_reorder;
};

struct ConvKey {
  ConvGeometry g;
  bool has_bias;
  bool operator<(const ConvKey& o) const {
    auto tie = [](const ConvKey& k) {
      return std::tie(k.g.batch, k.g.in_channels, k.g.out_channels, k.g.group, k.g.in_spatial,
                      k.g.out_spatial, k.g.kernel, k.g.strides, k.g.dilations, k.g.pad_begin,
                      k.g.pad_end, k.has_bias);
    };
    return tie(*this) < tie(o);
  }
};

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

  auto e = std::make_shared<ConvEntry>();
  e->src_md = dnnl::memory::desc(src_dims, dt::f32, plain_tag(rank));
  e->dst_md = dnnl::memory::desc(dst_dims, dt::f32, plain_tag(rank));
  e->user_w_md = dnnl::memory::desc(w_dims, dt::f32, grouped_weight_tag(rank));
  dnnl::memory::desc w_any(w_dims, dt::f32, tag::any);
  e->bias_md = has_bias ? dnnl::memory::desc({g.out_channels}, dt::f32, tag::x) : dnnl::memory::desc();
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                    dnnl::algorithm::convolution_direct, e->src_md, w_any,
                                    e->bias_md, e->dst_md, strides, dil, pad_l, pad_r);
  dnnl::convolution_forward::primitive_desc pd(d, cpu_engine());
  e->w_md = pd.weights_desc();
  e->needs_w_reorder = e->w_md != e->user_w_md;
  if (e->needs_w_reorder) {
    e->w_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), e->user_w_md,
                                                               cpu_engine(), e->w_md));
  }
  e->prim = dnnl::convolution_forward(pd);
  return e;
}

}  // namespace

void set_dnnl_threads(int threads) {
  if (threads < 1) threads = 1;
  if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
}

Status sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
             const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
             int64_t ldc) {
  if (m == 0 || n == 0) return Status();
  if (k == 0) {  // oneDNN rejects K = 0: C = beta * C
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.f ? 0.f : beta * c[i * ldc + j];
    return Status();
  }
  dnnl_status_t st = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda,
                                b, ldb, beta, c, ldc);
  if (st != dnnl_success)
    return internal_error("oneDNN sgemm failed (status {}) for M={} N={} K={}", static_cast<int>(st),
                          m, n, k);
  return Status();
}

Status dnnl_conv_f32(const ConvGeometry& g, const float* x, const float* w, const float* bias,
                     float* y, int threads) {
  static std::mutex mu;
  static std::map<ConvKey, std::shared_ptr<ConvEntry>> cache;
  set_dnnl_threads(threads);
  try {
    ConvKey key{g, bias != nullptr};
    std::shared_ptr<ConvEntry> e;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = cache.find(key);
      if (it != cache.end()) e = it->second;
    }
    if (!e) {
      e = make_conv(g, bias != nullptr);
      std::lock_guard<std::mutex> lock(mu);
      if (cache.size() > 4096) cache.clear();  // bound memory under shape churn
      cache.emplace(key, e);
    }
    dnnl::engine& eng = cpu_engine();
    dnnl::stream s(eng);
    dnnl::memory src(e->src_md, eng, const_cast<float*>(x));
    dnnl::memory dst(e->dst_md, eng, y);
    dnnl::memory user_w(e->user_w_md, eng, const_cast<float*>(w));
    dnnl::memory wm = user_w;
    if (e->needs_w_reorder) {
      wm = dnnl::memory(e->w_md, eng);
      e->w_reorder.execute(s, user_w, wm);
    }
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, dst}};
    if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(e->bias_md, eng, const_cast<float*>(bias)));
    e->prim.execute(s, args);
    s.wait();
  } catch (const dnnl::error& err) {
    return internal_error("oneDNN convolution failed: {}", err.what());
  }
  return Status();
}

}  // namespace tierjit::interp::nn
