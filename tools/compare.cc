// Output comparison for `tierjit onnx-test` and the models test, following the ONNX backend
// test runner (onnx/backend/test/runner: numpy.testing.assert_allclose with rtol 1e-3, atol 1e-7,
// equal_nan; exact equality for strings). Integers and bools are compared exactly. onnx-test's
// --atol / --rtol replace the two tolerances (parse_tolerance).
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "support/float16.h"
#include "cli_util.h"

namespace tierjit::cli {
namespace {

std::string format_value(double v) { return fmt::format("{:.7g}", v); }

}  // namespace

std::optional<double> parse_tolerance(const std::string& text) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front()))) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE) return std::nullopt;
  if (!std::isfinite(v) || v < 0) return std::nullopt;  // NaN fails `v < 0` but not isfinite
  return v == 0 ? 0.0 : v;                                // "-0" is 0
}

std::string index_to_string(const Shape& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size(), 0);
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] > 0) {
      idx[i] = flat % shape[i];
      flat /= shape[i];
    }
  }
  return shape_to_string(idx);
}

std::optional<std::string> compare_tensors(const Tensor& got, const Tensor& expected, const Tolerance& tol) {
  if (!got.defined() || !expected.defined())
    return std::string(got.defined() ? "expected tensor is undefined" : "output is undefined");
  if (got.dtype() != expected.dtype())
    return fmt::format("dtype {}, expected {}", dtype_name(got.dtype()), dtype_name(expected.dtype()));
  if (got.shape() != expected.shape())
    return fmt::format("shape {}, expected {}", shape_to_string(got.shape()), shape_to_string(expected.shape()));
  const int64_t n = got.numel();
  const DType t = got.dtype();

  if (t == DType::kString) {
    const std::string* a = got.data<std::string>();
    const std::string* e = expected.data<std::string>();
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; ++i)
      if (a[i] != e[i] && bad++ == 0) first = i;
    if (!bad) return std::nullopt;
    return fmt::format("strings differ at {} (got \"{}\", expected \"{}\"); {} of {} elements differ",
                       index_to_string(got.shape(), first), a[first], e[first], bad, n);
  }

  if (!dtype_is_float(t)) {
    // Exact comparison of the element bytes (all integer widths, bool).
    size_t es = dtype_size(t);
    const char* a = static_cast<const char*>(got.raw_data());
    const char* e = static_cast<const char*>(expected.raw_data());
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; ++i)
      if (std::memcmp(a + i * es, e + i * es, es) != 0 && bad++ == 0) first = i;
    if (!bad) return std::nullopt;
    auto show = [&](const Tensor& x) {
      if (t == DType::kUInt64) return fmt::format("{}", x.data<uint64_t>()[first]);
      return fmt::format("{}", x.value_as_int64(first));
    };
    return fmt::format("values differ at {} (got {}, expected {}); {} of {} elements differ",
                       index_to_string(got.shape(), first), show(got), show(expected), bad, n);
  }

  int64_t bad = 0, worst = -1;
  double worst_diff = 0;
  for (int64_t i = 0; i < n; ++i) {
    double a = got.value_as_double(i), e = expected.value_as_double(i);
    bool a_nan = std::isnan(a), e_nan = std::isnan(e);
    if (a_nan && e_nan) continue;
    double diff, excess;
    if (a_nan || e_nan) {
      diff = excess = INFINITY;
    } else if (std::isinf(a) || std::isinf(e)) {
      if (a == e) continue;
      diff = excess = INFINITY;
    } else {
      diff = std::fabs(a - e);
      excess = diff - (tol.atol + tol.rtol * std::fabs(e));
      if (excess <= 0) continue;
    }
    ++bad;
    if (worst < 0 || diff > worst_diff) {  // report the failing element farthest off
      worst = i;
      worst_diff = diff;
    }
  }
  if (!bad) return std::nullopt;
  return fmt::format("max abs diff {} at {} (got {}, expected {}); {} of {} elements differ "
                     "(rtol {}, atol {})",
                     format_value(worst_diff),
                     index_to_string(got.shape(), worst), format_value(got.value_as_double(worst)),
                     format_value(expected.value_as_double(worst)), bad, n, tol.rtol, tol.atol);
}

}  // namespace tierjit::cli
