// libFuzzer target: the shape-trace parser of `tierjit bench` (tools/trace.cc) on arbitrary
// text: parse_trace_text, then per request its canonical text (which must parse back to the
// same request) and the check against a small model's inputs.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz/targets.h"
#include "trace.h"

namespace tierjit::fuzz {

int trace_one(const uint8_t* data, size_t size) {
  using namespace tierjit;
  Expected<cli::Trace> trace =
      cli::parse_trace_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz.txt");
  if (!trace.ok()) return 0;
  // Inputs x[N, 4] and mask[N, S, ?] (the last dim unnamed and unknown).
  std::vector<TensorInfo> model(2);
  model[0].name = "x";
  model[0].dtype = DType::kFloat32;
  model[0].shape = {-1, 4};
  model[0].dim_names = {"N", ""};
  model[0].has_shape = true;
  model[1].name = "mask";
  model[1].dtype = DType::kInt64;
  model[1].shape = {-1, -1, -1};
  model[1].dim_names = {"N", "S", ""};
  model[1].has_shape = true;
  for (const cli::TraceRequest& r : trace.value().requests) {
    const std::string text = cli::format_request(r);
    Expected<cli::TraceRequest> back = cli::parse_trace_line(text);
    if (!back.ok() || back.value().inputs != r.inputs) std::abort();  // canonical text must re-parse
    (void)cli::check_request(model, r);
  }
  return 0;
}

}  // namespace tierjit::fuzz
