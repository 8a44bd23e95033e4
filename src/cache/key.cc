// cache_key(): xxh3 over the parts, each length-prefixed so concatenations cannot collide.
#include "cache/key.h"

#include <fmt/format.h>

#include "cache/codegen_sources_hash.h"
#include "support/hash.h"
#include "support/version.h"

namespace tierjit::cache {

std::string CacheKeyParts::build_id_default() {
  return std::string(TIERJIT_VERSION) + "+" + kCodegenSourcesHash;
}

uint64_t cache_key(const CacheKeyParts& p) {
  support::Hasher h;
  h.add_u64(p.function_hash);
  h.add(p.specialization);
  h.add_i64(p.tier);
  h.add(p.codegen_options);
  h.add(p.target);
  h.add(p.llvm_version);
  h.add(p.build_id);
  h.add_i64(p.format_version);
  uint64_t k = h.digest();
  return k == 0 ? 1 : k;
}

std::string describe(const CacheKeyParts& p) {
  return fmt::format("tier {} {} fn={:#018x} options=[{}] target={} llvm={} build={} format={}",
                     p.tier, p.specialization, p.function_hash, p.codegen_options, p.target,
                     p.llvm_version, p.build_id, p.format_version);
}

}  // namespace tierjit::cache
