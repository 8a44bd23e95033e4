// oneDNN glue shared by every primitive (dnnl_internal.h) plus the sgemm wrapper and the
// OpenMP thread-count setter of dnnl_util.h.
#include <omp.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "interp/kernels/dnnl_internal.h"
#include "interp/kernels/dnnl_util.h"
#include "kernels/small_gemm.h"
#include "kernels/weight_pack_cache.h"
#include "support/cpu_load.h"

namespace tierjit::interp::nn {
namespace dnnl_glue {
namespace {

// Reordered copies of constant weight tensors, keyed by weight data and target layout (shared
// by every primitive, i.e. input shape, that wants the same layout): a kernels::WeightPackCache
// (weight_pack_cache.h), so each copy holds a handle to the weight tensor (its storage and
// address cannot be reused while cached; only tensors the graph marks constant, initializers,
// are cached), the total is bounded (a copy past the budget is made per call), and a copy whose
// tensor only the cache still holds (its model is gone) is dropped at the next miss: 300
// sessions of one model made and destroyed in turn grew resident memory by 249 MiB before.
struct ReorderedWeights {
  Tensor keep;
  dnnl::memory reordered;
  size_t nbytes = 0;  // reordered + retained original
  size_t bytes() const { return nbytes; }
  bool orphaned() const { return keep.storage_holders() == 1; }
};

constexpr size_t kWeightCacheBudget = size_t{256} << 20;  // reordered + retained original bytes

// The weights' address and the target layout's blocked description (oneDNN 2.x memory::desc
// has no ordering); empty for a layout that is not plain blocked (not cached).
using WeightKey = std::pair<const void*, std::vector<int64_t>>;

std::vector<int64_t> layout_key(const dnnl::memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  if (d.format_kind != dnnl_blocked) return {};
  std::vector<int64_t> k{d.ndims, d.data_type, d.offset0, static_cast<int64_t>(d.extra.flags),
                         d.format_desc.blocking.inner_nblks};
  for (int i = 0; i < d.ndims; ++i)
    k.insert(k.end(), {d.dims[i], d.padded_dims[i], d.padded_offsets[i], d.format_desc.blocking.strides[i]});
  for (int i = 0; i < d.format_desc.blocking.inner_nblks; ++i)
    k.insert(k.end(), {d.format_desc.blocking.inner_blks[i], d.format_desc.blocking.inner_idxs[i]});
  return k;
}

kernels::WeightPackCache<WeightKey, ReorderedWeights>& weight_cache() {
  static kernels::WeightPackCache<WeightKey, ReorderedWeights> c(kWeightCacheBudget);
  return c;
}

class CallBuffers {
 public:
  static constexpr int kSlots = 3;
  static constexpr size_t kMaxBytes = size_t{16} << 20;  // at most 48 MB kept per thread

  dnnl::memory get(int slot, const dnnl::memory::desc& md) {
    void* p = data(slot, md.get_size());
    return p ? dnnl::memory(md, cpu_engine(), p) : dnnl::memory(md, cpu_engine());
  }

  // The slot's buffer grown to `bytes`, or nullptr past kMaxBytes or when allocation fails.
  void* data(int slot, size_t bytes) {
    if (bytes > kMaxBytes) return nullptr;
    Buffer& b = slots_[slot];
    if (b.size < bytes) {
      const size_t size = (bytes + 63) / 64 * 64;
      b.ptr.reset(static_cast<char*>(std::aligned_alloc(64, size)));
      b.size = b.ptr ? size : 0;
      if (!b.ptr) return nullptr;
    }
    return b.ptr.get();
  }

 private:
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  struct Buffer {
    std::unique_ptr<char, Free> ptr;
    size_t size = 0;
  };
  Buffer slots_[kSlots];
};

}  // namespace

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::reorder make_reorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
  dnnl::reorder::primitive_desc rpd(cpu_engine(), from, cpu_engine(), to);
  if (rpd.scratchpad_desc().get_size() != 0)  // plain reorders need none; refuse shared ones
    throw dnnl::error(dnnl_unimplemented, "reorder needs a scratchpad");
  return dnnl::reorder(rpd);
}

CallBuffers& thread_call_buffers() {
  thread_local CallBuffers buffers;
  return buffers;
}

dnnl::stream& thread_stream() {
  thread_local dnnl::stream stream(cpu_engine());
  return stream;
}

dnnl::memory call_buffer(CallSlot slot, const dnnl::memory::desc& md) {
  return thread_call_buffers().get(static_cast<int>(slot), md);
}

void* call_buffer_data(CallSlot slot, size_t bytes) {
  return thread_call_buffers().data(static_cast<int>(slot), bytes);
}

dnnl::memory weights_in_layout(const dnnl::memory::desc& user_md, const dnnl::memory::desc& want,
                               const dnnl::reorder& r, const float* w, const Tensor* constant_w,
                               dnnl::stream& s) {
  if (want == user_md) return dnnl::memory(user_md, cpu_engine(), const_cast<float*>(w));
  auto reorder = [&] {
    dnnl::memory user_w(user_md, cpu_engine(), const_cast<float*>(w));
    dnnl::memory reordered(want, cpu_engine());
    r.execute(s, user_w, reordered);
    return reordered;
  };
  std::vector<int64_t> layout = constant_w ? layout_key(want) : std::vector<int64_t>();
  if (layout.empty()) return reorder();
  const size_t nbytes = want.get_size() + constant_w->nbytes();
  const std::shared_ptr<const ReorderedWeights> cached =
      weight_cache().get({w, std::move(layout)}, nbytes, [&] {
        auto item = std::make_shared<ReorderedWeights>();
        item->keep = *constant_w;
        item->reordered = reorder();
        s.wait();  // the cached copy must be complete before another thread can read it
        item->nbytes = nbytes;
        return item;
      });
  return cached ? cached->reordered : reorder();  // past the budget: a copy for this call
}

}  // namespace dnnl_glue

size_t dnnl_cached_weight_bytes() { return dnnl_glue::weight_cache().bytes(); }

int parallel_threads(int64_t macs, int threads) {
  if (threads <= 1 || macs < kPrimitiveMinMacs) return 1;
  return support::team_for(threads);
}

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
  // Small products run our loop nest: dnnl_sgemm would generate its kernels on the first call
  // of each kind (small_gemm.h: 19 ms with B plain, 3.3 ms with B transposed). With B
  // transposed from 3 rows oneDNN's kernels are faster (8x10x512: 0.59 against 0.95 us), but
  // that is 0.4 us per call against 3.3 ms once: mlp's first 8-row request took 3.3 ms with
  // them, 0.2 ms without.
  if (m * n * k < kernels::kSmallGemmMacs) {
    kernels::small_sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return Status();
  }
  // Small products run on the calling thread: an OpenMP team costs more than it saves there,
  // and idle team threads spin (see kParallelMacs).
  const int threads = omp_get_max_threads();
  const bool one_thread =
      threads > 1 && (m * n * k < kParallelMacs || !support::spare_cores_for(threads));
  if (one_thread) omp_set_num_threads(1);
  dnnl_status_t st = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda,
                                b, ldb, beta, c, ldc);
  if (one_thread) omp_set_num_threads(threads);
  if (st != dnnl_success)
    return internal_error("oneDNN sgemm failed (status {}) for M={} N={} K={}", static_cast<int>(st),
                          m, n, k);
  return Status();
}

}  // namespace tierjit::interp::nn
