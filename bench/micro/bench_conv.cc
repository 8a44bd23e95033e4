// Conv (float32, NCHW, with bias; weights and bias are initializers) at ResNet-18 layer shapes,
// batch 1 unless named, 224x224 input: conv1 7x7/2 3->64, layer1 3x3 64->64 at 56, layer2 3x3/2 64->128
// (56 -> 28), layer3 3x3/2 128->256 (28 -> 14), layer4 3x3/2 256->512 (14 -> 7) and the layer2
// 1x1/2 downsample 64->128; EfficientNet-B0-like layers: depthwise 3x3 at 112 (32 channels),
// depthwise 5x5/2 (144 channels, 56 -> 28), a 1x1 expansion 16->96 at 112 and a 1x1 projection
// 192->32... at 28 (`eb0_*`: generic layer sizes of that family, not read from a model; `_silu`:
// followed by SiLU, x * Sigmoid(x), fused into the region's epilogue), and the
// 3x3 layers of a LeNet-like network (1->16 at 28, 16->32 at 14) at batch 1 and 32. Tier 0
// runs one Conv node (oneDNN convolution); tier 2 the compiled region (exact shapes, one thread).
// Cases: conv.<name>/<system>, flop = 2 * Cout * Hout * Wout * Cin * kh * kw.
#include "compiled.h"
#include "micro.h"

namespace tierjit::bench {
namespace {

struct ConvShape {
  const char* name;
  int64_t cin, hw, cout, kernel, stride, pad;
  int64_t group = 1;
  int64_t batch = 1;
  bool silu = false;  // followed by x * Sigmoid(x) (SiLU, as EfficientNet's layers are)
};

constexpr ConvShape kShapes[] = {
    {"r18_conv1_7x7s2_3to64_224", 3, 224, 64, 7, 2, 3},
    {"r18_layer1_3x3_64to64_56", 64, 56, 64, 3, 1, 1},
    {"r18_layer2_3x3s2_64to128_56", 64, 56, 128, 3, 2, 1},
    {"r18_layer3_3x3s2_128to256_28", 128, 28, 256, 3, 2, 1},
    {"r18_layer4_3x3s2_256to512_14", 256, 14, 512, 3, 2, 1},
    {"r18_down_1x1s2_64to128_56", 64, 56, 128, 1, 2, 0},
    {"eb0_dw3x3_32_112", 32, 112, 32, 3, 1, 1, 32},
    {"eb0_dw5x5s2_144_56", 144, 56, 144, 5, 2, 2, 144},
    {"eb0_1x1_16to96_112", 16, 112, 96, 1, 1, 0},
    {"eb0_1x1_192to32_28", 192, 28, 32, 1, 1, 0},
    {"eb0_dw3x3_32_112_silu", 32, 112, 32, 3, 1, 1, 32, 1, true},
    {"eb0_1x1_16to96_112_silu", 16, 112, 96, 1, 1, 0, 1, 1, true},
    {"eb0_1x1_320to1280_7_silu", 320, 7, 1280, 1, 1, 0, 1, 1, true},
    // Small-channel layers of a LeNet-like network (convnet_small's sizes) at batch 1 and 32.
    {"lenet_3x3_1to16_28", 1, 28, 16, 3, 1, 1},
    {"lenet_3x3_1to16_28_b32", 1, 28, 16, 3, 1, 1, 1, 32},
    {"lenet_3x3_16to32_14", 16, 14, 32, 3, 1, 1},
    {"lenet_3x3_16to32_14_b32", 16, 14, 32, 3, 1, 1, 1, 32},
};

const bool registered = [] {
  for (const ConvShape& s : kShapes) {
    const int64_t out = (s.hw + 2 * s.pad - s.kernel) / s.stride + 1;
    const double flop =
        2.0 * static_cast<double>(s.batch * s.cout * out * out * s.cin / s.group * s.kernel *
                                  s.kernel);
    auto make = [s] {
                    GraphBuilder b;
                    ir::Value* x = b.feed("X", {s.batch, s.cin, s.hw, s.hw});
                    ir::Value* w = b.constant(
                        "W", random_tensor({s.cout, s.cin / s.group, s.kernel, s.kernel}, 31, -0.1f, 0.1f));
                    ir::Value* bias = b.constant("B", random_tensor({s.cout}, 32));
                    ir::Value* y = b.node(ir::OpKind::Conv, {x, w, bias},
                                          {{"kernel_shape", attr_ints({s.kernel, s.kernel})},
                                           {"strides", attr_ints({s.stride, s.stride})},
                                           {"pads", attr_ints({s.pad, s.pad, s.pad, s.pad})},
                                           {"group", attr_int(s.group)}},
                                          11);
                    if (s.silu) y = b.node(ir::OpKind::Mul, {y, b.node(ir::OpKind::Sigmoid, {y})});
                    b.output(y);
                    return Tier0Program(b.finish(), {random_tensor({s.batch, s.cin, s.hw, s.hw}, 33)});
    };
    register_case(std::string("conv.") + s.name, "tier0", tier0_case(make), flop);
    // Tier 3: kernel selection (generated im2col + GEMM tile sizes vs the library) on this shape.
    CompiledProgramOptions tier3;
    tier3.tier = 3;
    register_case(std::string("conv.") + s.name, "tier3", compiled_case(make, tier3), flop);
    register_case(std::string("conv.") + s.name, "tier2", compiled_case(make, exact_at_tier(2)), flop);
  }
  return true;
}();

}  // namespace
}  // namespace tierjit::bench
