// Tests of GraphProto -> ir::Graph (src/onnx/graph_import.cc, loader.cc): declared types and
// symbolic dims, initializers as constants, omitted optionals, attributes, subgraph captures,
// topological order, opsets, and the one-line errors for inconsistent models.
#include <gtest/gtest.h>

#include "interp/executor.h"
#include "model_builder.h"

namespace tierjit::onnx_test {
namespace {

using TP = onnx::TensorProto;

void expect_error(const Expected<ir::Model>& m, StatusCode code, const std::string& needle) {
  ASSERT_FALSE(m.ok()) << "expected an error containing: " << needle;
  EXPECT_EQ(m.status().code(), code) << m.status().message();
  EXPECT_EQ(m.status().message().rfind("mem.onnx: ", 0), 0u) << m.status().message();
  EXPECT_NE(m.status().message().find(needle), std::string::npos) << m.status().message();
  EXPECT_EQ(m.status().message().find('\n'), std::string::npos) << "one line";
}

TEST(GraphImport, TypesSymbolicDimsAndOpsets) {
  onnx::GraphProto g;
  g.set_name("main");
  add_input(g, "x", TP::FLOAT, {"batch", 3, "?"});
  add_input(g, "s", TP::INT64, {});
  add_untyped_input(g, "u");
  add_node(g, "Relu", {"x"}, {"y"}, "relu0");
  add_node(g, "Identity", {"u"}, {"u2"});
  add_output(g, "y", TP::FLOAT, {"batch", 3, 7});
  add_untyped_output(g, "u2");
  onnx::ModelProto mp = make_model(g, 13);
  auto* ml = mp.add_opset_import();
  ml->set_domain("ai.onnx.ml");
  ml->set_version(3);
  auto m = load(mp);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->ir_version, 8);
  EXPECT_EQ(m->producer_name, "tierjit-tests");
  EXPECT_EQ(m->opset_imports.at(""), 13);
  EXPECT_EQ(m->opset_imports.at("ai.onnx.ml"), 3);

  const ir::Graph& gr = *m->graph;
  EXPECT_EQ(gr.name(), "main");
  ASSERT_EQ(gr.inputs().size(), 3u);
  const ir::ValueType& xt = gr.inputs()[0]->type();
  EXPECT_EQ(xt.dtype, DType::kFloat32);
  ASSERT_TRUE(xt.shape.has_value());
  EXPECT_EQ(*xt.shape, (ir::SymShape{ir::Dim::named("batch"), ir::Dim::constant(3), ir::Dim::unknown()}));
  EXPECT_EQ(gr.inputs()[1]->type().shape, ir::SymShape{});  // rank 0, known
  EXPECT_EQ(gr.inputs()[2]->type().dtype, DType::kUndefined);
  EXPECT_FALSE(gr.inputs()[2]->type().shape.has_value());  // no shape: rank unknown

  const ir::Node* relu = find_node(gr, ir::OpKind::Relu);
  ASSERT_NE(relu, nullptr);
  EXPECT_EQ(relu->name(), "relu0");
  EXPECT_EQ(relu->opset(), 13);
  EXPECT_EQ(relu->domain(), "");
  ASSERT_EQ(gr.outputs().size(), 2u);
  EXPECT_EQ(gr.outputs()[0], relu->output(0));
  EXPECT_EQ(*gr.outputs()[0]->type().shape,
            (ir::SymShape{ir::Dim::named("batch"), ir::Dim::constant(3), ir::Dim::constant(7)}));
}

TEST(GraphImport, AiOnnxDomainIsTheDefaultDomain) {
  onnx::GraphProto g;
  add_input(g, "x", TP::FLOAT, {2});
  add_node(g, "Neg", {"x"}, {"y"}, "neg", "ai.onnx");
  add_output(g, "y", TP::FLOAT, {2});
  onnx::ModelProto mp = make_model(g, 11);
  mp.mutable_opset_import(0)->set_domain("ai.onnx");
  auto m = load(mp);
  ASSERT_TRUE(m.ok()) << m.status().message();
  const ir::Node* n = find_node(*m->graph, ir::OpKind::Neg);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->opset(), 11);
  EXPECT_EQ(n->domain(), "");
  EXPECT_EQ(m->opset_imports.count(""), 1u);
}

TEST(GraphImport, EveryOpsetFrom1To17LoadsAndBeyondIsUnsupported) {
  onnx::GraphProto g;
  add_input(g, "x", TP::FLOAT, {2});
  add_node(g, "Relu", {"x"}, {"y"});
  add_output(g, "y", TP::FLOAT, {2});
  for (int v = 1; v <= 17; ++v) {
    auto m = load(make_model(g, v));
    ASSERT_TRUE(m.ok()) << "opset " << v << ": " << m.status().message();
    EXPECT_EQ(m->graph->nodes()[0]->opset(), v);
  }
  expect_error(load(make_model(g, 18)), StatusCode::kUnsupported, "default-domain opset 18");
}

TEST(GraphImport, InitializersAreConstantsAlsoWhenListedAsInputs) {
  onnx::GraphProto g;
  add_input(g, "x", TP::FLOAT, {"N", 2});
  add_input(g, "b", TP::FLOAT, {2});  // also an initializer: a constant, not a feed
  add_float_init(g, "b", {2}, {1, 2});
  add_float_init(g, "w", {2}, {3, 4});
  add_node(g, "Add", {"x", "b"}, {"t"});
  add_node(g, "Mul", {"t", "w"}, {"y"});
  add_output(g, "y", TP::FLOAT, {"N", 2});
  auto m = load(make_model(g));
  ASSERT_TRUE(m.ok()) << m.status().message();
  const ir::Graph& gr = *m->graph;
  ASSERT_EQ(gr.inputs().size(), 2u);
  EXPECT_TRUE(gr.inputs()[1]->is_constant());
  ASSERT_EQ(gr.feed_inputs().size(), 1u);
  EXPECT_EQ(gr.feed_inputs()[0]->name(), "x");
  const ir::Value* w = find_value(gr, "w");
  ASSERT_TRUE(w && w->is_constant());
  EXPECT_EQ(w->constant().data<float>()[1], 4.0f);
  EXPECT_EQ(w->type().dtype, DType::kFloat32);
  EXPECT_EQ(*w->type().shape, ir::SymShape{ir::Dim::constant(2)});
}

TEST(GraphImport, OmittedOptionalsAreNullAndUnusedOutputsKeepTheirValue) {
  onnx::GraphProto g;
  add_input(g, "x", TP::FLOAT, {4});
  add_node(g, "Clip", {"x", "", "hi"}, {"y"});
  add_float_init(g, "hi", {}, {6});
  add_node(g, "Dropout", {"y"}, {"z", "mask"});  // mask is never used
  add_node(g, "TopK", {"z", "k"}, {"", "idx"});  // values output omitted
  add_int64_init(g, "k", {2});
  add_output(g, "idx", TP::INT64, {2});
  auto m = load(make_model(g));
  ASSERT_TRUE(m.ok()) << m.status().message();
  const ir::Node* clip = find_node(*m->graph, ir::OpKind::Clip);
  ASSERT_EQ(clip->num_inputs(), 3u);
  EXPECT_EQ(clip->input(1), nullptr);
  EXPECT_TRUE(clip->input(2)->is_constant());
  const ir::Node* drop = find_node(*m->graph, ir::OpKind::Dropout);
  ASSERT_EQ(drop->num_outputs(), 2u);
  ASSERT_NE(drop->output(1), nullptr);
  EXPECT_EQ(drop->output(1)->name(), "mask");
  EXPECT_TRUE(drop->output(1)->users().empty());
  const ir::Node* topk = find_node(*m->graph, ir::OpKind::TopK);
  EXPECT_EQ(topk->output(0), nullptr);
  EXPECT_EQ(topk->output(1)->name(), "idx");
}

TEST(GraphImport, AttributesOfEveryKind) {
  // Constant declares an attribute of every kind (ONNX Constant-13: value, value_float,
  // value_floats, value_int, value_ints, value_string, value_strings); a Transpose's perm comes
  // IR v1 style (no `type`, inferred from the field set).
  onnx::GraphProto g;
  add_node(g, "Constant", {}, {"c"}, "const");
  auto* n = g.mutable_node(0);
  auto* a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(TP::INT32);
  a->mutable_t()->add_dims(2);
  a->mutable_t()->add_int32_data(7);
  a->mutable_t()->add_int32_data(-8);
  attr_float(n, "value_float", 0.25f);
  attr_int(n, "value_int", -3);
  attr_ints(n, "value_ints", {1, 2, 3});
  auto* s = n->add_attribute();
  s->set_name("value_string");
  s->set_type(onnx::AttributeProto::STRING);
  s->set_s("hello");
  auto* fs = n->add_attribute();
  fs->set_name("value_floats");
  fs->set_type(onnx::AttributeProto::FLOATS);
  fs->add_floats(1.5f);
  auto* ss = n->add_attribute();
  ss->set_name("value_strings");
  ss->set_type(onnx::AttributeProto::STRINGS);
  ss->add_strings("a");
  ss->add_strings("b");
  add_input(g, "x", TP::FLOAT, {2, 3});
  add_node(g, "Transpose", {"x"}, {"t"}, "transpose");
  auto* legacy = g.mutable_node(1)->add_attribute();
  legacy->set_name("perm");
  legacy->add_ints(1);
  legacy->add_ints(0);
  add_output(g, "c", TP::INT32, {2});
  add_output(g, "t", TP::FLOAT, {3, 2});
  auto m = load(make_model(g));
  ASSERT_TRUE(m.ok()) << m.status().message();
  const ir::Node* c = find_node(*m->graph, ir::OpKind::Constant);
  ASSERT_NE(c, nullptr);
  const Tensor* t = c->attr_tensor("value");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->dtype(), DType::kInt32);
  EXPECT_EQ(t->data<int32_t>()[1], -8);
  EXPECT_EQ(c->attr_float("value_float", 0), 0.25f);
  EXPECT_EQ(c->attr_int("value_int", 0), -3);
  EXPECT_EQ(c->attr_ints("value_ints"), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(c->attr_string("value_string", ""), "hello");
  EXPECT_EQ(c->attr_floats("value_floats"), (std::vector<float>{1.5f}));
  EXPECT_EQ(c->attr_strings("value_strings"), (std::vector<std::string>{"a", "b"}));
  const ir::Node* tr = find_node(*m->graph, ir::OpKind::Transpose);
  ASSERT_NE(tr, nullptr);
  EXPECT_EQ(tr->attr_ints("perm"), (std::vector<int64_t>{1, 0}));

  // Sparse tensor attributes are rejected clearly.
  onnx::GraphProto g2;
  add_node(g2, "Constant", {}, {"c"}, "sparse_const");
  auto* sp = g2.mutable_node(0)->add_attribute();
  sp->set_name("sparse_value");
  sp->set_type(onnx::AttributeProto::SPARSE_TENSOR);
  add_output(g2, "c", TP::FLOAT, {2});
  expect_error(load(make_model(g2)), StatusCode::kUnsupported,
               "node 'sparse_const' (op Constant): attribute 'sparse_value': sparse tensors");
}

// A Loop whose body reads `outer` (a value of the main graph) and, in a nested If, `w`.
onnx::GraphProto loop_model(const std::string& body_op = "Add", const std::string& cond = "") {
  onnx::GraphProto then_g;
  then_g.set_name("then");
  add_node(then_g, "Mul", {"acc2", "w"}, {"t_out"});  // reads body value acc2 and main value w
  add_untyped_output(then_g, "t_out");
  onnx::GraphProto else_g;
  else_g.set_name("else");
  add_untyped_output(else_g, "acc2");  // outputs an outer value directly

  onnx::GraphProto body;
  body.set_name("body");
  add_input(body, "iter", TP::INT64, {});
  add_input(body, "cond_in", TP::BOOL, {});
  add_input(body, "acc", TP::FLOAT, {2});
  add_node(body, body_op, {"acc", "outer"}, {"acc2"});
  auto* iff = add_node(body, "If", {"cond_in"}, {"acc3"}, "if");
  attr_graph(iff, "then_branch", then_g);
  attr_graph(iff, "else_branch", else_g);
  add_node(body, "Identity", {"cond_in"}, {"cond_out"});
  add_output(body, "cond_out", TP::BOOL, {});
  add_output(body, "acc3", TP::FLOAT, {2});

  onnx::GraphProto g;
  add_input(g, "n", TP::INT64, {});
  add_input(g, "x", TP::FLOAT, {2});
  add_float_init(g, "w", {2}, {2, 3});
  add_node(g, "Neg", {"x"}, {"outer"});
  if (!cond.empty()) add_input(g, cond, TP::BOOL, {});
  auto* loop = add_node(g, "Loop", {"n", cond, "x"}, {"y"}, "loop");
  attr_graph(loop, "body", body);
  add_output(g, "y", TP::FLOAT, {2});
  return g;
}

TEST(GraphImport, SubgraphOuterReadsBecomeCapturesOfTheImmediateParent) {
  auto m = load(make_model(loop_model()));
  ASSERT_TRUE(m.ok()) << m.status().message();
  const ir::Graph& main = *m->graph;
  const ir::Node* loop = find_node(main, ir::OpKind::Loop);
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->input(1), nullptr);
  const ir::Graph* body = loop->attr_graph("body");
  ASSERT_NE(body, nullptr);
  EXPECT_EQ(body->parent(), &main);
  // The body captures `outer` (read by Add) and `w` (read only by the nested If's then branch:
  // the body captures it first so the branch can capture it from the body).
  ASSERT_EQ(body->captures().size(), 2u);
  ASSERT_EQ(body->capture_sources().size(), 2u);
  std::map<std::string, const ir::Value*> src;
  for (size_t i = 0; i < body->captures().size(); ++i) {
    EXPECT_EQ(body->captures()[i]->owner(), body);
    EXPECT_EQ(body->capture_sources()[i]->owner(), &main);
    EXPECT_EQ(body->captures()[i]->name(), body->capture_sources()[i]->name());
    src[body->captures()[i]->name()] = body->capture_sources()[i];
  }
  EXPECT_EQ(src.at("outer"), find_node(main, ir::OpKind::Neg)->output(0));
  EXPECT_TRUE(src.at("w")->is_constant());

  const ir::Node* add = find_node(*body, ir::OpKind::Add);
  EXPECT_EQ(add->input(1)->owner(), body);  // reads the capture, not the outer value directly
  const ir::Node* iff = find_node(*body, ir::OpKind::If);
  const ir::Graph* then_g = iff->attr_graph("then_branch");
  const ir::Graph* else_g = iff->attr_graph("else_branch");
  ASSERT_EQ(then_g->captures().size(), 2u);  // acc2 (body value) and w (via the body)
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(then_g->capture_sources()[i]->owner(), body);
  ASSERT_EQ(else_g->captures().size(), 1u);
  EXPECT_EQ(else_g->capture_sources()[0], add->output(0));
  ASSERT_EQ(else_g->outputs().size(), 1u);
  EXPECT_EQ(else_g->outputs()[0], else_g->captures()[0]);
  EXPECT_TRUE(main.captures().empty());
}

TEST(GraphImport, CapturesRunAtTier0) {
  // x = [1, 2], w = [2, 3], outer = -x. Each iteration: acc = (acc - outer) * w (cond is true).
  // iter 1: ([1,2] + [1,2]) * [2,3] = [4, 12]; iter 2: ([4,12] + [1,2]) * [2,3] = [10, 42].
  auto m = load(make_model(loop_model("Sub", "c")));
  ASSERT_TRUE(m.ok()) << m.status().message();
  std::vector<Tensor> feeds = {Tensor::scalar<int64_t>(2), Tensor::from_vector<float>({2}, {1, 2}),
                               Tensor::scalar<bool>(true)};
  auto out = interp::run_graph(*m->graph, feeds, interp::ExecOptions{});
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0].data<float>()[0], 10.0f);
  EXPECT_EQ((*out)[0].data<float>()[1], 42.0f);
}

TEST(GraphImport, NodesAreSortedTopologically) {
  onnx::GraphProto g;
  add_input(g, "x", TP::FLOAT, {2});
  add_node(g, "Neg", {"b"}, {"c"}, "last");
  add_node(g, "Relu", {"a"}, {"b"}, "middle");
  add_node(g, "Abs", {"x"}, {"a"}, "first");
  add_output(g, "c", TP::FLOAT, {2});
  auto m = load(make_model(g));
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->graph->nodes().size(), 3u);
  EXPECT_EQ(m->graph->nodes()[0]->name(), "first");
  EXPECT_EQ(m->graph->nodes()[1]->name(), "middle");
  EXPECT_EQ(m->graph->nodes()[2]->name(), "last");

  onnx::GraphProto cyc;
  add_input(cyc, "x", TP::FLOAT, {2});
  add_node(cyc, "Add", {"x", "b"}, {"a"});
  add_node(cyc, "Neg", {"a"}, {"b"});
  add_output(cyc, "b", TP::FLOAT, {2});
  expect_error(load(make_model(cyc)), StatusCode::kInvalidModel, "cycle");
}

TEST(GraphImport, UnknownOperatorsAndDomains) {
  onnx::GraphProto g;
  add_input(g, "x", TP::FLOAT, {2});
  add_node(g, "Frobnicate", {"x"}, {"y"}, "x1");
  add_output(g, "y", TP::FLOAT, {2});
  expect_error(load(make_model(g)), StatusCode::kUnsupported,
               "node 'x1' (op Frobnicate): unknown operator");

  onnx::GraphProto g2;
  add_input(g2, "x", TP::FLOAT, {2});
  add_node(g2, "Relu", {"x"}, {"y"}, "", "com.example");
  add_output(g2, "y", TP::FLOAT, {2});
  onnx::ModelProto mp = make_model(g2);
  auto* op = mp.add_opset_import();
  op->set_domain("com.example");
  op->set_version(1);
  expect_error(load(mp), StatusCode::kUnsupported,
               "node with output 'y' (op Relu, domain 'com.example'): unknown operator");
}

// Input counts and required inputs follow the op's ONNX schema (as ONNX Runtime checks them):
// a MatMul or Gemm without B (absent or "") crashed adaptive mode's region analysis; a MatMul
// with 3 inputs or a Relu with 2 ran, ignoring the extra one. Optional inputs left out ("") and
// variadic inputs stay valid.
TEST(GraphImport, InputCountsAndRequiredInputsFollowTheSchema) {
  struct Case {
    const char* op;
    std::vector<std::string> inputs;
    const char* message;  // nullptr: valid
  };
  const std::vector<Case> cases = {
      {"MatMul", {"x"}, "input 1 ('B') is required (ONNX MatMul opset 13) but missing"},
      {"MatMul", {"x", ""}, "input 1 ('B') is required"},
      {"Gemm", {"x", "", "x"}, "input 1 ('B') is required"},
      {"Gemm", {"x"}, "input 1 ('B') is required"},
      {"MatMul", {"x", "x", "x"}, "takes at most 2 inputs (ONNX MatMul opset 13), got 3"},
      {"Relu", {"x", "x"}, "takes at most 1 inputs"},
      {"Concat", {}, "input 0 ('inputs') is required"},
      {"Clip", {"x", "", "x"}, nullptr},  // min left out: optional
      {"Sum", {"x", "x", "x"}, nullptr},  // variadic
      {"Gemm", {"x", "x"}, nullptr},      // C optional since opset 11
  };
  for (const Case& c : cases) {
    onnx::GraphProto g;
    add_input(g, "x", TP::FLOAT, {2, 2});
    auto* n = add_node(g, c.op, c.inputs, {"y"}, "n1");
    if (std::string(c.op) == "Concat") {
      auto* a = n->add_attribute();
      a->set_name("axis");
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(0);
    }
    add_output(g, "y", TP::FLOAT, {});
    SCOPED_TRACE(std::string(c.op) + " with " + std::to_string(c.inputs.size()) + " inputs");
    auto m = load(make_model(g));
    if (c.message) expect_error(m, StatusCode::kInvalidModel, c.message);
    else EXPECT_TRUE(m.ok()) << m.status().message();
  }
}

// Output counts follow the op's ONNX schema too: a Conv or Relu with a second output loaded and
// failed at its first run ("kernel produced no output 1"); a node without its required output is
// invalid; optional trailing outputs left out (Dropout's mask, MaxPool's Indices) stay valid.
TEST(GraphImport, OutputCountsFollowTheSchema) {
  struct Case {
    const char* op;
    std::vector<std::string> outputs;
    const char* message;  // nullptr: valid
  };
  const std::vector<Case> cases = {
      {"Relu", {"y", "junk"}, "has at most 1 outputs (ONNX Relu opset 14), got 2"},
      {"Relu", {}, "has at least 1 outputs (ONNX Relu opset 14), got 0"},
      {"Dropout", {"y", "mask", "more"}, "has at most 2 outputs"},
      {"Dropout", {"y"}, nullptr},
      {"Dropout", {"y", "mask"}, nullptr},
  };
  for (const Case& c : cases) {
    onnx::GraphProto g;
    add_input(g, "x", TP::FLOAT, {2, 2});
    add_node(g, c.op, {"x"}, c.outputs, "n1");
    add_output(g, c.outputs.empty() ? "x" : "y", TP::FLOAT, {2, 2});
    SCOPED_TRACE(std::string(c.op) + " with " + std::to_string(c.outputs.size()) + " outputs");
    auto m = load(make_model(g));
    if (c.message) expect_error(m, StatusCode::kInvalidModel, c.message);
    else EXPECT_TRUE(m.ok()) << m.status().message();
  }
}

// Attributes the op's schema does not declare and deprecated ops make an invalid model (as for
// ONNX Runtime): Clip's min/max are inputs from opset 11 on (the attributes were ignored: no
// clamping), Split's `split` an input from 13 (split into equal parts instead), Upsample is
// deprecated from 10. An op used below its first opset is checked against its first version
// (ONNX Runtime loads LayerNormalization at 16, rejects Celu at 11; both run here, checked).
TEST(GraphImport, UndeclaredAttributesAndOpsOutsideTheirOpsetsAreInvalid) {
  struct Case {
    const char* op;
    int64_t opset;
    const char* attr;  // a FLOAT attribute given, or nullptr
    const char* message;  // nullptr: valid
  };
  const Case cases[] = {
      {"Clip", 11, "min", "'min' is not an attribute of Clip (ONNX Clip opset 11)"},
      {"Clip", 6, "min", nullptr},  // an attribute until opset 11
      {"Relu", 14, "alpha", "'alpha' is not an attribute of Relu (ONNX Relu opset 14)"},
      {"Celu", 11, nullptr, nullptr},  // checked as Celu-12
      {"Celu", 11, "alpha", nullptr},
      {"Celu", 11, "beta", "'beta' is not an attribute of Celu (ONNX Celu opset 12)"},
      {"LayerNormalization", 16, nullptr, nullptr},
      {"LayerNormalization", 16, "axis", "attribute 'axis' must be INT (ONNX LayerNormalization opset 17)"},
      {"Upsample", 10, nullptr, "Upsample is deprecated from ONNX opset 10 on; the model imports opset 10"},
  };
  for (const Case& c : cases) {
    onnx::GraphProto g;
    add_input(g, "x", TP::FLOAT, {1, 1, 2, 2});
    std::vector<std::string> inputs{"x"};
    if (std::string(c.op) == "Upsample" || std::string(c.op) == "LayerNormalization") inputs.push_back("x");
    auto* n = add_node(g, c.op, inputs, {"y"}, "n1");
    if (c.attr) attr_float(n, c.attr, 0.5f);
    add_output(g, "y", TP::FLOAT, {});
    SCOPED_TRACE(std::string(c.op) + " opset " + std::to_string(c.opset));
    auto m = load(make_model(g, c.opset));
    if (c.message) expect_error(m, StatusCode::kInvalidModel, c.message);
    else EXPECT_TRUE(m.ok()) << m.status().message();
  }
  {  // Split at opset 13 with the `split` attribute of opset 11 (an input from 13 on)
    onnx::GraphProto g;
    add_input(g, "x", TP::FLOAT, {4});
    auto* n = add_node(g, "Split", {"x"}, {"a", "b"}, "n1");
    attr_ints(n, "split", {1, 3});
    add_output(g, "a", TP::FLOAT, {});
    add_output(g, "b", TP::FLOAT, {});
    expect_error(load(make_model(g, 13)), StatusCode::kInvalidModel,
                 "'split' is not an attribute of Split (ONNX Split opset 13)");
  }
}

// An attribute whose type is not the one the op's ONNX schema declares is an invalid model (as
// for ONNX Runtime): a kernel would otherwise read its default (LeakyRelu alpha = "abc" ran with
// 0.01) or fail with a misleading message. Untyped IR v1 attributes count by the field set.
TEST(GraphImport, AttributesOfTheWrongTypeAreInvalid) {
  struct Case {
    const char* op;
    const char* attr;
    onnx::AttributeProto::AttributeType type;
    const char* message;
  };
  const Case cases[] = {
      {"LeakyRelu", "alpha", onnx::AttributeProto::STRING, "attribute 'alpha' must be FLOAT"},
      {"LeakyRelu", "alpha", onnx::AttributeProto::INT, "attribute 'alpha' must be FLOAT"},
      {"Softmax", "axis", onnx::AttributeProto::FLOAT, "attribute 'axis' must be INT"},
      {"Softmax", "axis", onnx::AttributeProto::INTS, "attribute 'axis' must be INT"},
      {"Gemm", "transB", onnx::AttributeProto::FLOAT, "attribute 'transB' must be INT"},
      {"Conv", "group", onnx::AttributeProto::FLOAT, "attribute 'group' must be INT"},
      {"Conv", "kernel_shape", onnx::AttributeProto::INT, "attribute 'kernel_shape' must be INTS"},
  };
  for (const Case& c : cases) {
    onnx::GraphProto g;
    add_input(g, "x", TP::FLOAT, {1, 1, 3, 3});
    add_input(g, "w", TP::FLOAT, {1, 1, 1, 1});
    const bool two = std::string(c.op) == "Gemm" || std::string(c.op) == "Conv";
    auto* n = add_node(g, c.op, two ? std::vector<std::string>{"x", "w"} : std::vector<std::string>{"x"},
                       {"y"}, "n1");
    auto* a = n->add_attribute();
    a->set_name(c.attr);
    a->set_type(c.type);
    if (c.type == onnx::AttributeProto::STRING) a->set_s("abc");
    if (c.type == onnx::AttributeProto::INT) a->set_i(1);
    if (c.type == onnx::AttributeProto::FLOAT) a->set_f(1.5f);
    if (c.type == onnx::AttributeProto::INTS) a->add_ints(1);
    add_output(g, "y", TP::FLOAT, {});
    SCOPED_TRACE(std::string(c.op) + " " + c.attr);
    expect_error(load(make_model(g)), StatusCode::kInvalidModel, c.message);
  }
  {  // IR v1 style: no `type`, the float field set: a FLOAT, accepted
    onnx::GraphProto g;
    add_input(g, "x", TP::FLOAT, {2});
    auto* n = add_node(g, "LeakyRelu", {"x"}, {"y"});
    auto* a = n->add_attribute();
    a->set_name("alpha");
    a->set_f(0.5f);
    add_output(g, "y", TP::FLOAT, {2});
    auto m = load(make_model(g));
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_EQ(find_node(*m->graph, ir::OpKind::LeakyRelu)->attr_float("alpha", 0.f), 0.5f);
  }
}

TEST(GraphImport, InconsistentModelsAreInvalid) {
  {  // a value declared with two element types
    onnx::GraphProto g;
    add_input(g, "x", TP::FLOAT, {2});
    add_node(g, "Relu", {"x"}, {"y"});
    add_output(g, "y", TP::FLOAT, {2});
    add_value_info(g.mutable_value_info(), "y", TP::INT64, {2});
    expect_error(load(make_model(g)), StatusCode::kInvalidModel,
                 "value 'y': declared with two element types, float32 and int64");
  }
  {  // an initializer listed as an input with another dtype
    onnx::GraphProto g;
    add_input(g, "w", TP::INT32, {2});
    add_float_init(g, "w", {2}, {1, 2});
    add_node(g, "Relu", {"w"}, {"y"});
    add_output(g, "y", TP::FLOAT, {2});
    expect_error(load(make_model(g)), StatusCode::kInvalidModel, "input 'w': declared with two");
  }
  {  // a graph output never produced
    onnx::GraphProto g;
    add_input(g, "x", TP::FLOAT, {2});
    add_node(g, "Relu", {"x"}, {"y"});
    add_output(g, "z", TP::FLOAT, {2});
    expect_error(load(make_model(g)), StatusCode::kInvalidModel,
                 "output 'z' is not produced by any node");
  }
  {  // a node input defined nowhere
    onnx::GraphProto g;
    add_input(g, "x", TP::FLOAT, {2});
    add_node(g, "Add", {"x", "ghost"}, {"y"}, "add1");
    add_output(g, "y", TP::FLOAT, {2});
    expect_error(load(make_model(g)), StatusCode::kInvalidModel,
                 "node 'add1' (op Add): input 'ghost' is not defined");
  }
  {  // two nodes writing the same output
    onnx::GraphProto g;
    add_input(g, "x", TP::FLOAT, {2});
    add_node(g, "Relu", {"x"}, {"y"}, "r1");
    add_node(g, "Neg", {"x"}, {"y"}, "r2");
    add_output(g, "y", TP::FLOAT, {2});
    expect_error(load(make_model(g)), StatusCode::kInvalidModel,
                 "node 'r2' (op Neg): output 'y' is already defined");
  }
  {  // a node overwriting a graph input
    onnx::GraphProto g;
    add_input(g, "x", TP::FLOAT, {2});
    add_node(g, "Relu", {"x"}, {"x"}, "r1");
    add_output(g, "x", TP::FLOAT, {2});
    expect_error(load(make_model(g)), StatusCode::kInvalidModel, "output 'x' is already defined");
  }
  {  // an input inside a subgraph that nothing defines: the error names the outer node too
    onnx::ModelProto mp = make_model(loop_model());
    auto* body = mp.mutable_graph()->mutable_node(1)->mutable_attribute(0)->mutable_g();
    body->mutable_node(0)->set_input(1, "nowhere");
    expect_error(load(mp), StatusCode::kInvalidModel,
                 "node 'loop' (op Loop): attribute 'body': node with output 'acc2' (op Add): "
                 "input 'nowhere' is not defined");
  }
}

TEST(GraphImport, NonTensorTypesAreUnsupported) {
  onnx::GraphProto g;
  auto* vi = g.add_input();
  vi->set_name("seq");
  vi->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(TP::FLOAT);
  add_node(g, "SequenceLength", {"seq"}, {"n"});
  add_output(g, "n", TP::INT64, {});
  expect_error(load(make_model(g)), StatusCode::kUnsupported,
               "input 'seq': sequence types are not supported yet");

  onnx::GraphProto g2;
  add_input(g2, "x", TP::FLOAT, {2});
  add_node(g2, "Optional", {"x"}, {"o"});
  auto* o = g2.add_output();
  o->set_name("o");
  o->mutable_type()->mutable_optional_type();
  expect_error(load(make_model(g2)), StatusCode::kUnsupported,
               "output 'o': optional types are not supported yet");
}

TEST(GraphImport, DeclaredTensorOverTheMemoryLimit) {
  onnx::GraphProto g;
  add_input(g, "x", TP::FLOAT, {1000, 1000});
  add_node(g, "Relu", {"x"}, {"y"});
  add_output(g, "y", TP::FLOAT, {1000, "N"});  // symbolic: not checked
  onnx_import::LoadOptions opts;
  opts.memory_limit_bytes = 1 << 20;
  expect_error(load(make_model(g), ".", opts), StatusCode::kResourceExhausted,
               "input 'x': shape [1000, 1000] (float32)");
  opts.memory_limit_bytes = 4000000;
  EXPECT_TRUE(load(make_model(g), ".", opts).ok());
}

TEST(GraphImport, NotAModel) {
  expect_error(onnx_import::load_model_from_bytes("", "mem.onnx", "."), StatusCode::kInvalidModel,
               "not an ONNX model");
  onnx::ModelProto no_graph;
  no_graph.set_ir_version(8);
  expect_error(onnx_import::load_model_from_bytes(serialize(no_graph), "mem.onnx", "."),
               StatusCode::kInvalidModel, "not an ONNX model");
  std::string bytes = serialize(make_model(loop_model()));
  expect_error(onnx_import::load_model_from_bytes(bytes.substr(0, bytes.size() / 2), "mem.onnx", "."),
               StatusCode::kInvalidModel, "truncated");
}

}  // namespace
}  // namespace tierjit::onnx_test
