// Before/after tests of dead-code elimination: unused chains go, partly used multi-output nodes
// stay, values captured by live subgraphs stay live, unused constants are released but
// initializers listed as graph inputs are kept.
#include "passes/dead_code_elimination.h"

#include "pass_test_util.h"

namespace tierjit::passes {
namespace {

using namespace testing;
using ir::OpKind;

TEST(DeadCodeElimination, UnusedChainRemoved) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({S("N")}));
  ir::Value* w = b.fconst("w", {2});
  ir::Value* dead = b.node(OpKind::Mul, {b.node(OpKind::Relu, {x}, "r"), w}, "dead");
  b.output(b.node(OpKind::Neg, {x}, "y"));
  b.infer();
  ASSERT_TRUE(eliminate_dead_code(b.g, PassContext{}).ok());

  GraphBuilder want;
  ir::Value* wx = want.input("x", DType::kFloat32, dims({S("N")}));
  want.output(want.node(OpKind::Neg, {wx}, "y"));
  want.infer();
  EXPECT_TRUE(same_graph(b.g, want.g));
  EXPECT_FALSE(w->is_constant());  // its only reader is gone: released
  EXPECT_EQ(dead->producer(), nullptr);
}

TEST(DeadCodeElimination, PartlyUsedMultiOutputNodeStays) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({C(4), C(6)}));
  ir::Node* split = b.node_n(OpKind::Split, {x}, "split", 2, {{"axis", attr_int(1)}});
  b.output(b.node(OpKind::Relu, {split->output(1)}, "y"));
  b.infer();
  ASSERT_TRUE(eliminate_dead_code(b.g, PassContext{}).ok());
  EXPECT_EQ(b.g.nodes().size(), 2u);
}

TEST(DeadCodeElimination, InitializerInputsAreKept) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({C(1)}));
  ir::Value* w = b.fconst("w", {1});
  b.g.inputs().push_back(w);  // an initializer listed as a graph input (IR < 4 models)
  b.output(b.node(OpKind::Neg, {x}, "y"));
  ASSERT_TRUE(eliminate_dead_code(b.g, PassContext{}).ok());
  EXPECT_TRUE(w->is_constant());  // otherwise it would turn into a feed
  EXPECT_EQ(b.g.feed_inputs().size(), 1u);
}

TEST(DeadCodeElimination, ValuesCapturedByLiveSubgraphsStay) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({C(2)}));
  ir::Value* cond = b.input("cond", DType::kBool, dims({}));
  ir::Value* a = b.node(OpKind::Exp, {x}, "a");        // read only by the then-branch
  ir::Value* unused = b.node(OpKind::Log, {x}, "unused");
  auto make_branch = [&](const char* name, ir::Value* src) {
    auto sg = std::make_shared<ir::Graph>(name, &b.g);
    ir::Value* cap = sg->add_value(src->name(), {DType::kFloat32, dims({C(2)})});
    sg->captures().push_back(cap);
    sg->capture_sources().push_back(src);
    ir::Value* out = sg->add_value(std::string(name) + "_out", {DType::kFloat32, dims({C(2)})});
    sg->add_node(OpKind::Relu, {cap}, {out}, std::string(name) + "_relu")->set_opset(17);
    sg->outputs().push_back(out);
    ir::Attribute at;
    at.kind = ir::Attribute::Kind::kGraph;
    at.g = sg;
    return at;
  };
  b.output(b.node(OpKind::If, {cond}, "y", {{"then_branch", make_branch("then", a)}, {"else_branch", make_branch("else", x)}}));
  // An If whose output nobody reads is dead like any node, subgraph and all.
  b.node(OpKind::If, {cond}, "dead_if", {{"then_branch", make_branch("t2", unused)}, {"else_branch", make_branch("e2", x)}});
  ASSERT_TRUE(eliminate_dead_code(b.g, PassContext{}).ok());
  std::vector<std::string> names;
  for (const auto& n : b.g.nodes()) names.push_back(n->name());
  EXPECT_EQ(names, (std::vector<std::string>{"a", "y"}));
}

}  // namespace
}  // namespace tierjit::passes
