// Single-core FMA peak of this machine, measured in the same run as the kernels so "% of peak"
// compares numbers taken under the same load. A register-only loop of independent FMA chains
// (enough accumulators to cover FMA latency x throughput) per instruction set, compiled with
// target attributes and registered only if the CPU supports it (__builtin_cpu_supports).
// Cases: peak.fma/avx2 and peak.fma/avx512; the report takes the best of them as the peak.
// They run kPeakRepetitions times (cheap), spread over the whole interleaved run, so the best
// repetition catches the clock the kernels saw at their best too (turbo varies with load).
#include <immintrin.h>

#include "micro.h"

namespace tierjit::bench {
namespace {

constexpr int64_t kInnerSteps = 1024;  // FMA rounds per call over all accumulators
constexpr int kPeakRepetitions = 20;

// 12 chains of 8 floats: 12 independent FMAs in flight (>= 4-cycle latency x 2 pipes + slack).
__attribute__((target("avx2,fma"), noinline)) float fma_loop_avx2(int64_t steps, float seed) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(seed + 0.01f * static_cast<float>(i));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  __m256 sum = acc[0];
  for (int i = 1; i < 12; ++i) sum = _mm256_add_ps(sum, acc[i]);
  alignas(32) float out[8];
  _mm256_store_ps(out, sum);
  return out[0] + out[7];
}

// 16 chains of 16 floats.
__attribute__((target("avx512f"), noinline)) float fma_loop_avx512(int64_t steps, float seed) {
  __m512 acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = _mm512_set1_ps(seed + 0.01f * static_cast<float>(i));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  __m512 sum = acc[0];
  for (int i = 1; i < 16; ++i) sum = _mm512_add_ps(sum, acc[i]);
  alignas(64) float out[16];  // not _mm512_reduce_add_ps: GCC 12's header warns (-Wuninitialized)
  _mm512_store_ps(out, sum);
  return out[0] + out[15];
}

template <float (*Loop)(int64_t, float)>
void time_loop(benchmark::State& state) {
  float seed = 1.f;
  for (auto _ : state) {
    seed = Loop(kInnerSteps, seed) * 1e-9f + 1.f;
    benchmark::DoNotOptimize(seed);
  }
}

const bool registered = [] {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    register_case("peak.fma", "avx2", time_loop<fma_loop_avx2>, 2.0 * 12 * 8 * kInnerSteps)
        ->Repetitions(kPeakRepetitions);
  if (__builtin_cpu_supports("avx512f"))
    register_case("peak.fma", "avx512", time_loop<fma_loop_avx512>, 2.0 * 16 * 16 * kInnerSteps)
        ->Repetitions(kPeakRepetitions);
  return true;
}();

}  // namespace
}  // namespace tierjit::bench
