// GEMM at tier 2: the generated packed microkernel (src/kir/lower/gemm_kernel.cc) lowered from a
// one-region graph at the exact level and compiled (CompiledProgram, compiled.h: the kernel alone
// on preallocated buffers). Cases: the MatMul shapes of bench_matmul.cc (which times tier 0 and the
// library under the same names) and the MLP layers of models/demo_mlp.onnx and
// /work/shared/models/mlp.onnx as Gemm(transB=1) + bias + Relu (tier 0 and tier 2 here), batch 1
// and 64, plus [N,784]x[784,256]. % of peak: compare FLOPS with peak.fma/avx512 of the same run.
// Tile sizes: TIERJIT_GEMM_TUNING="mr=6,nr=32,kc=256" overrides the defaults (for tuning runs).
#include <cstdlib>
#include <sstream>

#include "compiled.h"
#include "micro.h"

namespace tierjit::bench {
namespace {

std::map<std::string, int64_t> tuning_from_env() {
  std::map<std::string, int64_t> t;
  const char* env = std::getenv("TIERJIT_GEMM_TUNING");
  if (!env) return t;
  std::stringstream ss(env);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto eq = item.find('=');
    if (eq != std::string::npos) t[item.substr(0, eq)] = std::stoll(item.substr(eq + 1));
  }
  return t;
}

// compiled_case, except that a region left on tier 0 (a lowering that failed) is an error: this
// file measures the generated GEMM only.
template <class Make>
std::function<void(benchmark::State&)> generated_case(Make make, CompiledProgramOptions options) {
  auto program = std::make_shared<std::unique_ptr<CompiledProgram>>();
  auto error = std::make_shared<std::string>();
  return [program, error, make, options](benchmark::State& state) {
    if (!*program && error->empty()) {
      auto p = CompiledProgram::make(make(), options);
      if (!p.ok())
        *error = p.status().message();
      else if (!(*p)->notes().empty())
        *error = (*p)->notes().front();
      else
        *program = std::move(p).value();
    }
    if (!*program) {
      state.SkipWithError(error->c_str());
      return;
    }
    (*program)->time(state);
  };
}

struct Shape3 {
  int64_t m, k, n;
  const char* tag;
};

// Same list as bench_matmul.cc: its tier0/library columns and this tier2 column share case names.
constexpr Shape3 kMatMul[] = {
    {64, 64, 64, ""},       {256, 256, 256, ""},     {512, 512, 512, ""},
    {1024, 1024, 1024, ""}, {1, 256, 512, "mlp"},    {1, 512, 512, "mlp"},
    {1, 512, 10, "mlp"},    {64, 256, 512, "mlp"},   {64, 512, 512, "mlp"},
    {64, 512, 10, "mlp"},   {64, 128, 128, "bert"},  {64, 128, 512, "bert"},
    {64, 512, 128, "bert"}, {512, 128, 128, "bert"}, {512, 128, 512, "bert"},
    {512, 512, 128, "bert"},
};

// MLP layers as the models have them: Gemm(x, W[N, K], b, transB=1) followed by Relu.
constexpr Shape3 kMlpGemm[] = {
    {1, 64, 128, "gemm_relu"},   {64, 64, 128, "gemm_relu"},   {1, 128, 10, "gemm_relu"},
    {64, 128, 10, "gemm_relu"},  {1, 256, 512, "gemm_relu"},   {64, 256, 512, "gemm_relu"},
    {64, 512, 512, "gemm_relu"}, {64, 512, 10, "gemm_relu"},   {1, 784, 256, "gemm_relu"},
    {64, 784, 256, "gemm_relu"}, {256, 784, 256, "gemm_relu"},
};

std::string case_name(const Shape3& s) {
  std::string name = "matmul." + std::to_string(s.m) + "x" + std::to_string(s.k) + "x" +
                     std::to_string(s.n);
  if (*s.tag) name += std::string("_") + s.tag;
  return name;
}

Tier0Program matmul_program(Shape3 s) {
  GraphBuilder b;
  ir::Value* a = b.feed("A", {s.m, s.k});
  ir::Value* w = b.constant("B", random_tensor({s.k, s.n}, 22));
  b.output(b.node(ir::OpKind::MatMul, {a, w}, {}, 13));
  return Tier0Program(b.finish(), {random_tensor({s.m, s.k}, 21)});
}

Tier0Program mlp_program(Shape3 s) {
  GraphBuilder b;
  ir::Value* x = b.feed("x", {s.m, s.k});
  ir::Value* w = b.constant("W", random_tensor({s.n, s.k}, 22));
  ir::Value* bias = b.constant("b", random_tensor({s.n}, 23));
  ir::Value* y = b.node(ir::OpKind::Gemm, {x, w, bias}, {{"transB", attr_int(1)}}, 13);
  b.output(b.node(ir::OpKind::Relu, {y}, {}, 14));
  return Tier0Program(b.finish(), {random_tensor({s.m, s.k}, 21)});
}

const bool registered = [] {
  CompiledProgramOptions tier2;
  tier2.tier = 2;
  tier2.tuning = tuning_from_env();
  for (const Shape3& s : kMatMul) {
    const double flop = 2.0 * static_cast<double>(s.m * s.n * s.k);
    register_case(case_name(s), "tier2", generated_case([s] { return matmul_program(s); }, tier2),
                  flop);
  }
  for (const Shape3& s : kMlpGemm) {
    const double flop = 2.0 * static_cast<double>(s.m * s.n * s.k);
    auto make = [s] { return mlp_program(s); };
    register_case(case_name(s), "tier0", tier0_case(make), flop);
    register_case(case_name(s), "tier2", generated_case(make, tier2), flop);
  }
  return true;
}();

}  // namespace
}  // namespace tierjit::bench
