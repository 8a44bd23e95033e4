// The CPU features the tier-0 kernels pick their code paths by (AVX-512F: the 16-lane paths,
// else AVX2), checked once per process.
#pragma once

#include "support/isa.h"

namespace tierjit::kernels {

/// True when the CPU has AVX-512F and TIERJIT_ISA does not forbid it (support/isa.h). Checked once (thread-safe); callable from static
/// initializers (it initializes libgcc's CPU model itself).
inline bool cpu_has_avx512f() {
  static const bool has = [] {
    __builtin_cpu_init();  // static initializers may run before libgcc's own
    return __builtin_cpu_supports("avx512f") != 0 && support::avx512_allowed();
  }();
  return has;
}

}  // namespace tierjit::kernels
