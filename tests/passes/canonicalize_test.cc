// Before/after tests of the canonicalization pass: Constant nodes become constants, Identity /
// inference Dropout / no-op Cast are bypassed, graph outputs keep their names, and capture sources
// of subgraphs follow the bypass.
#include "passes/canonicalize.h"

#include "pass_test_util.h"

namespace tierjit::passes {
namespace {

using namespace testing;
using ir::OpKind;

TEST(Canonicalize, ConstantNodeBecomesConstantValue) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({C(2)}));
  ir::Value* c = b.node(OpKind::Constant, {}, "c", {{"value", attr_tensor(Tensor::from_vector<float>({2}, {1, 2}))}});
  b.output(b.node(OpKind::Add, {x, c}, "y"));
  b.infer();
  ASSERT_TRUE(canonicalize(b.g, PassContext{}).ok());

  GraphBuilder want;
  ir::Value* wx = want.input("x", DType::kFloat32, dims({C(2)}));
  want.output(want.node(OpKind::Add, {wx, want.fconst("c", {1, 2})}, "y"));
  want.infer();
  EXPECT_TRUE(same_graph(b.g, want.g));
  EXPECT_EQ(c->name(), "c");  // the value keeps its name
  ASSERT_TRUE(c->is_constant());
  EXPECT_EQ(c->constant().data<float>()[1], 2.0f);
}

TEST(Canonicalize, ScalarAndListConstantForms) {
  GraphBuilder b;
  ir::Value* f = b.node(OpKind::Constant, {}, "f", {{"value_float", attr_float(2.5f)}});
  ir::Value* i = b.node(OpKind::Constant, {}, "i", {{"value_ints", attr_ints({3, 4})}});
  b.output(f);  // a Constant that is a graph output stays a graph output, now constant
  b.output(i);
  ASSERT_TRUE(canonicalize(b.g, PassContext{}).ok());
  EXPECT_TRUE(b.g.nodes().empty());
  ASSERT_EQ(b.g.outputs().size(), 2u);
  EXPECT_EQ(b.g.outputs()[0]->name(), "f");
  EXPECT_EQ(b.g.outputs()[0]->constant().rank(), 0);
  EXPECT_EQ(b.g.outputs()[0]->constant().data<float>()[0], 2.5f);
  EXPECT_EQ(b.g.outputs()[1]->constant().shape(), (Shape{2}));
  EXPECT_EQ(b.g.outputs()[1]->constant().data<int64_t>()[1], 4);
}

TEST(Canonicalize, IdentityBypassedUnlessGraphOutput) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({S("N")}));
  ir::Value* a = b.node(OpKind::Identity, {x}, "a");
  b.output(b.node(OpKind::Relu, {a}, "y"));
  b.output(b.node(OpKind::Identity, {x}, "z"));  // output: must stay (name 'z')
  b.infer();
  ASSERT_TRUE(canonicalize(b.g, PassContext{}).ok());

  GraphBuilder want;
  ir::Value* wx = want.input("x", DType::kFloat32, dims({S("N")}));
  want.output(want.node(OpKind::Relu, {wx}, "y"));
  want.output(want.node(OpKind::Identity, {wx}, "z"));
  want.infer();
  EXPECT_TRUE(same_graph(b.g, want.g));
  EXPECT_EQ(b.g.outputs()[1]->name(), "z");
}

TEST(Canonicalize, DropoutOnlyInInferenceWithUnusedMask) {
  GraphBuilder b;
  b.opset = 13;
  ir::Value* x = b.input("x", DType::kFloat32, dims({C(4)}));
  ir::Value* d1 = b.node(OpKind::Dropout, {x}, "d1");  // inference: bypassed
  ir::Value* ratio = b.fconst("ratio", {0.5f});
  ir::Value* train = b.constant("train", Tensor::scalar<bool>(true));
  ir::Value* d2 = b.node(OpKind::Dropout, {x, ratio, train}, "d2");  // training: kept
  ir::Node* d3 = b.node_n(OpKind::Dropout, {x}, "d3", 2);             // mask used: kept
  ir::Value* s = b.node(OpKind::Add, {d1, d2}, "s");
  b.output(b.node(OpKind::Add, {s, d3->output(0)}, "y"));
  b.output(d3->output(1));
  b.infer();
  ASSERT_TRUE(canonicalize(b.g, PassContext{}).ok());
  std::vector<std::string> names;
  for (const auto& n : b.g.nodes()) names.push_back(n->name());
  EXPECT_EQ(names, (std::vector<std::string>{"d2", "d3", "s", "y"}));
  EXPECT_EQ(b.g.nodes()[2]->input(0), x);  // s reads x directly
}

TEST(Canonicalize, CastToSameDtypeBypassed) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({C(3)}));
  ir::Value* same = b.node(OpKind::Cast, {x}, "same", {{"to", attr_int(static_cast<int64_t>(DType::kFloat32))}});
  ir::Value* other = b.node(OpKind::Cast, {same}, "other", {{"to", attr_int(static_cast<int64_t>(DType::kInt64))}});
  b.output(other);
  b.infer();
  ASSERT_TRUE(canonicalize(b.g, PassContext{}).ok());
  ASSERT_EQ(b.g.nodes().size(), 1u);
  EXPECT_EQ(b.g.nodes()[0]->name(), "other");
  EXPECT_EQ(b.g.nodes()[0]->input(0), x);
}

TEST(Canonicalize, CaptureSourceFollowsBypass) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({C(2)}));
  ir::Value* cond = b.input("cond", DType::kBool, dims({}));
  ir::Value* a = b.node(OpKind::Identity, {x}, "a");
  auto then_g = std::make_shared<ir::Graph>("then", &b.g);
  ir::Value* cap = then_g->add_value("a", {DType::kFloat32, dims({C(2)})});
  then_g->captures().push_back(cap);
  then_g->capture_sources().push_back(a);
  ir::Value* t_out = then_g->add_value("t", {DType::kFloat32, dims({C(2)})});
  then_g->add_node(OpKind::Relu, {cap}, {t_out}, "tr")->set_opset(17);
  then_g->outputs().push_back(t_out);
  auto else_g = std::make_shared<ir::Graph>("else", &b.g);
  ir::Value* ecap = else_g->add_value("x", {DType::kFloat32, dims({C(2)})});
  else_g->captures().push_back(ecap);
  else_g->capture_sources().push_back(x);
  ir::Value* e_out = else_g->add_value("e", {DType::kFloat32, dims({C(2)})});
  else_g->add_node(OpKind::Neg, {ecap}, {e_out}, "en")->set_opset(17);
  else_g->outputs().push_back(e_out);
  ir::Attribute tg, eg;
  tg.kind = eg.kind = ir::Attribute::Kind::kGraph;
  tg.g = then_g;
  eg.g = else_g;
  b.output(b.node(OpKind::If, {cond}, "y", {{"then_branch", tg}, {"else_branch", eg}}));
  ASSERT_TRUE(canonicalize(b.g, PassContext{}).ok());
  ASSERT_EQ(b.g.nodes().size(), 1u);  // Identity gone
  EXPECT_EQ(then_g->capture_sources()[0], x);
}

}  // namespace
}  // namespace tierjit::passes
