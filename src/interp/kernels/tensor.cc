// Tier-0 kernels: tensor family. (placeholder: registers nothing yet)
#include "interp/registry.h"

namespace tierjit::interp {
void register_tensor_kernels(KernelRegistry& /*r*/) {}
}  // namespace tierjit::interp
