// Products of a few rows by constant weights (see skinny_gemm.h): weights packed once into
// column panels of 64, each panel's outputs for up to 4 rows held in 16 AVX-512 accumulators
// (4 rows x 4 vectors: independent sums, so the fused multiply-adds over k never wait on each
// other), whole panels per thread.
#include "interp/kernels/skinny_gemm.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

namespace tierjit::interp::nn {
namespace {

constexpr int64_t kPanel = 64;  // columns per panel: 4 vectors of 16 lanes

std::atomic<bool> g_enabled{true};
std::atomic<uint64_t> g_runs{0};

const bool kHasAvx512 = [] {
  __builtin_cpu_init();  // static initializers may run before libgcc's own
  return __builtin_cpu_supports("avx512f") != 0;
}();

// b's panels: [panels][K][64] floats starting on a cache line, zeros past N.
struct Panels {
  std::vector<float> storage;
  float* data = nullptr;
  Tensor keep;  // the constant weight tensor: its storage (and b's address) stays ours
  size_t bytes() const { return storage.size() * sizeof(float); }
};

std::shared_ptr<const Panels> pack(int64_t n, int64_t k, bool trans_b, const float* b,
                                   const Tensor& keep) {
  auto p = std::make_shared<Panels>();
  const int64_t panels = (n + kPanel - 1) / kPanel;
  p->storage.assign(static_cast<size_t>(panels * k * kPanel + 16), 0.f);
  const auto addr = reinterpret_cast<uintptr_t>(p->storage.data());
  p->data = p->storage.data() + ((64 - addr % 64) % 64) / sizeof(float);
  for (int64_t pi = 0; pi < panels; ++pi)
    for (int64_t kk = 0; kk < k; ++kk) {
      float* out = p->data + (pi * k + kk) * kPanel;
      for (int64_t j = 0; j < kPanel && pi * kPanel + j < n; ++j) {
        const int64_t col = pi * kPanel + j;
        out[j] = trans_b ? b[col * k + kk] : b[kk * n + col];
      }
    }
  p->keep = keep;
  return p;
}

// Packed panels of constant weights by address and geometry; cleared whole past the budget.
class PanelCache {
 public:
  std::shared_ptr<const Panels> get(int64_t n, int64_t k, bool trans_b, const float* b,
                                    const Tensor& keep) {
    const Key key{b, n, k, trans_b};
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = items_.find(key);
      if (it != items_.end()) return it->second;
    }
    std::shared_ptr<const Panels> p = pack(n, k, trans_b, b, keep);
    std::lock_guard<std::mutex> lock(mu_);
    if (bytes_ + p->bytes() > kBudget) {
      items_.clear();
      bytes_ = 0;
    }
    auto [it, inserted] = items_.emplace(key, p);
    if (inserted) bytes_ += p->bytes();
    return it->second;  // another thread's equal packing when it got there first
  }

 private:
  using Key = std::tuple<const float*, int64_t, int64_t, bool>;
  static constexpr size_t kBudget = size_t{256} << 20;
  std::mutex mu_;
  std::map<Key, std::shared_ptr<const Panels>> items_;
  size_t bytes_ = 0;
};

// Lanes of vector v (0..3) of a panel with `cols` valid columns.
inline __mmask16 lanes(int64_t cols, int v) {
  const int64_t valid = std::clamp<int64_t>(cols - 16 * v, 0, 16);
  return static_cast<__mmask16>((uint32_t{1} << valid) - 1);
}

// R (1..4) rows of y for one panel: y[r, 0..cols) = bias + sum_k a[r, k] * w[k, 0..cols).
template <int R>
__attribute__((target("avx512f,fma"))) void panel_rows(int64_t k, const float* a, int64_t lda,
                                                       const float* w, const float* bias,
                                                       int64_t cols, float* y, int64_t ldy) {
  __m512 acc[R][4];
#pragma GCC unroll 4
  for (int v = 0; v < 4; ++v) {
    const __m512 b0 = bias ? _mm512_maskz_loadu_ps(lanes(cols, v), bias + 16 * v)
                           : _mm512_setzero_ps();
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) acc[r][v] = b0;
  }
  for (int64_t kk = 0; kk < k; ++kk) {
    const float* wk = w + kk * kPanel;
    const __m512 w0 = _mm512_load_ps(wk), w1 = _mm512_load_ps(wk + 16),
                 w2 = _mm512_load_ps(wk + 32), w3 = _mm512_load_ps(wk + 48);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * lda + kk]);
      acc[r][0] = _mm512_fmadd_ps(av, w0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(av, w1, acc[r][1]);
      acc[r][2] = _mm512_fmadd_ps(av, w2, acc[r][2]);
      acc[r][3] = _mm512_fmadd_ps(av, w3, acc[r][3]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) {
      float* out = y + r * ldy + 16 * v;
      if (cols >= kPanel) _mm512_storeu_ps(out, acc[r][v]);
      else _mm512_mask_storeu_ps(out, lanes(cols, v), acc[r][v]);
    }
}

// Panels [p0, p1) for all m rows, 4 rows at a time.
__attribute__((target("avx512f,fma"))) void run_panels(int64_t p0, int64_t p1, int64_t m,
                                                       int64_t n, int64_t k, const float* a,
                                                       const float* packed, const float* bias,
                                                       float* y) {
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t c0 = p * kPanel, cols = std::min(kPanel, n - c0);
    const float* w = packed + p * k * kPanel;
    const float* bp = bias ? bias + c0 : nullptr;
    for (int64_t r0 = 0; r0 < m; r0 += 4) {
      const float* ar = a + r0 * k;
      float* yr = y + r0 * n + c0;
      switch (std::min<int64_t>(4, m - r0)) {
        case 1: panel_rows<1>(k, ar, k, w, bp, cols, yr, n); break;
        case 2: panel_rows<2>(k, ar, k, w, bp, cols, yr, n); break;
        case 3: panel_rows<3>(k, ar, k, w, bp, cols, yr, n); break;
        default: panel_rows<4>(k, ar, k, w, bp, cols, yr, n); break;
      }
    }
  }
}

}  // namespace

bool skinny_matmul_available() { return kHasAvx512 && g_enabled.load(std::memory_order_relaxed); }
void set_skinny_matmul_enabled(bool enabled) { g_enabled.store(enabled); }
uint64_t skinny_matmul_runs() { return g_runs.load(std::memory_order_relaxed); }

void skinny_matmul_f32(int64_t m, int64_t n, int64_t k, bool trans_b, const float* a,
                       const float* b, const Tensor& constant_b, const float* bias, float* y,
                       int threads) {
  static PanelCache cache;
  g_runs.fetch_add(1, std::memory_order_relaxed);
  const std::shared_ptr<const Panels> panels = cache.get(n, k, trans_b, b, constant_b);
  const float* packed = panels->data;
  const int64_t count = (n + kPanel - 1) / kPanel;
  const int used = static_cast<int>(std::clamp<int64_t>(count, 1, std::max(threads, 1)));
  if (used == 1) {
    run_panels(0, count, m, n, k, a, packed, bias, y);
    return;
  }
#pragma omp parallel num_threads(used)
  {
    // Contiguous shares, the same every call: each core keeps its share of b in its L2.
    const int64_t t = omp_get_thread_num(), parts = omp_get_num_threads();
    run_panels(count * t / parts, count * (t + 1) / parts, m, n, k, a, packed, bias, y);
  }
}

}  // namespace tierjit::interp::nn
