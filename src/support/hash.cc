// xxHash wrapper (Debian's libxxhash).
#include "support/hash.h"

#include <xxhash.h>

namespace tierjit::support {
uint64_t hash_bytes(const void* data, size_t n, uint64_t seed) {
  return XXH3_64bits_withSeed(data, n, seed);
}
}  // namespace tierjit::support
