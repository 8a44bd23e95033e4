// Test helper implementation (see node_runner.h).
#include "node_runner.h"

#include <cmath>

namespace tierjit::testing {

ir::Attribute attr_int(int64_t v) { ir::Attribute a; a.kind = ir::Attribute::Kind::kInt; a.i = v; return a; }
ir::Attribute attr_float(float v) { ir::Attribute a; a.kind = ir::Attribute::Kind::kFloat; a.f = v; return a; }
ir::Attribute attr_string(std::string v) { ir::Attribute a; a.kind = ir::Attribute::Kind::kString; a.s = std::move(v); return a; }
ir::Attribute attr_ints(std::vector<int64_t> v) { ir::Attribute a; a.kind = ir::Attribute::Kind::kInts; a.ints = std::move(v); return a; }
ir::Attribute attr_floats(std::vector<float> v) { ir::Attribute a; a.kind = ir::Attribute::Kind::kFloats; a.floats = std::move(v); return a; }
ir::Attribute attr_tensor(Tensor t) { ir::Attribute a; a.kind = ir::Attribute::Kind::kTensor; a.t = std::move(t); return a; }

Expected<std::vector<Tensor>> run_node(const NodeSpec& spec, interp::ExecOptions options) {
  ir::Graph g("test");
  std::vector<ir::Value*> ins;
  std::vector<Tensor> feeds;
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    if (!spec.inputs[i].defined()) { ins.push_back(nullptr); continue; }
    ir::Value* v = g.add_value("in" + std::to_string(i), {spec.inputs[i].dtype(), std::nullopt});
    g.inputs().push_back(v);
    ins.push_back(v);
    feeds.push_back(spec.inputs[i]);
  }
  std::vector<ir::Value*> outs;
  for (size_t i = 0; i < spec.num_outputs; ++i) {
    outs.push_back(g.add_value("out" + std::to_string(i)));
    g.outputs().push_back(outs.back());
  }
  ir::Node* n = g.add_node(spec.op, ins, outs, "n");
  n->set_opset(spec.opset);
  for (const auto& [name, a] : spec.attrs) n->set_attr(name, a);
  return interp::run_graph(g, feeds, options);
}

void expect_tensor_near(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
  ASSERT_EQ(actual.dtype(), expected.dtype());
  ASSERT_EQ(actual.shape(), expected.shape());
  for (int64_t i = 0; i < expected.numel(); ++i) {
    if (expected.dtype() == DType::kString) {
      EXPECT_EQ(actual.data<std::string>()[i], expected.data<std::string>()[i]) << "at " << i;
    } else if (dtype_is_float(expected.dtype())) {
      double a = actual.value_as_double(i), e = expected.value_as_double(i);
      if (std::isnan(e)) { EXPECT_TRUE(std::isnan(a)) << "at " << i; continue; }
      if (std::isinf(e)) { EXPECT_EQ(a, e) << "at " << i; continue; }
      EXPECT_LE(std::fabs(a - e), atol + rtol * std::fabs(e)) << "at " << i << ": " << a << " vs " << e;
    } else {
      EXPECT_EQ(actual.value_as_int64(i), expected.value_as_int64(i)) << "at " << i;
    }
  }
}

}  // namespace tierjit::testing
