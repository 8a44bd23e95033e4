// Shared helper of the runtime tests (dim_tracker, tier_policy, version_table): the signature
// of one float32 input of shape [a, b]. Test files bring it in with `using test_util::sig;`.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/signature.h"

namespace tierjit::runtime::test_util {

/// Signature of a single float32 input of shape [a, b] (b = 64 unless given).
inline Signature sig(int64_t a, int64_t b = 64) {
  Signature s;
  std::vector<int64_t> d{a, b};
  s.add_input(DType::kFloat32, d);
  return s;
}

}  // namespace tierjit::runtime::test_util
