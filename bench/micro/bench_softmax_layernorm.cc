// bert_tiny's row reductions at batch 4 x 64 tokens, tier 0 before and after the AVX-512 rows
// (src/interp/kernels/vec_math.cc softmax_rows_f32, layer_norm_rows.cc). Systems: tier0 (now)
// and tier0_prev (the previous code: for Softmax its row steps max_f32 + exp_shifted_sum_f32 +
// scalar scale, called the way the kernel called them; for LayerNormalization the kernel with
// the AVX2 path forced, which is the previous code). Cases:
//   reduction.softmax_rows_4x2x64x64   512 rows of 64, the row code alone (no graph)
//   reduction.softmax_4x2x64x64        the Softmax node through the tier-0 executor
//   reduction.layernorm_4x64x128       LayerNormalization, Scale and B of [128]
//   reduction.add_layernorm_4x64x128   Add + LayerNormalization (node by node)
//   reduction.attention_softmax_1x2x256x256  bert_tiny's Softmax(Div(scores, 8) + mask[1,1,1,256])
//                                      node by node
// Single thread (Tier0Program); the sizes are below the kernels' parallel threshold anyway.
#include <vector>

#include "kernels/layer_norm_rows.h"
#include "kernels/vec_math.h"
#include "micro.h"

namespace tierjit::bench {
namespace {


constexpr int64_t kRows = 4 * 2 * 64, kLen = 64;

void softmax_rows_prev(const float* x, float* y, int64_t rows, int64_t n) {
  for (int64_t o = 0; o < rows; ++o) {
    const float* xr = x + o * n;
    float* yr = y + o * n;
    const float m = kernels::max_f32(xr, n);
    const float inv = static_cast<float>(1.0 / kernels::exp_shifted_sum_f32(xr, m, yr, n));
    for (int64_t r = 0; r < n; ++r) yr[r] *= inv;
  }
}

template <bool kPrev>
void softmax_rows_case(benchmark::State& state) {
  const Tensor x = random_tensor({kRows, kLen}, 21, -4.f, 4.f);
  std::vector<float> y(static_cast<size_t>(kRows * kLen));
  for (auto _ : state) {
    if constexpr (kPrev)
      softmax_rows_prev(x.data<float>(), y.data(), kRows, kLen);
    else
      kernels::softmax_rows_f32(x.data<float>(), y.data(), kRows, kLen);
    benchmark::DoNotOptimize(y.data());
  }
}

Tier0Program make_softmax() {
  GraphBuilder b;
  ir::Value* x = b.feed("X", {4, 2, 64, 64});
  b.output(b.node(ir::OpKind::Softmax, {x}, {{"axis", attr_int(-1)}}, 13));
  return Tier0Program(b.finish(), {random_tensor({4, 2, 64, 64}, 22, -4.f, 4.f)});
}

Tier0Program make_layernorm(bool add) {
  GraphBuilder b;
  ir::Value* x = b.feed("X", {4, 64, 128});
  std::vector<Tensor> feeds = {random_tensor({4, 64, 128}, 23)};
  if (add) {
    ir::Value* r = b.feed("R", {4, 64, 128});
    feeds.push_back(random_tensor({4, 64, 128}, 24));
    x = b.node(ir::OpKind::Add, {x, r}, {}, 14);
  }
  ir::Value* scale = b.constant("Scale", random_tensor({128}, 25, 0.5f, 1.5f));
  ir::Value* bias = b.constant("B", random_tensor({128}, 26));
  b.output(b.node(ir::OpKind::LayerNormalization, {x, scale, bias},
                  {{"axis", attr_int(-1)}, {"epsilon", attr_float(1e-5f)}}, 17));
  return Tier0Program(b.finish(), std::move(feeds));
}

Tier0Program make_attention_softmax() {
  GraphBuilder b;
  const Shape shape = {1, 2, 256, 256};
  ir::Value* x = b.feed("scores", shape);
  ir::Value* mask = b.feed("mask", {1, 1, 1, 256});
  ir::Value* scaled = b.node(ir::OpKind::Div, {x, b.constant("scale", Tensor::from_vector<float>({}, {8.f}))}, {}, 14);
  ir::Value* masked = b.node(ir::OpKind::Add, {scaled, mask}, {}, 14);
  b.output(b.node(ir::OpKind::Softmax, {masked}, {{"axis", attr_int(-1)}}, 13));
  return Tier0Program(b.finish(), {random_tensor(shape, 27, -4.f, 4.f), random_tensor({1, 1, 1, 256}, 28)});
}

/// tier0_case with the LayerNormalization AVX2 path forced (the previous code) while it runs.
template <class Make>
std::function<void(benchmark::State&)> prev_case(Make make) {
  auto body = tier0_case(make);
  return [body](benchmark::State& state) {
    kernels::ln_rows::force_avx2_for_testing(true);
    body(state);
    kernels::ln_rows::force_avx2_for_testing(false);
  };
}

const bool registered = [] {
  register_case("reduction.softmax_rows_4x2x64x64", "tier0_prev", softmax_rows_case<true>);
  register_case("reduction.softmax_rows_4x2x64x64", "tier0", softmax_rows_case<false>);
  register_case("reduction.softmax_4x2x64x64", "tier0", tier0_case(make_softmax));
  for (bool add : {false, true}) {
    const std::string c = add ? "reduction.add_layernorm_4x64x128" : "reduction.layernorm_4x64x128";
    auto make = [add] { return make_layernorm(add); };
    register_case(c, "tier0_prev", prev_case(make));
    register_case(c, "tier0", tier0_case(make));
  }
  register_case("reduction.attention_softmax_1x2x256x256", "tier0",
                tier0_case(make_attention_softmax));
  return true;
}();

}  // namespace
}  // namespace tierjit::bench
