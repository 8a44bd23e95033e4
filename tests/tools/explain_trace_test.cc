// Tests of `tierjit explain --trace`: the demo MLP replayed on its Zipf trace (500 requests, 7
// shapes) in adaptive mode with synchronous compilation names both regions, the summary and the
// decision log; a hot trace on the demo chain shows compiled versions (tier >= 1) with guards;
// pinned and interpret-only replays; option errors as one line and exit 2.
#include <gtest/gtest.h>

#include <regex>

#include "cli_runner.h"
#include "cmd_explain.h"

namespace tierjit::cli {
namespace {

std::string demo_model() { return std::string(TIERJIT_SOURCE_DIR) + "/models/demo_mlp.onnx"; }
std::string demo_trace() { return std::string(TIERJIT_SOURCE_DIR) + "/models/demo_mlp.zipf.txt"; }

std::string explain(const ExplainOptions& o, int want_rc = 0) {
  ::testing::internal::CaptureStdout();
  int rc = cmd_explain(o);
  std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(rc, want_rc) << out;
  return out;
}

/// The text after the static region blocks (what the replay printed).
std::string after_replay(const std::string& out) {
  size_t at = out.find("\nafter replaying ");
  return at == std::string::npos ? std::string() : out.substr(at);
}

bool has(const std::string& text, const std::string& re) { return std::regex_search(text, std::regex(re)); }

TEST(ExplainTrace, ZipfTraceNamesTheRegionsAndTheDecisions) {
  ExplainOptions o;
  o.model = demo_model();
  o.trace = demo_trace();
  std::string replay = after_replay(explain(o));
  ASSERT_FALSE(replay.empty());
  EXPECT_NE(replay.find("500 requests, 7 distinct shapes; mode adaptive, synchronous compilation"),
            std::string::npos) << replay;
  // Both regions with their ops, 500 calls each. (Batches <= 64 are too small for a compile to
  // pay under the TierPolicy's cost model: the log says why they stay on tier 0.)
  EXPECT_TRUE(has(replay, R"(region 0 'gemm_0': matmul_epilogue, tier \d, 500 calls\n  ops:      Gemm, Relu\n)")) << replay;
  EXPECT_TRUE(has(replay, R"(region 1 'gemm_1': matmul_epilogue, tier \d, 500 calls\n  ops:      Gemm\n)")) << replay;
  EXPECT_TRUE(has(replay, R"(\nsummary: 500 calls, \d+ compiles \(tier 0: 0, tier 1: \d+, tier 2: \d+)")) << replay;
  EXPECT_TRUE(has(replay, R"(, 0 megamorphic regions\n)")) << replay;
  EXPECT_TRUE(has(replay, R"(decision log \(last \d+ of \d+ records kept; times from session creation\):\n  \+\d+\.\d{3} ms region 0 'gemm_0': (declined|promoted) tier 0 -> [12])"))
      << replay;
}

TEST(ExplainTrace, PinnedTierOneAndInterpretOnly) {
  ExplainOptions o;
  o.model = demo_model();
  o.trace = demo_trace();
  o.tier = 1;
  o.log_entries = 0;
  std::string replay = after_replay(explain(o));
  EXPECT_NE(replay.find("mode pinned tier 1"), std::string::npos) << replay;
  EXPECT_TRUE(has(replay, R"(region 0 'gemm_0': matmul_epilogue, tier 1, 500 calls)")) << replay;
  EXPECT_TRUE(has(replay, R"(versions: tier 1 generic \(pinned)")) << replay;
  EXPECT_NE(replay.find("decision log (last 0 of"), std::string::npos) << replay;

  o.tier = -1;
  o.mode = "interpret-only";
  replay = after_replay(explain(o));
  EXPECT_NE(replay.find("mode interpret-only"), std::string::npos) << replay;
  EXPECT_NE(replay.find("no region reports"), std::string::npos) << replay;
  EXPECT_TRUE(has(replay, R"(summary: 500 calls, 0 compiles)")) << replay;
}

class ExplainTraceCli : public cli_testing::CliRunnerTest {
 protected:
  ExplainTraceCli() : CliRunnerTest("tierjit_explain_trace_") {}
};

// A hot trace (large batches: a compile pays within the policy's window) on the demo chain
// (models/demo_chain.onnx, one elementwise region; the demo MLP's Gemm regions stay on oneDNN)
// promotes it: its versions are compiled (tier >= 1) and each shows its guard. Unless the new
// code's first timed calls measured slower than tier 0 (a descheduled call on a loaded machine:
// 1,835 vs 1,025 us seen under a parallel build), which removes it and keeps the region at tier
// 0 (the policy's never-slower rule): then the compile and the removal are what the log shows.
TEST_F(ExplainTraceCli, HotTraceShowsCompiledVersionsAndGuards) {
  std::string text;
  for (int i = 0; i < 24; ++i) text += "x=256x1024\n";
  ExplainOptions o;
  o.model = std::string(TIERJIT_SOURCE_DIR) + "/models/demo_chain.onnx";
  o.trace = write("hot.txt", text);
  o.log_entries = 1000;  // all of them
  std::string replay = after_replay(explain(o));
  EXPECT_TRUE(has(replay, R"(compiles \(tier 0: 0, tier 1: [1-9]\d*, tier 2: \d+)")) << replay;
  if (replay.find("is slower than tier") != std::string::npos) return;  // removed, see above
  EXPECT_TRUE(has(replay, R"(region 0 'elementwise_0': elementwise, tier [12], 24 calls\n)")) << replay;
  EXPECT_TRUE(has(replay, R"(versions: tier [12] (generic|exact) float32\[)")) << replay;
  // The generic version checks dtypes and ranks; an exact one every dim of x and the bias.
  EXPECT_TRUE(has(replay, R"(tier [12] generic float32\[\?,\?\], float32\[\?\] guard: dtypes and ranks only)") ||
              has(replay, R"(tier 2 exact float32\[256,1024\], float32\[1024\] guard: input 0 dim 0 == 256, input 0 dim 1 == 1024, input 1 dim 0 == 1024)"))
      << replay;
  EXPECT_TRUE(has(replay, R"(region 0 'elementwise_0': compiled tier [12])")) << replay;
}

TEST_F(ExplainTraceCli, ErrorsAreOneLine) {
  const std::string m = "explain '" + demo() + "'";
  expect_one_line_error(run_cli(m + " --tier 2"), "--tier requires --trace");
  expect_one_line_error(run_cli(m + " --trace '" + path("missing.txt") + "'"), "missing.txt: no such file");
  expect_one_line_error(run_cli(m + " --trace '" + write("d.txt", "x=4x32\n") + "'"),
                        "d.txt:1: input 'x': the request has shape [4, 32], the model expects dim 1 = 64");
  expect_one_line_error(run_cli(m + " --trace '" + write("t.txt", "x=2x64\n") + "' --tier 2 --mode interpret-only"),
                        "contradicts --mode interpret-only");
  cli_testing::CliResult ok = run_cli(m + " --trace '" + write("ok.txt", "x=2x64\nx=2x64\nx=2x64\n") + "'");
  EXPECT_EQ(ok.rc, 0) << ok.err;
  EXPECT_NE(ok.out.find("after replaying"), std::string::npos) << ok.out;
}

}  // namespace
}  // namespace tierjit::cli
