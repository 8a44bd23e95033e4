// Tier-0 kernels: nn family. (placeholder: registers nothing yet)
#include "interp/registry.h"

namespace tierjit::interp {
void register_nn_kernels(KernelRegistry& /*r*/) {}
}  // namespace tierjit::interp
