// Row reductions on [64, 512] float32: Softmax (opset 13, axis -1) and LayerNormalization
// (opset 17, axis -1, Scale and B initializers of [512]) — the attention and normalization
// shapes of a small transformer. Cases: reduction.softmax_64x512/<system>,
// reduction.layernorm_64x512/<system>.
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

const bool registered = [] {
  register_case("reduction.softmax_64x512", "tier0", tier0_case(make_softmax));
  register_case("reduction.layernorm_64x512", "tier0", tier0_case(make_layernorm));
  return true;
}();

}  // namespace
}  // namespace tierjit::bench
