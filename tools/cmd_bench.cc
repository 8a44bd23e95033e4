// `tierjit bench`: replays a shape trace through the public Session API and reports latency per
// shape (nearest-rank p50/p90/p99), first-request and session-creation time, total wall time,
// compile events and the tier timeline; --json writes the fields of ../shared/bench/README.md
// plus tierjit's own, --chrome-trace a Perfetto-readable timeline. --tier N pins the compiled
// tiers (SessionOptions::mode). Compile events and the tier timeline come from the Session's
// decision log after the loop (replay.h), so the timed loop does no extra work; compiles still in
// the background when the loop ends are waited for (Session::wait_for_compiles) before reporting.
#include "cmd_bench.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>
#include <unordered_map>

#include "bench_regions.h"
#include "bench_stats.h"
#include "cli_util.h"
#include "support/file_io.h"
#include "replay.h"
#include "trace.h"

namespace tierjit::cli {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::ordered_json;

constexpr int kMaxTier = 3;
constexpr int64_t kCompileWaitMs = 60000;  ///< how long the report waits for background compiles

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

/// Rounds to 1 microsecond, as the shared runners do for `*_ms` fields.
double round_ms(double v) { return std::round(v * 1000.0) / 1000.0; }

std::string stem(const std::string& path) { return std::filesystem::path(path).stem().string(); }

/// Progress bar on stderr, drawn only when stderr is a terminal, at most every 100 ms.
class ProgressBar {
 public:
  ProgressBar(int64_t total, bool enabled) : total_(total), enabled_(enabled && ::isatty(::fileno(stderr))) {}
  void update(int64_t done, const std::string& shape) {
    if (!enabled_) return;
    auto now = Clock::now();
    if (done < total_ && drawn_ && ms_between(last_, now) < 100) return;
    last_ = now;
    drawn_ = true;
    constexpr int kWidth = 30;
    int fill = static_cast<int>(kWidth * done / std::max<int64_t>(1, total_));
    std::string bar(static_cast<size_t>(fill), '=');
    bar.resize(kWidth, ' ');
    fmt::print(stderr, "\r\033[K[{}] {}/{}  {}", bar, done, total_, shape);
    std::fflush(stderr);
  }
  void finish() {
    if (enabled_ && drawn_) {
      fmt::print(stderr, "\r\033[K");
      std::fflush(stderr);
    }
  }

 private:
  int64_t total_;
  bool enabled_;
  bool drawn_ = false;
  Clock::time_point last_;
};

json stats_json(const LatencyStats& s) {
  return json{{"p50_ms", round_ms(s.p50_ms)},
              {"p90_ms", round_ms(s.p90_ms)},
              {"p99_ms", round_ms(s.p99_ms)},
              {"mean_ms", round_ms(s.mean_ms)},
              {"max_ms", round_ms(s.max_ms)}};
}

// Throws "WHAT PATH: why" (what: the option naming the file) for a failed file status.
void throw_for_option(const Status& st, const char* what) {
  if (!st.ok()) throw Error(st.code(), fmt::format("{} {}", what, st.message()));
}

void write_text_file(const std::string& path, const std::string& text, const char* what) {
  throw_for_option(write_file_no_follow(path, text), what);
}

std::string fmt_ms(double v) { return fmt::format("{:.3f}", v); }

// An output file `what` PATH that cannot be written is an error before the benchmark runs, not
// after it: PATH a symbolic link (never written through: support/file_io.h), a directory, an
// existing file without write permission, or a parent that is missing, not a directory or not
// writable. Permission bits do not decide it (root passes every access() check, yet /proc and
// /sys refuse new files): the file is opened for writing, without truncating, and a file the
// probe created is removed.
void check_writable(const std::string& path, const char* what) {
  if (path.empty()) return;  // not asked for (CLI11 refuses an empty value: main.cc)
  namespace fs = std::filesystem;
  std::error_code ec;
  auto fail = [&](const std::string& why) {
    throw Error(StatusCode::kInvalidArgument, fmt::format("{} {}: {}", what, path, why));
  };
  throw_for_option(check_not_symlink(path), what);
  const fs::path target = path;
  if (fs::exists(target, ec)) {
    if (fs::is_directory(target, ec)) fail("is a directory");
    const int fd = ::open(target.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);  // a FIFO: no wait
    if (fd < 0) fail(fmt::format("the file is not writable ({})", std::strerror(errno)));
    ::close(fd);
    return;
  }
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!fs::exists(dir, ec)) fail(fmt::format("directory {} does not exist", dir.string()));
  if (!fs::is_directory(dir, ec)) fail(fmt::format("{} is not a directory", dir.string()));
  const int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    fail(fmt::format("cannot create a file in directory {} ({})", dir.string(), std::strerror(errno)));
  ::close(fd);
  ::unlink(target.c_str());
}

void check_options(const BenchOptions& opts) {
  check_writable(opts.json_out, "--json");
  check_writable(opts.chrome_trace_out, "--chrome-trace");
  if (!opts.json_out.empty() && !opts.chrome_trace_out.empty()) {
    std::error_code ea, eb;
    const auto a = std::filesystem::weakly_canonical(opts.json_out, ea);
    const auto b = std::filesystem::weakly_canonical(opts.chrome_trace_out, eb);
    if (ea || eb ? opts.json_out == opts.chrome_trace_out : a == b)
      throw Error(StatusCode::kInvalidArgument,
                  fmt::format("--json and --chrome-trace name the same file {}", opts.json_out));
  }
  if (opts.mode != "adaptive" && opts.mode != "interpret-only")
    throw Error(StatusCode::kInvalidArgument, "--mode must be adaptive or interpret-only, got '" + opts.mode + "'");
  if (!opts.trace.empty() && !opts.shapes.empty())
    throw Error(StatusCode::kInvalidArgument, "give either --trace FILE or --shapes SPEC..., not both");
  if (opts.requests >= 0 && opts.shapes.empty())
    throw Error(StatusCode::kInvalidArgument, "--requests needs --shapes (a --trace file sets its own requests)");
  if (opts.trace.empty() && opts.shapes.empty())
    throw Error(StatusCode::kInvalidArgument, "give the requests: --trace FILE or --shapes SPEC... [--requests N]");
  if (opts.threads < 0) throw Error(StatusCode::kInvalidArgument, "--threads must be >= 0");
  if (opts.tier >= 0) {
    if (opts.tier > kMaxTier)
      throw Error(StatusCode::kInvalidArgument, fmt::format("--tier {}: no such tier (tiers are 0-{})", opts.tier, kMaxTier));
    if (opts.tier > 0 && opts.mode == "interpret-only")
      throw Error(StatusCode::kInvalidArgument,
                  fmt::format("--tier {} contradicts --mode interpret-only (tier 0)", opts.tier));
  }
}

/// The "compile events" and "tier timeline" blocks of the text output.
void print_compile_report(const std::vector<CompileEvent>& compiles, const std::vector<TierStep>& timeline,
                          double compile_ms_total, size_t n) {
  if (compiles.empty()) {
    fmt::print("compile events: none\n");
  } else {
    fmt::print("\ncompile events: {} compiles, {} ms in total\n", compiles.size(), fmt_ms(compile_ms_total));
    fmt::print("  {:>10}  {:>10}  {:>4}  {:<11}  {}\n", "end_ms", "compile_ms", "tier", "level", "region");
    for (const CompileEvent& e : compiles)
      fmt::print("  {:>10}  {:>10}  {:>4}  {:<11}  {} '{}'\n", fmt_ms(e.end_ms), fmt_ms(e.compile_ms), e.tier, e.level,
                 e.region, e.region_name);
  }
  if (timeline.empty()) {
    fmt::print("tier timeline: requests 1-{} all at tier 0 (no region was compiled)\n", n);
    return;
  }
  fmt::print("tier timeline (from the first request that could run the new tier):\n");
  for (const TierStep& t : timeline) {
    if (t.request > n)
      fmt::print("  after request {}: region {} '{}' -> tier {}\n", n, t.region, t.region_name, t.tier);
    else
      fmt::print("  request {}: region {} '{}' -> tier {}\n", t.request, t.region, t.region_name, t.tier);
  }
}

json compile_events_json(const std::vector<CompileEvent>& compiles) {
  json out = json::array();
  for (const CompileEvent& e : compiles)
    out.push_back({{"end_ms", round_ms(e.end_ms)}, {"compile_ms", round_ms(e.compile_ms)}, {"tier", e.tier},
                   {"region", e.region}, {"region_name", e.region_name}, {"level", e.level},
                   {"message", e.message}});
  return out;
}

double round6(double v) { return std::round(v * 1e6) / 1e6; }

json regions_json(const std::vector<RegionMeasure>& regions) {
  json out = json::array();
  for (const RegionMeasure& r : regions)
    out.push_back({{"region", r.region}, {"region_name", r.name}, {"kind", r.kind},
                   {"interp_share", r.interp_share ? json(round6(*r.interp_share)) : json(nullptr)},
                   {"final_tier", r.final_tier},
                   {"compiled_fraction_last10", round6(r.compiled_fraction_last10)},
                   {"payoff", r.payoff ? json(round6(*r.payoff)) : json(nullptr)},
                   {"mean_us", r.mean_us ? json(round6(*r.mean_us)) : json(nullptr)}});
  return out;
}

json tier_timeline_json(const std::vector<TierStep>& timeline) {
  json out = json::array();
  for (const TierStep& t : timeline)
    out.push_back({{"request", t.request}, {"region", t.region}, {"region_name", t.region_name}, {"tier", t.tier}});
  return out;
}

void bench_impl(const BenchOptions& opts) {
  check_options(opts);
  Trace trace = opts.trace.empty()
                    ? trace_from_specs(opts.shapes, opts.requests >= 0 ? opts.requests
                                                                       : static_cast<int64_t>(opts.shapes.size()))
                          .value_or_throw()
                    : read_trace_file(opts.trace).value_or_throw();
  std::map<std::string, IntRange> ranges;
  for (const auto& r : opts.int_ranges) {
    auto p = parse_int_range(r);
    if (!p.ok()) p.status().throw_if_error();
    ranges[p->first] = p->second;
  }

  // ---- Session creation (timed) ----
  SessionOptions so;
  so.intra_op_threads = opts.threads;
  so.warm_up = !opts.no_warm_up;
  if (opts.mode == "interpret-only") so.mode = ExecutionMode::kInterpretOnly;
  apply_tier(opts.tier, so);
  const bool measure_regions = !opts.json_out.empty();
  so.count_region_calls = measure_regions;  // compiled calls per region (the last-10% window)
  so.time_regions = opts.time_regions;
  const Clock::time_point t_origin = Clock::now();
  Session session(opts.model, so);
  const Clock::time_point t_created = Clock::now();
  const double session_create_ms = ms_between(t_origin, t_created);

  const auto& model_inputs = session.inputs();
  for (const auto& [name, r] : ranges)
    if (std::none_of(model_inputs.begin(), model_inputs.end(), [&, &n = name](const TensorInfo& i) { return i.name == n; }))
      throw Error(StatusCode::kInvalidArgument, opts.model + ": --int-range names unknown input '" + name + "'");

  // ---- Requests -> distinct shapes; inputs generated once per shape, before the timed loop ----
  const size_t n = trace.requests.size();
  ReplayFeeds replay = make_replay_feeds(trace, model_inputs, ranges, opts.seed, so.memory_limit_bytes, opts.model);
  const std::vector<std::string>& key_of = replay.key_of;
  const std::vector<size_t>& feed_of = replay.feed_of;
  const std::vector<NamedTensors>& feeds = replay.feeds;

  // ---- The timed loop ----
  std::vector<double> latency(n), start_ms(n);
  ProgressBar progress(static_cast<int64_t>(n), !opts.no_progress);
  // Compiled calls per region when the last 10% of the requests start (read between two
  // requests: a relaxed load per region).
  const RequestWindow window = last_tenth(n);
  std::vector<uint64_t> compiled_at_window;
  const Clock::time_point t_loop = Clock::now();
  for (size_t i = 0; i < n; ++i) {
    progress.update(static_cast<int64_t>(i), key_of[i]);
    if (measure_regions && i == window.first) compiled_at_window = session.region_compiled_calls();
    NamedTensors outputs;
    const Clock::time_point t0 = Clock::now();
    try {
      outputs = session.run(feeds[feed_of[i]]);
    } catch (const Error& e) {
      progress.finish();
      throw Error(e.code(), fmt::format("request {} ({}, {}): {}", i + 1, trace.requests[i].location, key_of[i],
                                        e.what()));
    }
    const Clock::time_point t1 = Clock::now();
    latency[i] = ms_between(t0, t1);
    start_ms[i] = ms_between(t_origin, t0);
  }
  const double total_wall_ms = ms_between(t_loop, Clock::now());
  progress.update(static_cast<int64_t>(n), "");
  progress.finish();
  // What the regions ran: read before the wait below, so a compile finishing after the last
  // request does not count as installed.
  std::vector<RegionReport> main_regions;
  std::vector<uint64_t> compiled_at_end;
  if (measure_regions || opts.time_regions) {
    main_regions = session.region_reports();
    compiled_at_end = session.region_compiled_calls();
  }
  // Background compiles still running when the loop ended finish now (outside the timed loop), so
  // the compile events below are complete; they show as "after request n" in the tier timeline.
  if (!session.wait_for_compiles(kCompileWaitMs))
    fmt::print(stderr, "tierjit bench: compiles still running after {} s; the compile events are incomplete\n",
               kCompileWaitMs / 1000);
  const int64_t origin_us =
      std::chrono::duration_cast<std::chrono::microseconds>(t_origin.time_since_epoch()).count();
  const std::vector<CompileEvent> compiles = compile_events(session.decision_log_json(), origin_us);
  const std::vector<TierStep> timeline = tier_timeline(compiles, start_ms);
  double compile_ms_total = 0;
  for (const CompileEvent& e : compiles) compile_ms_total += e.compile_ms;

  BenchStats stats = compute_bench_stats(key_of, latency);
  const int threads = opts.threads > 0 ? opts.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::string trace_name = opts.trace.empty() ? "shapes" : stem(opts.trace);

  // ---- Regions: an interpret-only replay for the shares (after the timed loop), the rows ----
  InterpShares shares;
  std::vector<RegionMeasure> regions;
  Coverage coverage;
  const size_t share_requests = static_cast<size_t>(std::max<int64_t>(0, opts.interp_share_requests));
  if (measure_regions) {
    if (share_requests > 0) {
      ProgressBar share_progress(1, !opts.no_progress);
      share_progress.update(0, "interpret-only replay for interp_share");
      shares = interp_shares(opts.model, so, replay, share_requests);
      share_progress.finish();
    }
    regions = region_measures(shares.regions, main_regions, compiled_at_window, compiled_at_end, window.count);
    coverage = compiled_coverage(regions);
  }
  const std::string share_note =
      share_requests == 0 ? "not measured (--interp-share-requests 0)"
      : shares.requests == n ? fmt::format("interpret-only replay of all {} requests", n)
                             : fmt::format("interpret-only replay of the first {} of {} requests", shares.requests, n);

  // ---- Table ----
  size_t w = std::string("overall").size();
  for (const auto& s : stats.shapes) w = std::max(w, escape_name(s.shape).size());
  fmt::print("tierjit bench: {} on {} ({} requests, {} distinct shapes), mode {}{}, {} thread{}\n",
             escape_name(opts.model), opts.trace.empty() ? "--shapes" : escape_name(opts.trace), n, stats.shapes.size(), opts.mode,
             opts.tier >= 0 ? fmt::format(" --tier {}", opts.tier) : std::string(),
             threads, threads == 1 ? "" : "s");
  fmt::print("\n{:<{}}  {:>6}  {:>9}  {:>9}  {:>9}  {:>9}  {:>9}  {:>9}  {:>16}\n", "shape", w, "count", "first_ms",
             "p50_ms", "p90_ms", "p99_ms", "mean_ms", "max_ms", "mean_after_first");
  auto row = [&](const std::string& name, const LatencyStats& s) {
    fmt::print("{:<{}}  {:>6}  {:>9}  {:>9}  {:>9}  {:>9}  {:>9}  {:>9}  {:>16}\n", escape_name(name), w, s.count,
               fmt_ms(s.first_ms), fmt_ms(s.p50_ms), fmt_ms(s.p90_ms), fmt_ms(s.p99_ms), fmt_ms(s.mean_ms),
               fmt_ms(s.max_ms), s.mean_after_first_ms ? fmt_ms(*s.mean_after_first_ms) : "-");
  };
  // Most frequent shapes first (ties: first appearance); the JSON keeps first-appearance order.
  std::vector<size_t> order(stats.shapes.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return stats.shapes[a].stats.count > stats.shapes[b].stats.count; });
  for (size_t k : order) row(stats.shapes[k].shape, stats.shapes[k].stats);
  row("overall", stats.overall);
  fmt::print("\nsession_create_ms  {}\nfirst_run_ms       {}\ntotal_wall_ms      {}\n", fmt_ms(session_create_ms),
             fmt_ms(latency.front()), fmt_ms(total_wall_ms));
  print_compile_report(compiles, timeline, compile_ms_total, n);
  if (measure_regions) print_region_report(regions, coverage, share_note, window);
  if (opts.time_regions) print_region_times(main_regions, 30);

  // ---- --json ----
  if (!opts.json_out.empty()) {
    json shapes = json::array();
    for (const auto& s : stats.shapes) {
      json j{{"shape", s.shape}, {"count", s.stats.count}, {"first_ms", round_ms(s.stats.first_ms)}};
      j.update(stats_json(s.stats));
      j["mean_after_first_ms"] =
          s.stats.mean_after_first_ms ? json(round_ms(*s.stats.mean_after_first_ms)) : json(nullptr);
      shapes.push_back(std::move(j));
    }
    json lat = json::array();
    for (double v : latency) lat.push_back(round_ms(v));
    json out{
        {"peer", "tierjit"},
        {"peer_version", version_string()},
        {"model", stem(opts.model)},
        {"trace", trace_name},
        {"threads", threads},
        {"n_requests", n},
        {"n_shapes", stats.shapes.size()},
        {"session_create_ms", round_ms(session_create_ms)},
        {"first_run_ms", round_ms(latency.front())},
        {"total_wall_ms", round_ms(total_wall_ms)},
        {"overall", stats_json(stats.overall)},
        {"shapes", std::move(shapes)},
        {"tierjit",
         {{"mode", opts.mode},
          {"tier_pinned", opts.tier >= 0 ? json(opts.tier) : json(nullptr)},
          {"tiers_available", json::array({0, 1, 2, 3})},
          {"note", "--tier 1-3 pins every region that has a lowering (compiled on the first call of "
                   "each shape); compile_events: the decision log's compiles (end_ms after session "
                   "creation started); tier_timeline: the first request that could run each new tier"},
          {"warm_up_ms", session.stats().warm_up_ms >= 0 ? json(round_ms(session.stats().warm_up_ms))
                                                         : json(nullptr)},
          {"model_path", opts.model},
          {"trace_path", opts.trace.empty() ? json(nullptr) : json(opts.trace)},
          {"seed", opts.seed},
          {"compile_events", compile_events_json(compiles)},
          {"compile_ms_total", round_ms(compile_ms_total)},
          {"tier_timeline", tier_timeline_json(timeline)},
          {"regions", regions_json(regions)},
          {"compiled_coverage", share_requests > 0 ? json(round6(coverage.counted)) : json(nullptr)},
          {"compiled_coverage_uncounted", share_requests > 0 ? json(round6(coverage.uncounted)) : json(nullptr)},
          {"interp_share_run",
           {{"requests", shares.requests},
            {"of", n},
            {"which", share_requests == 0         ? "none (--interp-share-requests 0)"
                      : shares.requests == n      ? "all requests of the trace"
                                                  : "the first requests of the trace"},
            {"how", "a second Session after the timed loop, mode interpret-only with every region "
                    "timed through its plan; one untimed call per distinct shape first"}}},
          {"last10", {{"first_request", window.first + 1}, {"requests", window.count}}},
          {"latencies_ms", std::move(lat)},
          {"request_shape_index", stats.shape_index}}},
    };
    write_text_file(opts.json_out, out.dump() + "\n", "--json");
    fmt::print("wrote {}\n", opts.json_out);
  }

  // ---- --chrome-trace (Trace Event Format; times in microseconds from session creation) ----
  if (!opts.chrome_trace_out.empty()) {
    json events = json::array();
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 1},
                      {"args", {{"name", "tierjit bench " + stem(opts.model) + " " + trace_name}}}});
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 1}, {"args", {{"name", "requests"}}}});
    events.push_back({{"name", "session_create"}, {"cat", "session"}, {"ph", "X"}, {"ts", 0.0},
                      {"dur", session_create_ms * 1000.0}, {"pid", 1}, {"tid", 1},
                      {"args", {{"model", opts.model}}}});
    // "tier": the highest tier any region could run at in the request (tier timeline).
    size_t next_step = 0;
    int top_tier = opts.tier > 0 ? opts.tier : 0;
    for (size_t i = 0; i < n; ++i) {
      for (; next_step < timeline.size() && timeline[next_step].request <= i + 1; ++next_step)
        top_tier = std::max(top_tier, timeline[next_step].tier);
      events.push_back({{"name", key_of[i]}, {"cat", "request"}, {"ph", "X"}, {"ts", start_ms[i] * 1000.0},
                        {"dur", latency[i] * 1000.0}, {"pid", 1}, {"tid", 1},
                        {"args", {{"request", i + 1}, {"shape", key_of[i]}, {"tier", top_tier}}}});
    }
    if (!compiles.empty())
      events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 2}, {"args", {{"name", "compiles"}}}});
    for (const CompileEvent& e : compiles)
      events.push_back({{"name", fmt::format("{} tier {}", e.region_name, e.tier)}, {"cat", "compile"}, {"ph", "X"},
                        {"ts", (e.end_ms - e.compile_ms) * 1000.0}, {"dur", e.compile_ms * 1000.0}, {"pid", 1},
                        {"tid", 2},
                        {"args", {{"region", e.region}, {"tier", e.tier}, {"level", e.level}, {"message", e.message}}}});
    json doc{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
    write_text_file(opts.chrome_trace_out, doc.dump() + "\n", "--chrome-trace");
    fmt::print("wrote {}\n", opts.chrome_trace_out);
  }
}

}  // namespace

int cmd_bench(const BenchOptions& opts) {
  return run_reporting_errors(opts.model, [&] { bench_impl(opts); });
}

}  // namespace tierjit::cli
