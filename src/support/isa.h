// The instruction-set ceiling a user may set: TIERJIT_ISA=avx2 makes the kernel layer and code
// generation act as on a CPU without AVX-512 (AVX2 + FMA only), e.g. to measure or test the
// AVX2 paths on an AVX-512 machine (scripts/measure_speedup_seeds.py, docs/testing.md).
// Unset, empty or "native": the CPU's own features. Any other value: native, with one warning.
#pragma once

namespace tierjit::support {

/// False when TIERJIT_ISA=avx2 (read once per process); code must then not use AVX-512.
bool avx512_allowed();

}  // namespace tierjit::support
