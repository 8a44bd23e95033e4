// Host CPU description for codegen: LLVM target triple, CPU name, feature string and the vector
// width to target. LLVM 16 names this machine's CPU `generic`, so the features come from
// sys::getHostCPUFeatures() and the CPU name falls back to an x86-64 ISA level. Part of every
// code cache key (DESIGN.md "Code cache"). No LLVM types here.
#pragma once

#include <string>

namespace tierjit::codegen {

struct CpuInfo {
  std::string triple;     ///< e.g. "x86_64-pc-linux-gnu"
  std::string host_cpu;   ///< what LLVM reports ("generic" on Zen 5 with LLVM 16)
  std::string cpu;        ///< the CPU name codegen uses (host_cpu, or x86-64-v4/v3/v2 for generic)
  std::string features;   ///< "+avx2,+avx512f,-amx-tile,...", sorted (stable for cache keys)
  int vector_bits = 128;  ///< preferred vector width: 512 with AVX-512F, 256 with AVX2, else 128
  bool has_avx2 = false;
  bool has_avx512f = false;
  bool has_fma = false;

  /// Float32 lanes of the preferred vector width (16, 8 or 4).
  int f32_lanes() const { return vector_bits / 32; }
};

/// Detected once per process (thread-safe).
const CpuInfo& host_cpu();

}  // namespace tierjit::codegen
