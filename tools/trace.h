// Shape traces for `tierjit bench`: one request per line, each input's concrete shape as
// `name=DxDxD`, inputs separated by `;` (the format of ../shared/bench/traces and
// shape_traces.py). Lines starting with `#` and blank lines are ignored. Also the check of a
// request against the model's declared inputs. See docs/bench.md.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "support/status.h"
#include "tierjit/session.h"
#include "tierjit/tensor.h"

namespace tierjit::cli {

/// One request: (input name, concrete shape) pairs in the order of the line.
struct TraceRequest {
  std::vector<std::pair<std::string, Shape>> inputs;
  std::string location;  ///< "FILE:LINE" or "--shapes 'SPEC'", for messages
};

/// A parsed trace: its requests in order, and where it came from ("FILE" or "--shapes").
struct Trace {
  std::string source;
  std::vector<TraceRequest> requests;
};

/// Parses one request line, e.g. "input_ids=4x37;attention_mask=4x37". Whitespace around names
/// and dims is ignored, as are empty items ("x=1x4;"); `name=` alone is a rank-0 shape.
/// Errors (kInvalidArgument, without location): an item without '=', an empty name, a dim that
/// is not an integer in [0, 2^40], the same input twice, a line with no items.
Expected<TraceRequest> parse_trace_line(const std::string& line);

/// Parses a whole trace text; `source` names it in messages ("FILE:LINE: what is wrong").
/// Accepts LF and CRLF line ends. Errors: a malformed line; no requests at all ("empty trace").
Expected<Trace> parse_trace_text(const std::string& text, const std::string& source);

/// Reads and parses a trace file. kNotFound when it does not exist, kIoError when unreadable,
/// kInvalidArgument for the errors of parse_trace_text.
Expected<Trace> read_trace_file(const std::string& path);

/// The requests of `--shapes SPEC...` cycled to `n_requests` requests (SPEC i % specs.size()).
/// Errors: no specs, n_requests < 1, a malformed spec (message names the spec).
Expected<Trace> trace_from_specs(const std::vector<std::string>& specs, int64_t n_requests);

/// Canonical text of a request: "name=DxD;name=DxD" in the request's order, rank 0 as "name=".
/// Requests with equal text have equal shapes; the per-shape statistics group by it.
std::string format_request(const TraceRequest& request);

/// Checks `request` against the model's inputs: every input is named exactly once, no unknown
/// names, the rank and every constant dim agree (symbolic dims take any value). Errors
/// (kInvalidArgument) start with the request's location, e.g.
/// "t.txt:3: input 'x': the request has shape [8, 32], the model expects dim 1 = 64".
Status check_request(const std::vector<TensorInfo>& model_inputs, const TraceRequest& request);

}  // namespace tierjit::cli
