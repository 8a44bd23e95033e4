// Tests of model-local function inlining (src/onnx/functions.cc): bodies replace call sites with
// unique internal names, formal inputs/outputs bound, ref_attr_name attributes bound (or dropped
// so the op default applies), nested calls, function opsets, subgraphs inside bodies.
#include <gtest/gtest.h>

#include <set>

#include "model_builder.h"

namespace tierjit::onnx_test {
namespace {

using TP = onnx::TensorProto;

onnx::FunctionProto* add_function(onnx::ModelProto& m, const std::string& name,
                                  std::vector<std::string> inputs, std::vector<std::string> outputs,
                                  std::vector<std::string> attrs, int64_t opset) {
  auto* f = m.add_functions();
  f->set_name(name);
  f->set_domain("custom");
  for (auto& i : inputs) f->add_input(i);
  for (auto& o : outputs) f->add_output(o);
  for (auto& a : attrs) f->add_attribute(a);
  auto* op = f->add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  return f;
}

// Adds a body node to `f` (FunctionProto has the same node list as a graph).
onnx::NodeProto* body_node(onnx::FunctionProto* f, const std::string& op, std::vector<std::string> in,
                           std::vector<std::string> out, const std::string& domain = "") {
  auto* n = f->add_node();
  n->set_op_type(op);
  if (!domain.empty()) n->set_domain(domain);
  for (auto& i : in) n->add_input(i);
  for (auto& o : out) n->add_output(o);
  return n;
}

void ref_attr(onnx::NodeProto* n, const std::string& name, const std::string& ref,
              onnx::AttributeProto::AttributeType type) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(type);
  a->set_ref_attr_name(ref);
}

// Affine(X, A) = LeakyRelu(X * A, alpha=@alpha); Outer(X) = Affine(X, X, alpha=@beta).
onnx::ModelProto function_model() {
  onnx::GraphProto g;
  add_input(g, "x", TP::FLOAT, {3});
  add_input(g, "a", TP::FLOAT, {3});
  auto* c1 = add_node(g, "Affine", {"x", "a"}, {"y1"}, "call1", "custom");
  attr_float(c1, "alpha", 0.3f);
  add_node(g, "Affine", {"x", "a"}, {"y2"}, "call2", "custom");  // no alpha: op default
  auto* c3 = add_node(g, "Outer", {"x"}, {"y3"}, "call3", "custom");
  attr_float(c3, "beta", 0.7f);
  add_output(g, "y1", TP::FLOAT, {3});
  add_output(g, "y2", TP::FLOAT, {3});
  add_output(g, "y3", TP::FLOAT, {3});
  onnx::ModelProto m = make_model(g, 17);
  auto* custom = m.add_opset_import();
  custom->set_domain("custom");
  custom->set_version(1);

  auto* affine = add_function(m, "Affine", {"X", "A"}, {"Y"}, {"alpha"}, 13);
  body_node(affine, "Mul", {"X", "A"}, {"t"});
  auto* lr = body_node(affine, "LeakyRelu", {"t"}, {"Y"});
  ref_attr(lr, "alpha", "alpha", onnx::AttributeProto::FLOAT);
  auto* outer = add_function(m, "Outer", {"X"}, {"Z"}, {"beta"}, 13);
  auto* call = body_node(outer, "Affine", {"X", "X"}, {"Z"}, "custom");
  ref_attr(call, "alpha", "beta", onnx::AttributeProto::FLOAT);
  return m;
}

TEST(Functions, CallsAreInlinedWithBoundInputsOutputsAndAttributes) {
  auto m = load(function_model());
  ASSERT_TRUE(m.ok()) << m.status().message();
  const ir::Graph& g = *m->graph;
  ASSERT_EQ(g.nodes().size(), 6u) << ir::print_graph(g);
  std::vector<const ir::Node*> muls, relus;
  for (const auto& n : g.nodes()) {
    EXPECT_EQ(n->domain(), "");
    EXPECT_EQ(n->opset(), 13) << "body nodes use the function's opset import";
    (n->op() == ir::OpKind::Mul ? muls : relus).push_back(n.get());
  }
  ASSERT_EQ(muls.size(), 3u);
  ASSERT_EQ(relus.size(), 3u);
  const ir::Value* x = g.inputs()[0];
  const ir::Value* a = g.inputs()[1];
  // Each LeakyRelu writes the call's output and reads its own call's Mul.
  for (int k = 0; k < 3; ++k) {
    const ir::Value* y = g.outputs()[static_cast<size_t>(k)];
    ASSERT_NE(y->producer(), nullptr);
    EXPECT_EQ(y->producer()->op(), ir::OpKind::LeakyRelu);
    const ir::Node* mul = y->producer()->input(0)->producer();
    ASSERT_NE(mul, nullptr);
    EXPECT_EQ(mul->op(), ir::OpKind::Mul);
    EXPECT_EQ(mul->input(0), x);
    EXPECT_EQ(mul->input(1), k == 2 ? x : a);  // Outer calls Affine(X, X)
  }
  EXPECT_EQ(g.outputs()[0]->producer()->attr_float("alpha", -1), 0.3f);
  EXPECT_FALSE(g.outputs()[1]->producer()->has_attr("alpha"));  // default applies
  EXPECT_EQ(g.outputs()[2]->producer()->attr_float("alpha", -1), 0.7f);  // bound through Outer
  // Internal values have unique names.
  std::set<std::string> names;
  for (const auto& v : g.values()) EXPECT_TRUE(names.insert(v->name()).second) << v->name();
  EXPECT_EQ(g.outputs()[0]->producer()->name().rfind("call1/", 0), 0u);
}

TEST(Functions, SubgraphsInsideABodyReadTheBoundNames) {
  onnx::GraphProto g;
  add_input(g, "c", TP::BOOL, {});
  add_input(g, "x", TP::FLOAT, {2});
  add_input(g, "w", TP::FLOAT, {2});
  add_node(g, "Pick", {"c", "x", "w"}, {"y"}, "pick", "custom");
  add_output(g, "y", TP::FLOAT, {2});
  onnx::ModelProto m = make_model(g, 15);
  auto* pick = add_function(m, "Pick", {"C", "X", "W"}, {"Y"}, {}, 15);
  body_node(pick, "Neg", {"X"}, {"negx"});
  auto* iff = body_node(pick, "If", {"C"}, {"Y"});
  onnx::GraphProto then_g;
  add_node(then_g, "Identity", {"negx"}, {"r"});  // reads a function-internal value
  add_untyped_output(then_g, "r");
  onnx::GraphProto else_g;
  add_untyped_output(else_g, "W");  // outputs a formal input directly
  attr_graph(iff, "then_branch", then_g);
  attr_graph(iff, "else_branch", else_g);

  auto r = load(m);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ir::Graph& main = *r->graph;
  const ir::Node* if_node = find_node(main, ir::OpKind::If);
  ASSERT_NE(if_node, nullptr);
  const ir::Graph* t = if_node->attr_graph("then_branch");
  const ir::Graph* e = if_node->attr_graph("else_branch");
  ASSERT_EQ(t->capture_sources().size(), 1u);
  EXPECT_EQ(t->capture_sources()[0], find_node(main, ir::OpKind::Neg)->output(0));
  ASSERT_EQ(e->capture_sources().size(), 1u);
  EXPECT_EQ(e->capture_sources()[0], main.inputs()[2]);  // W bound to w
  EXPECT_EQ(if_node->output(0), main.outputs()[0]);
}

TEST(Functions, RecursionIsAnError) {
  onnx::GraphProto g;
  add_input(g, "x", TP::FLOAT, {2});
  add_node(g, "Loopy", {"x"}, {"y"}, "call", "custom");
  add_output(g, "y", TP::FLOAT, {2});
  onnx::ModelProto m = make_model(g);
  auto* f = add_function(m, "Loopy", {"X"}, {"Y"}, {}, 17);
  body_node(f, "Loopy", {"X"}, {"Y"}, "custom");
  auto r = load(m);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidModel);
  EXPECT_NE(r.status().message().find("nest deeper than"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace tierjit::onnx_test
