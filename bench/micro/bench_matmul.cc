// MatMul C[M, N] = A[M, K] x B[K, N] (float32, row-major) on tier 0 (one MatMul node, B an
// initializer as a model's weight; the kernel calls oneDNN's matmul primitive, or below 2^16
// multiply-adds our small GEMM: bench_small_gemm.cc) and on the library directly
// (dnnl_sgemm into a preallocated C: the floor tier 0's interpreter overhead sits on). Shapes:
// cubes 64..1024, the MLP layers (batch 1 and 64: 256->512, 512->512, 512->10) and the BERT
// layer GEMMs (N*S = 64 and 512 tokens: hidden 128 -> 128, 128 -> 512, 512 -> 128).
// Cases: matmul.<M>x<K>x<N>[_<tag>]/<system>, flop = 2*M*N*K.
#include <dnnl.h>

#include "compiled.h"
#include "micro.h"

namespace tierjit::bench {
namespace {

struct GemmShape {
  int64_t m, k, n;
  const char* tag;  // "" for the cubes
};

constexpr GemmShape kShapes[] = {
    {64, 64, 64, ""},        {256, 256, 256, ""},     {512, 512, 512, ""},
    {1024, 1024, 1024, ""},  {1, 256, 512, "mlp"},    {1, 512, 512, "mlp"},
    {1, 512, 10, "mlp"},     {64, 256, 512, "mlp"},   {64, 512, 512, "mlp"},
    {64, 512, 10, "mlp"},    {64, 128, 128, "bert"},  {64, 128, 512, "bert"},
    {64, 512, 128, "bert"},  {512, 128, 128, "bert"}, {512, 128, 512, "bert"},
    {512, 512, 128, "bert"},
};

std::string case_name(const GemmShape& s) {
  std::string name = "matmul." + std::to_string(s.m) + "x" + std::to_string(s.k) + "x" +
                     std::to_string(s.n);
  if (*s.tag) name += std::string("_") + s.tag;
  return name;
}

void time_library(benchmark::State& state, GemmShape s) {
  const Tensor a = random_tensor({s.m, s.k}, 21), b = random_tensor({s.k, s.n}, 22);
  Tensor c = Tensor::zeros(DType::kFloat32, {s.m, s.n});
  auto gemm = [&] {
    return dnnl_sgemm('N', 'N', s.m, s.n, s.k, 1.f, a.data<float>(), s.k, b.data<float>(), s.n,
                      0.f, c.data<float>(), s.n);
  };
  if (gemm() != dnnl_success) {  // warm-up
    state.SkipWithError("dnnl_sgemm failed");
    return;
  }
  for (auto _ : state) {
    gemm();
    benchmark::DoNotOptimize(c.data<float>());
    benchmark::ClobberMemory();
  }
}

const bool registered = [] {
  for (const GemmShape& s : kShapes) {
    const double flop = 2.0 * static_cast<double>(s.m * s.n * s.k);
    auto make = [s] {
      GraphBuilder b;
      ir::Value* a = b.feed("A", {s.m, s.k});
      ir::Value* w = b.constant("B", random_tensor({s.k, s.n}, 22));
      b.output(b.node(ir::OpKind::MatMul, {a, w}, {}, 13));
      return Tier0Program(b.finish(), {random_tensor({s.m, s.k}, 21)});
    };
    register_case(case_name(s), "tier0", tier0_case(make), flop);
    // Tier 3: kernel selection (tile sizes of the generated GEMM vs the library) on this shape.
    CompiledProgramOptions tier3;
    tier3.tier = 3;
    register_case(case_name(s), "tier3", compiled_case(make, tier3), flop);
    register_case(case_name(s), "library",
                  [s](benchmark::State& state) { time_library(state, s); }, flop);
  }
  return true;
}();

}  // namespace
}  // namespace tierjit::bench
