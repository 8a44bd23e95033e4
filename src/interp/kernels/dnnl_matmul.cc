// oneDNN matrix products (see dnnl_util.h): a least-recently-used cache of matmul primitives
// keyed by geometry, bias, weight constness and thread count. Constant weights run on our packed
// panels first (packed_gemm.h); without AVX-512F (or past the panels' budget) in the primitive's
// preferred (packed) layout, reordered once (dnnl_internal.h); other weights run in place. On a team, products of 32 rows and more run as one one-thread primitive per share of
// rows (oneDNN 2.6 left one thread idle there).
#include <omp.h>

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "interp/kernels/dnnl_internal.h"
#include "interp/kernels/dnnl_util.h"
#include "kernels/packed_gemm.h"

namespace tierjit::interp::nn {
namespace {

using namespace dnnl_glue;

struct MatMulKey {
  MatMulGeometry g;
  bool has_bias = false, constant_b = false;
  int threads = 1;
  int64_t batch = 0;  ///< > 0: a batched product [batch, M, K] x [batch, K, N] (no bias, b plain)
  bool operator<(const MatMulKey& o) const {
    auto tie = [](const MatMulKey& k) {
      return std::tie(k.g.m, k.g.n, k.g.k, k.g.trans_b, k.has_bias, k.constant_b, k.threads,
                      k.batch);
    };
    return tie(*this) < tie(o);
  }
};

struct MatMulEntry {
  dnnl::matmul prim;
  dnnl::memory::desc a_md, y_md, user_b_md, b_md, bias_md, scratch_md;
  dnnl::reorder b_r;  // user_b_md -> b_md when they differ
};

std::shared_ptr<MatMulEntry> make_matmul(const MatMulKey& key) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const MatMulGeometry& g = key.g;
  auto e = std::make_shared<MatMulEntry>();
  if (key.batch > 0) {
    e->a_md = dnnl::memory::desc({key.batch, g.m, g.k}, dt::f32, tag::abc);
    e->y_md = dnnl::memory::desc({key.batch, g.m, g.n}, dt::f32, tag::abc);
    e->user_b_md = e->b_md = dnnl::memory::desc({key.batch, g.k, g.n}, dt::f32, tag::abc);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(e->a_md, e->b_md, e->y_md), attr,
                                    cpu_engine());
    e->scratch_md = pd.scratchpad_desc();
    e->prim = dnnl::matmul(pd);
    return e;
  }
  e->a_md = dnnl::memory::desc({g.m, g.k}, dt::f32, tag::ab);
  e->y_md = dnnl::memory::desc({g.m, g.n}, dt::f32, tag::ab);
  // oneDNN's weights are [K, N]; a transposed (stored [N, K]) b is the column-major layout ba.
  e->user_b_md = dnnl::memory::desc({g.k, g.n}, dt::f32, g.trans_b ? tag::ba : tag::ab);
  const dnnl::memory::desc b_query =
      key.constant_b ? dnnl::memory::desc({g.k, g.n}, dt::f32, tag::any) : e->user_b_md;
  if (key.has_bias) e->bias_md = dnnl::memory::desc({1, g.n}, dt::f32, tag::ab);
  dnnl::matmul::desc d(e->a_md, b_query, e->bias_md, e->y_md);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::matmul::primitive_desc pd(d, attr, cpu_engine());
  e->b_md = pd.weights_desc();
  e->scratch_md = pd.scratchpad_desc();
  if (e->b_md != e->user_b_md) e->b_r = make_reorder(e->user_b_md, e->b_md);
  e->prim = dnnl::matmul(pd);
  return e;
}

// Rows per thread below which a product is not split across threads: at 8 rows per thread mlp's
// 16x256 took 0.067 ms split, 0.060 ms on oneDNN's team.
constexpr int64_t kSplitMinRows = 16;

// This thread's memory objects for a matmul entry (ThreadBindings, dnnl_internal.h).
struct BoundMemories {
  std::shared_ptr<MatMulEntry> entry;
  dnnl::memory a, b, y, bias, scratch;
};

BoundMemories bind(const std::shared_ptr<MatMulEntry>& e) {
  dnnl::engine& eng = cpu_engine();
  BoundMemories m;
  m.entry = e;
  m.a = dnnl::memory(e->a_md, eng, nullptr);
  m.b = dnnl::memory(e->user_b_md, eng, nullptr);
  m.y = dnnl::memory(e->y_md, eng, nullptr);
  m.bias = e->bias_md.get_size() ? dnnl::memory(e->bias_md, eng, nullptr) : dnnl::memory();
  m.scratch = e->scratch_md.get_size() ? dnnl::memory(e->scratch_md, eng, nullptr) : dnnl::memory();
  return m;
}

// One primitive call on `threads` threads (the calling thread's OpenMP count must be `threads`).
Status run_primitive(const MatMulGeometry& g, const float* a, const float* b,
                     const Tensor* constant_b, const float* bias, float* y, int threads,
                     int64_t batch = 0) {
  static PrimitiveCache<MatMulKey, MatMulEntry> cache(kPrimitiveCacheEntries);
  try {
    const MatMulKey key{g, bias != nullptr, constant_b != nullptr, threads, batch};
    std::shared_ptr<MatMulEntry> e = cache.get(key, [&] { return make_matmul(key); });
    thread_local ThreadBindings<MatMulEntry, BoundMemories> bindings;
    BoundMemories& m = bindings.get(e, bind);
    dnnl::stream& s = thread_stream();
    dnnl::memory packed;  // constant weights in the primitive's layout (held by the weight cache)
    if (e->b_md == e->user_b_md)
      m.b.set_data_handle(const_cast<float*>(b));
    else
      packed = weights_in_layout(e->user_b_md, e->b_md, e->b_r, b, constant_b, s);
    m.a.set_data_handle(const_cast<float*>(a));
    m.y.set_data_handle(y);
    dnnl_exec_arg_t args[5];
    int n = 0;
    args[n++] = {DNNL_ARG_SRC, m.a.get()};
    args[n++] = {DNNL_ARG_WEIGHTS, packed ? packed.get() : m.b.get()};
    args[n++] = {DNNL_ARG_DST, m.y.get()};
    if (bias) {
      m.bias.set_data_handle(const_cast<float*>(bias));
      args[n++] = {DNNL_ARG_BIAS, m.bias.get()};
    }
    dnnl::memory scratch_call;  // a one-call scratchpad when larger than the thread's buffer
    if (m.scratch) {
      if (void* p = call_buffer_data(CallSlot::kScratch, e->scratch_md.get_size())) {
        m.scratch.set_data_handle(p);
        args[n++] = {DNNL_ARG_SCRATCHPAD, m.scratch.get()};
      } else {
        scratch_call = call_buffer(CallSlot::kScratch, e->scratch_md);
        args[n++] = {DNNL_ARG_SCRATCHPAD, scratch_call.get()};
      }
    }
    dnnl::error::wrap_c_api(dnnl_primitive_execute(e->prim.get(), s.get(), n, args),
                            "could not execute a matmul");
    s.wait();
  } catch (const dnnl::error& err) {
    return internal_error("oneDNN matmul failed for M={} N={} K={}: {}", g.m, g.n, g.k, err.what());
  }
  return Status();
}

}  // namespace

Status dnnl_matmul_f32(const MatMulGeometry& g, const float* a, const float* b,
                       const Tensor* constant_b, const float* bias, float* y, int threads) {
  if (g.m * g.n * g.k < kPrimitiveMinMacs) {
    // Tiny products (attention heads): sgemm has less fixed cost than a primitive call.
    set_dnnl_threads(threads);
    TJ_RETURN_IF_ERROR(sgemm(false, g.trans_b, g.m, g.n, g.k, 1.f, a, g.k, b,
                             g.trans_b ? g.k : g.n, 0.f, y, g.n));
    if (bias)
      for (int64_t i = 0; i < g.m; ++i)
        for (int64_t j = 0; j < g.n; ++j) y[i * g.n + j] += bias[j];
    return Status();
  }
  // Mid-sized products use the team only while no other process needs the spare cores
  // (parallel_threads); the thread count is part of the key, so a cached primitive always runs
  // with the thread count it was created with.
  const int used_threads = parallel_threads(g.m * g.n * g.k, threads);
  // Constant weights: our packed panels (packed_gemm.h: no kernel generation per row count).
  if (constant_b &&
      kernels::packed_matmul_f32(g.m, g.n, g.k, g.trans_b, a, b, *constant_b, bias, y, used_threads))
    return Status();
  if (used_threads > 1 && g.m >= 2 * kSplitMinRows) {
    // oneDNN's brgemm matmul splits rows in large blocks, so below a few hundred rows one thread
    // of the team does most of the work (mlp 64x256 at 2 threads: 0.24 ms, at 1 thread 0.25).
    // Each thread runs a one-thread primitive on its share of the rows instead.
    const int chunks = static_cast<int>(std::min<int64_t>(used_threads, g.m / kSplitMinRows));
    const int64_t rows = (g.m + chunks - 1) / chunks;
    std::vector<Status> status(static_cast<size_t>(chunks));
#pragma omp parallel num_threads(chunks)
    {
      const int t = omp_get_thread_num();
      const int64_t r0 = t * rows, r1 = std::min(g.m, r0 + rows);
      if (r0 < r1) {
        set_dnnl_threads(1);
        MatMulGeometry part = g;
        part.m = r1 - r0;
        status[static_cast<size_t>(t)] =
            run_primitive(part, a + r0 * g.k, b, constant_b, bias, y + r0 * g.n, 1);
      }
    }
    for (Status& st : status) TJ_RETURN_IF_ERROR(std::move(st));
    return Status();
  }
  set_dnnl_threads(used_threads);
  return run_primitive(g, a, b, constant_b, bias, y, used_threads);
}

Status dnnl_batched_matmul_f32(int64_t batch, const MatMulGeometry& g, const float* a,
                               const float* b, float* y, int threads) {
  const int used_threads = parallel_threads(batch * g.m * g.n * g.k, threads);
  set_dnnl_threads(used_threads);
  MatMulGeometry plain = g;
  plain.trans_b = false;
  return run_primitive(plain, a, b, nullptr, nullptr, y, used_threads, batch);
}

}  // namespace tierjit::interp::nn
