// The mixed list of cases the tier policy's speedup seeds are measured on
// (scripts/measure_speedup_seeds.py writes src/runtime/speedup_seeds/<isa>.json from them):
// per region kind a handful of generic layer shapes with their usual prologue or epilogue, each
// at tier 0 (the nodes one at a time), tier 1 (generic dims, as the runtime compiles tier 1),
// tier 2 (exact) and tier 3 (exact, kernel selection). One thread. No shape here is read from a
// model: they are common sizes of their layer kinds.
// Cases: seeds.<kind>_<case>/<tier0|tier1|tier2|tier3>.
#include "compiled.h"
#include "micro.h"

namespace tierjit::bench {
namespace {

using ir::OpKind;

// Y = act(X[M, K] W[K, N] + b): act "relu" or the erf-GELU chain (Div, Erf, Add, Mul, Mul).
Tier0Program gemm(int64_t m, int64_t k, int64_t n, bool gelu) {
  GraphBuilder b;
  ir::Value* x = b.feed("X", {m, k});
  ir::Value* y =
      b.node(OpKind::MatMul, {x, b.constant("W", random_tensor({k, n}, 41, -0.1f, 0.1f))});
  y = b.node(OpKind::Add, {y, b.constant("B", random_tensor({n}, 42))});
  if (gelu) {
    ir::Value* d = b.node(OpKind::Div, {y, b.constant("s2", Tensor::scalar<float>(1.4142135f))});
    ir::Value* e = b.node(OpKind::Erf, {d});
    ir::Value* a = b.node(OpKind::Add, {e, b.constant("one", Tensor::scalar<float>(1.f))});
    ir::Value* p = b.node(OpKind::Mul, {y, a});
    y = b.node(OpKind::Mul, {p, b.constant("half", Tensor::scalar<float>(0.5f))});
  } else {
    y = b.node(OpKind::Relu, {y});
  }
  b.output(y);
  return Tier0Program(b.finish(), {random_tensor({m, k}, 43)});
}

// Y = relu(conv(X[N, C, H, H], W) + b), `group` groups (depthwise when group = C = M); with
// pool > 0, then MaxPool pool x pool / pool_stride with pool / 2 padding when it overlaps.
Tier0Program conv(int64_t c, int64_t hw, int64_t m, int64_t kernel, int64_t stride, int64_t group,
                  int64_t pool = 0, int64_t pool_stride = 1, int64_t batch = 1) {
  GraphBuilder b;
  ir::Value* x = b.feed("X", {batch, c, hw, hw});
  const int64_t pad = kernel / 2;
  ir::Value* y =
      b.node(OpKind::Conv,
             {x, b.constant("W", random_tensor({m, c / group, kernel, kernel}, 51, -0.1f, 0.1f)),
              b.constant("B", random_tensor({m}, 52))},
             {{"kernel_shape", attr_ints({kernel, kernel})},
              {"strides", attr_ints({stride, stride})},
              {"pads", attr_ints({pad, pad, pad, pad})},
              {"group", attr_int(group)}},
             11);
  y = b.node(OpKind::Relu, {y});
  if (pool > 0) {
    const int64_t pp = pool > pool_stride ? pool / 2 : 0;
    y = b.node(OpKind::MaxPool, {y},
               {{"kernel_shape", attr_ints({pool, pool})},
                {"strides", attr_ints({pool_stride, pool_stride})},
                {"pads", attr_ints({pp, pp, pp, pp})}},
               12);
  }
  b.output(y);
  return Tier0Program(b.finish(), {random_tensor({batch, c, hw, hw}, 53)});
}

// Softmax(X / s + mask) over [B, heads, S, S] (attention scores), mask [B, 1, 1, S].
Tier0Program softmax(int64_t batch, int64_t heads, int64_t s) {
  GraphBuilder b;
  ir::Value* x = b.feed("X", {batch, heads, s, s});
  ir::Value* mask = b.feed("M", {batch, 1, 1, s});
  ir::Value* y = b.node(OpKind::Div, {x, b.constant("scale", Tensor::scalar<float>(8.f))});
  y = b.node(OpKind::Add, {y, mask});
  b.output(b.node(OpKind::Softmax, {y}, {{"axis", attr_int(-1)}}, 13));
  return Tier0Program(b.finish(), {random_tensor({batch, heads, s, s}, 61, -4.f, 4.f),
                                   random_tensor({batch, 1, 1, s}, 62, -1.f, 0.f)});
}

// LayerNormalization(X + R) over the last axis of [rows, n].
Tier0Program layernorm(int64_t rows, int64_t n) {
  GraphBuilder b;
  ir::Value* x = b.node(OpKind::Add, {b.feed("X", {rows, n}), b.feed("R", {rows, n})});
  b.output(b.node(OpKind::LayerNormalization,
                  {x, b.constant("g", random_tensor({n}, 71, 0.5f, 1.5f)),
                   b.constant("b", random_tensor({n}, 72))},
                  {{"axis", attr_int(-1)}, {"epsilon", attr_float(1e-5f)}}, 17));
  return Tier0Program(b.finish(), {random_tensor({rows, n}, 73), random_tensor({rows, n}, 74)});
}

// tanh(a * X + c) * d with per-column a, c, d: a 4-op elementwise chain with broadcasts.
Tier0Program chain(int64_t rows, int64_t n) {
  GraphBuilder b;
  ir::Value* t =
      b.node(OpKind::Mul, {b.feed("X", {rows, n}), b.constant("a", random_tensor({n}, 81))});
  t = b.node(OpKind::Add, {t, b.constant("c", random_tensor({n}, 82))});
  t = b.node(OpKind::Tanh, {t});
  b.output(b.node(OpKind::Mul, {t, b.constant("d", random_tensor({n}, 83))}));
  return Tier0Program(b.finish(), {random_tensor({rows, n}, 84)});
}

template <class Make>
void register_tiers(const std::string& name, Make make, double flop = 0) {
  register_case("seeds." + name, "tier0", tier0_case(make), flop);
  CompiledProgramOptions t1;
  t1.tier = 1;
  t1.level = kir::ShapeLevel::kGeneric;
  register_case("seeds." + name, "tier1", compiled_case(make, t1), flop);
  register_case("seeds." + name, "tier2", compiled_case(make, exact_at_tier(2)), flop);
  register_case("seeds." + name, "tier3", compiled_case(make, exact_at_tier(3)), flop);
}

const bool registered = [] {
  struct G {
    int64_t m, k, n;
    bool gelu;
  };
  for (G g : {G{1, 256, 512, true}, G{8, 512, 512, false}, G{64, 256, 512, true},
              G{128, 128, 512, true}, G{512, 512, 128, false}, G{16, 768, 768, false}})
    register_tiers(
        "matmul_epilogue_" + std::to_string(g.m) + "x" + std::to_string(g.k) + "x" +
            std::to_string(g.n) + (g.gelu ? "_gelu" : "_relu"),
        [g] { return gemm(g.m, g.k, g.n, g.gelu); }, 2.0 * g.m * g.k * g.n);
  struct C {
    int64_t c, hw, m, kernel, stride, group;
  };
  for (C c : {C{64, 56, 64, 3, 1, 1}, C{128, 28, 128, 3, 1, 1}, C{128, 28, 256, 3, 2, 1},
              C{64, 56, 256, 1, 1, 1}, C{256, 14, 64, 1, 1, 1}, C{96, 56, 96, 3, 1, 96},
              C{240, 28, 240, 5, 2, 240}, C{16, 112, 96, 1, 1, 1}, C{128, 32, 128, 3, 2, 128},
              C{512, 8, 512, 5, 1, 512}, C{32, 64, 32, 3, 1, 32}, C{384, 16, 96, 1, 1, 1}})
    register_tiers("conv_" + std::to_string(c.c) + "to" + std::to_string(c.m) + "_" +
                       std::to_string(c.kernel) + "x" + std::to_string(c.kernel) + "s" +
                       std::to_string(c.stride) + "_" + std::to_string(c.hw) +
                       (c.group > 1 ? "_dw" : ""),
                   [c] { return conv(c.c, c.hw, c.m, c.kernel, c.stride, c.group); });
  // Conv + ReLU + MaxPool regions (partition rule 4b): VGG-like 3x3 layers with 2x2/2 pools at
  // batch 1 and 8, a 5x5 layer, and a 7x7/2 stem with a 3x3/2 pool.
  struct P {
    int64_t c, hw, m, kernel, stride, pool, pool_stride, batch;
  };
  for (P p : {P{3, 64, 32, 3, 1, 2, 2, 1}, P{32, 32, 64, 3, 1, 2, 2, 1}, P{64, 56, 64, 3, 1, 2, 2, 1},
              P{8, 32, 16, 5, 1, 2, 2, 8}, P{32, 16, 64, 3, 1, 2, 2, 8}, P{3, 112, 32, 7, 2, 3, 2, 1}})
    register_tiers("conv_pool_" + std::to_string(p.c) + "to" + std::to_string(p.m) + "_" +
                       std::to_string(p.kernel) + "x" + std::to_string(p.kernel) + "s" +
                       std::to_string(p.stride) + "_" + std::to_string(p.hw) + "_max" +
                       std::to_string(p.pool) + "s" + std::to_string(p.pool_stride) + "_b" +
                       std::to_string(p.batch),
                   [p] {
                     return conv(p.c, p.hw, p.m, p.kernel, p.stride, 1, p.pool, p.pool_stride,
                                 p.batch);
                   });
  for (auto [bt, h, s] : {std::tuple<int64_t, int64_t, int64_t>{1, 2, 128}, {8, 2, 32}, {4, 6, 64}})
    register_tiers("reduction_softmax_" + std::to_string(bt) + "x" + std::to_string(h) + "x" +
                       std::to_string(s),
                   [=] { return softmax(bt, h, s); });
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{64, 128}, {512, 128}, {256, 384}})
    register_tiers("reduction_layernorm_" + std::to_string(rows) + "x" + std::to_string(n),
                   [=] { return layernorm(rows, n); });
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{64, 512}, {1024, 1024}})
    register_tiers("elementwise_chain4_" + std::to_string(rows) + "x" + std::to_string(n),
                   [=] { return chain(rows, n); });
  return true;
}();

}  // namespace
}  // namespace tierjit::bench
