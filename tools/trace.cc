// Shape traces for `tierjit bench` (trace.h): parsing request lines and trace files with
// file:line errors, cycling `--shapes` specs, and checking a request against the model's inputs.
#include "trace.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "cli_util.h"

namespace tierjit::cli {
namespace {

std::string trim(const std::string& s) {
  const char* ws = " \t\r\n\v\f";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return std::string();
  size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

std::string quoted_names(const std::vector<TensorInfo>& infos) {
  std::string names;
  for (const auto& info : infos) names += (names.empty() ? "'" : ", '") + info.name + "'";
  return names.empty() ? "none" : names;
}

}  // namespace

Expected<TraceRequest> parse_trace_line(const std::string& line) {
  TraceRequest req;
  size_t start = 0;
  while (start <= line.size()) {
    size_t semi = line.find(';', start);
    std::string item = trim(line.substr(start, semi == std::string::npos ? std::string::npos : semi - start));
    start = semi == std::string::npos ? line.size() + 1 : semi + 1;
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string::npos)
      return invalid_argument("'{}': expected NAME=DxD (e.g. x=8x256), inputs separated by ';'", item);
    std::string name = trim(item.substr(0, eq));
    std::string dims;  // "1 x 2" reads as "1x2", as Python's int() strips spaces
    for (char c : item.substr(eq + 1))
      if (!std::isspace(static_cast<unsigned char>(c))) dims.push_back(c);
    if (name.empty()) return invalid_argument("'{}': empty input name", item);
    for (const auto& [other, shape] : req.inputs)
      if (other == name) return invalid_argument("input '{}' given twice", name);
    auto shape = parse_dims(dims);
    if (!shape.ok()) {
      // Quote the spec as written: the spaces removed above made "1x256 extra" read "1x256extra".
      const std::string spec = trim(item.substr(eq + 1));
      if (spec != dims)
        return invalid_argument("input '{}': bad shape '{}' (expected e.g. 8x256; spaces inside are "
                                "ignored)", name, spec);
      return shape.status().with_prefix("input '" + name + "'");
    }
    req.inputs.emplace_back(name, std::move(*shape));
  }
  if (req.inputs.empty()) return invalid_argument("no inputs in the line");
  return req;
}

Expected<Trace> parse_trace_text(const std::string& text, const std::string& source) {
  Trace trace;
  trace.source = source;
  size_t start = 0;
  int64_t line_no = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    std::string line = trim(text.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
    start = nl == std::string::npos ? text.size() : nl + 1;
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    std::string where = fmt::format("{}:{}", source, line_no);
    auto req = parse_trace_line(line);
    if (!req.ok()) return req.status().with_prefix(where);
    req->location = where;
    trace.requests.push_back(std::move(*req));
  }
  if (trace.requests.empty())
    return invalid_argument("{}: empty trace (no request lines; lines starting with '#' are comments)", source);
  return trace;
}

Expected<Trace> read_trace_file(const std::string& path) {
  std::string text;
  Status st = read_file_bytes(path, text, kMaxTextFileBytes, "limit for trace files");
  if (!st.ok()) return st.with_prefix("trace");
  return parse_trace_text(text, path);
}

Expected<Trace> trace_from_specs(const std::vector<std::string>& specs, int64_t n_requests) {
  if (specs.empty()) return invalid_argument("--shapes: give at least one request, e.g. --shapes x=1x64");
  if (n_requests < 1) return invalid_argument("--requests must be >= 1, got {}", n_requests);
  std::vector<TraceRequest> distinct;
  for (const auto& spec : specs) {
    std::string where = "--shapes '" + spec + "'";
    auto req = parse_trace_line(spec);
    if (!req.ok()) return req.status().with_prefix(where);
    req->location = where;
    distinct.push_back(std::move(*req));
  }
  Trace trace;
  trace.source = "--shapes";
  trace.requests.reserve(static_cast<size_t>(n_requests));
  for (int64_t i = 0; i < n_requests; ++i) trace.requests.push_back(distinct[static_cast<size_t>(i) % distinct.size()]);
  return trace;
}

std::string format_request(const TraceRequest& request) {
  std::string out;
  for (const auto& [name, shape] : request.inputs) {
    if (!out.empty()) out += ';';
    out += name + '=';
    for (size_t i = 0; i < shape.size(); ++i) out += (i ? "x" : "") + std::to_string(shape[i]);
  }
  return out;
}

Status check_request(const std::vector<TensorInfo>& model_inputs, const TraceRequest& request) {
  for (const auto& [name, shape] : request.inputs) {
    auto it = std::find_if(model_inputs.begin(), model_inputs.end(),
                           [&, &n = name](const TensorInfo& info) { return info.name == n; });
    if (it == model_inputs.end())
      return invalid_argument("{}: the model has no input '{}' (inputs: {})", request.location, name,
                              quoted_names(model_inputs));
    Status st = check_feed(*it, it->dtype, shape, "the request");
    if (!st.ok()) return st.with_prefix(request.location);
  }
  for (const auto& info : model_inputs) {
    bool given = std::any_of(request.inputs.begin(), request.inputs.end(),
                             [&](const auto& in) { return in.first == info.name; });
    if (!given)
      return invalid_argument("{}: the request gives no shape for input '{}' (inputs: {})", request.location,
                              info.name, quoted_names(model_inputs));
  }
  return Status();
}

}  // namespace tierjit::cli
