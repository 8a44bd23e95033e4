// libFuzzer target: the command line's value parsers (tools/): `--shapes SPEC` (trace_from_specs,
// one SPEC per input line), `--input NAME=SPEC` (parse_feed_spec), dims "2x3x4" (parse_dims),
// `--int-range NAME=LO:HI`, `--dim NAME=VALUE` and the tolerances `--atol/--rtol`.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz/targets.h"
#include "cli_util.h"
#include "trace.h"

namespace tierjit::fuzz {

int shapes_one(const uint8_t* data, size_t size) {
  using namespace tierjit;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> specs;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) specs.push_back(line);
  // --requests: 1..8 from the input's length, so the cycling of specs is exercised too.
  (void)cli::trace_from_specs(specs, static_cast<int64_t>(size % 8) + 1);
  for (const std::string& s : specs) {
    (void)cli::parse_feed_spec(s);
    Expected<Shape> dims = cli::parse_dims(s);
    if (dims.ok())
      for (int64_t d : dims.value())
        if (d < 0) std::abort();  // parse_dims promises dims in [0, 2^40]
    Expected<std::pair<std::string, cli::IntRange>> range = cli::parse_int_range(s);
    if (range.ok() && !(range.value().second.lo < range.value().second.hi)) std::abort();
    (void)cli::parse_dim_binding(s);
    std::optional<double> tol = cli::parse_tolerance(s);
    if (tol && !(*tol >= 0)) std::abort();  // documented: finite and >= 0
  }
  return 0;
}

}  // namespace tierjit::fuzz
