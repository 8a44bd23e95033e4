// Tests of the control-flow kernels (If, Loop, Scan): subgraphs built by hand, reading outer
// values through captures, run by the tier-0 executor. Expected values computed by hand.
#include <gtest/gtest.h>

#include <memory>

#include "interp/executor.h"
#include "ir/graph.h"
#include "node_runner.h"

namespace tierjit {
namespace {

using testing::expect_tensor_near;

ir::ValueType f32(std::vector<int64_t> dims) {
  ir::SymShape s;
  for (int64_t d : dims) s.push_back(ir::Dim::constant(d));
  return {DType::kFloat32, s};
}

ir::Attribute graph_attr(std::shared_ptr<ir::Graph> g) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kGraph;
  a.g = std::move(g);
  return a;
}

// Adds to `sub` a capture of the outer value `src`.
ir::Value* capture(ir::Graph& sub, ir::Value* src) {
  ir::Value* v = sub.add_value(src->name() + "_cap", src->type());
  sub.captures().push_back(v);
  sub.capture_sources().push_back(src);
  return v;
}

Tensor f(std::vector<int64_t> shape, std::vector<float> v) {
  return Tensor::from_vector<float>(shape, v);
}

// ---- If ----

// main(cond, x, y): If(cond) then -> x + y, else -> y (straight from the outer value).
// x is also used by a node before the If, so the capture must survive that use.
Expected<std::vector<Tensor>> run_if(bool c, int opset = 16) {
  ir::Graph main("main");
  ir::Value* cond = main.add_value("cond", {DType::kBool, std::nullopt});
  ir::Value* x = main.add_value("x", f32({2}));
  ir::Value* y = main.add_value("y", f32({2}));
  main.inputs() = {cond, x, y};
  ir::Value* xn = main.add_value("xn", f32({2}));
  main.add_node(ir::OpKind::Neg, {x}, {xn}, "neg")->set_opset(opset);
  auto then_g = std::make_shared<ir::Graph>("then", &main);
  ir::Value* tx = capture(*then_g, x);
  ir::Value* ty = capture(*then_g, y);
  ir::Value* sum = then_g->add_value("sum", f32({2}));
  then_g->add_node(ir::OpKind::Add, {tx, ty}, {sum}, "add")->set_opset(opset);
  then_g->outputs() = {sum};
  auto else_g = std::make_shared<ir::Graph>("else", &main);
  else_g->outputs() = {capture(*else_g, y)};
  ir::Value* out = main.add_value("out");
  ir::Node* n = main.add_node(ir::OpKind::If, {cond}, {out}, "if");
  n->set_opset(opset);
  n->set_attr("then_branch", graph_attr(then_g));
  n->set_attr("else_branch", graph_attr(else_g));
  main.outputs() = {out, xn};
  return interp::run_graph(main, {Tensor::scalar<bool>(c), f({2}, {1, 2}), f({2}, {10, 20})}, {});
}

TEST(IfTest, ThenBranchAddsOuterValues) {
  auto r = run_if(true);
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_tensor_near((*r)[0], f({2}, {11, 22}));  // 1+10, 2+20
  expect_tensor_near((*r)[1], f({2}, {-1, -2}));
}

TEST(IfTest, ElseBranchReturnsOuterValueDirectly) {
  auto r = run_if(false);
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_tensor_near((*r)[0], f({2}, {10, 20}));
}

TEST(IfTest, CondMustBeOneElement) {
  ir::Graph main("main");
  ir::Value* cond = main.add_value("cond", {DType::kBool, std::nullopt});
  main.inputs() = {cond};
  auto g = std::make_shared<ir::Graph>("b", &main);
  g->outputs() = {capture(*g, cond)};
  ir::Value* out = main.add_value("out");
  ir::Node* n = main.add_node(ir::OpKind::If, {cond}, {out}, "if");
  n->set_opset(16);
  n->set_attr("then_branch", graph_attr(g));
  n->set_attr("else_branch", graph_attr(g));
  main.outputs() = {out};
  auto r = interp::run_graph(main, {Tensor::from_vector<bool>({2}, {true, false})}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("one element"), std::string::npos) << r.status().message();
}

// ---- Loop ----

// main(M?, cond?, v0): Loop body: v = v_in + step (step captured, 2.0); cond_out = v < 10;
// scan output = v. `with_m`/`with_cond` choose which optional inputs the node gets.
struct LoopSetup {
  bool with_m = true, with_cond = true;
  int64_t m = 3;
  bool cond = true;
  int extra_body_outputs = 0;  // to provoke the output-count error
  float limit = 10;
  bool untyped_scan_of_input = false;  // scan output = Identity(v_in) with no declared type
};

Expected<std::vector<Tensor>> run_loop(const LoopSetup& s, interp::ExecOptions opt = {}) {
  ir::Graph main("main");
  ir::Value* mv = main.add_value("M", {DType::kInt64, std::nullopt});
  ir::Value* cv = main.add_value("cond", {DType::kBool, std::nullopt});
  ir::Value* v0 = main.add_value("v0", f32({1}));
  ir::Value* step = main.add_value("step", f32({1}));
  ir::Value* limit = main.add_value("limit", f32({1}));
  std::vector<Tensor> feeds;
  if (s.with_m) {
    main.inputs().push_back(mv);
    feeds.push_back(Tensor::scalar<int64_t>(s.m));
  }
  if (s.with_cond) {
    main.inputs().push_back(cv);
    feeds.push_back(Tensor::scalar<bool>(s.cond));
  }
  main.inputs().push_back(v0);
  main.inputs().push_back(step);
  main.inputs().push_back(limit);
  feeds.push_back(f({1}, {1}));
  feeds.push_back(f({1}, {2}));
  feeds.push_back(f({1}, {s.limit}));

  auto body = std::make_shared<ir::Graph>("body", &main);
  ir::Value* it = body->add_value("iter", {DType::kInt64, ir::SymShape{}});
  ir::Value* cin = body->add_value("cond_in", {DType::kBool, ir::SymShape{}});
  ir::Value* vin = body->add_value("v_in", f32({1}));
  body->inputs() = {it, cin, vin};
  ir::Value* vout = body->add_value("v_out", f32({1}));
  body->add_node(ir::OpKind::Add, {vin, capture(*body, step)}, {vout}, "add")->set_opset(13);
  ir::Value* cout = body->add_value("cond_out", {DType::kBool, std::nullopt});
  body->add_node(ir::OpKind::Less, {vout, capture(*body, limit)}, {cout}, "less")->set_opset(13);
  ir::Value* scan =
      s.untyped_scan_of_input ? body->add_value("scan") : body->add_value("scan", f32({1}));
  body->add_node(ir::OpKind::Identity, {s.untyped_scan_of_input ? vin : vout}, {scan}, "id")
      ->set_opset(13);
  body->outputs() = {cout, vout, scan};
  for (int i = 0; i < s.extra_body_outputs; ++i) body->outputs().push_back(vout);

  ir::Value* vf = main.add_value("v_final");
  ir::Value* sc = main.add_value("scan_out");
  ir::Node* n =
      main.add_node(ir::OpKind::Loop, {s.with_m ? mv : nullptr, s.with_cond ? cv : nullptr, v0},
                    {vf, sc}, "loop");
  n->set_opset(16);
  n->set_attr("body", graph_attr(body));
  main.outputs() = {vf, sc};
  return interp::run_graph(main, feeds, opt);
}

TEST(LoopTest, TripCountOnlyStopsAtTripCount) {
  LoopSetup s;
  s.with_cond = false;
  s.m = 3;  // v: 3 5 7 (cond_out stays true)
  auto r = run_loop(s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_tensor_near((*r)[0], f({1}, {7}));
  expect_tensor_near((*r)[1], f({3, 1}, {3, 5, 7}));
}

TEST(LoopTest, TripCountOnlyStillHonoursBodyCond) {
  // As ONNX Runtime and onnx.reference do: without a cond input the body's cond still stops the
  // loop. v: 3 5 7 9 11 -> 11 < 10 is false after the 5th of at most 6 iterations.
  LoopSetup s;
  s.with_cond = false;
  s.m = 6;
  auto r = run_loop(s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_tensor_near((*r)[0], f({1}, {11}));
  expect_tensor_near((*r)[1], f({5, 1}, {3, 5, 7, 9, 11}));
}

TEST(LoopTest, CondOnlyRunsUntilBodyMakesItFalse) {
  LoopSetup s;
  s.with_m = false;  // v: 3 5 7 9 11 -> 11 < 10 is false after the 5th iteration
  auto r = run_loop(s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_tensor_near((*r)[0], f({1}, {11}));
  expect_tensor_near((*r)[1], f({5, 1}, {3, 5, 7, 9, 11}));
}

TEST(LoopTest, BothStopAtTripCount) {
  LoopSetup s;
  s.m = 2;  // v: 3 5
  auto r = run_loop(s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_tensor_near((*r)[0], f({1}, {5}));
  expect_tensor_near((*r)[1], f({2, 1}, {3, 5}));
}

TEST(LoopTest, ZeroIterationsGiveEmptyScanOutput) {
  LoopSetup s;
  s.m = 0;
  auto r = run_loop(s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_tensor_near((*r)[0], f({1}, {1}));
  EXPECT_EQ((*r)[1].shape(), (Shape{0, 1}));
  EXPECT_EQ((*r)[1].dtype(), DType::kFloat32);
}

TEST(LoopTest, ZeroIterationsUntypedScanOutputTakesCarriedType) {
  // As in Range's function body: the scan output is Identity(carried input) with no declared
  // type; zero iterations give [0] + the carried value's shape [1].
  LoopSetup s;
  s.m = 0;
  s.untyped_scan_of_input = true;
  auto r = run_loop(s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[1].shape(), (Shape{0, 1}));
  EXPECT_EQ((*r)[1].dtype(), DType::kFloat32);
  s.m = 2;  // and with iterations it stacks the values before each step: 1, 3
  auto r2 = run_loop(s);
  ASSERT_TRUE(r2.ok()) << r2.status().message();
  expect_tensor_near((*r2)[1], f({2, 1}, {1, 3}));
}

TEST(LoopTest, FalseCondInputRunsZeroTimes) {
  LoopSetup s;
  s.cond = false;
  auto r = run_loop(s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_tensor_near((*r)[0], f({1}, {1}));
  EXPECT_EQ((*r)[1].shape(), (Shape{0, 1}));
}

TEST(LoopTest, WrongBodyOutputCountIsAnError) {
  LoopSetup s;
  s.extra_body_outputs = 1;
  auto r = run_loop(s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("body returns 4 outputs, expected 3"), std::string::npos)
      << r.status().message();
}

TEST(LoopTest, ScanOutputsRespectTheMemoryLimit) {
  LoopSetup s;
  s.m = 1000;
  s.with_cond = false;
  s.limit = 1e9f;
  auto ok = run_loop(s);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ((*ok)[1].shape(), (Shape{1000, 1}));
  interp::ExecOptions opt;
  opt.memory_limit_bytes = 64;  // 16 floats: the 17th iteration's stacked scan output exceeds it
  auto r = run_loop(s, opt);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status().message();
}

// ---- Scan ----

// Scan (opset 9+): state s [2], scan input x [3, 2] (or [2, 3] with axis 1):
// body: s_out = s + x_t; scan_out = s_out.
Expected<std::vector<Tensor>> run_scan9(const Tensor& x, int64_t in_axis, int64_t in_dir,
                                        int64_t out_axis, int64_t out_dir) {
  ir::Graph main("main");
  ir::Value* s0 = main.add_value("s0", f32({2}));
  ir::Value* xv = main.add_value("x", {DType::kFloat32, std::nullopt});
  main.inputs() = {s0, xv};
  auto body = std::make_shared<ir::Graph>("body", &main);
  ir::Value* s = body->add_value("s", f32({2}));
  ir::Value* xt = body->add_value("xt", f32({2}));
  body->inputs() = {s, xt};
  ir::Value* so = body->add_value("so", f32({2}));
  body->add_node(ir::OpKind::Add, {s, xt}, {so}, "add")->set_opset(13);
  ir::Value* sc = body->add_value("sc", f32({2}));
  body->add_node(ir::OpKind::Identity, {so}, {sc}, "id")->set_opset(13);
  body->outputs() = {so, sc};
  ir::Value* sf = main.add_value("sf");
  ir::Value* ys = main.add_value("ys");
  ir::Node* n = main.add_node(ir::OpKind::Scan, {s0, xv}, {sf, ys}, "scan");
  n->set_opset(16);
  n->set_attr("body", graph_attr(body));
  n->set_attr("num_scan_inputs", testing::attr_int(1));
  n->set_attr("scan_input_axes", testing::attr_ints({in_axis}));
  n->set_attr("scan_input_directions", testing::attr_ints({in_dir}));
  n->set_attr("scan_output_axes", testing::attr_ints({out_axis}));
  n->set_attr("scan_output_directions", testing::attr_ints({out_dir}));
  main.outputs() = {sf, ys};
  return interp::run_graph(main, {f({2}, {0, 0}), x}, {});
}

TEST(ScanTest, SumsRowsForward) {
  auto r = run_scan9(f({3, 2}, {1, 2, 3, 4, 5, 6}), 0, 0, 0, 0);
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_tensor_near((*r)[0], f({2}, {9, 12}));                 // 1+3+5, 2+4+6
  expect_tensor_near((*r)[1], f({3, 2}, {1, 2, 4, 6, 9, 12}));  // running sums
}

TEST(ScanTest, ReverseInputAxisOneAndOutputAxisOne) {
  // x [2, 3] scanned along axis 1 in reverse: columns (3,6), (2,5), (1,4).
  auto r = run_scan9(f({2, 3}, {1, 2, 3, 4, 5, 6}), 1, 1, -1, 0);
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_tensor_near((*r)[0], f({2}, {6, 15}));
  // running sums (3,6), (5,11), (6,15) stacked along axis 1 -> [2, 3]
  expect_tensor_near((*r)[1], f({2, 3}, {3, 5, 6, 6, 11, 15}));
}

TEST(ScanTest, ReversedOutputDirection) {
  auto r = run_scan9(f({3, 2}, {1, 2, 3, 4, 5, 6}), 0, 0, 0, 1);
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_tensor_near((*r)[1], f({3, 2}, {9, 12, 4, 6, 1, 2}));
}

TEST(ScanTest, ZeroLengthSequence) {
  auto r = run_scan9(Tensor::empty(DType::kFloat32, {0, 2}), 0, 0, 0, 0);
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_tensor_near((*r)[0], f({2}, {0, 0}));
  EXPECT_EQ((*r)[1].shape(), (Shape{0, 2}));
}

TEST(ScanTest, Opset8BatchedWithSequenceLens) {
  // Batch 2: state [2, 1], scan input [2, 3, 1]; row 1 has sequence length 2 (third step is
  // padding: its scan output is zero and it does not enter the state).
  ir::Graph main("main");
  ir::Value* lens = main.add_value("lens", {DType::kInt64, std::nullopt});
  ir::Value* s0 = main.add_value("s0", f32({2, 1}));
  ir::Value* xv = main.add_value("x", f32({2, 3, 1}));
  main.inputs() = {lens, s0, xv};
  auto body = std::make_shared<ir::Graph>("body", &main);
  ir::Value* s = body->add_value("s", f32({1}));
  ir::Value* xt = body->add_value("xt", f32({1}));
  body->inputs() = {s, xt};
  ir::Value* so = body->add_value("so", f32({1}));
  body->add_node(ir::OpKind::Add, {s, xt}, {so}, "add")->set_opset(8);
  ir::Value* sc = body->add_value("sc", f32({1}));
  body->add_node(ir::OpKind::Identity, {so}, {sc}, "id")->set_opset(8);
  body->outputs() = {so, sc};
  ir::Value* sf = main.add_value("sf");
  ir::Value* ys = main.add_value("ys");
  ir::Node* n = main.add_node(ir::OpKind::Scan, {lens, s0, xv}, {sf, ys}, "scan");
  n->set_opset(8);
  n->set_attr("body", graph_attr(body));
  n->set_attr("num_scan_inputs", testing::attr_int(1));
  main.outputs() = {sf, ys};
  auto r = interp::run_graph(main,
                             {Tensor::from_vector<int64_t>({2}, {3, 2}), f({2, 1}, {0, 100}),
                              f({2, 3, 1}, {1, 2, 3, 4, 5, 6})},
                             {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_tensor_near((*r)[0], f({2, 1}, {6, 109}));  // 1+2+3; 100+4+5
  expect_tensor_near((*r)[1], f({2, 3, 1}, {1, 3, 6, 104, 109, 0}));
}

}  // namespace
}  // namespace tierjit

namespace tierjit {
namespace {

TEST(ScanTest, BadInputsAreErrors) {
  // Scan input lengths 3 and 2 along axis 0 disagree.
  ir::Graph main("main");
  ir::Value* s0 = main.add_value("s0", f32({2}));
  ir::Value* x1 = main.add_value("x1", {DType::kFloat32, std::nullopt});
  ir::Value* x2 = main.add_value("x2", {DType::kFloat32, std::nullopt});
  main.inputs() = {s0, x1, x2};
  auto body = std::make_shared<ir::Graph>("body", &main);
  ir::Value* s = body->add_value("s", f32({2}));
  ir::Value* a = body->add_value("a", f32({2}));
  ir::Value* b = body->add_value("b", f32({2}));
  body->inputs() = {s, a, b};
  body->outputs() = {s};
  ir::Value* sf = main.add_value("sf");
  ir::Node* n = main.add_node(ir::OpKind::Scan, {s0, x1, x2}, {sf}, "scan");
  n->set_opset(16);
  n->set_attr("body", graph_attr(body));
  n->set_attr("num_scan_inputs", testing::attr_int(2));
  main.outputs() = {sf};
  auto r = interp::run_graph(main,
                             {f({2}, {0, 0}), Tensor::zeros(DType::kFloat32, {3, 2}),
                              Tensor::zeros(DType::kFloat32, {2, 2})},
                             {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("has length 2 along axis 0, expected 3"), std::string::npos)
      << r.status().message();
  // num_scan_inputs larger than the inputs; missing attribute.
  n->set_attr("num_scan_inputs", testing::attr_int(4));
  auto r2 = interp::run_graph(main,
                              {f({2}, {0, 0}), Tensor::zeros(DType::kFloat32, {3, 2}),
                               Tensor::zeros(DType::kFloat32, {3, 2})},
                              {});
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(r2.status().message().find("num_scan_inputs 4"), std::string::npos)
      << r2.status().message();
}

TEST(LoopTest, TripCountMustBeOneElement) {
  ir::Graph main("main");
  ir::Value* m = main.add_value("M", {DType::kInt64, std::nullopt});
  ir::Value* v0 = main.add_value("v0", f32({1}));
  main.inputs() = {m, v0};
  auto body = std::make_shared<ir::Graph>("body", &main);
  ir::Value* it = body->add_value("i", {DType::kInt64, ir::SymShape{}});
  ir::Value* c = body->add_value("c", {DType::kBool, ir::SymShape{}});
  ir::Value* v = body->add_value("v", f32({1}));
  body->inputs() = {it, c, v};
  body->outputs() = {c, v};
  ir::Value* vf = main.add_value("vf");
  ir::Node* n = main.add_node(ir::OpKind::Loop, {m, nullptr, v0}, {vf}, "loop");
  n->set_opset(16);
  n->set_attr("body", graph_attr(body));
  main.outputs() = {vf};
  auto r = interp::run_graph(main, {Tensor::from_vector<int64_t>({2}, {1, 2}), f({1}, {0})}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("input 0 'M' must hold one element"), std::string::npos)
      << r.status().message();
  // Body passing values straight through: M = 3 leaves v unchanged.
  auto ok = interp::run_graph(main, {Tensor::scalar<int64_t>(3), f({1}, {4})}, {});
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  expect_tensor_near((*ok)[0], f({1}, {4}));
}

TEST(IfTest, MissingBranchIsAnError) {
  ir::Graph main("main");
  ir::Value* cond = main.add_value("cond", {DType::kBool, std::nullopt});
  main.inputs() = {cond};
  ir::Value* out = main.add_value("out");
  main.add_node(ir::OpKind::If, {cond}, {out}, "if")->set_opset(16);
  main.outputs() = {out};
  auto r = interp::run_graph(main, {Tensor::scalar<bool>(true)}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'then_branch'"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace tierjit
