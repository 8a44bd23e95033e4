// End-to-end tests of the `tierjit` binary's error paths: every bad input prints exactly one
// line "tierjit: error: ..." on stderr and exits 2, never a crash. Bad model files are written
// into a temporary folder; the valid model is the committed demo (models/demo_mlp.onnx).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "cli_runner.h"
#include "cli_util.h"

namespace tierjit::cli {
namespace {
namespace fs = std::filesystem;

using Result = cli_testing::CliResult;

class CliTest : public cli_testing::CliRunnerTest {
 protected:
  CliTest() : CliRunnerTest("tierjit_cli_test_") {}
  Result run(const std::string& args) { return run_cli(args); }

  // The shared contract (cli_runner.h), and the line ends in '\n'.
  void expect_one_line_error(const Result& r, const std::string& mention) {
    CliRunnerTest::expect_one_line_error(r, mention);
    if (!r.err.empty()) {
      EXPECT_EQ(r.err.back(), '\n');
    }
  }
};

TEST_F(CliTest, VersionAndHelp) {
  Result v = run("--version");
  EXPECT_EQ(v.rc, 0);
  EXPECT_EQ(v.out.rfind("tierjit ", 0), 0u) << v.out;
  for (const char* h : {"--help", "run --help", "onnx-test --help"}) {
    Result r = run(h);
    EXPECT_EQ(r.rc, 0) << h;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << h;
  }
}

TEST_F(CliTest, UsageErrors) {
  expect_one_line_error(run(""), "ubcommand");
  expect_one_line_error(run("frobnicate"), "frobnicate");
  expect_one_line_error(run("run"), "model");
  expect_one_line_error(run("run m.onnx --output-format csv"), "output-format");
  expect_one_line_error(run("run m.onnx --memory-limit lots"), "--memory-limit");
  expect_one_line_error(run("onnx-test"), "path");
  // --tier outside 0..3 is a usage error on every command (-1 was once taken as "not given").
  for (const char* t : {"-1", "4", "abc"}) {
    expect_one_line_error(run(std::string("run m.onnx --tier ") + t), "--tier");
    expect_one_line_error(run(std::string("onnx-test some/dir --tier ") + t), "--tier");
  }
  // An integer option given a word or a fraction says so (not "Value abc not in range").
  for (const char* t : {"abc", "1.5", "-3", "2000"})
    for (const char* cmd : {"run m.onnx", "bench m.onnx --requests 1"})
      expect_one_line_error(run(std::string(cmd) + " --threads " + t),
                            std::string("--threads: '") + t + "' is not an integer in [0, 1024]");
}

TEST_F(CliTest, MissingModelFile) {
  expect_one_line_error(run("run '" + (dir_ / "nope.onnx").string() + "'"), "nope.onnx");
}

TEST_F(CliTest, RandomBytesModel) {
  std::mt19937 rng(3);
  std::string junk(4096, '\0');
  for (char& c : junk) c = static_cast<char>(rng());
  expect_one_line_error(run("run '" + write("junk.onnx", junk) + "'"), "junk.onnx");
  expect_one_line_error(run("run '" + write("empty.onnx", "") + "'"), "empty.onnx");
}

TEST_F(CliTest, TruncatedModel) {
  std::string bytes = slurp(demo());
  ASSERT_GT(bytes.size(), 1000u);
  for (size_t cut : {bytes.size() / 2, size_t{100}, bytes.size() - 3})
    expect_one_line_error(run("run '" + write("trunc.onnx", bytes.substr(0, cut)) + "'"), "trunc.onnx");
}

TEST_F(CliTest, BadFeeds) {
  std::string ok_f32 = write("ok.npy", *serialize_npy(Tensor::zeros(DType::kFloat32, {2, 64})));
  std::string i64 = write("i64.npy", *serialize_npy(Tensor::zeros(DType::kInt64, {2, 64})));
  std::string rank1 = write("rank1.npy", *serialize_npy(Tensor::zeros(DType::kFloat32, {64})));
  std::string wrong_dim = write("dim.npy", *serialize_npy(Tensor::zeros(DType::kFloat32, {2, 63})));
  std::string junk = write("junk.npy", "\x93NUMPY\x01\x00garbage");
  expect_one_line_error(run("run " + demo() + " --input x=" + i64), "int64");
  expect_one_line_error(run("run " + demo() + " --input x=" + rank1), "rank");
  expect_one_line_error(run("run " + demo() + " --input x=" + wrong_dim), "dim 1");
  expect_one_line_error(run("run " + demo() + " --input x=random:3"), "rank");
  expect_one_line_error(run("run " + demo() + " --input x=" + junk), "junk.npy");
  expect_one_line_error(run("run " + demo() + " --input x=" + (dir_ / "absent.npy").string()), "absent.npy");
  expect_one_line_error(run("run " + demo() + " --input y=random:2x64"), "no input 'y'");
  expect_one_line_error(run("run " + demo() + " --input =random:2x64"), "empty input name");
  expect_one_line_error(run("run " + demo() + " --input x=random:2x64 --input x=random:2x64"), "twice");
  expect_one_line_error(run("run " + demo() + " --input x=random:2xq"), "2xq");
  expect_one_line_error(run("run " + demo() + " --int-range z=0:4"), "'z'");
  expect_one_line_error(run("run " + demo() + " --dim Q=4"), "unknown symbolic dim 'Q' (dims: N)");
  expect_one_line_error(run("run " + demo() + " --seed -3"), "--seed");
  expect_one_line_error(run("run " + demo() + " --seed ' -3'"), "--seed");
  expect_one_line_error(run("bench " + demo() + " --shapes x=1x64 --seed -1"), "--seed");
  // explain's replay options without --trace would be ignored: refused instead.
  for (const char* opt : {"--mode adaptive", "--tier 2", "--seed 4", "--int-range x=0:3", "--log-entries 5"})
    expect_one_line_error(run("explain " + demo() + " " + opt), "--trace");
  expect_one_line_error(run("run " + demo() + " --input x=random:100000000x64 --memory-limit 1G"),
                        "exceeds --memory-limit of 1073741824 bytes");
  // a sane run of the demo (passes once the loader and kernels are in)
  (void)ok_f32;
}

TEST_F(CliTest, OnnxTestUsage) {
  expect_one_line_error(run("onnx-test '" + (dir_ / "none").string() + "'"), "none");
  fs::create_directories(dir_ / "empty");
  expect_one_line_error(run("onnx-test '" + (dir_ / "empty").string() + "'"), "no test folders");
  expect_one_line_error(run("onnx-test '" + (dir_ / "empty").string() + "' --expected-failures '" +
                            (dir_ / "list.txt").string() + "'"),
                        "list.txt");
}

// --output-dir never writes through a symbolic link planted at an output's path (it could point
// at any file the user may write): one-line error naming the path, the link's target unchanged.
// Without the link the output is written.
TEST_F(CliTest, OutputDirRefusesSymlinkAtOutputPath) {
  const fs::path out = dir_ / "out";
  fs::create_directories(out);
  const std::string victim = write("victim.txt", "keep");
  fs::create_symlink(victim, out / "logits.npy");
  for (const char* format : {"npy", "pb"}) {
    if (std::string(format) == "pb") fs::create_symlink(victim, out / "logits.pb");
    auto r = run("run '" + demo() + "' --input x=random:2x64 --output-format " + format + " --output-dir '" +
                 out.string() + "'");
    expect_one_line_error(r, (out / (std::string("logits.") + format)).string() + ": is a symbolic link");
    EXPECT_EQ(slurp(victim), "keep");
  }
  fs::remove(out / "logits.npy");
  auto ok = run("run '" + demo() + "' --input x=random:2x64 --output-dir '" + out.string() + "'");
  EXPECT_EQ(ok.rc, 0) << ok.err;
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(out / "logits.npy")));
  EXPECT_GT(fs::file_size(out / "logits.npy"), 2u * 10u * 4u);
  EXPECT_EQ(slurp(victim), "keep");
}

// An explicitly given input binds the symbolic dims it names for the random ones: bert_tiny's
// attention_mask [N,S] follows input_ids [N,S] (needs the shared model zoo).
TEST_F(CliTest, GivenInputBindsSymbolicDims) {
  fs::path bert = fs::path(TIERJIT_SHARED_DIR) / "models" / "bert_tiny.onnx";
  if (!fs::exists(bert)) {
    if (std::getenv("CI")) FAIL() << bert << " is missing";
    GTEST_SKIP() << bert << " not found (shared model zoo)";
  }
  auto r = run("run " + bert.string() + " --input input_ids=random:2x37");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("input  attention_mask: int64 [2, 37]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("output last_hidden_state: float32 [2, 37, 128]"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace tierjit::cli
