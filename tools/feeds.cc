// Feeds for `tierjit run`: parsing --input / --int-range / --dim specs, reading tensor files by
// extension (.npy, .pb), default values of symbolic dims, random inputs and the check of a fed
// tensor against the model's declared input, and the error-to-exit-code wrapper of `run` and
// `bench`. Rules are documented in docs/cli.md.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <new>
#include <sstream>

#include <fmt/core.h>

#include "support/float16.h"
#include "support/file_io.h"
#include "cli_util.h"

namespace tierjit::cli {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::optional<int64_t> parse_int(const std::string& s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

template <class T>
void fill_ints(Tensor& t, int64_t lo, int64_t hi, std::mt19937_64& rng) {
  // Clamp the range to the type, keeping lo < hi.
  int64_t tmin = std::is_signed_v<T> ? static_cast<int64_t>(std::numeric_limits<T>::min()) : 0;
  int64_t tmax = sizeof(T) >= 8 ? std::numeric_limits<int64_t>::max()
                                : static_cast<int64_t>(std::numeric_limits<T>::max());
  lo = std::clamp(lo, tmin, tmax);
  hi = std::clamp(hi, tmin, tmax);
  if (hi <= lo) hi = lo + (lo < tmax ? 1 : 0);
  std::uniform_int_distribution<int64_t> dist(lo, hi > lo ? hi - 1 : lo);
  T* p = t.data<T>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(dist(rng));
}

}  // namespace

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return support::escape_controls(s);
}

int run_reporting_errors(const std::string& model, const std::function<void()>& body) {
  try {
    body();
    return kExitOk;
  } catch (const Error& e) {
    fmt::print(stderr, "tierjit: error: {}\n", one_line(e.what()));
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "tierjit: error: {}: out of memory\n", model);
  } catch (const std::exception& e) {
    fmt::print(stderr, "tierjit: error: {}: {}\n", model, one_line(e.what()));
  }
  return kExitError;
}

Status read_file_bytes(const std::string& path, std::string& out, int64_t max_bytes,
                       std::string_view limit_name) {
  return read_regular_file(path, max_bytes, limit_name, &out);
}

Expected<Tensor> read_tensor_file(const std::string& path, int64_t memory_limit_bytes) {
  std::string l = lower(path);
  if (ends_with(l, ".npy")) return read_npy(path, memory_limit_bytes);
  if (ends_with(l, ".pb")) return read_pb_file(path, memory_limit_bytes);
  return invalid_argument("{}: unknown tensor file type (expected .npy or .pb)", path);
}

Expected<Shape> parse_dims(const std::string& text) {
  Shape shape;
  if (text.empty() || text == "scalar") return shape;
  size_t start = 0;
  while (true) {
    size_t x = text.find_first_of("x,", start);
    std::string part = text.substr(start, x == std::string::npos ? std::string::npos : x - start);
    auto v = parse_int(part);
    if (!v || *v < 0 || *v > (int64_t{1} << 40))
      return invalid_argument("bad dim '{}' in shape '{}' (expected e.g. 2x256)", part, text);
    shape.push_back(*v);
    if (x == std::string::npos) break;
    start = x + 1;
  }
  return shape;
}

Expected<FeedSpec> parse_feed_spec(const std::string& text) {
  size_t eq = text.find('=');
  if (eq == std::string::npos)
    return invalid_argument("--input '{}': expected NAME=FILE.npy, NAME=FILE.pb or NAME=random:2x3", text);
  FeedSpec spec;
  spec.name = text.substr(0, eq);
  std::string rhs = text.substr(eq + 1);
  if (spec.name.empty()) return invalid_argument("--input '{}': empty input name", text);
  if (rhs.empty()) return invalid_argument("--input '{}': empty value", text);
  if (rhs.rfind("random:", 0) == 0 || rhs == "random") {
    std::string dims = rhs == "random" ? "" : rhs.substr(7);
    if (rhs == "random")
      return invalid_argument("--input '{}': give a shape, e.g. random:2x3 (or omit the input)", text);
    auto shape = parse_dims(dims);
    if (!shape.ok()) return shape.status().with_prefix("--input '" + text + "'");
    spec.random_shape = *shape;
    return spec;
  }
  std::string l = lower(rhs);
  if (!ends_with(l, ".npy") && !ends_with(l, ".pb"))
    return invalid_argument("--input '{}': '{}' is neither a .npy/.pb file nor random:DxD", text, rhs);
  spec.path = rhs;
  return spec;
}

Expected<std::pair<std::string, IntRange>> parse_int_range(const std::string& text) {
  size_t eq = text.find('=');
  size_t colon = text.find(':', eq == std::string::npos ? 0 : eq);
  if (eq == std::string::npos || eq == 0 || colon == std::string::npos)
    return invalid_argument("--int-range '{}': expected NAME=LO:HI", text);
  auto lo = parse_int(text.substr(eq + 1, colon - eq - 1));
  auto hi = parse_int(text.substr(colon + 1));
  if (!lo || !hi) return invalid_argument("--int-range '{}': LO and HI must be integers", text);
  if (*hi <= *lo) return invalid_argument("--int-range '{}': need LO < HI (the range is [LO, HI))", text);
  return std::make_pair(text.substr(0, eq), IntRange{*lo, *hi});
}

Expected<std::pair<std::string, int64_t>> parse_dim_binding(const std::string& text) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) return invalid_argument("--dim '{}': expected NAME=VALUE", text);
  auto v = parse_int(text.substr(eq + 1));
  if (!v || *v < 0) return invalid_argument("--dim '{}': VALUE must be a non-negative integer", text);
  if (*v > (int64_t{1} << 40))
    return invalid_argument("--dim '{}': VALUE must be at most 2^40 ({})", text, int64_t{1} << 40);
  return std::make_pair(text.substr(0, eq), *v);
}

int64_t default_dim_value(const std::string& dim_name) {
  std::string l = lower(dim_name);
  if (l == "n" || l == "b" || l == "bs" || l.find("batch") != std::string::npos) return 1;
  return 8;
}

Expected<Shape> resolve_shape(const TensorInfo& info, const std::map<std::string, int64_t>& bindings) {
  if (!info.has_shape)
    return invalid_argument("input '{}' declares no shape; give one with --input {}=random:2x3",
                            info.name, info.name);
  Shape shape;
  for (size_t i = 0; i < info.shape.size(); ++i) {
    if (info.shape[i] >= 0) {
      shape.push_back(info.shape[i]);
      continue;
    }
    const std::string& dn = i < info.dim_names.size() ? info.dim_names[i] : std::string();
    auto it = dn.empty() ? bindings.end() : bindings.find(dn);
    shape.push_back(it != bindings.end() ? it->second : default_dim_value(dn));
  }
  return shape;
}

Tensor random_tensor(DType dtype, const Shape& shape, const std::string& name,
                     const std::optional<IntRange>& range, std::mt19937_64& rng) {
  Tensor t = Tensor::empty(dtype, shape);
  int64_t n = t.numel();
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  bool mask = !range && lower(name).find("mask") != std::string::npos;
  IntRange r = range.value_or(IntRange{});
  if (mask) r = IntRange{1, 2};
  switch (dtype) {
    case DType::kFloat32:
      for (float& v : t.span<float>()) v = static_cast<float>(real(rng));
      break;
    case DType::kFloat64:
      for (double& v : t.span<double>()) v = real(rng);
      break;
    case DType::kFloat16:
      for (int64_t i = 0; i < n; ++i) t.data<uint16_t>()[i] = support::float_to_half(static_cast<float>(real(rng)));
      break;
    case DType::kBFloat16:
      for (int64_t i = 0; i < n; ++i)
        t.data<uint16_t>()[i] = support::float_to_bfloat16(static_cast<float>(real(rng)));
      break;
    case DType::kInt8: fill_ints<int8_t>(t, r.lo, r.hi, rng); break;
    case DType::kInt16: fill_ints<int16_t>(t, r.lo, r.hi, rng); break;
    case DType::kInt32: fill_ints<int32_t>(t, r.lo, r.hi, rng); break;
    case DType::kInt64: fill_ints<int64_t>(t, r.lo, r.hi, rng); break;
    case DType::kUInt8: fill_ints<uint8_t>(t, r.lo, r.hi, rng); break;
    case DType::kUInt16: fill_ints<uint16_t>(t, r.lo, r.hi, rng); break;
    case DType::kUInt32: fill_ints<uint32_t>(t, r.lo, r.hi, rng); break;
    case DType::kUInt64: fill_ints<uint64_t>(t, r.lo, r.hi, rng); break;
    case DType::kBool: {
      std::uniform_int_distribution<int> bit(0, 1);
      for (int64_t i = 0; i < n; ++i) t.data<uint8_t>()[i] = mask ? 1 : static_cast<uint8_t>(bit(rng));
      break;
    }
    case DType::kString: {
      std::uniform_int_distribution<int> num(0, 999);
      for (std::string& s : t.span<std::string>()) s = "s" + std::to_string(num(rng));
      break;
    }
    default:
      break;
  }
  return t;
}

Status check_feed(const TensorInfo& info, const Tensor& t, const std::string& source) {
  return check_feed(info, t.dtype(), t.shape(), source);
}

Status check_feed(const TensorInfo& info, DType dtype, const Shape& shape, const std::string& source) {
  struct View {
    DType d;
    const Shape& s;
    DType dtype() const { return d; }
    const Shape& shape() const { return s; }
    int64_t rank() const { return static_cast<int64_t>(s.size()); }
  } t{dtype, shape};
  if (t.dtype() != info.dtype)
    return invalid_argument("input '{}': {} has dtype {}, the model expects {}", info.name, source,
                            dtype_name(t.dtype()), dtype_name(info.dtype));
  if (!info.has_shape) return Status();
  if (t.rank() != static_cast<int64_t>(info.shape.size()))
    return invalid_argument("input '{}': {} has rank {} (shape {}), the model expects rank {}", info.name,
                            source, t.rank(), shape_to_string(t.shape()), info.shape.size());
  for (size_t i = 0; i < info.shape.size(); ++i)
    if (info.shape[i] >= 0 && t.shape()[i] != info.shape[i])
      return invalid_argument("input '{}': {} has shape {}, the model expects dim {} = {}", info.name,
                              source, shape_to_string(t.shape()), i, info.shape[i]);
  return Status();
}

}  // namespace tierjit::cli
