// Helpers for the elementwise kernel tests (elementwise_test.cc, elementwise_variadic_test.cc,
// cast_test.cc): typed tensor factories (float16/bfloat16 from float values) and one-node runs.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "node_runner.h"
#include "support/float16.h"

namespace tierjit::testing {

using Attrs = std::vector<std::pair<std::string, ir::Attribute>>;

inline Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector(std::move(s), v); }
inline Tensor f64(Shape s, std::vector<double> v) { return Tensor::from_vector(std::move(s), v); }
inline Tensor i32(Shape s, std::vector<int32_t> v) { return Tensor::from_vector(std::move(s), v); }
inline Tensor i64(Shape s, std::vector<int64_t> v) { return Tensor::from_vector(std::move(s), v); }
inline Tensor bools(Shape s, std::vector<int> v) {
  std::vector<bool> b(v.begin(), v.end());
  Tensor t = Tensor::empty(DType::kBool, std::move(s));
  for (size_t i = 0; i < b.size(); ++i) t.data<bool>()[i] = b[i];
  return t;
}
inline Tensor strings(Shape s, std::vector<std::string> v) {
  return Tensor::from_vector(std::move(s), v);
}
/// float16 tensor holding the float16 nearest (RNE) to each value.
inline Tensor f16(Shape s, std::vector<float> v) {
  Tensor t = Tensor::empty(DType::kFloat16, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) t.data<uint16_t>()[i] = support::float_to_half(v[i]);
  return t;
}
inline Tensor bf16(Shape s, std::vector<float> v) {
  Tensor t = Tensor::empty(DType::kBFloat16, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) t.data<uint16_t>()[i] = support::float_to_bfloat16(v[i]);
  return t;
}

/// Runs a one-output node and returns its output (a failed gtest assertion if it fails).
inline Tensor run1(ir::OpKind op, std::vector<Tensor> ins, Attrs attrs = {},
                   interp::ExecOptions opts = {}, int opset = 17) {
  NodeSpec spec{op, std::move(ins), 1, std::move(attrs), opset};
  auto r = run_node(spec, opts);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok() || r->empty()) return Tensor();
  return (*r)[0];
}
inline Tensor run1_opset(int opset, ir::OpKind op, std::vector<Tensor> ins, Attrs attrs = {}) {
  return run1(op, std::move(ins), std::move(attrs), {}, opset);
}

/// Runs a node that must fail; returns its Status (a failed gtest expectation if it succeeds).
inline Status run_error(ir::OpKind op, std::vector<Tensor> ins, Attrs attrs = {}, int opset = 17) {
  NodeSpec spec{op, std::move(ins), 1, std::move(attrs), opset};
  auto r = run_node(spec);
  EXPECT_FALSE(r.ok()) << "expected an error from " << ir::op_name(op);
  return r.status();
}

}  // namespace tierjit::testing
