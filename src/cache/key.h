// Cache keys (DESIGN.md "The code cache"): one 64-bit hash over every input to code generation —
// the kernel IR (canonical: names of graph values never reach it; embedded constants do), the
// specialization and tier, the codegen options, the target (triple, CPU, sorted feature list),
// the tierjit build id (version + a hash of the code generator's sources, so a changed lowering
// never reuses old code), the LLVM version and the cache format version. A factor missing here
// returns wrong code: add new codegen inputs to CacheKeyParts.
#pragma once

#include <cstdint>
#include <string>

namespace tierjit::cache {

/// Bump when the layout of a cache entry changes.
inline constexpr int kCacheFormatVersion = 1;

struct CacheKeyParts {
  uint64_t function_hash = 0;   ///< kir::structural_hash of the lowered kernel
  std::string specialization;   ///< e.g. "exact", "shape_class", "generic" + dims it assumes
  int tier = 0;
  std::string codegen_options;  ///< every option the code generator reads, as text
  std::string target;           ///< triple + CPU name + sorted feature string
  std::string llvm_version;
  std::string build_id = build_id_default();
  int format_version = kCacheFormatVersion;

  /// tierjit's version and the hash of src/kir and src/codegen sources of this build.
  static std::string build_id_default();
};

/// The key (never 0). Equal parts give equal keys; any differing part gives a different key
/// (up to 64-bit hash collisions).
uint64_t cache_key(const CacheKeyParts& parts);

/// "tier 2 exact fn=0x... target=x86_64...|x86-64-v4|+avx... llvm=16.0.6 build=0.2.0+1a2b..."
std::string describe(const CacheKeyParts& parts);

}  // namespace tierjit::cache
