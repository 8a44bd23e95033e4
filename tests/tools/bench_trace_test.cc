// Trace parsing for `tierjit bench` (tools/trace.h): request lines, comments and blank lines,
// CRLF, errors with file:line, --shapes cycling, and the check of a request against the model's
// declared inputs (unknown/missing input, rank, constant dims).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cli_util.h"
#include "trace.h"

namespace tierjit::cli {
namespace {

TEST(BenchTrace, ParsesLinesCommentsAndBlanks) {
  auto t = parse_trace_text("# header\n\nx=8x256\n  # indented comment\ninput_ids=4x37;attention_mask=4x37\r\n"
                            " x = 1 x 2 ; \n",
                            "t.txt");
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->requests.size(), 3u);
  EXPECT_EQ(t->requests[0].location, "t.txt:3");
  EXPECT_EQ(t->requests[0].inputs[0].first, "x");
  EXPECT_EQ(t->requests[0].inputs[0].second, (Shape{8, 256}));
  EXPECT_EQ(t->requests[1].location, "t.txt:5");
  ASSERT_EQ(t->requests[1].inputs.size(), 2u);
  EXPECT_EQ(t->requests[1].inputs[1].first, "attention_mask");
  EXPECT_EQ(t->requests[1].inputs[1].second, (Shape{4, 37}));
  EXPECT_EQ(format_request(t->requests[1]), "input_ids=4x37;attention_mask=4x37");
  // Whitespace and a trailing ';' are ignored.
  EXPECT_EQ(format_request(t->requests[2]), "x=1x2");
}

TEST(BenchTrace, ScalarAndZeroDims) {
  auto r = parse_trace_line("s=;x=0x3");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->inputs[0].second, Shape{});
  EXPECT_EQ(r->inputs[1].second, (Shape{0, 3}));
  EXPECT_EQ(format_request(*r), "s=;x=0x3");
}

TEST(BenchTrace, NoFinalNewline) {
  auto t = parse_trace_text("x=1x4\nx=2x4", "t.txt");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->requests.size(), 2u);
  EXPECT_EQ(t->requests[1].location, "t.txt:2");
}

TEST(BenchTrace, BadLinesNameFileAndLine) {
  struct Case {
    const char* text;
    const char* want;
  } cases[] = {
      {"x=1x4\nx=1xq\n", "t.txt:2: input 'x': bad dim 'q'"},
      {"x=1x4\n\n8x256\n", "t.txt:3: '8x256': expected NAME=DxD"},
      {"=8x256\n", "t.txt:1: '=8x256': empty input name"},
      {"x=1x4;x=2x4\n", "t.txt:1: input 'x' given twice"},
      {"# c\n;;\n", "t.txt:2: no inputs in the line"},
      {"x=-1x4\n", "t.txt:1: input 'x': bad dim '-1'"},
      {"x=1x4 # trailing comment\n", "t.txt:1: input 'x': bad shape '1x4 # trailing comment'"},
      {"x=1x256 extra\n", "t.txt:1: input 'x': bad shape '1x256 extra'"},
  };
  for (const auto& c : cases) {
    auto t = parse_trace_text(c.text, "t.txt");
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(t.status().message().rfind(c.want, 0), 0u) << t.status().message();
  }
}

TEST(BenchTrace, EmptyTrace) {
  for (const char* text : {"", "\n\n", "# only a comment\n  \n"}) {
    auto t = parse_trace_text(text, "e.txt");
    ASSERT_FALSE(t.ok());
    EXPECT_NE(t.status().message().find("e.txt: empty trace"), std::string::npos) << t.status().message();
  }
}

TEST(BenchTrace, MissingFile) {
  auto t = read_trace_file("/nonexistent/dir/trace.txt");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kNotFound);
  EXPECT_NE(t.status().message().find("/nonexistent/dir/trace.txt"), std::string::npos);
}

// A FIFO as the trace is refused at once (reading it would wait for a writer) and a trace over
// the 1 GiB limit for text files (sparse) before a byte of it is read.
TEST(BenchTrace, SpecialAndOversizedFilesAreRefused) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("tierjit_trace_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string fifo = (dir / "fifo.txt").string(), big = (dir / "big.txt").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto t = read_trace_file(fifo);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find(fifo + ": is not a regular file (a FIFO)"), std::string::npos)
      << t.status().message();
  {
    std::ofstream(big) << "x=1x2\n";
  }
  fs::resize_file(big, kMaxTextFileBytes + 1);
  t = read_trace_file(big);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find(big + ": the file has 1073741825 bytes, over the limit for "
                                            "trace files of 1073741824 bytes"),
            std::string::npos)
      << t.status().message();
  fs::remove_all(dir);
}

TEST(BenchTrace, ShapesCycle) {
  auto t = trace_from_specs({"x=1x4", "x=2x4", "x=3x4"}, 7);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->requests.size(), 7u);
  const char* want[] = {"x=1x4", "x=2x4", "x=3x4", "x=1x4", "x=2x4", "x=3x4", "x=1x4"};
  for (size_t i = 0; i < 7; ++i) EXPECT_EQ(format_request(t->requests[i]), want[i]) << i;
  EXPECT_EQ(t->requests[0].location, "--shapes 'x=1x4'");

  EXPECT_FALSE(trace_from_specs({}, 3).ok());
  EXPECT_FALSE(trace_from_specs({"x=1x4"}, 0).ok());
  auto bad = trace_from_specs({"x=1x4", "x1x4"}, 3);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("--shapes 'x1x4': ", 0), 0u) << bad.status().message();
}

// The committed demo trace (scripts/make_demo_trace.py): 500 requests x=Nx64, N in 1..64.
TEST(BenchTrace, CommittedDemoTrace) {
  auto t = read_trace_file(std::string(TIERJIT_SOURCE_DIR) + "/models/demo_mlp.zipf.txt");
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->requests.size(), 500u);
  for (const auto& r : t->requests) {
    ASSERT_EQ(r.inputs.size(), 1u) << r.location;
    EXPECT_EQ(r.inputs[0].first, "x");
    ASSERT_EQ(r.inputs[0].second.size(), 2u) << r.location;
    EXPECT_GE(r.inputs[0].second[0], 1);
    EXPECT_LE(r.inputs[0].second[0], 64);
    EXPECT_EQ(r.inputs[0].second[1], 64);
  }
}

TEST(BenchTrace, CheckRequestAgainstModel) {
  TensorInfo ids{"input_ids", DType::kInt64, {-1, -1}, {"N", "S"}, true};
  TensorInfo mask{"attention_mask", DType::kInt64, {-1, -1}, {"N", "S"}, true};
  TensorInfo x{"x", DType::kFloat32, {-1, 64}, {"N", ""}, true};
  auto req = [](const std::string& line) {
    TraceRequest r = *parse_trace_line(line);
    r.location = "t.txt:4";
    return r;
  };
  EXPECT_TRUE(check_request({ids, mask}, req("attention_mask=2x9;input_ids=2x9")).ok());
  EXPECT_TRUE(check_request({x}, req("x=0x64")).ok());

  Status unknown = check_request({x}, req("y=1x64"));
  EXPECT_EQ(unknown.message(), "t.txt:4: the model has no input 'y' (inputs: 'x')");
  Status missing = check_request({ids, mask}, req("input_ids=1x8"));
  EXPECT_EQ(missing.message(),
            "t.txt:4: the request gives no shape for input 'attention_mask' (inputs: 'input_ids', 'attention_mask')");
  Status rank = check_request({x}, req("x=1x64x1"));
  EXPECT_EQ(rank.message().rfind("t.txt:4: input 'x': the request has rank 3", 0), 0u) << rank.message();
  Status dim = check_request({x}, req("x=8x32"));
  EXPECT_EQ(dim.message(), "t.txt:4: input 'x': the request has shape [8, 32], the model expects dim 1 = 64");
}

}  // namespace
}  // namespace tierjit::cli
