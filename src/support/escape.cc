// escape_name / escape_controls (see escape.h).
#include "support/escape.h"

#include <fmt/format.h>

namespace tierjit::support {

namespace {

// Length of the valid UTF-8 sequence starting at s[i] (2..4), or 0 when it is not one.
size_t utf8_sequence(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;        // no overlong forms
    if (c == 0xED) hi = 0x9F;        // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;        // <= U+10FFFF
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  return n;
}

std::string escape(std::string_view s, bool backslash) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      if (const size_t n = utf8_sequence(s, i)) {
        out.append(s.substr(i, n));
        i += n;
      } else {
        out += fmt::format("\\x{:02x}", c);
        ++i;
      }
      continue;
    }
    switch (c) {
      case '\\': out += backslash ? "\\\\" : "\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) out += fmt::format("\\u{:04x}", c);
        else out.push_back(static_cast<char>(c));
    }
    ++i;
  }
  return out;
}

}  // namespace

std::string escape_name(std::string_view name) { return escape(name, true); }

std::string escape_controls(std::string_view text) { return escape(text, false); }

}  // namespace tierjit::support
