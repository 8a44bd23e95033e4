// Tier-0 convnet pieces at the shapes of the speed-target models (tierjit vs ONNX Runtime):
// MaxPool (convnet_small's 2x2 stride 2 at batch 1 and 128, resnet18's 3x3 stride 2 pad 1 stem
// pool, an AveragePool 3x3 stride 1 pad 1) and a 3x3 Conv with and without the Relu / Clip that
// tier 0 fuses into it (interp/kernels/conv_fusion.h): "<name>" vs "<name>_relu" shows what the
// activation adds after fusion. Cases: pool.<name>/tier0 and conv.<name>/tier0. The conv
// chains' channels-last MaxPool (interp/kernels/conv_chain.h, max_pool_channels_last) called
// directly on NHWC buffers at 1 and 2 threads: pool.cl_<name>_t<threads>/tier0, and its AVX2
// path on this CPU too (what runs on CPUs without AVX-512F): .../tier0_avx2. A resnet18 layer1
// block pair as one conv chain (four 3x3 64 -> 64 Convs at 56x56, Relus, two residual Adds; one
// thread, as a chain's image pieces run) in each layout a chain can keep: channels-last (the
// AVX-512 choice) and blocks of 8 channels (the AVX2 one; interp/kernels/conv_chain.h):
// conv.chain_r18_layer1_<n>x64_56/tier0_nhwc and .../tier0_nchw8c.
#include "interp/kernels/conv_chain.h"
#include "interp/kernels/conv_chain_pool.h"
#include "interp/kernels/nn_common.h"
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

// Channels-last MaxPool shapes (NCHW names; the buffers are NHWC), square windows, no dilation.
struct ChannelsLastPool {
  const char* name;
  int64_t n, c, hw, kernel, stride, pad;
};

constexpr ChannelsLastPool kChannelsLastPools[] = {
    {"convnet_max2x2s2_1x16x28", 1, 16, 28, 2, 2, 0},
    {"convnet_max2x2s2_8x16x28", 8, 16, 28, 2, 2, 0},
    {"convnet_max2x2s2_128x16x28", 128, 16, 28, 2, 2, 0},
    {"convnet_max2x2s2_8x32x14", 8, 32, 14, 2, 2, 0},
    {"convnet_max2x2s2_128x32x14", 128, 32, 14, 2, 2, 0},
    {"r18_max3x3s2p1_1x64x112", 1, 64, 112, 3, 2, 1},
    {"max3x3s2p1_1x64x28", 1, 64, 28, 3, 2, 1},  // the stem's window on an input in L2
};

// Times max_pool_channels_last on a random NHWC input (one untimed warm-up call); `avx512`
// false: its AVX2 path.
void time_channels_last_pool(benchmark::State& state, const ChannelsLastPool& s, int threads,
                             bool avx512) {
  interp::nn::Window w;
  w.kernel = {s.kernel, s.kernel};
  w.strides = {s.stride, s.stride};
  w.dilations = {1, 1};
  w.pad_begin = w.pad_end = {s.pad, s.pad};
  const int64_t out = (s.hw + 2 * s.pad - s.kernel) / s.stride + 1;
  w.out = {out, out};
  const Shape x_shape{s.n, s.c, s.hw, s.hw};
  const Tensor x = random_tensor(x_shape, 45);  // read as NHWC: the values' order is immaterial
  Tensor y = Tensor::empty(DType::kFloat32, {s.n, out, out, s.c});  // 64-byte aligned, as in chains
  auto pool = [&] {
    interp::max_pool_channels_last_isa(avx512, w, x_shape, x.data<float>(), y.data<float>(), threads);
  };
  pool();
  for (auto _ : state) {
    pool();
    benchmark::DoNotOptimize(y.data<float>());
    benchmark::ClobberMemory();
  }
}

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

// resnet18's layer1 (two blocks: conv-relu-conv + skip, relu) on [n, 64, 56, 56].
Tier0Program layer1_chain(int64_t n) {
  GraphBuilder b;
  ir::Value* s = b.feed("X", {n, 64, 56, 56});
  const std::vector<std::pair<std::string, ir::Attribute>> conv3 = {
      {"kernel_shape", attr_ints({3, 3})}, {"pads", attr_ints({1, 1, 1, 1})}};
  uint64_t seed = 50;
  auto conv = [&](ir::Value* x) {
    const std::string id = std::to_string(seed);
    ir::Value* w = b.constant("W" + id, random_tensor({64, 64, 3, 3}, seed++, -0.05f, 0.05f));
    ir::Value* bias = b.constant("B" + id, random_tensor({64}, seed++));
    return b.node(ir::OpKind::Conv, {x, w, bias}, conv3, 11);
  };
  for (int block = 0; block < 2; ++block) {
    ir::Value* h = b.node(ir::OpKind::Relu, {conv(s)});
    s = b.node(ir::OpKind::Relu, {b.node(ir::OpKind::Add, {conv(h), s})});
  }
  b.output(s);
  return Tier0Program(b.finish(), {random_tensor({n, 64, 56, 56}, 49)});
}

const bool registered = [] {
  for (int64_t n : {1, 2, 4}) {
    const double flop = 4 * 2.0 * static_cast<double>(n * 64 * 64 * 9 * 56 * 56);
    for (auto layout : {interp::nn::ActLayout::kChannelsLast, interp::nn::ActLayout::kBlocked8}) {
      auto program = std::make_shared<std::unique_ptr<Tier0Program>>();
      register_case("conv.chain_r18_layer1_" + std::to_string(n) + "x64_56",
                    layout == interp::nn::ActLayout::kBlocked8 ? "tier0_nchw8c" : "tier0_nhwc",
                    [program, n, layout](benchmark::State& state) {
                      if (!*program) *program = std::make_unique<Tier0Program>(layer1_chain(n));
                      interp::set_conv_chain_layout_for_testing(layout);
                      (*program)->time(state);
                      interp::set_conv_chain_layout_for_testing(std::nullopt);
                    },
                    flop);
    }
  }
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
  for (const ChannelsLastPool& s : kChannelsLastPools)
    for (int threads : {1, 2})
      for (bool avx512 : {true, false})
        register_case(std::string("pool.cl_") + s.name + "_t" + std::to_string(threads),
                      avx512 ? "tier0" : "tier0_avx2", [s, threads, avx512](benchmark::State& state) {
                        time_channels_last_pool(state, s, threads, avx512);
                      });
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
