// Tests of `tierjit explain`: the region blocks and summary for the committed demo model, the
// expected fusions on the shared models (MLP Gemm+GELU, BERT Softmax/LayerNorm prologues and
// shape-only chains, ResNet Conv+Add+Relu; skipped where ../shared is absent), and the one-line
// error of a missing model.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <filesystem>
#include <regex>

#include "cmd_explain.h"

namespace tierjit::cli {
namespace {

std::string explain(const std::string& path, bool no_fuse = false) {
  ExplainOptions o;
  o.model = path;
  o.no_fuse = no_fuse;
  ::testing::internal::CaptureStdout();
  int rc = cmd_explain(o);
  std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(rc, 0);
  return out;
}

size_t count(const std::string& text, const std::string& pattern) {
  std::regex re(pattern);
  return static_cast<size_t>(std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

std::string shared_model(const std::string& name) {
  std::string p = std::string(TIERJIT_SHARED_DIR) + "/models/" + name;
  return std::filesystem::exists(p) ? p : "";
}

TEST(Explain, DemoMlpRegionsAndSummary) {
  std::string out = explain(std::string(TIERJIT_SOURCE_DIR) + "/models/demo_mlp.onnx");
  EXPECT_NE(out.find("region 0 'gemm_0': matmul_epilogue, 2 nodes\n  ops:     /fc1/Gemm (Gemm), /Relu (Relu)\n"),
            std::string::npos) << out;
  EXPECT_NE(out.find("  inputs:  %x: float32[N, 64]; %fc1.weight: const float32[128, 64]"), std::string::npos) << out;
  EXPECT_NE(out.find("summary: 3 nodes in 2 regions: 2 matmul_epilogue, 0 reduction, 0 elementwise, "
                     "0 shape_only, 0 opaque\n"),
            std::string::npos) << out;
  EXPECT_NE(explain(std::string(TIERJIT_SOURCE_DIR) + "/models/demo_mlp.onnx", true).find("in 3 regions"),
            std::string::npos);
}

TEST(Explain, SharedMlpOneRegionPerLayer) {
  std::string path = shared_model("mlp.onnx");
  if (path.empty()) GTEST_SKIP() << "shared models absent";
  std::string out = explain(path);
  EXPECT_EQ(count(out, R"(matmul_epilogue, 6 nodes\n  ops: +\S+ \(Gemm\), \S+ \(Div\), \S+ \(Erf\), \S+ \(Add\), \S+ \(Mul\), \S+ \(Mul\)\n)"), 2u) << out;
  EXPECT_NE(out.find("3 matmul_epilogue, 0 reduction, 0 elementwise, 0 shape_only, 0 opaque"), std::string::npos) << out;
}

TEST(Explain, SharedBertProloguesAndShapeOnly) {
  std::string path = shared_model("bert_tiny.onnx");
  if (path.empty()) GTEST_SKIP() << "shared models absent";
  std::string out = explain(path);
  // Softmax with its scale Div and mask Add; LayerNorm with its residual Add; MatMul + bias Add.
  EXPECT_EQ(count(out, R"(reduction, 3 nodes\n  ops: +\S+ \(Div\), \S+ \(Add\), \S+ \(Softmax\)\n)"), 2u) << out;
  EXPECT_EQ(count(out, R"(reduction, 2 nodes\n  ops: +\S+ \(Add\), \S+ \(LayerNormalization\)\n)"), 5u) << out;
  EXPECT_GE(count(out, R"(matmul_epilogue, 2 nodes\n  ops: +\S+ \(MatMul\), \S+ \(Add\)\n)"), 8u) << out;
  EXPECT_GE(count(out, R"(shape_only, \d+ nodes\n  ops: +\S+ \(Shape\), \S+ \(Gather\))"), 3u) << out;
  // Every Shape node heads a shape-only region.
  EXPECT_EQ(count(out, R"(\(Shape\))"), count(out, R"(shape_only, \d+ nodes\n  ops: +\S+ \(Shape\))")) << out;
}

TEST(Explain, SharedResnetConvEpilogues) {
  std::string path = shared_model("resnet18.onnx");
  if (path.empty()) GTEST_SKIP() << "shared models absent";
  std::string out = explain(path);
  EXPECT_EQ(count(out, R"(ops: +\S+ \(Conv\), \S+ \(Relu\)\n)"), 8u) << out;
  // The stem's max pool joins its conv (partition rule 4b).
  EXPECT_EQ(count(out, R"(ops: +\S+ \(Conv\), \S+ \(Relu\), \S+ \(MaxPool\)\n)"), 1u) << out;
  EXPECT_EQ(count(out, R"(ops: +\S+ \(Conv\), \S+ \(Add\), \S+ \(Relu\)\n)"), 8u) << out;
}

TEST(Explain, MissingModelIsOneLineError) {
  std::string cmd = std::string("'") + TIERJIT_CLI_PATH + "' explain /nonexistent/model.onnx 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[256];
  while (fgets(buf, sizeof buf, p)) out += buf;
  int status = pclose(p);
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_EQ(out.rfind("tierjit: error: ", 0), 0u) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
}

}  // namespace
}  // namespace tierjit::cli
