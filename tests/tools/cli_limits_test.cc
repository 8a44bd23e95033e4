// Limits and escaping at the CLI: a .npy or .pb feed over --memory-limit is refused from its
// header's declared size before its data is read (a sparse 2 GiB .npy against --memory-limit 1G
// is refused at once), --arena-limit refuses a run whose live intermediates pass it, and names
// from the model are printed escaped (a newline or an escape sequence in an output name cannot
// break a line or reach the terminal).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "cli_runner.h"
#include "cli_util.h"
#include "onnx/model_builder.h"

namespace tierjit::cli {
namespace {

using Result = cli_testing::CliResult;

class CliLimitsTest : public cli_testing::CliRunnerTest {
 protected:
  CliLimitsTest() : CliRunnerTest("tierjit_cli_limits_test_") {}

  // A valid .npy header (version 1.0) declaring float32 `shape`, and the file cut to
  // header + the declared data size without writing it (a sparse file).
  std::string sparse_npy(const std::string& name, const std::string& shape, uint64_t data_bytes) {
    std::string d = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
    const size_t total = 10 + d.size() + 1;
    d.append((64 - total % 64) % 64, ' ');
    d.push_back('\n');
    std::string bytes("\x93NUMPY\x01\x00", 8);
    bytes.push_back(static_cast<char>(d.size() & 0xff));
    bytes.push_back(static_cast<char>(d.size() >> 8));
    bytes += d;
    const std::string p = write(name, bytes);
    std::filesystem::resize_file(p, bytes.size() + data_bytes);
    return p;
  }
};

TEST_F(CliLimitsTest, NpyFeedOverMemoryLimitIsRefusedFromItsHeader) {
  const std::string big = sparse_npy("big.npy", "(8388608, 64)", uint64_t{1} << 31);  // 2 GiB
  const auto t0 = std::chrono::steady_clock::now();
  Result r = run_cli("run " + demo() + " --input x=" + big + " --memory-limit 1G");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  expect_one_line_error(r, "big.npy: declares <f4 [8388608, 64] (2147483648 bytes), over the "
                           "memory limit of 1073741824 bytes");
  EXPECT_LT(s, 20.0) << "the 2 GiB of data were read";  // header only: well under a second
  // The reader itself, and a limit the file fits.
  auto refused = read_npy(big, int64_t{1} << 30);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  const std::string small = sparse_npy("small.npy", "(2, 64)", 2 * 64 * 4);
  auto fits = read_tensor_file(small, 512);
  ASSERT_TRUE(fits.ok()) << fits.status().message();
  EXPECT_EQ(fits->shape(), (Shape{2, 64}));
  auto over = read_tensor_file(small, 511);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted) << over.status().message();
}

TEST_F(CliLimitsTest, PbFeedOverMemoryLimitIsRefusedFromItsDims) {
  const std::string pb = path("x.pb");
  ASSERT_TRUE(write_pb_file(pb, Tensor::zeros(DType::kFloat32, {2, 64}), "x").ok());
  auto fits = read_tensor_file(pb, 512);
  ASSERT_TRUE(fits.ok()) << fits.status().message();
  auto over = read_tensor_file(pb, 511);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(over.status().message().find("x.pb: tensor: shape [2, 64] (float32) needs more than 511 bytes"),
            std::string::npos) << over.status().message();
  Result r = run_cli("run " + demo() + " --input x=" + pb + " --memory-limit 511");
  // The demo's own weights are over 511 bytes: the model is refused first, naming the limit.
  EXPECT_EQ(r.rc, 2) << r.err;
}

TEST_F(CliLimitsTest, ArenaLimit) {
  Result ok = run_cli("run " + demo() + " --input x=random:2x64 --arena-limit 1G -q");
  EXPECT_EQ(ok.rc, 0) << ok.err;
  Result over = run_cli("run " + demo() + " --input x=random:4096x64 --arena-limit 64K");
  expect_one_line_error(over, "over the arena limit of 65536 bytes (arena_limit_bytes)");
  EXPECT_NE(over.err.find("signature (float32[4096,64])"), std::string::npos) << over.err;
  for (const char* bad : {"0", "lots", "1Q"})
    expect_one_line_error(run_cli("run " + demo() + " --arena-limit " + bad), "--arena-limit");
}

TEST_F(CliLimitsTest, NamesAreEscapedInOutputs) {
  onnx::GraphProto g;
  const std::string evil = "y\n\x1b[2Jowned";
  onnx_test::add_input(g, "x\tin", onnx::TensorProto_DataType_FLOAT, {2});
  onnx_test::add_node(g, "Relu", {"x\tin"}, {evil});
  onnx_test::add_output(g, evil, onnx::TensorProto_DataType_FLOAT, {2});
  write("evil.onnx", onnx_test::serialize(onnx_test::make_model(g)));
  Result r = run_cli("run '" + path("evil.onnx") + "'");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("input  x\\tin: float32 [2]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("output y\\n\\u001b[2Jowned: float32 [2]"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2) << r.out;  // one line each
  Result e = run_cli("explain '" + path("evil.onnx") + "'");
  ASSERT_EQ(e.rc, 0) << e.err;
  EXPECT_EQ(e.out.find('\x1b'), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("%y\\n\\u001b[2Jowned"), std::string::npos) << e.out;
}

}  // namespace
}  // namespace tierjit::cli
