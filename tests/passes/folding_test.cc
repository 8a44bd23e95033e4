// Before/after tests of constant folding: initializer-only subgraphs fold (through the tier-0
// kernels, as the Session wires it), random ops and nodes past the size limit do not, a node whose
// evaluation fails stays, folded graph outputs keep their names.
#include "passes/constant_folding.h"

#include "pass_test_util.h"
#include "passes/dead_code_elimination.h"

namespace tierjit::passes {
namespace {

using namespace testing;
using ir::OpKind;

TEST(ConstantFolding, InitializerOnlyChainFolds) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({C(3)}));
  ir::Value* t = b.node(OpKind::Add, {b.fconst("c1", {1, 2, 3}), b.fconst("c2", {10, 20, 30})}, "t");
  ir::Value* u = b.node(OpKind::Neg, {t}, "u");
  b.output(b.node(OpKind::Mul, {u, x}, "y"));
  b.infer();
  ASSERT_TRUE(fold_constants(b.g, folding_context()).ok());
  ASSERT_TRUE(eliminate_dead_code(b.g, PassContext{}).ok());

  // -(1+10), -(2+20), -(3+30)
  GraphBuilder want;
  ir::Value* wx = want.input("x", DType::kFloat32, dims({C(3)}));
  want.output(want.node(OpKind::Mul, {want.fconst("u", {-11, -22, -33}), wx}, "y"));
  want.infer();
  EXPECT_TRUE(same_graph(b.g, want.g));
  EXPECT_EQ(u->name(), "u");
  EXPECT_EQ(u->type().shape, dims({C(3)}));
  EXPECT_FALSE(t->is_constant());  // released by DCE: nothing reads it any more
}

TEST(ConstantFolding, FoldedGraphOutputKeepsItsName) {
  GraphBuilder b;
  ir::Value* y = b.node(OpKind::Mul, {b.fconst("a", {3}), b.fconst("b", {4})}, "y");
  b.output(y);
  b.infer();
  ASSERT_TRUE(fold_constants(b.g, folding_context()).ok());
  EXPECT_TRUE(b.g.nodes().empty());
  ASSERT_EQ(b.g.outputs().size(), 1u);
  EXPECT_EQ(b.g.outputs()[0], y);
  EXPECT_EQ(y->name(), "y");
  EXPECT_EQ(y->constant().data<float>()[0], 12.0f);  // 3 * 4
}

TEST(ConstantFolding, ShapeArithmeticOnConstantsFolds) {
  // Shape([2,3] const) = [2, 3]; Gather(., 1) = 3; Unsqueeze -> [3]
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({S("N"), C(3)}));
  ir::Value* shp = b.node(OpKind::Shape, {b.constant("w", Tensor::zeros(DType::kFloat32, {2, 3}))}, "shp");
  ir::Value* g = b.node(OpKind::Gather, {shp, b.iconst("one", {1}, true)}, "g");
  ir::Value* u = b.node(OpKind::Unsqueeze, {g, b.iconst("ax", {0})}, "u");
  ir::Value* tgt = b.node(OpKind::Concat, {b.iconst("m1", {-1}), u}, "tgt", {{"axis", attr_int(0)}});
  b.output(b.node(OpKind::Reshape, {x, tgt}, "y"));
  b.infer();
  ASSERT_TRUE(fold_constants(b.g, folding_context()).ok());
  ASSERT_EQ(b.g.nodes().size(), 1u);
  EXPECT_EQ(b.g.nodes()[0]->op(), OpKind::Reshape);
  ASSERT_TRUE(tgt->is_constant());
  EXPECT_EQ(tgt->constant().data<int64_t>()[0], -1);
  EXPECT_EQ(tgt->constant().data<int64_t>()[1], 3);
}

TEST(ConstantFolding, RandomOpsAreNotFolded) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({C(2)}));
  ir::Value* r = b.node(OpKind::RandomUniform, {}, "r", {{"shape", attr_ints({2})}});
  ir::Value* r2 = b.node(OpKind::RandomNormalLike, {b.fconst("c", {1, 2})}, "r2");
  b.output(b.node(OpKind::Add, {b.node(OpKind::Add, {r, r2}, "s"), x}, "y"));
  b.infer();
  const uint64_t before = ir::structural_hash(b.g);
  ASSERT_TRUE(fold_constants(b.g, folding_context()).ok());
  EXPECT_EQ(ir::structural_hash(b.g), before);
  EXPECT_EQ(b.g.nodes().size(), 4u);
}

TEST(ConstantFolding, OutputsPastTheLimitStay) {
  GraphBuilder b;
  ir::Value* big = b.node(OpKind::Add, {b.fconst("a", {1, 2, 3, 4}), b.fconst("b", {1, 1, 1, 1})}, "big");
  // ConstantOfShape([100]): 100 floats, rejected from its inferred static shape.
  ir::Value* fill = b.node(OpKind::ConstantOfShape, {b.iconst("shape", {100})}, "fill");
  ir::Value* small = b.node(OpKind::Mul, {b.fconst("c", {2}), b.fconst("d", {3})}, "small");
  b.output(big);
  b.output(fill);
  b.output(small);
  b.infer();
  PassContext ctx = folding_context();
  ctx.max_folded_bytes = 15;  // 4 floats = 16 bytes: too big; one float (4 bytes) fits
  ASSERT_TRUE(fold_constants(b.g, ctx).ok());
  EXPECT_FALSE(big->is_constant());
  EXPECT_FALSE(fill->is_constant());  // 100 floats = 400 bytes
  EXPECT_TRUE(small->is_constant());
  EXPECT_EQ(b.g.nodes().size(), 2u);
  ctx.max_folded_bytes = 1 << 20;
  ctx.memory_limit_bytes = 15;  // the session memory limit bounds folding too
  ASSERT_TRUE(fold_constants(b.g, ctx).ok());
  EXPECT_EQ(b.g.nodes().size(), 2u);
}

TEST(ConstantFolding, FailingEvaluationLeavesTheNode) {
  GraphBuilder b;
  // Reshape 6 elements to [4]: the kernel reports an error; folding leaves it for run time.
  ir::Value* y = b.node(OpKind::Reshape, {b.fconst("a", {1, 2, 3, 4, 5, 6}), b.iconst("s", {4})}, "y");
  b.output(y);
  ASSERT_TRUE(fold_constants(b.g, folding_context()).ok());
  EXPECT_EQ(b.g.nodes().size(), 1u);
  EXPECT_FALSE(y->is_constant());
}

TEST(ConstantFolding, WithoutEvaluatorNothingChanges) {
  GraphBuilder b;
  b.output(b.node(OpKind::Add, {b.fconst("a", {1}), b.fconst("b", {2})}, "y"));
  b.infer();
  ASSERT_TRUE(fold_constants(b.g, PassContext{}).ok());
  EXPECT_EQ(b.g.nodes().size(), 1u);
}

TEST(ConstantFolding, NodesWithFeedInputsStay) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({C(1)}));
  b.output(b.node(OpKind::Add, {x, b.fconst("b", {2})}, "y"));
  b.infer();
  ASSERT_TRUE(fold_constants(b.g, folding_context()).ok());
  EXPECT_EQ(b.g.nodes().size(), 1u);
}

}  // namespace
}  // namespace tierjit::passes
