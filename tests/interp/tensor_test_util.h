// Small helpers for the tensor-family kernel tests (tests/interp/tensor_*_test.cc): typed tensor
// factories and "runs fine" / "fails with message" checks on top of node_runner.h.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "node_runner.h"

namespace tierjit::testing {

inline Tensor tf(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }
inline Tensor ti(Shape s, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(std::move(s), v); }
inline Tensor ti32(Shape s, std::vector<int32_t> v) { return Tensor::from_vector<int32_t>(std::move(s), v); }
inline Tensor tb(Shape s, std::vector<bool> v) { return Tensor::from_vector<bool>(std::move(s), v); }
inline Tensor ts(Shape s, std::vector<std::string> v) {
  return Tensor::from_vector<std::string>(std::move(s), v);
}
/// 0, 1, 2, ... as float32 of the given shape.
inline Tensor iota_f(Shape s) {
  std::vector<float> v(static_cast<size_t>(shape_numel(s)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return tf(std::move(s), v);
}

using TAttrs = std::vector<std::pair<std::string, ir::Attribute>>;
/// A NodeSpec with every field given (avoids partial aggregate initialization).
inline NodeSpec node(ir::OpKind op, std::vector<Tensor> ins, size_t num_outputs = 1, TAttrs attrs = {},
                     int opset = 17) {
  return NodeSpec{op, std::move(ins), num_outputs, std::move(attrs), opset};
}

/// Runs the node and asserts success; the outputs land in `var`.
#define TJ_RUN_OK(var, ...)                                                     \
  auto var##_result = ::tierjit::testing::run_node(__VA_ARGS__);                \
  ASSERT_TRUE(var##_result.ok()) << var##_result.status().message();            \
  std::vector<::tierjit::Tensor> var = std::move(var##_result).value()

/// Expects the node to fail with a message containing `substr`.
inline void expect_fails(const NodeSpec& spec, const std::string& substr) {
  auto r = run_node(spec);
  ASSERT_FALSE(r.ok()) << "expected failure containing '" << substr << "'";
  EXPECT_NE(r.status().message().find(substr), std::string::npos) << r.status().message();
}

}  // namespace tierjit::testing
