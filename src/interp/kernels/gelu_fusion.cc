// The fused erf-form GELU chain (see gelu_fusion.h): matching in the graph, and the one-pass
// kernel. The kernel's per-element operations and their order are those of the Div, Erf
// (kernels::erf_f32, position independent), Add and Mul kernels, so results are bit-identical.
#include "interp/kernels/gelu_fusion.h"

#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu_features.h"
#include "interp/kernels/fusion_match.h"
#include "kernels/parallel_for.h"
#include "kernels/vec_math.h"

namespace tierjit::interp {
namespace {

// A float32 constant of one element and rank <= 1: its value.
std::optional<float> scalar_constant(const ir::Value* v) {
  if (!v || !v->is_constant()) return std::nullopt;
  const Tensor& t = v->constant();
  if (t.dtype() != DType::kFloat32 || t.numel() != 1 || t.rank() > 1) return std::nullopt;
  return t.data<float>()[0];
}

constexpr int64_t kBlock = 1024;           // elements per pass of the fused loop
// One thread's time per element of the chain (erf dominates): 100-110 us for 128K elements on
// AVX2 (tierjit_micro_bench --benchmark_filter=elementwise.gelu_chain_128K, Zen 3).
constexpr double kGeluNsPerElement = 0.8;

const bool kHasAvx512 = kernels::cpu_has_avx512f();

// GCC 12 cannot see that the first loop of each block fills t[0, len) before erf reads it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// One block: t = x / c1 (Div), erf in place (Erf), y = (x * (t + c2)) * c3 (Add, Mul, Mul).
// IEEE division, addition and multiplication give the same result 8 or 16 lanes wide as one at
// a time (no reciprocal, no FMA), so this equals the Div, Add and Mul kernels bit for bit.
void gelu_block_avx2(const float* xb, float* yb, float* t, int64_t len, float c1, float c2,
                     float c3) {
  const __m256 v1 = _mm256_set1_ps(c1), v2 = _mm256_set1_ps(c2), v3 = _mm256_set1_ps(c3);
  int64_t i = 0;
  for (; i + 8 <= len; i += 8) _mm256_store_ps(t + i, _mm256_div_ps(_mm256_loadu_ps(xb + i), v1));
  for (; i < len; ++i) t[i] = xb[i] / c1;
  kernels::erf_f32(t, t, len);
  for (i = 0; i + 8 <= len; i += 8) {
    const __m256 a = _mm256_add_ps(_mm256_load_ps(t + i), v2);
    const __m256 m = _mm256_mul_ps(_mm256_loadu_ps(xb + i), a);
    _mm256_storeu_ps(yb + i, _mm256_mul_ps(m, v3));
  }
  for (; i < len; ++i) yb[i] = (xb[i] * (t[i] + c2)) * c3;
}

// The same on 16 lanes where the CPU has AVX-512F (bert_tiny's FFN GELU, 256 x 512, one thread:
// 140-151 -> 92-119 us, `tierjit_micro_bench --benchmark_filter=gelu_chain`, loaded machine).
__attribute__((target("avx512f"))) void gelu_block_avx512(const float* xb, float* yb, float* t,
                                                            int64_t len, float c1, float c2,
                                                            float c3) {
  const __m512 v1 = _mm512_set1_ps(c1), v2 = _mm512_set1_ps(c2), v3 = _mm512_set1_ps(c3);
  int64_t i = 0;
  for (; i + 16 <= len; i += 16) _mm512_store_ps(t + i, _mm512_div_ps(_mm512_loadu_ps(xb + i), v1));
  for (; i < len; ++i) t[i] = xb[i] / c1;
  kernels::erf_f32(t, t, len);
  for (i = 0; i + 16 <= len; i += 16) {
    const __m512 a = _mm512_add_ps(_mm512_load_ps(t + i), v2);
    const __m512 m = _mm512_mul_ps(_mm512_loadu_ps(xb + i), a);
    _mm512_storeu_ps(yb + i, _mm512_mul_ps(m, v3));
  }
  for (; i < len; ++i) yb[i] = (xb[i] * (t[i] + c2)) * c3;
}

#pragma GCC diagnostic pop

}  // namespace

std::optional<GeluChain> match_gelu_chain(const ir::Node& div, const ir::Graph& g) {
  using ir::OpKind;
  if (div.op() != OpKind::Div || div.num_inputs() != 2 || div.num_outputs() != 1) return std::nullopt;
  GeluChain c;
  c.div = &div;
  const ir::Value* x = div.input(0);
  const std::optional<float> c1 = scalar_constant(div.input(1));
  if (!x || !c1) return std::nullopt;
  c.c1 = *c1;
  c.erf = sole_user(div.output(0), g);
  if (!c.erf || c.erf->op() != OpKind::Erf) return std::nullopt;
  c.add = sole_user(c.erf->output(0), g);
  if (!c.add || c.add->op() != OpKind::Add) return std::nullopt;
  const std::optional<float> c2 = scalar_constant(other_input(*c.add, c.erf->output(0)));
  if (!c2) return std::nullopt;
  c.c2 = *c2;
  c.mul = sole_user(c.add->output(0), g);
  if (!c.mul || c.mul->op() != OpKind::Mul || other_input(*c.mul, c.add->output(0)) != x)
    return std::nullopt;
  c.scale = sole_user(c.mul->output(0), g);
  if (!c.scale || c.scale->op() != OpKind::Mul) return std::nullopt;
  const std::optional<float> c3 = scalar_constant(other_input(*c.scale, c.mul->output(0)));
  if (!c3) return std::nullopt;
  c.c3 = *c3;
  return c;
}

Tensor run_gelu_chain(const GeluChain& c, const Tensor& x, int threads) {
  Tensor y = Tensor::empty(DType::kFloat32, x.shape());
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  const int64_t n = x.numel(), blocks = (n + kBlock - 1) / kBlock;
  const float c1 = c.c1, c2 = c.c2, c3 = c.c3;
  const int team = kernels::worth_parallel(threads, n, kGeluNsPerElement) ? threads : 1;
  kernels::parallel_for_stealing(team, blocks, [&](int64_t b) {
    const int64_t lo = b * kBlock, len = std::min(kBlock, n - lo);
    alignas(64) float t[kBlock];
    if (kHasAvx512) gelu_block_avx512(xp + lo, yp + lo, t, len, c1, c2, c3);
    else gelu_block_avx2(xp + lo, yp + lo, t, len, c1, c2, c3);
  });
  return y;
}

}  // namespace tierjit::interp
