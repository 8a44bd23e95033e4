// `tierjit run MODEL [--input NAME=SPEC]...`: loads a model, builds its feeds (files or random
// values, see docs/cli.md), runs it once through tierjit::Session and prints each output's
// name, dtype, shape and a summary; --output-dir writes one .npy/.pb file per output.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "support/float16.h"
#include "cli_util.h"

namespace tierjit::cli {
namespace {

std::string sanitize_file_name(const std::string& name, size_t index) {
  std::string out;
  for (char c : name)
    out.push_back((std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') ? c : '_');
  if (out.empty() || out == "." || out == "..") out = "output_" + std::to_string(index);
  return out;
}

std::string format_number(double v) { return fmt::format("{:.6g}", v); }

/// "min -0.9 max 0.8 mean 0.01  values [0.1, 0.2, ...]"
std::string summarize(const Tensor& t) {
  const int64_t n = t.numel();
  constexpr int64_t kShow = 6;
  std::string vals = "[";
  for (int64_t i = 0; i < std::min(n, kShow); ++i) {
    if (i) vals += ", ";
    if (t.dtype() == DType::kString) {
      vals += "\"" + t.data<std::string>()[i] + "\"";
    } else if (dtype_is_float(t.dtype())) {
      vals += format_number(t.value_as_double(i));
    } else if (t.dtype() == DType::kUInt64) {
      vals += std::to_string(t.data<uint64_t>()[i]);
    } else {
      vals += std::to_string(t.value_as_int64(i));
    }
  }
  vals += n > kShow ? ", ...]" : "]";
  if (n == 0 || t.dtype() == DType::kString) return "values " + vals;
  double mn = INFINITY, mx = -INFINITY, sum = 0;
  int64_t nans = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = t.value_as_double(i);
    if (std::isnan(v)) {
      ++nans;
      continue;
    }
    mn = std::min(mn, v);
    mx = std::max(mx, v);
    sum += v;
  }
  std::string s;
  if (nans < n)
    s = fmt::format("min {} max {} mean {}", format_number(mn), format_number(mx),
                    format_number(sum / static_cast<double>(n - nans)));
  if (nans) s += fmt::format("{}{} NaN", s.empty() ? "" : " ", nans);
  return s + "  values " + vals;
}

void run_impl(const RunOptions& opts) {
  if (opts.output_format != "npy" && opts.output_format != "pb")
    throw Error(StatusCode::kInvalidArgument, "--output-format must be npy or pb, got '" + opts.output_format + "'");
  if (opts.threads < 0) throw Error(StatusCode::kInvalidArgument, "--threads must be >= 0");
  if (opts.memory_limit <= 0) throw Error(StatusCode::kInvalidArgument, "--memory-limit must be > 0");
  if (opts.arena_limit < 0) throw Error(StatusCode::kInvalidArgument, "--arena-limit must be > 0");

  std::map<std::string, IntRange> ranges;
  for (const auto& r : opts.int_ranges) {
    auto p = parse_int_range(r);
    if (!p.ok()) p.status().throw_if_error();
    ranges[p->first] = p->second;
  }
  std::map<std::string, int64_t> dims;
  for (const auto& d : opts.dims) {
    auto p = parse_dim_binding(d);
    if (!p.ok()) p.status().throw_if_error();
    dims[p->first] = p->second;
  }
  std::vector<FeedSpec> specs;
  for (const auto& s : opts.inputs) {
    auto spec = parse_feed_spec(s);
    if (!spec.ok()) spec.status().throw_if_error();
    specs.push_back(*spec);
  }

  SessionOptions so;
  so.intra_op_threads = opts.threads;
  so.memory_limit_bytes = opts.memory_limit;
  so.arena_limit_bytes = opts.arena_limit;
  so.verify = opts.verify;
  apply_tier(opts.tier, so);
  Session session(opts.model, so);

  std::set<std::string> known;
  for (const auto& info : session.inputs()) known.insert(info.name);
  std::set<std::string> given;
  for (const auto& spec : specs) {
    if (!known.count(spec.name)) {
      std::string names;
      for (const auto& info : session.inputs()) names += (names.empty() ? "'" : ", '") + info.name + "'";
      throw Error(StatusCode::kInvalidArgument,
                  opts.model + ": model has no input '" + spec.name + "' (inputs: " +
                      (names.empty() ? "none" : names) + ")");
    }
    if (!given.insert(spec.name).second)
      throw Error(StatusCode::kInvalidArgument, "--input '" + spec.name + "' given twice");
  }
  for (const auto& [name, r] : ranges)
    if (!known.count(name))
      throw Error(StatusCode::kInvalidArgument, opts.model + ": --int-range names unknown input '" + name + "'");

  // Symbolic dims: --dim values first; then every explicitly given input binds the dims it
  // names (so `--input input_ids=random:2x37` also sizes attention_mask); the rest default.
  std::set<std::string> dim_names;
  for (const auto& info : session.inputs())
    for (const auto& n : info.dim_names)
      if (!n.empty()) dim_names.insert(n);
  for (const auto& [name, value] : dims) {
    if (dim_names.count(name)) continue;
    std::string all;
    for (const auto& n : dim_names) all += (all.empty() ? "" : ", ") + n;
    throw Error(StatusCode::kInvalidArgument, opts.model + ": --dim names unknown symbolic dim '" +
                                                  name + "' (dims: " + (all.empty() ? "none" : all) + ")");
  }

  std::mt19937_64 rng(opts.seed);
  auto make_feed = [&](const TensorInfo& info, Tensor& t, std::string& origin) {
    auto it = std::find_if(specs.begin(), specs.end(), [&](const FeedSpec& s) { return s.name == info.name; });
    auto range_it = ranges.find(info.name);
    std::optional<IntRange> range;
    if (range_it != ranges.end()) range = range_it->second;
    if (it != specs.end() && !it->path.empty()) {
      auto r = read_tensor_file(it->path, opts.memory_limit);
      if (!r.ok()) r.status().throw_if_error();
      t = *r;
      check_feed(info, t, it->path).with_prefix(opts.model).throw_if_error();
      origin = it->path;
    } else {
      Shape shape;
      if (it != specs.end()) {
        shape = *it->random_shape;
        check_feed(info, info.dtype, shape, "the random feed")
            .with_prefix(opts.model).throw_if_error();
      } else {
        auto s = resolve_shape(info, dims);
        if (!s.ok()) s.status().with_prefix(opts.model).throw_if_error();
        shape = *s;
      }
      int64_t numel = shape_numel(shape);
      if (numel > opts.memory_limit / static_cast<int64_t>(std::max<size_t>(1, dtype_size(info.dtype))))
        throw Error(StatusCode::kResourceExhausted, opts.model + ": input '" + info.name + "': random shape " +
                                                        shape_to_string(shape) + " exceeds --memory-limit of " +
                                                        std::to_string(opts.memory_limit) + " bytes");
      t = random_tensor(info.dtype, shape, info.name, range, rng);
      origin = "random";
      if (dtype_is_integer(info.dtype) || info.dtype == DType::kBool) {
        bool mask = !range && info.name.find("mask") != std::string::npos;
        if (mask || info.dtype == DType::kBool) {
          origin += mask ? ", all ones" : ", 0/1";
        } else {
          IntRange r = range.value_or(IntRange{});
          origin += fmt::format(", integers in [{}, {})", r.lo, r.hi);
        }
      } else if (dtype_is_float(info.dtype)) {
        origin += ", uniform in [-1, 1)";
      }
    }
  };
  std::map<std::string, std::pair<Tensor, std::string>> made;
  for (const auto& info : session.inputs()) {
    if (!given.count(info.name)) continue;
    auto& [t, origin] = made[info.name];
    make_feed(info, t, origin);
    for (size_t d = 0; d < info.dim_names.size() && d < t.shape().size(); ++d)
      if (!info.dim_names[d].empty()) dims.emplace(info.dim_names[d], t.shape()[d]);
  }
  NamedTensors feeds;
  for (const auto& info : session.inputs()) {
    auto& [t, origin] = made[info.name];
    if (!t.defined()) make_feed(info, t, origin);
    if (!opts.quiet)
      fmt::print("input  {}: {} {} ({})\n", escape_name(info.name), dtype_name(t.dtype()),
                 shape_to_string(t.shape()), escape_name(origin));
    feeds.emplace_back(info.name, t);
  }

  NamedTensors outputs = session.run(feeds);

  if (!opts.output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(opts.output_dir, ec);
    if (ec)
      throw Error(StatusCode::kIoError, opts.output_dir + ": cannot create directory: " + ec.message());
  }
  std::set<std::string> used_names;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& [name, t] = outputs[i];
    fmt::print("output {}: {} {}  {}\n", escape_name(name), dtype_name(t.dtype()), shape_to_string(t.shape()),
               summarize(t));
    if (opts.output_dir.empty()) continue;
    std::string file = sanitize_file_name(name, i);
    if (!used_names.insert(file).second) file += "_" + std::to_string(i);
    std::string path = (std::filesystem::path(opts.output_dir) / (file + "." + opts.output_format)).string();
    Status st = opts.output_format == "npy" ? write_npy(path, t) : write_pb_file(path, t, name);
    st.throw_if_error();
    if (!opts.quiet) fmt::print("  wrote {}\n", escape_name(path));
  }
}

}  // namespace

void apply_tier(int tier, SessionOptions& so) {
  if (tier < -1 || tier > 3)
    throw Error(StatusCode::kInvalidArgument, "--tier " + std::to_string(tier) + ": no such tier (tiers are 0-3)");
  if (tier == 0) so.mode = ExecutionMode::kInterpretOnly;
  if (tier > 0) {
    so.mode = ExecutionMode::kPinnedTier;
    so.pinned_tier = tier;
  }
}

int cmd_run(const RunOptions& opts) {
  return run_reporting_errors(opts.model, [&] { run_impl(opts); });
}

}  // namespace tierjit::cli
