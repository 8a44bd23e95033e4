// Tier-0 kernels: elementwise family. (placeholder: registers nothing yet)
#include "interp/registry.h"

namespace tierjit::interp {
void register_elementwise_kernels(KernelRegistry& /*r*/) {}
}  // namespace tierjit::interp
