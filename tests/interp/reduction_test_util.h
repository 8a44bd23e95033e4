// Helpers for the reduction-family kernel tests (reduction_test.cc, softmax_test.cc,
// normalization_test.cc, loss_test.cc): tensor factories, a one-node runner returning output k,
// and an error check, on top of node_runner.h.
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "node_runner.h"
#include "support/float16.h"

namespace tierjit::testing::red {

using Attrs = std::vector<std::pair<std::string, ir::Attribute>>;

inline Tensor f32(Shape s, std::vector<float> v) {
  return Tensor::from_vector<float>(std::move(s), v);
}
inline Tensor f64(Shape s, std::vector<double> v) {
  return Tensor::from_vector<double>(std::move(s), v);
}
inline Tensor i64(Shape s, std::vector<int64_t> v) {
  return Tensor::from_vector<int64_t>(std::move(s), v);
}
inline Tensor i32(Shape s, std::vector<int32_t> v) {
  return Tensor::from_vector<int32_t>(std::move(s), v);
}
/// float16 tensor from float values (rounded to nearest even).
inline Tensor f16(Shape s, const std::vector<float>& v) {
  Tensor t = Tensor::empty(DType::kFloat16, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) t.data<uint16_t>()[i] = support::float_to_half(v[i]);
  return t;
}
/// Number of elements of got[0, n) whose bits differ from want's (reports the first three as
/// test failures naming `what`): for kernels checked bit for bit (NaN payloads included).
inline int64_t bit_mismatches(const float* got, const float* want, int64_t n, const std::string& what) {
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (std::bit_cast<uint32_t>(got[i]) == std::bit_cast<uint32_t>(want[i])) continue;
    if (bad++ < 3)
      ADD_FAILURE() << what << " element " << i << ": got " << got[i] << " (0x" << std::hex
                    << std::bit_cast<uint32_t>(got[i]) << ") want " << want[i] << " (0x"
                    << std::bit_cast<uint32_t>(want[i]) << ")" << std::dec;
  }
  return bad;
}

/// 0, 1, 2, ... as float32.
inline Tensor iota(Shape s) {
  std::vector<float> v(static_cast<size_t>(shape_numel(s)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return f32(std::move(s), v);
}

inline NodeSpec spec(ir::OpKind op, std::vector<Tensor> ins, Attrs attrs = {}, int opset = 17,
                     size_t num_outputs = 1) {
  return NodeSpec{op, std::move(ins), num_outputs, std::move(attrs), opset};
}

/// Runs the node and returns all outputs; records a test failure (and returns {}) on error.
inline std::vector<Tensor> run_all(const NodeSpec& s, interp::ExecOptions options = {}) {
  auto r = run_node(s, options);
  if (!r.ok()) {
    ADD_FAILURE() << "node failed: " << r.status().message();
    return std::vector<Tensor>(s.num_outputs);
  }
  return std::move(r).value();
}
/// Output 0 of the node.
inline Tensor run1(const NodeSpec& s) { return run_all(s)[0]; }

/// Expects the node to fail with a message containing `substr`.
inline void expect_fails(const NodeSpec& s, const std::string& substr) {
  auto r = run_node(s);
  ASSERT_FALSE(r.ok()) << "expected failure containing '" << substr << "'";
  EXPECT_NE(r.status().message().find(substr), std::string::npos) << r.status().message();
}

}  // namespace tierjit::testing::red
