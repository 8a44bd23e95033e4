// Elementwise regions at tiers 0, 1 and 2 (exact level, single thread): the benchmark
// Y = Mul(Tanh(Add(Mul(X, A), B)), C) on float32 [1048576] (X fed; A, B, C initializers of the
// same shape), as elementwise.chain4_flat_1M/<tier>, and the tier-1/2 columns of
// bench_elementwise.cc's elementwise.chain4_1M (X [1024, 1024], A, B, C [1024] broadcast over
// rows; built here the same way). Tier 0 runs four kernels, each a pass over memory; tiers 1 and 2
// run one fused loop (kir/lower/lower_elementwise.cc) compiled by codegen/.
#include "compiled.h"
#include "micro.h"

namespace tierjit::bench {
namespace {

constexpr int64_t kN = 1048576;
constexpr int64_t kRows = 1024, kCols = 1024;

Tier0Program make_chain(const Shape& x_shape, const Shape& param_shape) {
  GraphBuilder b;
  ir::Value* x = b.feed("X", x_shape);
  ir::Value* a = b.constant("A", random_tensor(param_shape, 2, 0.5f, 1.5f));
  ir::Value* bb = b.constant("B", random_tensor(param_shape, 3));
  ir::Value* c = b.constant("C", random_tensor(param_shape, 4, 0.5f, 1.5f));
  ir::Value* t = b.node(ir::OpKind::Mul, {x, a});
  t = b.node(ir::OpKind::Add, {t, bb});
  t = b.node(ir::OpKind::Tanh, {t});
  b.output(b.node(ir::OpKind::Mul, {t, c}));
  return Tier0Program(b.finish(), {random_tensor(x_shape, 1)});
}

Tier0Program make_flat() { return make_chain({kN}, {kN}); }
Tier0Program make_rows() { return make_chain({kRows, kCols}, {kCols}); }

CompiledProgramOptions at_tier(int tier) {
  CompiledProgramOptions o;
  o.tier = tier;
  o.level = kir::ShapeLevel::kExact;
  o.threads = 1;
  return o;
}

const bool registered = [] {
  register_case("elementwise.chain4_flat_1M", "tier0", tier0_case(make_flat));
  for (int tier : {1, 2}) {
    const std::string system = "tier" + std::to_string(tier);
    register_case("elementwise.chain4_flat_1M", system, compiled_case(make_flat, at_tier(tier)));
    register_case("elementwise.chain4_1M", system, compiled_case(make_rows, at_tier(tier)));
  }
  return true;
}();

}  // namespace
}  // namespace tierjit::bench
