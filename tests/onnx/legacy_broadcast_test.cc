// Tests of the opset < 7 broadcast rewrite (src/onnx/legacy_broadcast.cc): broadcast=1 with an
// axis becomes numpy broadcasting through an Unsqueeze (opset 11) or a reshaped constant; the
// attributes are dropped; unknown ranks are kUnsupported. One case runs through tier 0 to show
// the rewritten graph computes the legacy result.
#include <gtest/gtest.h>

#include "interp/executor.h"
#include "model_builder.h"

namespace tierjit::onnx_test {
namespace {

using TP = onnx::TensorProto;

// y = Op(a, b) {broadcast, axis} at opset 6.
onnx::ModelProto legacy_model(const std::string& op, std::vector<D> a_shape, std::vector<D> b_shape,
                              int64_t broadcast, std::optional<int64_t> axis, bool b_const = false,
                              int64_t opset = 6) {
  onnx::GraphProto g;
  add_input(g, "a", TP::FLOAT, a_shape);
  if (b_const) {
    std::vector<int64_t> dims;
    int64_t n = 1;
    for (const D& d : b_shape) {
      dims.push_back(d.value);
      n *= d.value;
    }
    std::vector<float> vals;
    for (int64_t i = 0; i < n; ++i) vals.push_back(100.0f * static_cast<float>(i + 1));
    add_float_init(g, "b", dims, vals);
  } else {
    add_input(g, "b", TP::FLOAT, b_shape);
  }
  auto* n = add_node(g, op, {"a", "b"}, {"y"}, "op");
  attr_int(n, "broadcast", broadcast);
  if (axis) attr_int(n, "axis", *axis);
  add_untyped_output(g, "y");
  return make_model(g, opset);
}

const ir::Node* op_node(const ir::Graph& g) {
  for (const auto& n : g.nodes())
    if (n->name() == "op") return n.get();
  return nullptr;
}

TEST(LegacyBroadcast, AxisInsertsUnsqueezeWithTrailingAxes) {
  auto m = load(legacy_model("Mul", {2, 3, 4, 5}, {3, 4}, 1, 1));
  ASSERT_TRUE(m.ok()) << m.status().message();
  const ir::Node* mul = op_node(*m->graph);
  ASSERT_NE(mul, nullptr);
  EXPECT_FALSE(mul->has_attr("broadcast"));
  EXPECT_FALSE(mul->has_attr("axis"));
  const ir::Node* unsq = mul->input(1)->producer();
  ASSERT_NE(unsq, nullptr);
  EXPECT_EQ(unsq->op(), ir::OpKind::Unsqueeze);
  EXPECT_EQ(unsq->opset(), 11);
  EXPECT_EQ(unsq->attr_ints("axes"), (std::vector<int64_t>{2}));  // [3,4] -> [3,4,1]
  EXPECT_EQ(unsq->input(0)->name(), "b");
  EXPECT_EQ(*mul->input(1)->type().shape,
            (ir::SymShape{ir::Dim::constant(3), ir::Dim::constant(4), ir::Dim::constant(1)}));
  // The Unsqueeze runs before the Mul.
  EXPECT_EQ(m->graph->nodes()[0].get(), unsq);

  // axis 0 with a rank-1 B on a rank-4 A needs three trailing 1s.
  m = load(legacy_model("Sub", {2, 3, 4, 5}, {2}, 1, 0));
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(op_node(*m->graph)->input(1)->producer()->attr_ints("axes"),
            (std::vector<int64_t>{1, 2, 3}));
}

TEST(LegacyBroadcast, ConstantBIsReshapedInPlaceOfAnUnsqueeze) {
  auto m = load(legacy_model("Add", {2, 3, 4}, {3}, 1, 1, /*b_const=*/true));
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->graph->nodes().size(), 1u);
  const ir::Value* b = op_node(*m->graph)->input(1);
  ASSERT_TRUE(b->is_constant());
  EXPECT_EQ(b->constant().shape(), (Shape{3, 1}));
  EXPECT_EQ(b->constant().data<float>()[2], 300.0f);
}

TEST(LegacyBroadcast, SuffixMatchingAndBroadcastZeroOnlyDropTheAttributes) {
  for (auto [bc, axis] : {std::pair<int64_t, std::optional<int64_t>>{1, std::nullopt},
                          {1, 2}, {0, std::nullopt}}) {
    auto m = load(legacy_model("Div", {2, 3, 4}, {4}, bc, axis));
    ASSERT_TRUE(m.ok()) << m.status().message();
    ASSERT_EQ(m->graph->nodes().size(), 1u);
    const ir::Node* n = op_node(*m->graph);
    EXPECT_TRUE(n->attributes().empty());
    EXPECT_EQ(n->input(1)->name(), "b");
  }
  // From opset 7 on the ops have no such attributes: a model giving one is invalid (the
  // importer checks attributes against the op's ONNX schema, as ONNX Runtime does).
  auto m = load(legacy_model("Pow", {2, 3}, {2, 3}, 0, std::nullopt, false, 7));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("'broadcast' is not an attribute of Pow (ONNX Pow opset 7)"),
            std::string::npos)
      << m.status().message();
}

TEST(LegacyBroadcast, UnknownRankOrBadAxis) {
  onnx::ModelProto mp = legacy_model("Add", {2, 3}, {3}, 1, 1);
  mp.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  auto r = load(mp);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find("mem.onnx: node 'op' (op Add): legacy broadcast"),
            std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("'a'"), std::string::npos) << r.status().message();

  r = load(legacy_model("Add", {2, 3}, {3}, 1, 5));  // B would start past A's last dim
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidModel);
  r = load(legacy_model("Add", {}, {3}, 1, 0));  // rank-0 A cannot hold a rank-1 B
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidModel);
}

TEST(LegacyBroadcast, RewrittenGraphComputesTheLegacyResult) {
  auto m = load(legacy_model("Add", {2, 3, 2}, {3}, 1, 1));
  ASSERT_TRUE(m.ok()) << m.status().message();
  std::vector<float> a(12);
  for (int i = 0; i < 12; ++i) a[static_cast<size_t>(i)] = static_cast<float>(i);
  std::vector<Tensor> feeds = {Tensor::from_vector<float>({2, 3, 2}, a),
                               Tensor::from_vector<float>({3}, {100, 200, 300})};
  auto out = interp::run_graph(*m->graph, feeds, interp::ExecOptions{});
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(out->size(), 1u);
  const Tensor& y = (*out)[0];
  ASSERT_EQ(y.shape(), (Shape{2, 3, 2}));
  // y[i,j,k] = a[i,j,k] + b[j]: a is 0..11 row-major, so y[1,2,1] = 11 + 300.
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 2; ++k) {
        int flat = (i * 3 + j) * 2 + k;
        EXPECT_EQ(y.data<float>()[flat], static_cast<float>(flat) + 100.0f * static_cast<float>(j + 1));
      }
}

TEST(LegacyBroadcast, PReluBefore7AppliesA1DSlopePerChannel) {
  // X [2,3,4], slope [3] (one per channel, axis 1): slope becomes [3,1].
  onnx::GraphProto g;
  add_input(g, "x", TP::FLOAT, {2, 3, 4});
  add_float_init(g, "slope", {3}, {0.5f, 0.25f, 2});
  add_node(g, "PRelu", {"x", "slope"}, {"y"}, "op");
  add_untyped_output(g, "y");
  auto m = load(make_model(g, 6));
  ASSERT_TRUE(m.ok()) << m.status().message();
  const ir::Value* slope = op_node(*m->graph)->input(1);
  ASSERT_TRUE(slope->is_constant());
  EXPECT_EQ(slope->constant().shape(), (Shape{3, 1}));
  // At opset 7 numpy rules apply as written: no rewrite.
  m = load(make_model(g, 7));
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(op_node(*m->graph)->input(1)->constant().shape(), (Shape{3}));
  // A non-constant slope gets an Unsqueeze; an unknown X rank is unsupported.
  onnx::GraphProto g2;
  add_input(g2, "x", TP::FLOAT, {2, 3, 4, 5});
  add_input(g2, "slope", TP::FLOAT, {3});
  add_node(g2, "PRelu", {"x", "slope"}, {"y"}, "op");
  add_untyped_output(g2, "y");
  m = load(make_model(g2, 6));
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(op_node(*m->graph)->input(1)->producer()->attr_ints("axes"),
            (std::vector<int64_t>{1, 2}));
  g2.mutable_input(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  auto r = load(make_model(g2, 6));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
}

TEST(LegacyBroadcast, GemmBroadcastAttributeIsDropped) {
  onnx::GraphProto g;
  add_input(g, "a", TP::FLOAT, {2, 3});
  add_input(g, "b", TP::FLOAT, {3, 4});
  add_input(g, "c", TP::FLOAT, {4});
  auto* n = add_node(g, "Gemm", {"a", "b", "c"}, {"y"}, "op");
  attr_int(n, "broadcast", 1);
  attr_float(n, "alpha", 2.0f);
  add_output(g, "y", TP::FLOAT, {2, 4});
  auto m = load(make_model(g, 6));
  ASSERT_TRUE(m.ok()) << m.status().message();
  const ir::Node* gemm = op_node(*m->graph);
  EXPECT_FALSE(gemm->has_attr("broadcast"));
  EXPECT_EQ(gemm->attr_float("alpha", 0), 2.0f);
}

}  // namespace
}  // namespace tierjit::onnx_test
