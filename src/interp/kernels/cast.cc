// Tier-0 kernels: Cast (Cast-1/6/9/13; `to` is a dtype name before opset 6), CastLike (-15) and
// Identity. Every pair among the numeric dtypes, bool and string converts:
//  * to float16/bfloat16: round to nearest even, computed without double rounding (a double is
//    first rounded to float with round-to-odd);
//  * float -> integer: truncate toward zero, NaN -> 0, saturate to the int64 range, then wrap to
//    narrower integers (two's complement, as numpy on x86); any -> bool: x != 0 (NaN -> true);
//  * number -> string as numpy's str(): shortest round-trip digits, positional for 1e-4 <= |x| <
//    1e16 (float64; 1e6 float32, 1e3 float16) ("0.039187793", "1.0"), else scientific ("1e-05");
//    "nan", "inf", "-inf"; "True"/"False";
//  * string -> number: decimal or scientific text, "NaN", "INF", "+INF", "-INF" (any case);
//    unparsable text is an InvalidArgument error naming the element.
#include <bit>
#include <cctype>
#include <charconv>
#include <string>
#include <string_view>

#include "interp/kernels/elementwise_util.h"

namespace tierjit::interp {
namespace {

using namespace ew;

/// double -> float rounding to odd: exact values stay, inexact ones get the neighbour with an odd
/// last bit. Rounding that float to float16/bfloat16 (RNE) then equals rounding the double once.
float double_to_float_round_odd(double d) {
  float f = static_cast<float>(d);
  if (std::isnan(d) || static_cast<double>(f) == d) return f;
  uint32_t bits = std::bit_cast<uint32_t>(f);
  if (std::isinf(f)) {
    bits = (bits & 0x80000000u) | 0x7f7fffffu;  // largest finite magnitude (odd)
  } else {
    if (std::fabs(static_cast<double>(f)) > std::fabs(d)) bits -= 1;  // magnitude toward zero
    bits |= 1u;
  }
  return std::bit_cast<float>(bits);
}

/// double -> integer To: truncate, NaN -> 0, saturate to int64 (uint64 for uint64), then wrap.
template <class To>
To float_to_int(double v) {
  if (std::isnan(v)) return To(0);
  if constexpr (std::is_same_v<To, uint64_t>) {
    if (v >= 18446744073709551616.0) return std::numeric_limits<uint64_t>::max();
    if (v >= 9223372036854775808.0) return static_cast<uint64_t>(v);
  }
  if (v >= 9223372036854775808.0) return static_cast<To>(std::numeric_limits<int64_t>::max());
  if (v < -9223372036854775808.0) return static_cast<To>(std::numeric_limits<int64_t>::min());
  return static_cast<To>(static_cast<int64_t>(v));
}

/// One element From -> To (numeric and bool types, Half/BFloat16 included).
template <class To, class From>
To convert(From v) {
  if constexpr (kIsHalfLike<From>) {
    return convert<To>(to_float(v));
  } else if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (kIsBool<To>) {
    return v != From(0);
  } else if constexpr (kIsHalfLike<To>) {
    float f;
    if constexpr (std::is_same_v<From, float>) f = v;
    else f = double_to_float_round_odd(static_cast<double>(v));
    if constexpr (std::is_same_v<To, Half>) return Half{support::float_to_half(f)};
    else return BFloat16{support::float_to_bfloat16(f)};
  } else if constexpr (std::is_floating_point_v<To>) {
    return static_cast<To>(v);
  } else if constexpr (std::is_floating_point_v<From>) {
    return float_to_int<To>(static_cast<double>(v));
  } else {
    return static_cast<To>(v);  // integer/bool -> integer: wraps
  }
}

// ---- numbers -> strings ------------------------------------------------------------------------

/// numpy (2.x) str() of a float given its shortest scientific form "d.ddde[+-]xx" (to_chars).
/// Positional when 1e-4 <= |v| < max_positional (1e3 for 16-bit floats, 1e6 for float32, 1e16
/// for float64), else scientific.
std::string numpy_float_string(std::string_view sci, double v, double max_positional) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  std::string sign;
  if (!sci.empty() && sci[0] == '-') {
    sign = "-";
    sci.remove_prefix(1);
  }
  const size_t epos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, epos)) if (c != '.') digits += c;
  int exp = 0;
  std::string_view es = sci.substr(epos + 1);
  if (!es.empty() && es[0] == '+') es.remove_prefix(1);
  std::from_chars(es.data(), es.data() + es.size(), exp);
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  const double a = std::fabs(v);
  if (a == 0 || (a >= 1e-4 && a < max_positional)) {
    if (exp >= 0) {
      std::string ip = digits.substr(0, std::min<size_t>(digits.size(), exp + 1));
      while (ip.size() < static_cast<size_t>(exp) + 1) ip += '0';
      std::string fp = digits.size() > static_cast<size_t>(exp) + 1 ? digits.substr(exp + 1) : "0";
      return sign + ip + "." + fp;
    }
    return sign + "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
  }
  std::string out = sign + digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  out += exp < 0 ? "e-" : "e+";
  std::string ev = std::to_string(exp < 0 ? -exp : exp);
  if (ev.size() < 2) ev = "0" + ev;
  return out + ev;
}

template <class T>
std::string to_string_numpy(T v) {
  char buf[64];
  if constexpr (kIsBool<T>) {
    return v ? "True" : "False";
  } else if constexpr (kIsInt<T>) {
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
  } else if constexpr (std::is_floating_point_v<T>) {
    auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
    return numpy_float_string(std::string_view(buf, r.ptr - buf), v,
                              std::is_same_v<T, float> ? 1e6 : 1e16);
  } else {  // Half / BFloat16: fewest digits that read back to the same 16 bits
    const float f = to_float(v);
    for (int prec = 0; prec < 9; ++prec) {
      auto r = std::to_chars(buf, buf + sizeof buf, f, std::chars_format::scientific, prec);
      float back = 0;
      std::from_chars(buf, r.ptr, back, std::chars_format::scientific);
      const T rt = store<T>(back);
      if (rt.bits == v.bits || std::isnan(f) || std::isinf(f))
        return numpy_float_string(std::string_view(buf, r.ptr - buf), f, 1e3);
    }
    auto r = std::to_chars(buf, buf + sizeof buf, f, std::chars_format::scientific);
    return numpy_float_string(std::string_view(buf, r.ptr - buf), f, 1e3);
  }
}

// ---- strings -> numbers ------------------------------------------------------------------------

/// Parses `s` as To; false if it is not a number.
template <class To>
bool parse_number(std::string_view s, To* out) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  if (s.size() > 1 && s[0] == '+' && s[1] != '-') s.remove_prefix(1);
  if (s.empty()) return false;
  const char* b = s.data();
  const char* e = s.data() + s.size();
  if constexpr (kIsBool<To>) {
    if (s == "True" || s == "true") { *out = true; return true; }
    if (s == "False" || s == "false") { *out = false; return true; }
  }
  if constexpr (std::is_same_v<To, float>) {
    float v;
    auto r = std::from_chars(b, e, v);
    if (r.ec != std::errc() && r.ec != std::errc::result_out_of_range) return false;
    *out = v;
    return r.ptr == e;
  } else {
    if constexpr (kIsInt<To>) {  // exact integer text first (int64 beyond 2^53 stays exact)
      using Wide = std::conditional_t<std::is_signed_v<To>, int64_t, uint64_t>;
      Wide w;
      auto r = std::from_chars(b, e, w);
      if (r.ec == std::errc() && r.ptr == e) { *out = static_cast<To>(w); return true; }
    }
    double d;
    auto r = std::from_chars(b, e, d);
    if ((r.ec != std::errc() && r.ec != std::errc::result_out_of_range) || r.ptr != e) return false;
    *out = convert<To>(d);
    return true;
  }
}

// ---- kernels -----------------------------------------------------------------------------------

Status cast_to(KernelContext& ctx, const Tensor& x, DType to) {
  const DType from = x.dtype();
  if (from == to) {  // no conversion: the input itself
    ctx.set_output(0, x);
    return Status();
  }
  TJ_ASSIGN_OR_RETURN(Tensor* y, ctx.output(0, to, x.shape()));
  const int64_t n = x.numel();
  const int threads = ctx.options().intra_op_threads;
  if (from == DType::kString) {
    const std::string* src = x.data<std::string>();
    return dispatch_all(ctx, to, [&](auto tag) -> Status {
      using To = decltype(tag);
      To* dst = y->data<To>();
      for (int64_t i = 0; i < n; ++i) {
        if (!parse_number(src[i], &dst[i]))
          return ctx.fail("input 0 element {}: \"{}\" is not a number", i, src[i]);
      }
      return Status();
    });
  }
  if (to == DType::kString) {
    std::string* dst = y->data<std::string>();
    return dispatch_all(ctx, from, [&](auto tag) -> Status {
      using From = decltype(tag);
      const From* src = x.data<From>();
      for (int64_t i = 0; i < n; ++i) dst[i] = to_string_numpy(src[i]);
      return Status();
    });
  }
  return dispatch_all(ctx, from, [&](auto ftag) -> Status {
    using From = decltype(ftag);
    return dispatch_all(ctx, to, [&](auto ttag) -> Status {
      using To = decltype(ttag);
      const From* src = x.data<From>();
      To* dst = y->data<To>();
      parallel_ranges(n, threads, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) dst[i] = convert<To>(src[i]);
      });
      return Status();
    });
  });
}

Status cast_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  const ir::Attribute* to_attr = ctx.node().attr("to");
  if (!to_attr) return ctx.fail("attribute 'to' is required");
  DType to;
  if (to_attr->kind == ir::Attribute::Kind::kString) {  // Cast-1: dtype name ("FLOAT")
    auto d = dtype_from_name(to_attr->s);
    if (!d) return ctx.fail("attribute 'to': unknown dtype \"{}\"", to_attr->s);
    to = *d;
  } else {
    if (!dtype_is_valid(static_cast<int32_t>(to_attr->i)))
      return ctx.unsupported_here("attribute 'to': dtype code {} is not supported", to_attr->i);
    to = static_cast<DType>(to_attr->i);
  }
  return cast_to(ctx, *x, to);
}

Status cast_like_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* like, ctx.required_input(1));
  return cast_to(ctx, *x, like->dtype());
}

/// Identity: the output is the input tensor itself (no copy; tensors are immutable once made).
Status identity_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  ctx.set_output(0, *x);
  return Status();
}

}  // namespace

void register_cast_kernels(KernelRegistry& r) {
  r.add(ir::OpKind::Cast, cast_kernel);
  r.add(ir::OpKind::CastLike, cast_like_kernel);
  r.add(ir::OpKind::Identity, identity_kernel);
}

}  // namespace tierjit::interp
