// Test fixture base for end-to-end tests of the built `tierjit` binary (TIERJIT_CLI_PATH): a
// fresh temporary folder per test (removed afterwards), running the binary with stdout and
// stderr captured, small file helpers, and the one-line-error contract for bad input.
// Used by cli_test.cc and bench_cli_test.cc.
#pragma once

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tierjit::cli_testing {

/// Exit code (128 + signal when killed) and the captured output of one run of the binary.
struct CliResult {
  int rc = -1;
  std::string out, err;
};

class CliRunnerTest : public ::testing::Test {
 protected:
  /// `dir_prefix` names the per-test temporary folder: <tmp>/<dir_prefix><pid>_<test name>.
  explicit CliRunnerTest(std::string dir_prefix) : dir_prefix_(std::move(dir_prefix)) {}

  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           (dir_prefix_ + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  /// Runs `tierjit <args>` through the shell (args are shell text; quote paths yourself).
  CliResult run_cli(const std::string& args) {
    std::string out = (dir_ / "stdout.txt").string(), err = (dir_ / "stderr.txt").string();
    std::string cmd = std::string("'") + TIERJIT_CLI_PATH + "' " + args + " >'" + out + "' 2>'" + err + "'";
    int status = std::system(cmd.c_str());
    CliResult r;
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }
  static std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  /// Writes `text` to <dir_>/<name>; returns the path.
  std::string write(const std::string& name, const std::string& text) {
    std::filesystem::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  /// The committed demo model (input x [N, 64]).
  static std::string demo() { return std::string(TIERJIT_SOURCE_DIR) + "/models/demo_mlp.onnx"; }

  /// The contract for bad input: exit 2 and one line "tierjit: error: <what>" naming `mention`.
  void expect_one_line_error(const CliResult& r, const std::string& mention) {
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_EQ(r.err.rfind("tierjit: error: ", 0), 0u) << r.err;
    ASSERT_FALSE(r.err.empty());
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(mention), std::string::npos) << "stderr: " << r.err;
  }

  std::filesystem::path dir_;

 private:
  std::string dir_prefix_;
};

}  // namespace tierjit::cli_testing
