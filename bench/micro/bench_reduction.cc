// Row reductions on [64, 512] float32: Softmax (opset 13, axis -1) and LayerNormalization
// (opset 17, axis -1, Scale and B initializers of [512]) — the attention and normalization
// shapes of a small transformer. Cases: reduction.softmax_64x512/<system>,
// reduction.layernorm_64x512/<system> at tier 0 and, lowered by kir/lower/lower_reduction*.cc
// at the exact level, tiers 1 and 2 (tier 2: rows vectorized to the host's float32 lanes,
// float64 vector accumulators, 3 passes per row: max, sum of exp kept in the output, scale).
// compile.reduction_<op>_64x512/<tier>: wall time of building one CompiledProgram of the case
// (partition, lower, codegen::compile of its one region, plus one tier-0 run for the shapes).
#include "compiled.h"
#include "micro.h"

namespace tierjit::bench {
namespace {

constexpr int64_t kRows = 64, kCols = 512;

Tier0Program make_softmax() {
  GraphBuilder b;
  ir::Value* x = b.feed("X", {kRows, kCols});
  b.output(b.node(ir::OpKind::Softmax, {x}, {{"axis", attr_int(-1)}}, 13));
  return Tier0Program(b.finish(), {random_tensor({kRows, kCols}, 11, -4.f, 4.f)});
}

Tier0Program make_layernorm() {
  GraphBuilder b;
  ir::Value* x = b.feed("X", {kRows, kCols});
  ir::Value* scale = b.constant("Scale", random_tensor({kCols}, 12, 0.5f, 1.5f));
  ir::Value* bias = b.constant("B", random_tensor({kCols}, 13));
  b.output(b.node(ir::OpKind::LayerNormalization, {x, scale, bias},
                  {{"axis", attr_int(-1)}, {"epsilon", attr_float(1e-5f)}}, 17));
  return Tier0Program(b.finish(), {random_tensor({kRows, kCols}, 14)});
}

/// Times CompiledProgram::make (dominated by the region's compile) once per iteration.
template <class Make>
std::function<void(benchmark::State&)> compile_case(Make make, CompiledProgramOptions options) {
  return [make, options](benchmark::State& state) {
    for (auto _ : state) {
      auto p = CompiledProgram::make(make(), options);
      if (!p.ok()) {
        state.SkipWithError(p.status().message().c_str());
        return;
      }
      benchmark::DoNotOptimize(p);
    }
  };
}

const bool registered = [] {
  register_case("reduction.softmax_64x512", "tier0", tier0_case(make_softmax));
  register_case("reduction.layernorm_64x512", "tier0", tier0_case(make_layernorm));
  for (int tier : {1, 2}) {
    const std::string system = "tier" + std::to_string(tier);
    register_case("reduction.softmax_64x512", system, compiled_case(make_softmax, exact_at_tier(tier)));
    register_case("reduction.layernorm_64x512", system, compiled_case(make_layernorm, exact_at_tier(tier)));
    register_case("compile.reduction_softmax_64x512", system, compile_case(make_softmax, exact_at_tier(tier)));
    register_case("compile.reduction_layernorm_64x512", system,
                  compile_case(make_layernorm, exact_at_tier(tier)));
  }
  return true;
}();

}  // namespace
}  // namespace tierjit::bench
