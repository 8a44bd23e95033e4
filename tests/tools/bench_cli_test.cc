// End-to-end tests of `tierjit bench` (the built binary on the committed demo model, input x
// [N, 64]): the table, the --json fields of ../shared/bench/README.md plus tierjit's own, the
// Chrome trace, compile events and the tier timeline, and every bad input giving one error line
// and exit 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_runner.h"

namespace {
namespace fs = std::filesystem;
using nlohmann::json;

using BenchResult = tierjit::cli_testing::CliResult;

class BenchCliTest : public tierjit::cli_testing::CliRunnerTest {
 protected:
  BenchCliTest() : CliRunnerTest("tierjit_bench_test_") {}
  BenchResult run(const std::string& args) { return run_cli("bench " + args); }
};

// A 20-request trace over 4 shapes: x=1x64 x8, x=8x64 x6, x=3x64 x5, x=0x64 x1.
std::string twenty_requests() {
  std::string t = "# 20 requests\n\n";
  const char* order[] = {"1", "8", "1", "3", "8", "1", "1", "3", "8", "0",
                         "1", "3", "8", "1", "8", "3", "1", "1", "8", "3"};
  for (const char* n : order) t += std::string("x=") + n + "x64\n";
  return t;
}

TEST_F(BenchCliTest, JsonHasTheSharedFieldsAndCountsSumToRequests) {
  std::string trace = write("t20.txt", twenty_requests());
  BenchResult r = run("'" + demo() + "' --trace '" + trace + "' --json '" + path("out.json") + "' --chrome-trace '" +
                      path("chrome.json") + "' --mode interpret-only");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;  // stderr is a file here: no progress bar
  for (const char* s : {"x=1x64", "x=8x64", "x=3x64", "x=0x64", "overall", "session_create_ms", "first_run_ms",
                        "total_wall_ms", "compile events: none", "tier timeline:"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;

  json j = json::parse(slurp(path("out.json")));
  for (const char* k : {"peer", "peer_version", "model", "trace", "threads", "n_requests", "n_shapes",
                        "session_create_ms", "first_run_ms", "total_wall_ms", "overall", "shapes", "tierjit"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["peer"], "tierjit");
  EXPECT_EQ(j["model"], "demo_mlp");
  EXPECT_EQ(j["trace"], "t20");
  EXPECT_EQ(j["threads"], 1);
  EXPECT_EQ(j["n_requests"], 20);
  EXPECT_EQ(j["n_shapes"], 4);
  for (const char* k : {"p50_ms", "p90_ms", "p99_ms", "mean_ms", "max_ms"}) EXPECT_TRUE(j["overall"].contains(k)) << k;
  ASSERT_EQ(j["shapes"].size(), 4u);
  // First-appearance order; counts as written in twenty_requests().
  const char* want_shape[] = {"x=1x64", "x=8x64", "x=3x64", "x=0x64"};
  const int want_count[] = {8, 6, 5, 1};
  int64_t total = 0;
  for (size_t k = 0; k < 4; ++k) {
    const json& s = j["shapes"][k];
    for (const char* f : {"shape", "count", "first_ms", "p50_ms", "p90_ms", "p99_ms", "mean_ms", "max_ms",
                          "mean_after_first_ms"})
      EXPECT_TRUE(s.contains(f)) << f;
    EXPECT_EQ(s["shape"], want_shape[k]);
    EXPECT_EQ(s["count"], want_count[k]);
    EXPECT_LE(s["p50_ms"].get<double>(), s["max_ms"].get<double>());
    total += s["count"].get<int64_t>();
  }
  EXPECT_EQ(total, 20);
  EXPECT_TRUE(j["shapes"][3]["mean_after_first_ms"].is_null());  // a single request
  EXPECT_LE(j["first_run_ms"].get<double>(), j["total_wall_ms"].get<double>());

  const json& t = j["tierjit"];
  EXPECT_EQ(t["mode"], "interpret-only");
  EXPECT_EQ(t["tiers_available"], json::array({0, 1, 2, 3}));
  EXPECT_TRUE(t["compile_events"].is_array() && t["compile_events"].empty());
  EXPECT_TRUE(t["tier_timeline"].is_array() && t["tier_timeline"].empty());
  ASSERT_EQ(t["latencies_ms"].size(), 20u);
  ASSERT_EQ(t["request_shape_index"].size(), 20u);
  EXPECT_EQ(t["request_shape_index"][9], 3);  // the 10th request is x=0x64
  EXPECT_EQ(t["latencies_ms"][0], j["first_run_ms"]);

  json c = json::parse(slurp(path("chrome.json")));
  ASSERT_TRUE(c["traceEvents"].is_array());
  int requests = 0;
  for (const auto& e : c["traceEvents"])
    if (e["ph"] == "X" && e["cat"] == "request") {
      ++requests;
      EXPECT_TRUE(e["args"].contains("shape"));
      EXPECT_GE(e["dur"].get<double>(), 0.0);
    }
  EXPECT_EQ(requests, 20);
}

TEST_F(BenchCliTest, ShapesCycleToRequests) {
  BenchResult r = run("'" + demo() + "' --shapes x=2x64 x=5x64 --requests 7 --json '" + path("o.json") + "'");
  ASSERT_EQ(r.rc, 0) << r.err;
  json j = json::parse(slurp(path("o.json")));
  EXPECT_EQ(j["n_requests"], 7);
  EXPECT_EQ(j["trace"], "shapes");
  EXPECT_EQ(j["tierjit"]["mode"], "adaptive");
  ASSERT_EQ(j["shapes"].size(), 2u);
  EXPECT_EQ(j["shapes"][0]["count"], 4);  // requests 1, 3, 5, 7
  EXPECT_EQ(j["shapes"][1]["count"], 3);
}

TEST_F(BenchCliTest, EveryTierRuns) {
  EXPECT_EQ(run("'" + demo() + "' --shapes x=1x64 --tier 0").rc, 0);
  EXPECT_EQ(run("'" + demo() + "' --shapes x=1x64 --shapes x=3x64 --requests 4 --tier 1").rc, 0);
  EXPECT_EQ(run("'" + demo() + "' --shapes x=1x64 --tier 2").rc, 0);
  expect_one_line_error(run("'" + demo() + "' --shapes x=1x64 --tier 2 --mode interpret-only"),
                        "contradicts --mode interpret-only");
  BenchResult r = run("'" + demo() + "' --shapes x=1x64 --tier 7");
  EXPECT_EQ(r.rc, 2);
}

// Pinned tier 1 compiles both demo regions synchronously on the first call: the compile events
// (text, --json, and the chrome trace's "compiles" track) and a tier timeline from request 2.
TEST_F(BenchCliTest, CompileEventsAndTierTimelinePinned) {
  BenchResult r = run("'" + demo() + "' --shapes x=1x64 --requests 5 --tier 1 --json '" + path("o.json") +
                      "' --chrome-trace '" + path("c.json") + "'");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("compile events: 2 compiles"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("request 2: region 0 'gemm_0' -> tier 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("request 2: region 1 'gemm_1' -> tier 1"), std::string::npos) << r.out;
  json j = json::parse(slurp(path("o.json")));
  const json& t = j["tierjit"];
  ASSERT_EQ(t["compile_events"].size(), 2u) << t.dump();
  double total = 0;
  for (const json& e : t["compile_events"]) {
    EXPECT_EQ(e["tier"], 1);
    EXPECT_EQ(e["level"], "generic");
    EXPECT_GT(e["compile_ms"].get<double>(), 0.0);
    // Finished during the first request (after session creation started).
    EXPECT_GT(e["end_ms"].get<double>(), j["session_create_ms"].get<double>());
    total += e["compile_ms"].get<double>();
  }
  EXPECT_NEAR(t["compile_ms_total"].get<double>(), total, 0.01);
  ASSERT_EQ(t["tier_timeline"].size(), 2u);
  for (const json& s : t["tier_timeline"]) {
    EXPECT_EQ(s["request"], 2);
    EXPECT_EQ(s["tier"], 1);
  }
  json c = json::parse(slurp(path("c.json")));
  int compiles = 0, track_named = 0;
  for (const auto& e : c["traceEvents"]) {
    if (e["ph"] == "M" && e["tid"] == 2 && e["args"]["name"] == "compiles") ++track_named;
    if (e["ph"] == "X" && e["cat"] == "compile") {
      ++compiles;
      EXPECT_EQ(e["tid"], 2);
      EXPECT_EQ(e["args"]["tier"], 1);
    }
  }
  EXPECT_EQ(compiles, 2);
  EXPECT_EQ(track_named, 1);
}

// Adaptive (background compiles): whatever finished is reported consistently; requests are
// numbered within the trace.
TEST_F(BenchCliTest, CompileEventsAdaptiveAreConsistent) {
  BenchResult r = run("'" + demo() + "' --trace '" + std::string(TIERJIT_SOURCE_DIR) +
                      "/models/demo_mlp.zipf.txt' --json '" + path("o.json") + "'");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("compile events:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tier timeline"), std::string::npos) << r.out;
  json t = json::parse(slurp(path("o.json")))["tierjit"];
  for (const json& s : t["tier_timeline"]) {
    EXPECT_GE(s["request"].get<int>(), 2);  // a compile finishes after request 1 started
    EXPECT_LE(s["request"].get<int>(), 501);
    EXPECT_GE(s["tier"].get<int>(), 1);
  }
  EXPECT_LE(t["tier_timeline"].size(), t["compile_events"].size());
}

/// The per-region fields of --json (docs/bench.md "Regions and compiled coverage"), checked for
/// consistency: shares in [0, 1] summing to 1, fractions in [0, 1], the coverage sums recomputed
/// from the rows.
void check_regions(const json& t) {
  ASSERT_TRUE(t["regions"].is_array()) << t.dump();
  ASSERT_FALSE(t["regions"].empty()) << t.dump();
  double shares = 0, counted = 0, uncounted = 0;
  for (const json& r : t["regions"]) {
    for (const char* k : {"region", "region_name", "kind", "interp_share", "final_tier", "compiled_fraction_last10",
                          "payoff"})
      EXPECT_TRUE(r.contains(k)) << k << " " << r.dump();
    const double share = r["interp_share"].get<double>(), frac = r["compiled_fraction_last10"].get<double>();
    EXPECT_GE(share, 0.0);
    EXPECT_LE(share, 1.0);
    EXPECT_GE(frac, 0.0);
    EXPECT_LE(frac, 1.0);
    shares += share;
    (!r["payoff"].is_null() && r["payoff"].get<double>() >= 1.0 ? counted : uncounted) += share * frac;
  }
  EXPECT_NEAR(shares, 1.0, 1e-5);
  EXPECT_NEAR(t["compiled_coverage"].get<double>(), counted, 1e-5);
  EXPECT_NEAR(t["compiled_coverage_uncounted"].get<double>(), uncounted, 1e-5);
}

// Interpret-only: the demo's two regions (gemm_0, gemm_1) have their shares from the replay of
// all 20 requests, run at tier 0 only: coverage 0.
TEST_F(BenchCliTest, RegionsInterpretOnlyCoverZero) {
  std::string trace = write("t20.txt", twenty_requests());
  BenchResult r = run("'" + demo() + "' --trace '" + trace + "' --json '" + path("o.json") + "' --mode interpret-only");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("compiled coverage 0.0000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("interpret-only replay of all 20 requests"), std::string::npos) << r.out;
  const json t = json::parse(slurp(path("o.json")))["tierjit"];
  check_regions(t);
  ASSERT_EQ(t["regions"].size(), 2u) << t["regions"].dump();
  EXPECT_EQ(t["regions"][0]["region_name"], "gemm_0");
  EXPECT_EQ(t["regions"][1]["region_name"], "gemm_1");
  for (const json& g : t["regions"]) {
    EXPECT_EQ(g["kind"], "matmul_epilogue");
    EXPECT_EQ(g["final_tier"], 0);
    EXPECT_EQ(g["compiled_fraction_last10"], 0.0);
    EXPECT_TRUE(g["payoff"].is_null());
    EXPECT_GT(g["interp_share"].get<double>(), 0.0);
  }
  EXPECT_EQ(t["compiled_coverage"], 0.0);
  EXPECT_EQ(t["compiled_coverage_uncounted"], 0.0);
  EXPECT_EQ(t["interp_share_run"]["requests"], 20);
  EXPECT_EQ(t["interp_share_run"]["of"], 20);
  EXPECT_EQ(t["interp_share_run"]["which"], "all requests of the trace");
  EXPECT_EQ(t["last10"]["first_request"], 19);  // requests 19 and 20
  EXPECT_EQ(t["last10"]["requests"], 2);
}

// --tier 2 pins compiled code for both demo regions (each has a lowering): every call of the
// window ran it, final tier 2. Pinned sessions measure no payoff, so nothing is counted and the
// whole compiled share is in the uncounted sum. The replay covers the first 5 requests.
TEST_F(BenchCliTest, RegionsPinnedTierRunCompiledCode) {
  std::string trace = write("t20.txt", twenty_requests());
  BenchResult r = run("'" + demo() + "' --trace '" + trace + "' --json '" + path("o.json") +
                      "' --tier 2 --interp-share-requests 5");
  ASSERT_EQ(r.rc, 0) << r.err;
  const json t = json::parse(slurp(path("o.json")))["tierjit"];
  check_regions(t);
  ASSERT_EQ(t["regions"].size(), 2u);
  for (const json& g : t["regions"]) {
    EXPECT_EQ(g["final_tier"], 2) << g.dump();
    EXPECT_EQ(g["compiled_fraction_last10"], 1.0) << g.dump();
    EXPECT_TRUE(g["payoff"].is_null());
  }
  EXPECT_EQ(t["compiled_coverage"], 0.0);
  EXPECT_NEAR(t["compiled_coverage_uncounted"].get<double>(), 1.0, 1e-5);
  EXPECT_EQ(t["interp_share_run"]["requests"], 5);
  EXPECT_EQ(t["interp_share_run"]["which"], "the first requests of the trace");
  EXPECT_NE(r.out.find("interpret-only replay of the first 5 of 20 requests"), std::string::npos) << r.out;
}

// Adaptive on the demo's Zipf trace: whatever compiled, the fields agree with each other.
TEST_F(BenchCliTest, RegionsAdaptiveAreConsistent) {
  BenchResult r = run("'" + demo() + "' --trace '" + std::string(TIERJIT_SOURCE_DIR) +
                      "/models/demo_mlp.zipf.txt' --json '" + path("o.json") + "' --interp-share-requests 100");
  ASSERT_EQ(r.rc, 0) << r.err;
  const json t = json::parse(slurp(path("o.json")))["tierjit"];
  check_regions(t);
  EXPECT_EQ(t["last10"]["first_request"], 451);
  EXPECT_EQ(t["last10"]["requests"], 50);
  for (const json& g : t["regions"]) {
    if (!g["payoff"].is_null()) {
      EXPECT_GT(g["payoff"].get<double>(), 0.0);
    }
  }
}

// --interp-share-requests 0: no replay, no shares, no coverage; the option needs --json.
TEST_F(BenchCliTest, RegionsWithoutReplay) {
  BenchResult r = run("'" + demo() + "' --shapes x=2x64 --requests 3 --json '" + path("o.json") +
                      "' --tier 1 --interp-share-requests 0");
  ASSERT_EQ(r.rc, 0) << r.err;
  const json t = json::parse(slurp(path("o.json")))["tierjit"];
  ASSERT_EQ(t["regions"].size(), 2u);
  EXPECT_TRUE(t["regions"][0]["interp_share"].is_null());
  EXPECT_EQ(t["regions"][0]["compiled_fraction_last10"], 1.0);
  EXPECT_TRUE(t["compiled_coverage"].is_null());
  EXPECT_TRUE(t["compiled_coverage_uncounted"].is_null());
  EXPECT_EQ(t["interp_share_run"]["requests"], 0);
  expect_one_line_error(run("'" + demo() + "' --shapes x=2x64 --interp-share-requests 5"), "--json");
  expect_one_line_error(run("'" + demo() + "' --shapes x=2x64 --json '" + path("p.json") +
                            "' --interp-share-requests -1"),
                        "--interp-share-requests");
}

TEST_F(BenchCliTest, Errors) {
  expect_one_line_error(run("'" + demo() + "' --trace '" + path("missing.txt") + "'"), "missing.txt: no such file");
  expect_one_line_error(run("'" + demo() + "' --trace '" + write("bad.txt", "x=1x64\n# c\nx=1xz64\n") + "'"),
                        "bad.txt:3: input 'x': bad dim");
  expect_one_line_error(run("'" + demo() + "' --trace '" + write("e.txt", "# nothing\n\n") + "'"),
                        "e.txt: empty trace");
  expect_one_line_error(run("'" + demo() + "' --trace '" + write("n.txt", "x=1x64\ny=1x64\n") + "'"),
                        "n.txt:2: the model has no input 'y'");
  expect_one_line_error(run("'" + demo() + "' --trace '" + write("r.txt", "x=1x64x1\n") + "'"),
                        "r.txt:1: input 'x': the request has rank 3");
  expect_one_line_error(run("'" + demo() + "' --trace '" + write("d.txt", "x=4x32\n") + "'"),
                        "d.txt:1: input 'x': the request has shape [4, 32], the model expects dim 1 = 64");
  expect_one_line_error(run("'" + demo() + "' --requests 5"), "--requests needs --shapes");
  expect_one_line_error(run("'" + demo() + "' --trace '" + write("t.txt", "x=1x64\n") + "' --requests 5"),
                        "--requests needs --shapes");
  expect_one_line_error(run("'" + demo() + "'"), "--trace FILE or --shapes");
  expect_one_line_error(run("'" + demo() + "' --trace '" + write("t2.txt", "x=1x64\n") + "' --shapes x=1x64"),
                        "not both");
  expect_one_line_error(run("'" + demo() + "' --shapes x=1x64 --int-range y=0:5"), "unknown input 'y'");
  expect_one_line_error(run("'" + path("nope.onnx") + "' --shapes x=1x64"), "nope.onnx");
  // Output files that cannot be written fail before the benchmark runs (nothing printed first).
  for (const char* opt : {"--json", "--chrome-trace"}) {
    BenchResult r = run("'" + demo() + "' --shapes x=1x64 --requests 3 " + opt + " '" +
                        path("no_such_dir/o.json") + "'");
    expect_one_line_error(r, std::string(opt) + " " + path("no_such_dir/o.json") + ": directory");
    EXPECT_EQ(r.out.find("p50"), std::string::npos) << r.out;
    expect_one_line_error(run("'" + demo() + "' --shapes x=1x64 " + opt + " '" + path("") + "'"),
                          "is a directory");
    expect_one_line_error(run("'" + demo() + "' --shapes x=1x64 " + opt + " ''"), "an empty path");
    // A parent that is a file; a symbolic link (dangling or not) is never written through.
    const std::string file = write("plain.txt", "x");
    expect_one_line_error(run("'" + demo() + "' --shapes x=1x64 " + opt + " '" + file + "/o.json'"),
                          "plain.txt is not a directory");
    std::filesystem::remove(path("dangling.json"));
    std::filesystem::create_symlink("/nonexistent_tierjit_dir/o.json", path("dangling.json"));
    expect_one_line_error(run("'" + demo() + "' --shapes x=1x64 " + opt + " '" + path("dangling.json") + "'"),
                          std::string(opt) + " " + path("dangling.json") + ": is a symbolic link");
    const std::string victim = write("victim.txt", "keep");
    std::filesystem::remove(path("link.json"));
    std::filesystem::create_symlink(victim, path("link.json"));
    BenchResult l = run("'" + demo() + "' --shapes x=1x64 --requests 3 " + opt + " '" + path("link.json") + "'");
    expect_one_line_error(l, std::string(opt) + " " + path("link.json") + ": is a symbolic link");
    EXPECT_EQ(slurp(victim), "keep");
    // A directory whose permission bits allow writing (to root every access() check passes) that
    // refuses new files: refused before the benchmark, with the system's reason.
    BenchResult p = run("'" + demo() + "' --shapes x=1x64 --requests 3 " + opt + " /proc/tierjit_o.json");
    expect_one_line_error(p, std::string(opt) + " /proc/tierjit_o.json: cannot create a file in directory /proc (");
    EXPECT_EQ(p.out.find("p50"), std::string::npos) << p.out;
  }
  // The probe of a writable path leaves nothing behind when the benchmark then fails.
  std::filesystem::remove(path("probe.json"));
  expect_one_line_error(run("'" + demo() + "' --shapes x=1x65 --json '" + path("probe.json") + "'"),
                        "expects dim 1 = 64");
  EXPECT_FALSE(std::filesystem::exists(path("probe.json")));
  expect_one_line_error(run("'" + demo() + "' --shapes x=1x64 --json '" + path("same.json") +
                            "' --chrome-trace '" + dir_.string() + "/./same.json'"),
                        "name the same file");
}

}  // namespace
