// Tests of the structural hash (src/ir/structural_hash.cc): names and doc strings do not matter;
// ops, attributes, wiring, types, constants and subgraphs do.
#include <gtest/gtest.h>

#include "ir/graph.h"

namespace tierjit::ir {
namespace {

struct Spec {
  std::string prefix = "";      // prepended to every value and node name
  float alpha = 0.5f;           // LeakyRelu alpha
  float bias = 2.0f;            // constant added
  bool swap_add = false;        // Add(c, y) instead of Add(y, c)
  DType dtype = DType::kFloat32;
  std::string symbol = "N";
  int64_t body_const = 1;       // constant inside the Loop body
};

Attribute float_attr(float f) {
  Attribute a;
  a.kind = Attribute::Kind::kFloat;
  a.f = f;
  return a;
}

// x -> LeakyRelu -> Add(const) -> Loop(body: Add(v, captured c)) -> out
std::unique_ptr<Graph> build(const Spec& s) {
  auto g = std::make_unique<Graph>(s.prefix + "g");
  ValueType t{s.dtype, SymShape{Dim::named(s.symbol), Dim::constant(3)}};
  Value* x = g->add_value(s.prefix + "x", t);
  g->inputs() = {x};
  Value* y = g->add_value(s.prefix + "y", t);
  Node* lr = g->add_node(OpKind::LeakyRelu, {x}, {y}, s.prefix + "lr");
  lr->set_attr("alpha", float_attr(s.alpha));
  lr->set_doc_string(s.prefix + "doc");
  Value* c = g->add_value(s.prefix + "c", ValueType{s.dtype, SymShape{}});
  c->set_constant(Tensor::scalar<float>(s.bias));
  Value* z = g->add_value(s.prefix + "z", t);
  if (s.swap_add)
    g->add_node(OpKind::Add, {c, y}, {z}, s.prefix + "add");
  else
    g->add_node(OpKind::Add, {y, c}, {z}, s.prefix + "add");

  auto body = std::make_shared<Graph>(s.prefix + "body", g.get());
  Value* it = body->add_value(s.prefix + "it", ValueType{DType::kInt64, SymShape{}});
  Value* cond = body->add_value(s.prefix + "cond", ValueType{DType::kBool, SymShape{}});
  Value* v = body->add_value(s.prefix + "v", t);
  body->inputs() = {it, cond, v};
  Value* cap = body->add_value(s.prefix + "c", c->type());
  body->captures().push_back(cap);
  body->capture_sources().push_back(c);
  Value* k = body->add_value(s.prefix + "k", ValueType{DType::kInt64, SymShape{}});
  k->set_constant(Tensor::scalar<int64_t>(s.body_const));
  Value* v2 = body->add_value(s.prefix + "v2", t);
  body->add_node(OpKind::Add, {v, cap}, {v2});
  Value* it2 = body->add_value(s.prefix + "it2", ValueType{DType::kInt64, SymShape{}});
  body->add_node(OpKind::Add, {it, k}, {it2});
  body->outputs() = {cond, v2};

  Value* out = g->add_value(s.prefix + "out", t);
  Node* loop = g->add_node(OpKind::Loop, {nullptr, nullptr, z}, {out}, s.prefix + "loop");
  Attribute ba;
  ba.kind = Attribute::Kind::kGraph;
  ba.g = body;
  loop->set_attr("body", ba);
  g->outputs() = {out};
  return g;
}

TEST(StructuralHash, NamesAndDocStringsDoNotMatter) {
  Spec a, b;
  b.prefix = "renamed_";
  EXPECT_EQ(structural_hash(*build(a)), structural_hash(*build(b)));
  EXPECT_NE(structural_hash(*build(a)), 0u);
}

TEST(StructuralHash, ValueIdsDoNotMatter) {
  // The same graph built with extra unused values created first (so every id shifts).
  Spec s;
  auto g1 = build(s);
  Graph g2("other");
  for (int i = 0; i < 5; ++i) g2.add_value("junk" + std::to_string(i));
  Value* x = g2.add_value("x", ValueType{DType::kFloat32, SymShape{Dim::constant(2)}});
  Value* y = g2.add_value("y", x->type());
  g2.inputs() = {x};
  g2.add_node(OpKind::Relu, {x}, {y});
  g2.outputs() = {y};
  Graph g3("third");
  Value* x3 = g3.add_value("x", ValueType{DType::kFloat32, SymShape{Dim::constant(2)}});
  Value* y3 = g3.add_value("y", x3->type());
  g3.inputs() = {x3};
  g3.add_node(OpKind::Relu, {x3}, {y3});
  g3.outputs() = {y3};
  EXPECT_EQ(structural_hash(g2), structural_hash(g3));
}

TEST(StructuralHash, EachStructuralChangeChangesTheHash) {
  Spec base;
  uint64_t h0 = structural_hash(*build(base));
  Spec s;
  s.alpha = 0.25f;  // attribute value
  EXPECT_NE(structural_hash(*build(s)), h0);
  s = Spec{};
  s.bias = 3.0f;  // constant contents
  EXPECT_NE(structural_hash(*build(s)), h0);
  s = Spec{};
  s.swap_add = true;  // wiring (operand order)
  EXPECT_NE(structural_hash(*build(s)), h0);
  s = Spec{};
  s.symbol = "M";  // symbolic dim name
  EXPECT_NE(structural_hash(*build(s)), h0);
  s = Spec{};
  s.body_const = 2;  // constant inside a subgraph
  EXPECT_NE(structural_hash(*build(s)), h0);
}

TEST(StructuralHash, ConstantReadOnlyByASubgraphIsHashedByContents) {
  auto make = [](float c) {
    auto g = std::make_unique<Graph>();
    Value* cond = g->add_value("cond", ValueType{DType::kBool, SymShape{}});
    g->inputs() = {cond};
    Value* k = g->add_value("k", ValueType{DType::kFloat32, SymShape{}});
    k->set_constant(Tensor::scalar<float>(c));
    auto then_g = std::make_shared<Graph>("then", g.get());
    Value* cap = then_g->add_value("k", k->type());
    then_g->captures().push_back(cap);
    then_g->capture_sources().push_back(k);
    then_g->outputs() = {cap};
    Value* out = g->add_value("out", k->type());
    Node* n = g->add_node(OpKind::If, {cond}, {out});
    Attribute a;
    a.kind = Attribute::Kind::kGraph;
    a.g = then_g;
    n->set_attr("then_branch", a);
    g->outputs() = {out};
    return structural_hash(*g);
  };
  EXPECT_EQ(make(1.0f), make(1.0f));
  EXPECT_NE(make(1.0f), make(2.0f));
}

TEST(StructuralHash, OpAndOpsetAndTypeMatter) {
  auto make = [](OpKind op, int opset, DType dt) {
    auto g = std::make_unique<Graph>();
    Value* x = g->add_value("x", ValueType{dt, SymShape{Dim::constant(2)}});
    Value* y = g->add_value("y", x->type());
    g->inputs() = {x};
    g->add_node(op, {x}, {y})->set_opset(opset);
    g->outputs() = {y};
    return structural_hash(*g);
  };
  uint64_t h = make(OpKind::Relu, 13, DType::kFloat32);
  EXPECT_EQ(make(OpKind::Relu, 13, DType::kFloat32), h);
  EXPECT_NE(make(OpKind::Sigmoid, 13, DType::kFloat32), h);
  EXPECT_NE(make(OpKind::Relu, 6, DType::kFloat32), h);
  EXPECT_NE(make(OpKind::Relu, 13, DType::kFloat64), h);
}

}  // namespace
}  // namespace tierjit::ir
