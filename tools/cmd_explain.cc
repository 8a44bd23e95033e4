// `tierjit explain MODEL [--trace FILE]`: the regions the partitioner makes of a model after the
// tier-0 pass pipeline, one block per region and a summary per kind (docs/passes.md). It reads the
// internal graph (loader, passes), unlike `run`, which goes through the public Session API only.
// With --trace it also replays the trace through a Session (as `tierjit bench` does, replay.h)
// and prints what each region runs afterwards: tier, versions, guards, and the decision log.
#include "cmd_explain.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "interp/evaluate_node.h"
#include "onnx/loader.h"
#include "passes/partition.h"
#include "passes/pipeline.h"
#include "replay.h"
#include "trace.h"

namespace tierjit::cli {
namespace {

using json = nlohmann::json;

void check_options(const ExplainOptions& opts) {
  if (opts.trace.empty()) {
    if (opts.mode != "adaptive" || opts.tier >= 0 || !opts.int_ranges.empty())
      throw Error(StatusCode::kInvalidArgument, "--mode, --tier and --int-range need --trace FILE");
    return;
  }
  if (opts.mode != "adaptive" && opts.mode != "interpret-only")
    throw Error(StatusCode::kInvalidArgument, "--mode must be adaptive or interpret-only, got '" + opts.mode + "'");
  if (opts.tier > 3 || opts.tier < -1)
    throw Error(StatusCode::kInvalidArgument, fmt::format("--tier {}: no such tier (tiers are 0-3)", opts.tier));
  if (opts.tier > 0 && opts.mode == "interpret-only")
    throw Error(StatusCode::kInvalidArgument,
                fmt::format("--tier {} contradicts --mode interpret-only (tier 0)", opts.tier));
}

/// One decision log record (DecisionLog::to_json fields) as a line, times in ms from `origin_us`:
/// "+12.345 ms region 0 'gemm_0': compiled tier 1 (generic) in 812 us: <message>".
std::string format_record(const json& r, int64_t origin_us) {
  std::string out = fmt::format("+{:.3f} ms", static_cast<double>(r.value("time_us", int64_t{0}) - origin_us) / 1000.0);
  if (r.value("region", -1) >= 0) out += fmt::format(" region {} '{}'", r.value("region", -1), r.value("region_name", ""));
  out += ": " + r.value("kind", std::string("?"));
  if (r.contains("from_tier") && r.contains("tier"))
    out += fmt::format(" tier {} -> {}", r["from_tier"].get<int>(), r["tier"].get<int>());
  else if (r.contains("tier"))
    out += fmt::format(" tier {}", r["tier"].get<int>());
  if (r.contains("tier")) out += " (" + r.value("level", std::string()) + ")";
  if (r.contains("compile_us")) out += fmt::format(" in {} us", r["compile_us"].get<int64_t>());
  if (r.contains("cache_level")) out += " from " + r["cache_level"].get<std::string>();
  const std::string msg = r.value("message", std::string());
  if (!msg.empty()) out += ": " + msg;
  return out;
}

/// opts.trace, read, and the --int-range options, parsed (before anything is printed: a bad
/// trace is one error line, not a listing and then the error).
struct TraceInput {
  Trace trace;
  std::map<std::string, IntRange> ranges;
};
TraceInput read_trace_input(const ExplainOptions& opts) {
  TraceInput in{read_trace_file(opts.trace).value_or_throw(), {}};
  for (const auto& r : opts.int_ranges) {
    auto p = parse_int_range(r);
    if (!p.ok()) p.status().throw_if_error();
    in.ranges[p->first] = p->second;
  }
  return in;
}

/// Replays the trace through a Session, then prints `listing` (the static partition), regions,
/// summary and the decision log's tail: nothing is printed when the trace does not fit the
/// model or a request fails (one error line).
void explain_trace(const ExplainOptions& opts, const TraceInput& in, const std::string& listing) {
  const Trace& trace = in.trace;
  const std::map<std::string, IntRange>& ranges = in.ranges;
  SessionOptions so;
  so.synchronous_compilation = true;  // deterministic: a promotion compiles inside its call
  if (opts.mode == "interpret-only") so.mode = ExecutionMode::kInterpretOnly;
  apply_tier(opts.tier, so);
  const int64_t origin_us = steady_now_us();
  Session session(opts.model, so);
  for (const auto& [name, r] : ranges)
    if (std::none_of(session.inputs().begin(), session.inputs().end(),
                     [&, &n = name](const TensorInfo& i) { return i.name == n; }))
      throw Error(StatusCode::kInvalidArgument, opts.model + ": --int-range names unknown input '" + name + "'");
  ReplayFeeds replay =
      make_replay_feeds(trace, session.inputs(), ranges, opts.seed, so.memory_limit_bytes, opts.model);
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < trace.requests.size(); ++i) {
    try {
      session.run(replay.feeds[replay.feed_of[i]]);
    } catch (const Error& e) {
      throw Error(e.code(), fmt::format("request {} ({}, {}): {}", i + 1, trace.requests[i].location,
                                        replay.key_of[i], e.what()));
    }
  }
  const double replay_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  fmt::print("{}", listing);
  const std::string mode = opts.tier > 0 ? fmt::format("pinned tier {}", opts.tier)
                           : opts.tier == 0 || opts.mode == "interpret-only"
                               ? std::string("interpret-only")
                               : std::string("adaptive, synchronous compilation");
  fmt::print("\nafter replaying {} ({} requests, {} distinct shapes; mode {}; {:.1f} ms):\n", opts.trace,
             trace.requests.size(), replay.feeds.size(), mode, replay_ms);
  const std::vector<RegionReport> reports = session.region_reports();
  size_t megamorphic = 0;
  for (const RegionReport& r : reports) {
    fmt::print("region {} '{}': {}, tier {}, {} calls{}\n", r.id, r.name, r.kind, r.tier, r.calls,
               r.megamorphic ? ", megamorphic (version cap reached: the generic version serves the rest)" : "");
    fmt::print("  ops:      {}\n", fmt::join(r.ops, ", "));
    if (r.versions.empty()) fmt::print("  versions: none (tier 0, the interpreter)\n");
    for (size_t v = 0; v < r.versions.size(); ++v)
      fmt::print("  {:<10}{}\n", v == 0 ? "versions:" : "", one_line(r.versions[v]));
    megamorphic += r.megamorphic ? 1 : 0;
  }
  if (reports.empty()) fmt::print("no region reports: the session runs every call through the interpreter\n");

  const SessionStats st = session.stats();
  json metrics = json::parse(session.metrics_json(), nullptr, false);
  std::vector<std::string> per_tier;
  if (metrics.is_object() && metrics.contains("compiles"))
    for (size_t t = 0; t < metrics["compiles"].size(); ++t)
      per_tier.push_back(fmt::format("tier {}: {}", t, metrics["compiles"][t].get<uint64_t>()));
  const uint64_t deopts = metrics.is_object() ? metrics.value("deoptimizations", uint64_t{0}) : 0;
  fmt::print("\nsummary: {} calls, {} compiles ({}), {} compile failures, {} deoptimizations, {} megamorphic "
             "region{}\n",
             st.calls, st.compiled_regions, fmt::join(per_tier, ", "), st.compile_failures, deopts, megamorphic,
             megamorphic == 1 ? "" : "s");

  json log = json::parse(session.decision_log_json(), nullptr, false);
  if (!log.is_array()) return;
  const size_t shown = std::min(log.size(), static_cast<size_t>(std::max(0, opts.log_entries)));
  fmt::print("decision log (last {} of {} records kept; times from session creation):\n", shown, log.size());
  for (size_t k = log.size() - shown; k < log.size(); ++k)
    fmt::print("  {}\n", one_line(format_record(log[k], origin_us)));
}

void explain_impl(const ExplainOptions& opts) {
  check_options(opts);
  std::optional<TraceInput> trace;
  if (!opts.trace.empty()) trace = read_trace_input(opts);
  ir::Model model = onnx_import::load_model(opts.model).value_or_throw();
  const size_t loaded_nodes = model.graph->nodes().size();
  passes::PassContext pctx;
  pctx.evaluate_node = [](const ir::Node& node, const std::vector<Tensor>& inputs) {
    return interp::evaluate_node(node, inputs, interp::ExecOptions{});
  };
  passes::run_tier0_pipeline(*model.graph, pctx).with_prefix(opts.model).throw_if_error();
  passes::PartitionOptions popts;
  popts.fuse = !opts.no_fuse;
  passes::Partition part = passes::partition_graph(*model.graph, popts).value_or_throw();

  std::string listing = fmt::format("model {}: {} nodes loaded, {} after the tier-0 passes, {} regions\n",
                                    escape_name(opts.model), loaded_nodes, model.graph->nodes().size(),
                                    part.regions.size());
  if (opts.print_graph) listing += ir::print_graph(*model.graph);
  listing += passes::format_partition(part);
  if (trace) explain_trace(opts, *trace, listing);
  else fmt::print("{}", listing);
}

}  // namespace

int cmd_explain(const ExplainOptions& opts) {
  if (opts.trace.empty()) {  // as before: errors propagate to main (one line, exit 2)
    explain_impl(opts);
    return 0;
  }
  return run_reporting_errors(opts.model, [&] { explain_impl(opts); });
}

}  // namespace tierjit::cli
