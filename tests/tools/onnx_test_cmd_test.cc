// Tests of `tierjit onnx-test` on small test folders built in a temporary directory from the
// bundled demo model: pass/fail reporting, the final "N passed, N failed, N skipped" line,
// expected failures (XFAIL, XPASS), --write-expected-failures, --filter and exit codes.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli_util.h"

namespace tierjit::cli {
namespace {
namespace fs = std::filesystem;

class OnnxTestCmd : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tierjit_onnx_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "suite");
    std::string ref = std::string(TIERJIT_SOURCE_DIR) + "/models/demo_ref/";
    auto x = read_npy(ref + "input_x.npy");
    auto y = read_npy(ref + "output_0.npy");
    ASSERT_TRUE(x.ok() && y.ok());
    x_ = *x;
    y_ = *y;
    // test_good: the reference pair; test_bad: expected output off by 0.5 at one element.
    make_test("test_good", {x_}, {y_});
    Tensor off = y_.clone();
    off.data<float>()[7] += 0.5f;
    make_test("test_bad", {x_}, {off});
  }
  void TearDown() override { fs::remove_all(dir_); }

  void make_test(const std::string& name, const std::vector<Tensor>& ins, const std::vector<Tensor>& outs,
                 bool with_data = true) {
    fs::path t = dir_ / "suite" / name;
    fs::create_directories(t);
    fs::copy_file(std::string(TIERJIT_SOURCE_DIR) + "/models/demo_mlp.onnx", t / "model.onnx");
    if (!with_data) return;
    fs::create_directories(t / "test_data_set_0");
    for (size_t i = 0; i < ins.size(); ++i)
      ASSERT_TRUE(write_pb_file((t / "test_data_set_0" / ("input_" + std::to_string(i) + ".pb")).string(), ins[i], "x").ok());
    for (size_t i = 0; i < outs.size(); ++i)
      ASSERT_TRUE(write_pb_file((t / "test_data_set_0" / ("output_" + std::to_string(i) + ".pb")).string(), outs[i], "logits").ok());
  }

  struct Result {
    int rc;
    std::string out, err;
    std::string last_line() const {
      std::string s = out;
      while (!s.empty() && s.back() == '\n') s.pop_back();
      return s.substr(s.rfind('\n') + 1);
    }
  };
  Result run(const std::string& args) {
    std::string o = (dir_ / "out.txt").string(), e = (dir_ / "err.txt").string();
    std::string cmd = std::string("'") + TIERJIT_CLI_PATH + "' onnx-test " + args + " >'" + o + "' 2>'" + e + "'";
    int status = std::system(cmd.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(o), slurp(e)};
  }
  static std::string slurp(const fs::path& p) {
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  std::string suite() const { return "'" + (dir_ / "suite").string() + "'"; }
  std::string write_list(const std::string& text) {
    fs::path p = dir_ / "xfail.txt";
    std::ofstream(p) << text;
    return p.string();
  }

  fs::path dir_;
  Tensor x_, y_;
};

TEST_F(OnnxTestCmd, PassAndFail) {
  Result r = run(suite());
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_EQ(r.last_line(), "1 passed, 1 failed, 0 skipped") << r.out;
  EXPECT_NE(r.out.find("FAIL  test_bad: output 0 'logits': max abs diff 0.5"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("at [0, 7]"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("test_good"), std::string::npos) << "passing tests are quiet without --verbose";
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST_F(OnnxTestCmd, SingleFolderAndFilterAndVerbose) {
  Result one = run("'" + (dir_ / "suite" / "test_good").string() + "'");
  EXPECT_EQ(one.rc, 0) << one.out;
  EXPECT_EQ(one.last_line(), "1 passed, 0 failed, 0 skipped");
  Result f = run(suite() + " --filter good --verbose");
  EXPECT_EQ(f.rc, 0);
  EXPECT_NE(f.out.find("PASS  test_good"), std::string::npos) << f.out;
  Result none = run(suite() + " --filter nothing_matches");
  EXPECT_EQ(none.rc, 2);
  EXPECT_NE(none.err.find("no test matches"), std::string::npos) << none.err;
}

TEST_F(OnnxTestCmd, ExpectedFailuresXfailAndXpass) {
  std::string list = write_list("# comment\n\ntest_bad  # off by 0.5\ntest_elsewhere  # another suite\n");
  Result r = run(suite() + " --expected-failures '" + list + "'");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("XFAIL test_bad:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 failed (1 expected, 0 unexpected)"), std::string::npos) << r.out;
  EXPECT_EQ(r.last_line(), "1 passed, 1 failed, 0 skipped");

  list = write_list("test_bad  # off\ntest_good  # was broken once\n");
  Result x = run(suite() + " --expected-failures '" + list + "'");
  EXPECT_EQ(x.rc, 1) << x.out;
  EXPECT_NE(x.out.find("XPASS test_good: passes but is listed in"), std::string::npos) << x.out;
  EXPECT_NE(x.out.find("remove it from the list"), std::string::npos);
  EXPECT_EQ(x.last_line(), "1 passed, 1 failed, 0 skipped");
}

// `?name`: a nondeterministic test (random operator) that may pass by chance: its pass is no
// XPASS, its failure an XFAIL, and rewriting the list keeps the entry with its '?'.
TEST_F(OnnxTestCmd, MayPassEntriesAreNotXpass) {
  std::string list = write_list("?test_good  # random output\n?test_bad  # random output\n");
  Result r = run(suite() + " --expected-failures '" + list + "' --write-expected-failures '" + list + "'");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(r.out.find("XPASS test_good"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(", 0 XPASS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("XFAIL test_bad:"), std::string::npos) << r.out;
  std::string text = slurp(list);
  EXPECT_NE(text.find("?test_good  # random output"), std::string::npos) << text;
  EXPECT_NE(text.find("?test_bad  # "), std::string::npos) << text;
}

TEST_F(OnnxTestCmd, WriteExpectedFailuresMergesOtherSuites) {
  std::string list = write_list("# header kept\ntest_good  # stale\ntest_other_suite  # kept\n");
  Result r = run(suite() + " --expected-failures '" + list + "' --write-expected-failures '" + list + "'");
  EXPECT_EQ(r.rc, 1);  // test_good XPASSes in this run
  std::string text = slurp(list);
  EXPECT_EQ(text.rfind("# header kept\n", 0), 0u) << text;
  EXPECT_NE(text.find("test_bad  # output 0 'logits': max abs diff 0.5"), std::string::npos) << text;
  EXPECT_NE(text.find("test_other_suite  # kept"), std::string::npos) << text;
  EXPECT_EQ(text.find("test_good"), std::string::npos) << text;
  Result again = run(suite() + " --expected-failures '" + list + "'");
  EXPECT_EQ(again.rc, 0) << again.out;
}

// --atol / --rtol replace the default tolerances: |got - want| <= atol + rtol * |want|.
TEST_F(OnnxTestCmd, AtolAndRtolOptions) {
  // test_bad is off by 0.5 at one element (|want| < 1 there): atol 0.6 passes it, 0.4 does not.
  Result loose = run(suite() + " --atol 0.6");
  EXPECT_EQ(loose.rc, 0) << loose.out << loose.err;
  EXPECT_EQ(loose.last_line(), "2 passed, 0 failed, 0 skipped") << loose.out;
  Result tight = run(suite() + " --atol 0.4");
  EXPECT_EQ(tight.rc, 1) << tight.out;
  EXPECT_NE(tight.out.find("(rtol 0.001, atol 0.4)"), std::string::npos) << tight.out;

  // Every expected value scaled by 1.01: off by 1% of |want| everywhere, so only rtol helps.
  Tensor scaled = y_.clone();
  for (int64_t i = 0; i < scaled.numel(); ++i) scaled.data<float>()[i] *= 1.01f;
  make_test("test_scaled", {x_}, {scaled});
  std::string one = "'" + (dir_ / "suite" / "test_scaled").string() + "'";
  Result by_default = run(one);
  EXPECT_EQ(by_default.rc, 1) << by_default.out;
  Result rel = run(one + " --rtol 0.011");
  EXPECT_EQ(rel.rc, 0) << rel.out << rel.err;
  Result rel_tight = run(one + " --rtol 0.005 --atol 0");
  EXPECT_EQ(rel_tight.rc, 1) << rel_tight.out;
  EXPECT_NE(rel_tight.out.find("(rtol 0.005, atol 0)"), std::string::npos) << rel_tight.out;
}

TEST_F(OnnxTestCmd, BadToleranceIsOneLineError) {
  for (std::string opt : {"--atol", "--rtol"}) {
    for (std::string bad : {"-1", "-1e-5", "nan", "NaN", "inf", "abc", "1e-5x", "''"}) {
      Result r = run(suite() + " " + opt + " " + bad);
      EXPECT_EQ(r.rc, 2) << opt << " " << bad << ": " << r.out << r.err;
      EXPECT_EQ(r.err.rfind("tierjit: error: ", 0), 0u) << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
      EXPECT_NE(r.err.find(opt), std::string::npos) << r.err;
      EXPECT_TRUE(r.out.empty()) << "no test runs on bad usage: " << r.out;
    }
  }
}

TEST_F(OnnxTestCmd, BrokenTestDataFailsThatTestOnly) {
  make_test("test_no_data", {}, {}, /*with_data=*/false);
  make_test("test_two_inputs", {x_, x_}, {y_});
  make_test("test_wrong_dtype", {Tensor::zeros(DType::kInt64, {3, 64})}, {y_});
  make_test("test_two_outputs", {x_}, {y_, y_});
  make_test("test_out_shape", {x_}, {Tensor::zeros(DType::kFloat32, {3, 11})});
  fs::create_directories(dir_ / "suite" / "test_corrupt_model" / "test_data_set_0");
  std::ofstream(dir_ / "suite" / "test_corrupt_model" / "model.onnx") << "garbage";
  Result r = run(suite());
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.last_line(), "1 passed, 7 failed, 0 skipped") << r.out;
  EXPECT_NE(r.out.find("FAIL  test_no_data: no test_data_set_* folder"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FAIL  test_two_inputs: test data has 2 inputs, the model takes 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FAIL  test_wrong_dtype: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FAIL  test_two_outputs: model gave 1 outputs, test data has 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FAIL  test_out_shape: output 0 'logits': shape [3, 10], expected [3, 11]"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("FAIL  test_corrupt_model: "), std::string::npos) << r.out;
}

}  // namespace
}  // namespace tierjit::cli
