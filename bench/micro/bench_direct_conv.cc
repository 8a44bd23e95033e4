// Tier 0's direct convolution for few channels (interp/kernels/direct_conv.h) against oneDNN's
// convolution on the same layouts (plain or nChw8c in, nChw8c out, the conv chains' AVX2 layout)
// at convnet_small's two layers: conv1 3x3 1 -> 16 at 28x28, conv2 3x3 16 -> 32 at 14x14 (pads
// 1, bias, Relu as post-op, constant weights), batches 1 and 8, on 1 and 2 threads.
// Cases: conv.direct_<layer>_<n>_t<threads>/{direct,onednn}; flop = 2 * N * O * OH * OW * C * 9.
// Run: tierjit_micro_bench --benchmark_filter='conv\.direct_' --benchmark_repetitions=5
#include <limits>
#include <memory>

#include "interp/kernels/direct_conv.h"
#include "micro.h"

namespace tierjit::bench {
namespace {

using interp::nn::ActLayout;

struct Layer {
  const char* name;
  int64_t cin, hw, cout;
};

constexpr Layer kLayers[] = {{"conv1_1to16_28", 1, 28, 16}, {"conv2_16to32_14", 16, 14, 32}};

void time_conv(benchmark::State& state, const Layer& l, int64_t n, int threads, bool direct) {
  interp::nn::ConvGeometry g;
  g.batch = n;
  g.in_channels = l.cin;
  g.out_channels = l.cout;
  g.in_spatial = {l.hw, l.hw};
  g.out_spatial = {l.hw, l.hw};
  g.kernel = {3, 3};
  g.strides = {1, 1};
  g.dilations = {1, 1};
  g.pad_begin = {1, 1};
  g.pad_end = {1, 1};
  const ActLayout xl = l.cin % 8 == 0 ? ActLayout::kBlocked8 : ActLayout::kPlain;
  // Values are read in the blocked order as they are: the order is immaterial for timing.
  const Tensor x = random_tensor({n, l.cin, l.hw, l.hw}, 61);
  const Tensor w = random_tensor({l.cout, l.cin, 3, 3}, 62, -0.2f, 0.2f);
  const Tensor bias = random_tensor({l.cout}, 63);
  Tensor y = Tensor::empty(DType::kFloat32, {n, l.cout, l.hw, l.hw});
  interp::nn::ConvPostOp relu{interp::nn::ConvPostOp::Kind::kClip, 0.f,
                              std::numeric_limits<float>::infinity()};
  if (direct && !interp::nn::direct_conv_supports(g, xl, ActLayout::kBlocked8, relu)) {
    state.SkipWithError("direct convolution not available on this CPU");
    return;
  }
  auto run = [&]() -> bool {
    if (direct) {
      interp::nn::direct_conv_f32(g, x.data<float>(), xl, w.data<float>(), &w, bias.data<float>(),
                                  y.data<float>(), threads, relu);
      return true;
    }
    return interp::nn::dnnl_conv_f32(g, x.data<float>(), xl, w.data<float>(), &w, bias.data<float>(),
                                     y.data<float>(), ActLayout::kBlocked8, threads, relu)
        .ok();
  };
  if (!run()) {
    state.SkipWithError("oneDNN convolution failed");
    return;
  }
  for (auto _ : state) {
    run();
    benchmark::DoNotOptimize(y.data<float>());
    benchmark::ClobberMemory();
  }
}

const bool registered = [] {
  for (const Layer& l : kLayers)
    for (int64_t n : {1, 8})
      for (int threads : {1, 2}) {
        const double flop = 2.0 * static_cast<double>(n * l.cout * l.hw * l.hw * l.cin * 9);
        const std::string name = std::string("conv.direct_") + l.name + "_" + std::to_string(n) +
                                 "_t" + std::to_string(threads);
        for (bool direct : {true, false})
          register_case(name, direct ? "direct" : "onednn",
                        [l, n, threads, direct](benchmark::State& state) {
                          time_conv(state, l, n, threads, direct);
                        },
                        flop);
      }
  return true;
}();

}  // namespace
}  // namespace tierjit::bench
