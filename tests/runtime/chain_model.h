// Shared helper of the adaptive runtime tests (adaptive_session, adaptive_policy): a model with
// one elementwise region that compiles, written into a test's temp folder, and its inputs.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "onnx/model_builder.h"
#include "tierjit/tensor.h"

namespace tierjit::runtime_testing {

/// x[N, 1024] -> Mul(x, x) -> Add(bias) -> Tanh -> Sigmoid -> Mul(x) -> y (float32): one
/// elementwise region of 5 nodes (tier-1 compile predicted 2000 + 300·5 = 3500 us), about 4 ns
/// per element at tier 0 (~1 ms per call for N = 256). Returns the model's path in `dir`.
inline std::string write_chain(const onnx_test::TempDir& dir) {
  using namespace onnx_test;  // NOLINT
  const int32_t f32 = onnx::TensorProto_DataType_FLOAT;
  onnx::GraphProto g;
  add_input(g, "x", f32, {"N", 1024});
  std::vector<float> bias(1024);
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.001f * static_cast<float>(i % 97);
  add_float_init(g, "bias", {1024}, bias);
  add_node(g, "Mul", {"x", "x"}, {"a"});
  add_node(g, "Add", {"a", "bias"}, {"b"});
  add_node(g, "Tanh", {"b"}, {"c"});
  add_node(g, "Sigmoid", {"c"}, {"d"});
  add_node(g, "Mul", {"d", "x"}, {"y"});
  add_output(g, "y", f32, {"N", 1024});
  dir.write("chain.onnx", serialize(make_model(g)));
  return dir.file("chain.onnx");
}

/// A float32 [n, 1024] input of the chain, uniform in [-2, 2), reproducible from `seed`.
inline Tensor random_input(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  Tensor t = Tensor::empty(DType::kFloat32, {n, 1024});
  for (float& v : t.span<float>()) v = u(rng);
  return t;
}

}  // namespace tierjit::runtime_testing
