// Elementwise chain on 1M floats: Y = Mul(Tanh(Add(Mul(X, A), B)), C) with X [1024, 1024] fed
// and A, B, C [1024] initializers broadcast over the rows (a scale, shift and gain per column).
// Tier 0 runs it as 4 separate nodes, each a full pass over memory; the compiled tiers fuse it.
// Cases: elementwise.chain4_1M/<system> and, as the issue states it with X, A, B, C all
// float32 [1048576], elementwise.chain4_flat_1M/<system>, at tier 0 and tiers 1, 2 (exact level);
// and the parts alone on tier 0 (where the time goes): elementwise.mul_bcast_1M
// (X [1024,1024] * A [1024]) and elementwise.tanh_1M.
#include <vector>

#include "compiled.h"
#include "kernels/vec_math.h"
#include "micro.h"

namespace tierjit::bench {
namespace {

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

Tier0Program make_rows() { return make_chain({kRows, kCols}, {kCols}); }
Tier0Program make_flat() { return make_chain({kRows * kCols}, {kRows * kCols}); }

Tier0Program make_mul_bcast() {
  GraphBuilder b;
  ir::Value* x = b.feed("X", {kRows, kCols});
  ir::Value* a = b.constant("A", random_tensor({kCols}, 2, 0.5f, 1.5f));
  b.output(b.node(ir::OpKind::Mul, {x, a}));
  return Tier0Program(b.finish(), {random_tensor({kRows, kCols}, 1)});
}

Tier0Program make_tanh() {
  GraphBuilder b;
  b.output(b.node(ir::OpKind::Tanh, {b.feed("X", {kRows, kCols})}));
  return Tier0Program(b.finish(), {random_tensor({kRows, kCols}, 1, -3.f, 3.f)});
}

// erf over 128K floats (bert_tiny's GELU at 4x64 tokens), one thread: the dispatching kernel
// (16 lanes on AVX-512F CPUs) against the 8-lane path; values in [-3, 3].
template <void (*Fn)(const float*, float*, int64_t)>
void erf_case(benchmark::State& state) {
  const Tensor x = random_tensor({131072}, 1, -3.f, 3.f);
  std::vector<float> y(131072);
  for (auto _ : state) {
    Fn(x.data<float>(), y.data(), 131072);
    benchmark::DoNotOptimize(y.data());
  }
}

const bool registered = [] {
  register_case("elementwise.erf_128K", "tier0", erf_case<kernels::erf_f32>);
  register_case("elementwise.erf_128K", "avx2", erf_case<kernels::erf_f32_avx2>);
  register_case("elementwise.chain4_1M", "tier0", tier0_case(make_rows));
  register_case("elementwise.chain4_flat_1M", "tier0", tier0_case(make_flat));
  // Tiers 1 and 2: one fused loop (kir/lower/lower_elementwise.cc) compiled by codegen/.
  for (int tier : {1, 2}) {
    const std::string system = "tier" + std::to_string(tier);
    register_case("elementwise.chain4_1M", system, compiled_case(make_rows, exact_at_tier(tier)));
    register_case("elementwise.chain4_flat_1M", system, compiled_case(make_flat, exact_at_tier(tier)));
  }
  register_case("elementwise.mul_bcast_1M", "tier0", tier0_case(make_mul_bcast));
  register_case("elementwise.tanh_1M", "tier0", tier0_case(make_tanh));
  return true;
}();

}  // namespace
}  // namespace tierjit::bench
