// Tier-0 kernels: reduction family. (placeholder: registers nothing yet)
#include "interp/registry.h"

namespace tierjit::interp {
void register_reduction_kernels(KernelRegistry& /*r*/) {}
}  // namespace tierjit::interp
