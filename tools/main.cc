// Entry point of the `tierjit` command-line program: argument parsing (CLI11) and dispatch to
// the subcommands in cmd_*.cc. Exit codes: 0 success, 1 test failures (onnx-test), 2 bad input
// or usage; every error is one line on stderr ("tierjit: error: ..."). See docs/cli.md.
#include <CLI/CLI.hpp>

#include <charconv>

#include "cli_util.h"
#include "cmd_bench.h"
#include "cmd_explain.h"
#include "support/serving_defaults.h"

namespace {

using namespace tierjit;

/// "1024", "64K", "512M", "4G" (powers of 1024) -> bytes.
bool parse_bytes(const std::string& text, int64_t& out) {
  if (text.empty()) return false;
  std::string digits = text;
  int shift = 0;
  char last = static_cast<char>(std::toupper(static_cast<unsigned char>(text.back())));
  if (last == 'K' || last == 'M' || last == 'G' || last == 'T') {
    shift = last == 'K' ? 10 : last == 'M' ? 20 : last == 'G' ? 30 : 40;
    digits.pop_back();
  }
  int64_t v = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || p != digits.data() + digits.size() || v <= 0) return false;
  if (v > (INT64_MAX >> shift)) return false;
  out = v << shift;
  return true;
}

int run_main(int argc, char** argv) {
  CLI::App app{"tierjit — adaptive tiered JIT compiler and runtime for ONNX models on CPU.\n"
               "Exit codes: 0 success, 1 test failures (onnx-test), 2 bad input or usage."};
  app.name("tierjit");
  app.set_version_flag("--version", "tierjit " + tierjit::version_string());
  app.require_subcommand(1);

  // An unsigned option given a negative value (CLI11 would wrap it around) or nothing.
  const CLI::Validator kNonNegative(
      [](std::string& v) {
        const size_t first = v.find_first_not_of(" \t");
        return first == std::string::npos || v[first] == '-' ? std::string("must be a non-negative integer")
                                                              : std::string();
      },
      "UINT");

  // An integer option within [lo, hi]: the value must parse as an integer first (CLI11's Range
  // alone said "Value abc not in range 0 to 1024" for a word).
  const auto integer_in = [](auto lo, auto hi) {
    const int64_t low = lo, high = hi;
    return CLI::Validator(
        [low, high](std::string& v) {
          int64_t parsed = 0;
          if (CLI::detail::lexical_cast(v, parsed) && parsed >= low && parsed <= high) return std::string();
          return "'" + v + "' is not an integer in [" + std::to_string(low) + ", " + std::to_string(high) + "]";
        },
        "INT in [" + std::to_string(low) + " - " + std::to_string(high) + "]");
  };

  // A tolerance (onnx-test --atol / --rtol): a finite decimal number >= 0 (cli::parse_tolerance).
  const auto tolerance_into = [](std::string option, double& target) {
    return [option, &target](const std::string& v) {
      std::optional<double> parsed = cli::parse_tolerance(v);
      if (!parsed) throw CLI::ValidationError(option + " '" + v + "': expected a finite number >= 0");
      target = *parsed;
    };
  };

  // ---- run ----
  cli::RunOptions run;
  std::string memory_limit, arena_limit;
  CLI::App* run_cmd = app.add_subcommand(
      "run", "Run a model once on given or random inputs and print (or save) its outputs.");
  run_cmd->add_option("model", run.model, "ONNX model file (.onnx)")->required();
  run_cmd->add_option("-i,--input", run.inputs,
                      "NAME=FILE.npy, NAME=FILE.pb or NAME=random:DxD... (repeatable); inputs not "
                      "given are random (see docs/cli.md)");
  run_cmd->add_option("--dim", run.dims, "NAME=VALUE: value of a symbolic dim for random inputs (repeatable)");
  run_cmd->add_option("--int-range", run.int_ranges,
                      "NAME=LO:HI: random integers for input NAME in [LO, HI) (repeatable)");
  run_cmd->add_option("-o,--output-dir", run.output_dir, "write one file per output into DIR");
  run_cmd->add_option("--output-format", run.output_format, "npy (default) or pb")
      ->check(CLI::IsMember({"npy", "pb"}));
  run_cmd->add_option("--threads", run.threads, "threads per kernel (0 = all cores; default 1)")
      ->check(integer_in(0, 1024));
  run_cmd->add_option("--memory-limit", memory_limit,
                      "largest tensor in bytes, feed files included (suffix K, M, G; default 16G)");
  run_cmd->add_option("--arena-limit", arena_limit,
                      "largest total of the intermediates alive at once in a run, in bytes (suffix "
                      "K, M, G; default none)");
  run_cmd->add_option("--seed", run.seed, "seed of the random inputs (default 0)")
      ->check(kNonNegative);
  run_cmd->add_flag("-q,--quiet", run.quiet, "print only the outputs");
  run_cmd->add_option("--tier", run.tier, "0: interpreter only; 1-3: compile every region that has a "
                      "lowering at that tier (others stay on tier 0); default adaptive")
      ->check(integer_in(0, 3));
  run_cmd->add_flag("--verify", run.verify, "check each compiled version against tier 0 on its first call");

  // ---- onnx-test ----
  cli::OnnxTestOptions test;
  CLI::App* test_cmd = app.add_subcommand(
      "onnx-test", "Run ONNX backend test folders (model.onnx + test_data_set_N/) and compare "
                   "outputs (|got - want| <= atol + rtol * |want|; default rtol 1e-3, atol 1e-7). "
                   "Ends with 'N passed, N failed, N skipped'.");
  test_cmd->add_option("path", test.paths, "a test folder, or a folder of test folders")->required();
  test_cmd->add_option("--expected-failures", test.expected_failures,
                       "file of `test_name  # reason` lines: tests known to fail");
  test_cmd->add_option("--write-expected-failures", test.write_expected_failures,
                       "write the failing tests with their reasons to FILE (entries of tests not run "
                       "are kept)");
  test_cmd->add_option("--filter", test.filter, "run only tests whose name contains SUBSTR");
  test_cmd->add_option("--threads", test.threads, "threads per kernel (0 = all cores; default 1)")
      ->check(integer_in(0, 1024));
  test_cmd->add_option("--timeout", test.timeout_seconds,
                       "seconds one test may take (default 300, 0 = none); a test over it ends the run")
      ->check(integer_in(0, 86400));
  test_cmd->add_flag("-v,--verbose", test.verbose, "print every test with its time");
  test_cmd->add_option("--tier", test.tier, "0: interpreter only; 1-3: compile every region that has a "
                       "lowering at that tier (others stay on tier 0); default adaptive")
      ->check(integer_in(0, 3));
  test_cmd->add_flag("--verify", test.verify, "check each compiled version against tier 0 on its first call");
  test_cmd->add_option_function<std::string>("--atol", tolerance_into("--atol", test.tolerance.atol),
                                             "absolute tolerance of float outputs (default 1e-7)");
  test_cmd->add_option_function<std::string>("--rtol", tolerance_into("--rtol", test.tolerance.rtol),
                                             "relative tolerance of float outputs, times |expected| "
                                             "(default 1e-3)");

  // ---- explain ----
  cli::ExplainOptions explain;
  CLI::App* explain_cmd = app.add_subcommand(
      "explain", "Print the regions (fusion groups) of a model after the graph passes: id, kind, "
                 "ops, input/output values with symbolic shapes, and a summary per kind.");
  explain_cmd->add_option("model", explain.model, "ONNX model file (.onnx)")->required();
  explain_cmd->add_flag("--no-fuse", explain.no_fuse, "one region per node (no fusion)");
  explain_cmd->add_flag("--graph", explain.print_graph, "also print the graph after the passes");
  CLI::Option* explain_trace = explain_cmd->add_option("--trace", explain.trace,
                          "replay this shape trace in-process (as bench does) and print each region's "
                          "tier, versions and guards, a summary and the decision log's last entries");
  explain_cmd->add_option("--mode", explain.mode, "with --trace: adaptive (default) or interpret-only")
      ->check(CLI::IsMember({"adaptive", "interpret-only"}))
      ->needs(explain_trace);
  explain_cmd->add_option("--tier", explain.tier, "with --trace: pin every region at tier N (0-3)")
      ->check(integer_in(0, 3))
      ->needs(explain_trace);
  explain_cmd->add_option("--int-range", explain.int_ranges,
                          "with --trace: NAME=LO:HI: random integers for input NAME in [LO, HI) (repeatable)")
      ->needs(explain_trace);
  explain_cmd->add_option("--seed", explain.seed, "with --trace: seed of the random inputs (default 0)")
      ->check(kNonNegative)
      ->needs(explain_trace);
  explain_cmd->add_option("--log-entries", explain.log_entries, "with --trace: decision log records printed (default 12)")
      ->check(integer_in(0, 100000))
      ->needs(explain_trace);

  // ---- bench ----
  cli::BenchOptions bench;
  CLI::App* bench_cmd = app.add_subcommand(
      "bench", "Replay a shape trace (or --shapes cycled --requests times) on random inputs and print "
               "per-shape latency (nearest-rank p50/p90/p99), first-request, session-creation and total "
               "wall time, compile events and the tier timeline (see docs/bench.md).");
  bench_cmd->add_option("model", bench.model, "ONNX model file (.onnx)")->required();
  bench_cmd->add_option("--trace", bench.trace, "trace file: one request per line, name=DxD;name=DxD ('#' comments)");
  bench_cmd->add_option("--shapes", bench.shapes, "request lines such as x=8x64 (repeatable), cycled --requests times");
  bench_cmd->add_option("--requests", bench.requests, "number of requests with --shapes (default: one per SPEC)")
      ->check(integer_in(int64_t{1}, int64_t{1} << 40));
  bench_cmd->add_option("--mode", bench.mode,
                        "adaptive (default: tier 0 first, hot regions compiled) or interpret-only (tier 0)")
      ->check(CLI::IsMember({"adaptive", "interpret-only"}));
  bench_cmd->add_option("--tier", bench.tier, "pin every region at tier N (0: interpreter; 1-3: compiled where a lowering exists)")
      ->check(integer_in(0, 3));
  auto non_empty = [](const std::string& v) { return v.empty() ? std::string("an empty path") : std::string(); };
  CLI::Option* bench_json =
      bench_cmd->add_option("--json", bench.json_out, "write the results as one JSON object (docs/bench.md)")
          ->check(non_empty);
  bench_cmd->add_option("--chrome-trace", bench.chrome_trace_out, "write a Chrome trace-event JSON (opens in Perfetto)")
      ->check(non_empty);
  bench_cmd->add_option("--int-range", bench.int_ranges,
                        "NAME=LO:HI: random integers for input NAME in [LO, HI) (repeatable)");
  bench_cmd->add_option("--threads", bench.threads, "threads per kernel (0 = all cores; default 1)")
      ->check(integer_in(0, 1024));
  bench_cmd->add_option("--seed", bench.seed, "seed of the random inputs (default 0)")
      ->check(kNonNegative);
  bench_cmd->add_option("--interp-share-requests", bench.interp_share_requests,
                        "with --json: requests (the trace's first N) of the interpret-only replay that "
                        "gives each region's share of time (default 1000; 0 = none)")
      ->check(integer_in(int64_t{0}, int64_t{1} << 40))
      ->needs(bench_json);
  bench_cmd->add_flag("--time-regions", bench.time_regions,
                      "time every region's step (a clock read per region and call) and print each region's mean "
                      "us per call at the tier it ran, slowest first (in --json: regions[].mean_us)");
  bench_cmd->add_flag("--no-progress", bench.no_progress, "no progress bar (it is drawn only when stderr is a terminal)");
  bench_cmd->add_flag("--no-warm-up", bench.no_warm_up,
                      "no warm-up run at session creation (SessionOptions::warm_up = false)");

  if (argc > 1 && argv[1][0] != '-' && std::string(argv[1]) != "run" && std::string(argv[1]) != "onnx-test" &&
      std::string(argv[1]) != "explain" && std::string(argv[1]) != "bench") {
    fmt::print(stderr, "tierjit: error: unknown command '{}' (commands: run, onnx-test, explain, bench; see tierjit --help)\n",
               argv[1]);
    return cli::kExitError;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string msg = cli::one_line(e.what());
    fmt::print(stderr, "tierjit: error: {} (see tierjit --help)\n", msg.empty() ? "bad usage" : msg);
    return cli::kExitError;
  }

  if (*run_cmd) {
    if (!memory_limit.empty() && !parse_bytes(memory_limit, run.memory_limit)) {
      fmt::print(stderr, "tierjit: error: --memory-limit '{}': expected a positive byte count such as 4G\n",
                 memory_limit);
      return cli::kExitError;
    }
    if (!arena_limit.empty() && !parse_bytes(arena_limit, run.arena_limit)) {
      fmt::print(stderr, "tierjit: error: --arena-limit '{}': expected a positive byte count such as 4G\n",
                 arena_limit);
      return cli::kExitError;
    }
    return cli::cmd_run(run);
  }
  if (*test_cmd) return cli::cmd_onnx_test(test);
  if (*explain_cmd) return cli::cmd_explain(explain);
  if (*bench_cmd) return cli::cmd_bench(bench);
  return cli::kExitError;
}

}  // namespace

int main(int argc, char** argv) {
  // Serving defaults (support/serving_defaults.h): idle OpenMP threads spin briefly, then sleep
  // (re-executes once unless OMP_WAIT_POLICY/GOMP_SPINCOUNT is set), per-request tensors reuse
  // heap pages.
  tierjit::support::reexec_with_serving_openmp(argv);
  tierjit::support::set_malloc_for_serving();
  try {
    return run_main(argc, argv);
  } catch (const tierjit::Error& e) {
    fmt::print(stderr, "tierjit: error: {}\n", tierjit::cli::one_line(e.what()));
  } catch (const std::exception& e) {
    fmt::print(stderr, "tierjit: error: {}\n", tierjit::cli::one_line(e.what()));
  }
  return tierjit::cli::kExitError;
}
