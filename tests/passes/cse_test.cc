// Before/after tests of common-subexpression elimination: equal nodes merge, equal small
// constants merge (so repeated shape arithmetic collapses), different attributes, random ops and
// graph outputs are never merged.
#include "passes/common_subexpression_elimination.h"

#include "pass_test_util.h"
#include "passes/dead_code_elimination.h"

namespace tierjit::passes {
namespace {

using namespace testing;
using ir::OpKind;

TEST(CommonSubexpressionElimination, EqualNodesMerge) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({S("N"), C(4)}));
  ir::Value* r1 = b.node(OpKind::Relu, {x}, "r1");
  ir::Value* r2 = b.node(OpKind::Relu, {x}, "r2");
  ir::Value* e1 = b.node(OpKind::Exp, {r1}, "e1");
  ir::Value* e2 = b.node(OpKind::Exp, {r2}, "e2");  // equal once r2 -> r1
  b.output(b.node(OpKind::Add, {e1, e2}, "y"));
  b.infer();
  ASSERT_TRUE(eliminate_common_subexpressions(b.g, PassContext{}).ok());

  GraphBuilder want;
  ir::Value* wx = want.input("x", DType::kFloat32, dims({S("N"), C(4)}));
  ir::Value* we = want.node(OpKind::Exp, {want.node(OpKind::Relu, {wx}, "r")}, "e");
  want.output(want.node(OpKind::Add, {we, we}, "y"));
  want.infer();
  EXPECT_TRUE(same_graph(b.g, want.g));
}

TEST(CommonSubexpressionElimination, RepeatedShapeArithmeticCollapses) {
  // Two layers each do Shape(x) -> Gather(., const 0) -> Unsqueeze(., const [0]) with their own
  // (equal) constants: after CSE one chain remains.
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({S("N"), C(4)}));
  std::vector<ir::Value*> dims_out;
  for (int layer = 0; layer < 2; ++layer) {
    std::string p = "l" + std::to_string(layer) + "_";
    ir::Value* s = b.node(OpKind::Shape, {x}, p + "shape");
    ir::Value* g = b.node(OpKind::Gather, {s, b.iconst(p + "i", {0}, true)}, p + "gather");
    dims_out.push_back(b.node(OpKind::Unsqueeze, {g, b.iconst(p + "ax", {0})}, p + "unsq"));
  }
  b.output(b.node(OpKind::Concat, {dims_out[0], dims_out[1]}, "y", {{"axis", attr_int(0)}}));
  b.infer();
  ASSERT_TRUE(eliminate_common_subexpressions(b.g, PassContext{}).ok());
  ASSERT_TRUE(eliminate_dead_code(b.g, PassContext{}).ok());
  EXPECT_EQ(b.g.nodes().size(), 4u);  // Shape, Gather, Unsqueeze, Concat
  EXPECT_EQ(b.g.nodes().back()->input(0), b.g.nodes().back()->input(1));
}

TEST(CommonSubexpressionElimination, DifferentAttributesStayApart) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({C(3)}));
  ir::Value* a = b.node(OpKind::LeakyRelu, {x}, "a", {{"alpha", attr_float(0.1f)}});
  ir::Value* c = b.node(OpKind::LeakyRelu, {x}, "c", {{"alpha", attr_float(0.2f)}});
  b.output(b.node(OpKind::Add, {a, c}, "y"));
  b.infer();
  ASSERT_TRUE(eliminate_common_subexpressions(b.g, PassContext{}).ok());
  EXPECT_EQ(b.g.nodes().size(), 3u);
}

TEST(CommonSubexpressionElimination, RandomOpsStayApart) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({C(3)}));
  ir::Value* r1 = b.node(OpKind::RandomUniformLike, {x}, "r1");
  ir::Value* r2 = b.node(OpKind::RandomUniformLike, {x}, "r2");
  b.output(b.node(OpKind::Sub, {r1, r2}, "y"));
  b.infer();
  ASSERT_TRUE(eliminate_common_subexpressions(b.g, PassContext{}).ok());
  EXPECT_EQ(b.g.nodes().size(), 3u);
}

TEST(CommonSubexpressionElimination, GraphOutputsKeepTheirNames) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({C(3)}));
  ir::Value* y1 = b.node(OpKind::Relu, {x}, "y1");
  ir::Value* y2 = b.node(OpKind::Relu, {x}, "y2");
  b.output(y1);
  b.output(y2);
  b.infer();
  ASSERT_TRUE(eliminate_common_subexpressions(b.g, PassContext{}).ok());
  ASSERT_EQ(b.g.outputs().size(), 2u);
  EXPECT_EQ(b.g.outputs()[0]->name(), "y1");
  EXPECT_EQ(b.g.outputs()[1]->name(), "y2");
  EXPECT_EQ(b.g.nodes().size(), 2u);
}

TEST(CommonSubexpressionElimination, EqualConstantsMergeUnequalDoNot) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({C(2)}));
  ir::Value* c1 = b.fconst("c1", {1, 2});
  ir::Value* c2 = b.fconst("c2", {1, 2});
  ir::Value* c3 = b.fconst("c3", {1, 3});
  ir::Value* a = b.node(OpKind::Add, {x, c1}, "a");
  ir::Value* c = b.node(OpKind::Add, {x, c2}, "c");  // merges with a
  ir::Value* d = b.node(OpKind::Add, {x, c3}, "d");  // different constant
  b.output(b.node(OpKind::Sum, {a, c, d}, "y"));
  b.infer();
  ASSERT_TRUE(eliminate_common_subexpressions(b.g, PassContext{}).ok());
  EXPECT_EQ(b.g.nodes().size(), 3u);
  const ir::Node* sum = b.g.nodes().back().get();
  EXPECT_EQ(sum->input(0), sum->input(1));
  EXPECT_NE(sum->input(0), sum->input(2));
}

}  // namespace
}  // namespace tierjit::passes
