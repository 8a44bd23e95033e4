// Test helper: builds a one-node graph and runs it on tier 0, so kernel tests read as
// "inputs, attributes -> expected outputs". Shared by every tests/interp/*_test.cc.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "interp/executor.h"
#include "ir/graph.h"

namespace tierjit::testing {

/// One node under test. Omitted optional inputs are undefined Tensors (Tensor()).
struct NodeSpec {
  ir::OpKind op;
  std::vector<Tensor> inputs;
  size_t num_outputs = 1;
  std::vector<std::pair<std::string, ir::Attribute>> attrs;
  int opset = 17;
};

ir::Attribute attr_int(int64_t v);
ir::Attribute attr_float(float v);
ir::Attribute attr_string(std::string v);
ir::Attribute attr_ints(std::vector<int64_t> v);
ir::Attribute attr_floats(std::vector<float> v);
ir::Attribute attr_tensor(Tensor t);

/// Runs the node; returns its outputs or the kernel's Status.
Expected<std::vector<Tensor>> run_node(const NodeSpec& spec, interp::ExecOptions options = {});

/// Asserts equal dtype and shape, then values: exact for integers/bool/strings, and
/// |a-b| <= atol + rtol*|b| for floats with NaN matching NaN.
void expect_tensor_near(const Tensor& actual, const Tensor& expected, double rtol = 1e-5,
                        double atol = 1e-6);

}  // namespace tierjit::testing
