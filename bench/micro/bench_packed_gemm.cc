// Products by constant weights (kernels/packed_gemm.h): tier 0's nn::dnnl_matmul_f32 on
// our packed panels ("tier0") and with them switched off, i.e. oneDNN's matmul primitive on its
// own packed weights ("library"), on the same buffers, 2 threads (spare cores assumed, as on an
// idle machine); weights stay in cache between calls. Shapes: the mlp's layers at batch 1-128,
// the classifiers of resnet18 / mobilenet_v2 at batch 1, bert_tiny's layers at 32, 512 and 4096
// tokens (B transposed, nn.Linear weights). Cases: matmul.packed_<M>x<K>x<N>/<system>.
// Run: tierjit_micro_bench --benchmark_filter=matmul.packed_ --benchmark_repetitions=5
//      --benchmark_enable_random_interleaving=true
// Batched products with B new every call (bert_tiny's attention, [N * heads] products of
// Q [S, 64] K^T [64, S] and P [S, S] V [S, 64]): kernels::packed_batched_matmul_f32 ("tier0") against
// oneDNN's batched matmul primitive ("library"), 2 threads. Cases:
// matmul.batched_<batch>x<M>x<K>x<N>/<system>.
#include <omp.h>

#include "interp/kernels/dnnl_util.h"
#include "kernels/packed_gemm.h"
#include "micro.h"
#include "support/cpu_load.h"

namespace tierjit::bench {
namespace {

struct PackedShape {
  int64_t m, k, n;
};

constexpr PackedShape kPacked[] = {
    {1, 256, 512},   {1, 512, 512},   {2, 512, 512},   {4, 512, 512},    {8, 512, 512},
    {16, 512, 512},  {32, 512, 512},  {64, 256, 512},  {64, 512, 512},   {128, 512, 512},
    {1, 512, 1000},  {1, 1280, 1000}, {32, 128, 128},  {32, 128, 512},   {32, 512, 128},
    {512, 128, 128}, {512, 128, 512}, {512, 512, 128}, {1024, 128, 128}, {1024, 512, 128},
    {2048, 128, 128}, {2048, 512, 128}, {4096, 128, 128}, {4096, 128, 512}, {4096, 512, 128},
    {128, 1568, 10},
};

void time_packed(benchmark::State& state, PackedShape s, bool ours) {
  constexpr int kThreads = 2;
  const Tensor a = random_tensor({s.m, s.k}, 41);
  const Tensor b = random_tensor({s.n, s.k}, 42), bias = random_tensor({s.n}, 43);
  Tensor c = Tensor::zeros(DType::kFloat32, {s.m, s.n});
  const interp::nn::MatMulGeometry g{s.m, s.n, s.k, /*trans_b=*/true};
  support::override_foreign_busy_cores(0);
  kernels::set_packed_matmul_enabled(ours);
  omp_set_num_threads(kThreads);
  auto run = [&] {
    return interp::nn::dnnl_matmul_f32(g, a.data<float>(), b.data<float>(), &b,
                                       bias.data<float>(), c.data<float>(), kThreads);
  };
  if (!run().ok()) {  // warm-up: the primitive or the panels
    state.SkipWithError("dnnl_matmul_f32 failed");
  } else {
    for (auto _ : state) {
      (void)run();
      benchmark::DoNotOptimize(c.data<float>());
      benchmark::ClobberMemory();
    }
  }
  kernels::set_packed_matmul_enabled(true);
  support::override_foreign_busy_cores(-1);
}

struct BatchedShape {
  int64_t batch, m, k, n;
};

constexpr BatchedShape kBatched[] = {
    {2, 32, 64, 32},   {8, 32, 64, 32},   {2, 128, 64, 128}, {2, 128, 128, 64},
    {2, 256, 64, 256}, {2, 256, 256, 64}, {16, 128, 64, 128}, {16, 128, 128, 64}, {32, 256, 64, 256}, {32, 256, 256, 64},
};

void time_batched(benchmark::State& state, BatchedShape s, bool ours) {
  constexpr int kThreads = 2;
  const Tensor a = random_tensor({s.batch, s.m, s.k}, 44), b = random_tensor({s.batch, s.k, s.n}, 45);
  Tensor c = Tensor::zeros(DType::kFloat32, {s.batch, s.m, s.n});
  support::override_foreign_busy_cores(0);
  omp_set_num_threads(kThreads);
  auto run = [&] {
    if (ours)
      return kernels::packed_batched_matmul_f32(s.batch, s.m, s.n, s.k, a.data<float>(), b.data<float>(),
                                                   c.data<float>(), kThreads);
    return interp::nn::dnnl_batched_matmul_f32(s.batch, {s.m, s.n, s.k, false}, a.data<float>(),
                                               b.data<float>(), c.data<float>(), kThreads)
        .ok();
  };
  if (!run()) {
    state.SkipWithError("the batched product failed");
  } else {
    for (auto _ : state) {
      (void)run();
      benchmark::DoNotOptimize(c.data<float>());
      benchmark::ClobberMemory();
    }
  }
  support::override_foreign_busy_cores(-1);
}

const bool registered = [] {
  for (const BatchedShape& s : kBatched) {
    const std::string name = "matmul.batched_" + std::to_string(s.batch) + "x" + std::to_string(s.m) + "x" +
                             std::to_string(s.k) + "x" + std::to_string(s.n);
    const double flop = 2.0 * static_cast<double>(s.batch * s.m * s.n * s.k);
    register_case(name, "tier0", [s](benchmark::State& st) { time_batched(st, s, true); }, flop);
    register_case(name, "library", [s](benchmark::State& st) { time_batched(st, s, false); }, flop);
  }
  for (const PackedShape& s : kPacked) {
    const std::string name = "matmul.packed_" + std::to_string(s.m) + "x" + std::to_string(s.k) +
                             "x" + std::to_string(s.n);
    const double flop = 2.0 * static_cast<double>(s.m * s.n * s.k);
    register_case(name, "tier0", [s](benchmark::State& st) { time_packed(st, s, true); }, flop);
    register_case(name, "library", [s](benchmark::State& st) { time_packed(st, s, false); }, flop);
  }
  return true;
}();

}  // namespace
}  // namespace tierjit::bench
