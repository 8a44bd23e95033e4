// Hashing primitives (xxHash3 64-bit) for structural hashes and cache keys.
#pragma once

#include <cstdint>
#include <string_view>

namespace tierjit::support {

/// 64-bit xxh3 of `n` bytes.
uint64_t hash_bytes(const void* data, size_t n, uint64_t seed = 0);

/// Incremental hasher: feed values in a fixed order, then digest().
class Hasher {
 public:
  Hasher& add_bytes(const void* data, size_t n) {
    h_ = hash_bytes(data, n, h_ ^ 0x9e3779b97f4a7c15ull);
    return *this;
  }
  Hasher& add(std::string_view s) {
    add_u64(s.size());
    return add_bytes(s.data(), s.size());
  }
  Hasher& add_u64(uint64_t v) { return add_bytes(&v, sizeof v); }
  Hasher& add_i64(int64_t v) { return add_bytes(&v, sizeof v); }
  Hasher& add_f64(double v) { return add_bytes(&v, sizeof v); }
  uint64_t digest() const { return h_; }

 private:
  uint64_t h_ = 0x243f6a8885a308d3ull;
};

}  // namespace tierjit::support
