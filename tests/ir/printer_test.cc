// Tests of the graph IR text printer (src/ir/printer.cc): node lines, inputs, initializers,
// captures and indented subgraphs.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "ir/graph.h"

namespace tierjit::ir {
namespace {

ValueType f32(SymShape s) { return ValueType{DType::kFloat32, std::move(s)}; }

TEST(Printer, NodeLineShowsOutputTypeOpInputsAndAttributes) {
  Graph g("main");
  Value* x = g.add_value("x", f32({Dim::named("N"), Dim::constant(128)}));
  Value* w = g.add_value("w", f32({Dim::constant(256), Dim::constant(128)}));
  w->set_constant(Tensor::zeros(DType::kFloat32, {256, 128}));
  Value* b = g.add_value("b", f32({Dim::constant(256)}));
  b->set_constant(Tensor::zeros(DType::kFloat32, {256}));
  Value* y = g.add_value("3", f32({Dim::named("N"), Dim::constant(256)}));
  g.inputs() = {x, b};
  Node* n = g.add_node(OpKind::Gemm, {x, w, b}, {y}, "gemm0");
  Attribute alpha;
  alpha.kind = Attribute::Kind::kFloat;
  alpha.f = 1.0f;
  n->set_attr("alpha", alpha);
  Attribute trans;
  trans.kind = Attribute::Kind::kInt;
  trans.i = 1;
  n->set_attr("transB", trans);
  g.outputs() = {y};

  std::string text = print_graph(g);
  EXPECT_NE(text.find("graph 'main' {\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  %3:float32[N,256] = Gemm(%x, %w, %b) {alpha=1, transB=1}\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("  input %x: float32[N,128]\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  const input %b: float32[256]\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  const %w: float32[256,128]\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  output %3: float32[N,256]\n"), std::string::npos) << text;
  // Contents of big initializers are not printed.
  EXPECT_EQ(text.find("0,0,0"), std::string::npos) << text;
}

TEST(Printer, UnnamedValuesOmittedInputsUnknownTypesAndSubgraphs) {
  Graph g("main");
  Value* c = g.add_value("cond", ValueType{DType::kBool, SymShape{}});
  Value* a = g.add_value("a", ValueType{DType::kInt64, std::nullopt});
  Value* out = g.add_value("", ValueType{});
  g.inputs() = {c, a};
  Node* n = g.add_node(OpKind::If, {c}, {out});
  auto then_g = std::make_shared<Graph>("then", &g);
  Value* cap = then_g->add_value("a", a->type());
  then_g->captures().push_back(cap);
  then_g->capture_sources().push_back(a);
  Value* r = then_g->add_value("r", ValueType{DType::kInt64, SymShape{Dim::unknown()}});
  then_g->add_node(OpKind::Clip, {cap, nullptr}, {r});
  then_g->outputs() = {r};
  Attribute ga;
  ga.kind = Attribute::Kind::kGraph;
  ga.g = then_g;
  n->set_attr("then_branch", ga);
  g.outputs() = {out};

  std::string text = print_graph(g);
  EXPECT_NE(text.find("  input %a: int64\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  input %cond: bool[]\n"), std::string::npos) << text;
  EXPECT_NE(text.find(fmt::format("  %{}:? = If(%cond) {{then_branch=graph 'then'}}\n", out->id())),
            std::string::npos) << text;
  EXPECT_NE(text.find("    then_branch = graph 'then' {\n"), std::string::npos) << text;
  EXPECT_NE(text.find("      capture %a <- %a\n"), std::string::npos) << text;
  EXPECT_NE(text.find("      %r:int64[?] = Clip(%a, _)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("      output %r: int64[?]\n    }\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace tierjit::ir
