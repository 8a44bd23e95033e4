// Checked size arithmetic: sizes computed from attributes and dims (int64) that would overflow
// are errors with a clear message at the caller, never wrapped values (a wrapped size once turned
// an LSTM's hidden_size of 2^62 - 1 into a "[1, -4, 4]" weight shape).
#pragma once

#include <cstdint>
#include <optional>

namespace tierjit::support {

/// a * b, or std::nullopt when it overflows int64.
inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// a + b, or std::nullopt when it overflows int64.
inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

}  // namespace tierjit::support
