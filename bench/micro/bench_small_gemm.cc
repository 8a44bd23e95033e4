// Small float32 products (below 2^16 multiply-adds, kernels/small_gemm.h): tier 0's
// kernels::small_sgemm against dnnl_sgemm on the same preallocated buffers, one thread (the numbers in
// small_gemm.h). Shapes: attention heads of short sequences (B plain) and classifier layers of
// a few rows (B transposed, nn.Linear weights). Cases: matmul.small_<M>x<K>x<N>_<N|T>/<system>;
// the first dnnl_sgemm call of each kind (kernel generation) is outside the timed loop.
// Run: tierjit_micro_bench --benchmark_filter=matmul.small_ --benchmark_repetitions=5
//      --benchmark_enable_random_interleaving=true
#include <dnnl.h>
#include <omp.h>

#include "kernels/small_gemm.h"
#include "micro.h"

namespace tierjit::bench {
namespace {

struct SmallShape {
  int64_t m, k, n;
  bool trans_b;
};

constexpr SmallShape kSmall[] = {
    {16, 16, 64, false}, {16, 64, 16, false}, {32, 64, 32, false},  {64, 16, 64, false},
    {1, 512, 10, true},  {2, 512, 10, true},  {8, 512, 10, true},   {4, 1568, 10, true},
};

void time_small(benchmark::State& state, SmallShape s, bool ours) {
  const Tensor a = random_tensor({s.m, s.k}, 31);
  const Tensor b = random_tensor(s.trans_b ? Shape{s.n, s.k} : Shape{s.k, s.n}, 32);
  Tensor c = Tensor::zeros(DType::kFloat32, {s.m, s.n});
  const int64_t ldb = s.trans_b ? s.k : s.n;
  omp_set_num_threads(1);
  auto gemm = [&] {
    if (ours)
      kernels::small_sgemm(false, s.trans_b, s.m, s.n, s.k, 1.f, a.data<float>(), s.k,
                              b.data<float>(), ldb, 0.f, c.data<float>(), s.n);
    else
      (void)dnnl_sgemm('N', s.trans_b ? 'T' : 'N', s.m, s.n, s.k, 1.f, a.data<float>(), s.k,
                       b.data<float>(), ldb, 0.f, c.data<float>(), s.n);
  };
  gemm();  // warm-up (dnnl_sgemm: its kernel generation)
  for (auto _ : state) {
    gemm();
    benchmark::DoNotOptimize(c.data<float>());
    benchmark::ClobberMemory();
  }
}

const bool registered = [] {
  for (const SmallShape& s : kSmall) {
    const std::string name = "matmul.small_" + std::to_string(s.m) + "x" + std::to_string(s.k) +
                             "x" + std::to_string(s.n) + (s.trans_b ? "_T" : "_N");
    const double flop = 2.0 * static_cast<double>(s.m * s.n * s.k);
    register_case(name, "tier0", [s](benchmark::State& st) { time_small(st, s, true); }, flop);
    register_case(name, "library", [s](benchmark::State& st) { time_small(st, s, false); }, flop);
  }
  return true;
}();

}  // namespace
}  // namespace tierjit::bench
