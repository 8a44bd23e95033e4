// Tier 0's direct convolution (interp/kernels/direct_conv.h) against oneDNN's convolution on the
// same layouts (plain or nChw8c in, nChw8c out, the conv chains' AVX2 layout) at convnet_small's
// two layers (3x3 1 -> 16 at 28x28, 16 -> 32 at 14x14) and resnet18's (the 7x7 stride-2 stem,
// which the direct kernel declines; 3x3 layers of 64-512 channels, stride 1 and 2; a 1x1
// stride-2 downsample, declined), pads kernel / 2, bias, Relu as post-op, constant weights,
// batches 1 and 8, on 1 and 2 threads.
// Cases: conv.direct_<layer>_<n>_t<threads>/{direct,onednn}; flop = 2 * N * O * OH * OW * C * KH * KW.
// convnet_small's layers with the 2x2 max pool after them (conv.direct_pool_<layer>_<n>_t<threads>):
// /fused pools inside the convolution (direct_conv.h, MaxPoolAfter), /stored stores the whole
// map and pools it with the chains' channels-last MaxPool (the path before it).
// Run: tierjit_micro_bench --benchmark_filter='conv\.direct_' --benchmark_repetitions=5
#include <limits>
#include <memory>

#include "interp/kernels/conv_chain.h"
#include "interp/kernels/direct_conv.h"
#include "interp/kernels/nn_common.h"
#include "micro.h"

namespace tierjit::bench {
namespace {

using interp::nn::ActLayout;

struct Layer {
  const char* name;
  int64_t cin, hw, cout, k = 3, stride = 1;
  int64_t out_hw() const { return (hw + 2 * (k / 2) - k) / stride + 1; }
};

constexpr Layer kLayers[] = {
    {"conv1_1to16_28", 1, 28, 16},     {"conv2_16to32_14", 16, 14, 32},
    {"r18_stem", 3, 224, 64, 7, 2},    {"r18_64_56", 64, 56, 64},
    {"r18_64to128s2", 64, 56, 128, 3, 2}, {"r18_128_28", 128, 28, 128},
    {"r18_256_14", 256, 14, 256},      {"r18_512_7", 512, 7, 512},
    {"r18_down256s2", 128, 28, 256, 1, 2}};

// The layer's convolution on n images: pads kernel / 2.
interp::nn::ConvGeometry geometry(const Layer& l, int64_t n) {
  interp::nn::ConvGeometry g;
  g.batch = n;
  g.in_channels = l.cin;
  g.out_channels = l.cout;
  g.in_spatial = {l.hw, l.hw};
  g.out_spatial = {l.out_hw(), l.out_hw()};
  g.kernel = {l.k, l.k};
  g.strides = {l.stride, l.stride};
  g.dilations = {1, 1};
  g.pad_begin = {l.k / 2, l.k / 2};
  g.pad_end = {l.k / 2, l.k / 2};
  return g;
}

void time_conv(benchmark::State& state, const Layer& l, int64_t n, int threads, bool direct) {
  const interp::nn::ConvGeometry g = geometry(l, n);
  const ActLayout xl = l.cin % 8 == 0 ? ActLayout::kBlocked8 : ActLayout::kPlain;
  // Values are read in the blocked order as they are: the order is immaterial for timing.
  const Tensor x = random_tensor({n, l.cin, l.hw, l.hw}, 61);
  const Tensor w = random_tensor({l.cout, l.cin, l.k, l.k}, 62, -0.2f, 0.2f);
  const Tensor bias = random_tensor({l.cout}, 63);
  Tensor y = Tensor::empty(DType::kFloat32, {n, l.cout, l.out_hw(), l.out_hw()});
  interp::nn::ConvPostOp relu{interp::nn::ConvPostOp::Kind::kClip, 0.f,
                              std::numeric_limits<float>::infinity()};
  if (direct && !interp::nn::direct_conv_supports(g, xl, ActLayout::kBlocked8, relu)) {
    state.SkipWithError("direct convolution declines this layer (or this CPU)");
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

// The layer, then a 2x2 max pool at stride 2: fused into the convolution or after it.
void time_conv_pool(benchmark::State& state, const Layer& l, int64_t n, int threads, bool fused) {
  const interp::nn::ConvGeometry g = geometry(l, n);
  const ActLayout xl = l.cin % 8 == 0 ? ActLayout::kBlocked8 : ActLayout::kPlain;
  const int64_t oh = l.out_hw(), ph = oh / 2;
  const Tensor x = random_tensor({n, l.cin, l.hw, l.hw}, 61);
  const Tensor w = random_tensor({l.cout, l.cin, l.k, l.k}, 62, -0.2f, 0.2f);
  const Tensor bias = random_tensor({l.cout}, 63);
  Tensor whole = Tensor::empty(DType::kFloat32, {n, l.cout, oh, oh});
  Tensor y = Tensor::empty(DType::kFloat32, {n, l.cout, ph, ph});
  const interp::nn::ConvPostOp relu{interp::nn::ConvPostOp::Kind::kClip, 0.f,
                                    std::numeric_limits<float>::infinity()};
  if (!interp::nn::direct_conv_supports(g, xl, ActLayout::kBlocked8, relu)) {
    state.SkipWithError("direct convolution declines this layer (or this CPU)");
    return;
  }
  interp::nn::Window win;
  win.kernel = win.strides = {2, 2};
  win.dilations = {1, 1};
  win.pad_begin = win.pad_end = {0, 0};
  win.out = {ph, ph};
  const interp::nn::MaxPoolAfter pool{2, 2};
  // A blocked tensor [N, C / 8, H, W, 8] is the channels-last [N * C / 8, 8, H, W] (as the chains pool it).
  const Shape blocks{n * l.cout / 8, 8, oh, oh};
  for (auto _ : state) {
    if (fused) {
      interp::nn::direct_conv_f32(g, x.data<float>(), xl, w.data<float>(), &w, bias.data<float>(),
                                  y.data<float>(), threads, relu, &pool);
    } else {
      interp::nn::direct_conv_f32(g, x.data<float>(), xl, w.data<float>(), &w, bias.data<float>(),
                                  whole.data<float>(), threads, relu);
      interp::max_pool_channels_last(win, blocks, whole.data<float>(), y.data<float>(), threads);
    }
    benchmark::DoNotOptimize(y.data<float>());
    benchmark::ClobberMemory();
  }
}

const bool registered = [] {
  for (const Layer& l : {kLayers[0], kLayers[1]})
    for (int64_t n : {1, 8})
      for (int threads : {1, 2}) {
        const double flop =
            2.0 * static_cast<double>(n * l.cout * l.out_hw() * l.out_hw() * l.cin * l.k * l.k);
        const std::string name = std::string("conv.direct_pool_") + l.name + "_" + std::to_string(n) +
                                 "_t" + std::to_string(threads);
        for (bool fused : {true, false})
          register_case(name, fused ? "fused" : "stored",
                        [l, n, threads, fused](benchmark::State& state) {
                          time_conv_pool(state, l, n, threads, fused);
                        },
                        flop);
      }

  for (const Layer& l : kLayers)
    for (int64_t n : {1, 8})
      for (int threads : {1, 2}) {
        const double flop =
            2.0 * static_cast<double>(n * l.cout * l.out_hw() * l.out_hw() * l.cin * l.k * l.k);
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
