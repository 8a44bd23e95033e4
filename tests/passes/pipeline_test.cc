// The pass pipeline with the IR verifier between passes: the verifier catches a use before its
// definition, and the whole tier-0 pipeline keeps the IR valid on the demo model and on every
// loadable ONNX backend-suite model (../shared; skipped where absent, failed under CI=true).
#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "interp/evaluate_node.h"
#include "onnx/loader.h"
#include "passes/pipeline.h"

namespace tierjit::passes {
namespace {

namespace fs = std::filesystem;

TEST(Verifier, RejectsUseBeforeDefinition) {
  ir::Graph g("g");
  ir::Value* a = g.add_value("a", {DType::kFloat32, ir::SymShape{ir::Dim::constant(2)}});
  g.inputs().push_back(a);
  ir::Value* b = g.add_value("b");
  ir::Value* c = g.add_value("c");
  g.add_node(ir::OpKind::Relu, {c}, {b}, "first");   // reads c, defined by the next node
  g.add_node(ir::OpKind::Relu, {a}, {c}, "second");
  g.outputs().push_back(b);
  Status s = ir::verify(g);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("node 'first' (Relu) reads input 0 'c' before it is defined"),
            std::string::npos) << s.message();
  ASSERT_TRUE(g.topological_sort());
  EXPECT_TRUE(ir::verify(g).ok());
}

TEST(Verifier, RejectsUndefinedGraphOutput) {
  ir::Graph g("g");
  ir::Value* a = g.add_value("a", {DType::kFloat32, std::nullopt});
  g.inputs().push_back(a);
  g.outputs().push_back(g.add_value("dangling"));
  Status s = ir::verify(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("output 'dangling' is never defined"), std::string::npos);
}

PassContext verifying_context() {
  PassContext ctx;
  ctx.verify_between_passes = true;
  ctx.evaluate_node = [](const ir::Node& n, const std::vector<Tensor>& in) {
    return interp::evaluate_node(n, in, interp::ExecOptions{});
  };
  return ctx;
}

Status run_pipeline_on(const fs::path& model) {
  auto m = onnx_import::load_model(model.string());
  if (!m.ok()) return Status();  // loader rejections are the loader tests' business
  return run_tier0_pipeline(*m->graph, verifying_context()).with_prefix(model.string());
}

TEST(Pipeline, KeepsIrValidOnDemoModel) {
  fs::path demo = fs::path(TIERJIT_SOURCE_DIR) / "models" / "demo_mlp.onnx";
  Status s = run_pipeline_on(demo);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(Pipeline, KeepsIrValidOnBackendSuites) {
  fs::path root = fs::path(TIERJIT_SHARED_DIR) / "onnx-tests";
  if (!fs::exists(root)) {
    if (std::getenv("CI")) FAIL() << root << " is missing";
    GTEST_SKIP() << root << " not found: the ONNX backend suites live in the shared folder";
  }
  int checked = 0;
  for (const auto& suite : fs::directory_iterator(root)) {
    if (!suite.is_directory()) continue;
    for (const auto& test : fs::directory_iterator(suite.path())) {
      fs::path model = test.path() / "model.onnx";
      if (!fs::exists(model)) continue;
      Status s = run_pipeline_on(model);
      EXPECT_TRUE(s.ok()) << s.message();
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000);
}

}  // namespace
}  // namespace tierjit::passes
