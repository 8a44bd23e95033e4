// Conv + ReLU + pool regions (float32, NCHW, with bias; partition.h rule 4b): a LeNet-like
// network's two layers (1->16 at 28, 16->32 at 14, 3x3, max 2x2/2) at batch 1 and 32, and a
// ResNet-18 stem (7x7/2 3->64 at 224, max 3x3/2 pad 1) at batch 1. Tier 0 runs the three nodes
// one at a time (oneDNN convolution, then ReLU, then the pool); tier 2 the compiled region, the
// pool computed from the conv's tile (exact shapes, one thread).
// Cases: conv_pool.<name>/<system>, flop = the conv's 2 * Cout * Hout * Wout * Cin * kh * kw.
#include "compiled.h"
#include "micro.h"

namespace tierjit::bench {
namespace {

struct ConvPoolShape {
  const char* name;
  int64_t cin, hw, cout, kernel, stride, pad;
  int64_t pool, pool_stride, pool_pad;
  int64_t batch = 1;
};

constexpr ConvPoolShape kShapes[] = {
    {"lenet_3x3_1to16_28_max2", 1, 28, 16, 3, 1, 1, 2, 2, 0},
    {"lenet_3x3_1to16_28_max2_b32", 1, 28, 16, 3, 1, 1, 2, 2, 0, 32},
    {"lenet_3x3_16to32_14_max2", 16, 14, 32, 3, 1, 1, 2, 2, 0},
    {"lenet_3x3_16to32_14_max2_b32", 16, 14, 32, 3, 1, 1, 2, 2, 0, 32},
    {"r18_stem_7x7s2_3to64_224_max3s2", 3, 224, 64, 7, 2, 3, 3, 2, 1},
};

const bool registered = [] {
  for (const ConvPoolShape& s : kShapes) {
    const int64_t out = (s.hw + 2 * s.pad - s.kernel) / s.stride + 1;
    const double flop = 2.0 * static_cast<double>(s.batch * s.cout * out * out * s.cin *
                                                  s.kernel * s.kernel);
    auto make = [s] {
      GraphBuilder b;
      ir::Value* x = b.feed("X", {s.batch, s.cin, s.hw, s.hw});
      ir::Value* w =
          b.constant("W", random_tensor({s.cout, s.cin, s.kernel, s.kernel}, 31, -0.1f, 0.1f));
      ir::Value* bias = b.constant("B", random_tensor({s.cout}, 32));
      ir::Value* conv = b.node(ir::OpKind::Conv, {x, w, bias},
                               {{"kernel_shape", attr_ints({s.kernel, s.kernel})},
                                {"strides", attr_ints({s.stride, s.stride})},
                                {"pads", attr_ints({s.pad, s.pad, s.pad, s.pad})}},
                               11);
      ir::Value* relu = b.node(ir::OpKind::Relu, {conv}, {}, 14);
      b.output(b.node(ir::OpKind::MaxPool, {relu},
                      {{"kernel_shape", attr_ints({s.pool, s.pool})},
                       {"strides", attr_ints({s.pool_stride, s.pool_stride})},
                       {"pads", attr_ints({s.pool_pad, s.pool_pad, s.pool_pad, s.pool_pad})}},
                      12));
      return Tier0Program(b.finish(), {random_tensor({s.batch, s.cin, s.hw, s.hw}, 33)});
    };
    register_case(std::string("conv_pool.") + s.name, "tier0", tier0_case(make), flop);
    register_case(std::string("conv_pool.") + s.name, "tier2", compiled_case(make, exact_at_tier(2)),
                  flop);
    CompiledProgramOptions t1;  // as the runtime compiles tier 1: generic dims
    t1.tier = 1;
    t1.level = kir::ShapeLevel::kGeneric;
    register_case(std::string("conv_pool.") + s.name, "tier1", compiled_case(make, t1), flop);
    CompiledProgramOptions t2g = t1;
    t2g.tier = 2;
    register_case(std::string("conv_pool.") + s.name, "tier2_generic", compiled_case(make, t2g), flop);
  }
  return true;
}();

}  // namespace
}  // namespace tierjit::bench
