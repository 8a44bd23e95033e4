// Tier-0 kernels: control family. (placeholder: registers nothing yet)
#include "interp/registry.h"

namespace tierjit::interp {
void register_control_kernels(KernelRegistry& /*r*/) {}
}  // namespace tierjit::interp
