// Products by constant weights (interp/kernels/packed_gemm.h): tier 0's nn::dnnl_matmul_f32 on
// our packed panels ("tier0") and with them switched off, i.e. oneDNN's matmul primitive on its
// own packed weights ("library"), on the same buffers, 2 threads (spare cores assumed, as on an
// idle machine); weights stay in cache between calls. Shapes: the mlp's layers at batch 1-128,
// the classifiers of resnet18 / mobilenet_v2 at batch 1, bert_tiny's layers at 32, 512 and 4096
// tokens (B transposed, nn.Linear weights). Cases: matmul.packed_<M>x<K>x<N>/<system>.
// Run: tierjit_micro_bench --benchmark_filter=matmul.packed_ --benchmark_repetitions=5
//      --benchmark_enable_random_interleaving=true
#include <omp.h>

#include "interp/kernels/dnnl_util.h"
#include "interp/kernels/packed_gemm.h"
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
    {512, 128, 128}, {512, 128, 512}, {512, 512, 128}, {4096, 128, 512}, {128, 1568, 10},
};

void time_packed(benchmark::State& state, PackedShape s, bool ours) {
  constexpr int kThreads = 2;
  const Tensor a = random_tensor({s.m, s.k}, 41);
  const Tensor b = random_tensor({s.n, s.k}, 42), bias = random_tensor({s.n}, 43);
  Tensor c = Tensor::zeros(DType::kFloat32, {s.m, s.n});
  const interp::nn::MatMulGeometry g{s.m, s.n, s.k, /*trans_b=*/true};
  support::override_foreign_busy_cores(0);
  interp::nn::set_packed_matmul_enabled(ours);
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
  interp::nn::set_packed_matmul_enabled(true);
  support::override_foreign_busy_cores(-1);
}

const bool registered = [] {
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
