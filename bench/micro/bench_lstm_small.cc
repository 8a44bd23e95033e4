// Small-batch float32 LSTM (interp/kernels/lstm_small.h) against oneDNN's RNN primitive
// (rnn_dnnl.h; batch 1 on its GEMM-based implementation, the faster one in steady state) on
// lstm_small's geometry (I 64, H 128, one direction, zero initial states, constant weights), one
// thread, the kernels called directly (no graph); batch 16 is kLstmSmallMaxBatch, where oneDNN
// (brgemm there) catches up. Cases: rnn.lstm_<S>x<N>x64/<system>.
// Run: tierjit_micro_bench --benchmark_filter=rnn.lstm_ --benchmark_repetitions=5
//      --benchmark_enable_random_interleaving=true
#include <omp.h>

#include "interp/kernels/lstm_small.h"
#include "micro.h"

namespace tierjit::bench {
namespace {

struct LstmShape {
  int64_t s, n;
};

constexpr LstmShape kShapes[] = {{16, 1}, {32, 1}, {128, 1}, {32, 2}, {32, 4}, {32, 8}, {32, 16}};
constexpr int64_t kInput = 64, kHidden = 128;

void time_lstm(benchmark::State& state, LstmShape s, bool ours) {
  const Tensor x = random_tensor({s.s, s.n, kInput}, 41);
  const Tensor w = random_tensor({1, 4 * kHidden, kInput}, 42, -0.2f, 0.2f);
  const Tensor r = random_tensor({1, 4 * kHidden, kHidden}, 43, -0.2f, 0.2f);
  const Tensor b = random_tensor({1, 8 * kHidden}, 44, -0.2f, 0.2f);
  const Tensor zeros = Tensor::zeros(DType::kFloat32, {1, s.n, kHidden});
  Tensor y = Tensor::zeros(DType::kFloat32, {s.s, 1, s.n, kHidden});
  Tensor yh = Tensor::zeros(DType::kFloat32, {1, s.n, kHidden});
  Tensor yc = Tensor::zeros(DType::kFloat32, {1, s.n, kHidden});
  interp::nn::RnnDnnlArgs a;
  a.seq = s.s; a.batch = s.n; a.input = kInput; a.hidden = kHidden;
  a.x = x.data<float>(); a.w = w.data<float>(); a.r = r.data<float>(); a.b = b.data<float>();
  a.h0 = zeros.data<float>(); a.c0 = zeros.data<float>();
  a.constant_w = &w; a.constant_r = &r; a.constant_b = &b;
  a.y = y.data<float>(); a.yh = yh.data<float>(); a.yc = yc.data<float>();
  omp_set_num_threads(1);
  interp::nn::set_rnn_gemm_after_batch1_calls(0);
  auto run = [&] {
    const Status st = ours ? interp::nn::lstm_small_f32(a) : interp::nn::dnnl_rnn_f32(a);
    if (!st.ok()) state.SkipWithError(st.message().c_str());
  };
  run();  // warm-up: packing / primitive creation and weight reorder
  for (auto _ : state) {
    run();
    benchmark::DoNotOptimize(y.data<float>());
    benchmark::ClobberMemory();
  }
  interp::nn::set_rnn_gemm_after_batch1_calls(512);
}

const bool registered = [] {
  for (const LstmShape& s : kShapes) {
    const std::string name = "rnn.lstm_" + std::to_string(s.s) + "x" + std::to_string(s.n) + "x64";
    const double flop = 2.0 * static_cast<double>(s.s * s.n * 4 * kHidden * (kInput + kHidden));
    register_case(name, "tier0", [s](benchmark::State& st) { time_lstm(st, s, true); }, flop);
    register_case(name, "library", [s](benchmark::State& st) { time_lstm(st, s, false); }, flop);
  }
  return true;
}();

}  // namespace
}  // namespace tierjit::bench
