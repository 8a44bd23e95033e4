// Tier-0 kernels: misc family. (placeholder: registers nothing yet)
#include "interp/registry.h"

namespace tierjit::interp {
void register_misc_kernels(KernelRegistry& /*r*/) {}
}  // namespace tierjit::interp
