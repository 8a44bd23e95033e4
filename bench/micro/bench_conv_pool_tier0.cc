// Tier-0 convnet pieces at the shapes of the speed-target models (tierjit vs ONNX Runtime):
// MaxPool (convnet_small's 2x2 stride 2 at batch 1 and 128, resnet18's 3x3 stride 2 pad 1 stem
// pool, an AveragePool 3x3 stride 1 pad 1) and a 3x3 Conv with and without a Relu / Clip after
// it (tier 0 runs them node by node: "<name>" vs "<name>_relu" shows what the activation's own
// pass costs). Cases: pool.<name>/tier0 and conv.<name>/tier0.
#include "micro.h"

namespace tierjit::bench {
namespace {

struct PoolShape {
  const char* name;
  ir::OpKind op;
  int64_t n, c, hw, kernel, stride, pad;
};

constexpr PoolShape kPools[] = {
    {"convnet_max2x2s2_1x16x28", ir::OpKind::MaxPool, 1, 16, 28, 2, 2, 0},
    {"convnet_max2x2s2_128x16x28", ir::OpKind::MaxPool, 128, 16, 28, 2, 2, 0},
    {"convnet_max2x2s2_128x32x14", ir::OpKind::MaxPool, 128, 32, 14, 2, 2, 0},
    {"r18_max3x3s2p1_1x64x112", ir::OpKind::MaxPool, 1, 64, 112, 3, 2, 1},
    {"avg3x3s1p1_8x32x28", ir::OpKind::AveragePool, 8, 32, 28, 3, 1, 1},
};

// Conv 3x3 pad 1 (bias, constant weights) on [n, cin, hw, hw] -> cout, then `act` if not Conv.
struct ConvActShape {
  const char* name;
  int64_t n, cin, hw, cout;
};

constexpr ConvActShape kConvs[] = {
    {"convnet_conv2_3x3_1x16to32_14", 1, 16, 14, 32},
    {"convnet_conv2_3x3_128x16to32_14", 128, 16, 14, 32},
    {"r18_layer1_3x3_1x64to64_56", 1, 64, 56, 64},
};

const bool registered = [] {
  for (const PoolShape& s : kPools) {
    auto make = [s] {
      GraphBuilder b;
      ir::Value* x = b.feed("X", {s.n, s.c, s.hw, s.hw});
      b.output(b.node(s.op, {x},
                      {{"kernel_shape", attr_ints({s.kernel, s.kernel})},
                       {"strides", attr_ints({s.stride, s.stride})},
                       {"pads", attr_ints({s.pad, s.pad, s.pad, s.pad})}}));
      return Tier0Program(b.finish(), {random_tensor({s.n, s.c, s.hw, s.hw}, 41)});
    };
    register_case(std::string("pool.") + s.name, "tier0", tier0_case(make));
  }
  for (const ConvActShape& s : kConvs) {
    const double flop = 2.0 * static_cast<double>(s.n * s.cout * s.hw * s.hw * s.cin * 9);
    for (int act = 0; act < 3; ++act) {  // none, Relu, Clip(0, 6)
      auto make = [s, act] {
        GraphBuilder b;
        ir::Value* x = b.feed("X", {s.n, s.cin, s.hw, s.hw});
        ir::Value* w = b.constant("W", random_tensor({s.cout, s.cin, 3, 3}, 42, -0.1f, 0.1f));
        ir::Value* bias = b.constant("B", random_tensor({s.cout}, 43));
        ir::Value* y = b.node(ir::OpKind::Conv, {x, w, bias},
                              {{"kernel_shape", attr_ints({3, 3})}, {"pads", attr_ints({1, 1, 1, 1})}},
                              11);
        if (act == 1) y = b.node(ir::OpKind::Relu, {y});
        if (act == 2) {
          ir::Value* lo = b.constant("lo", Tensor::from_vector<float>({}, {0.0f}));
          ir::Value* hi = b.constant("hi", Tensor::from_vector<float>({}, {6.0f}));
          y = b.node(ir::OpKind::Clip, {y, lo, hi});
        }
        b.output(y);
        return Tier0Program(b.finish(), {random_tensor({s.n, s.cin, s.hw, s.hw}, 44)});
      };
      const char* suffix[] = {"", "_relu", "_clip6"};
      register_case(std::string("conv.") + s.name + suffix[act], "tier0", tier0_case(make), flop);
    }
  }
  return true;
}();

}  // namespace
}  // namespace tierjit::bench
