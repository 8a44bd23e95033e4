// Shared preamble of the nn kernel tests (nn_conv, nn_matmul, nn_pool, nn_quantize, nn_rnn):
// run one node with every NodeSpec field given, a float32 tensor shorthand and reproducible
// pseudo-random floats (nn_matmul_split, packed_gemm). Test files bring
// the names in with using-declarations (`using nn_test::run;`).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "node_runner.h"

namespace tierjit::testing::nn_test {

using Attrs = std::vector<std::pair<std::string, ir::Attribute>>;

/// Runs one node with every NodeSpec field given (opset 17 unless stated).
inline Expected<std::vector<Tensor>> run(ir::OpKind op, std::vector<Tensor> ins, size_t num_outputs = 1,
                                         Attrs attrs = {}, int opset = 17) {
  return run_node(NodeSpec{op, std::move(ins), num_outputs, std::move(attrs), opset});
}

/// float32 tensor of shape `s` holding `v` (row-major).
inline Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }

/// `n` reproducible floats in [-1, 1) from `seed` (a linear congruential sequence, 16 bits each).
inline std::vector<float> pseudo(int64_t n, int seed) {
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t s = 2654435761u * static_cast<uint32_t>(seed + 1);
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>((s >> 8) & 0xffff) / 32768.f - 1.f;
  }
  return v;
}

}  // namespace tierjit::testing::nn_test
