// Tier-0 kernels: misc family registration. The kernels live in one file per op group (resize.cc,
// einsum.cc, detection.cc, signal.cc, strings.cc, linalg.cc, random.cc); misc_internal.h lists
// their registration functions.
#include "interp/kernels/misc_internal.h"
#include "interp/registry.h"

namespace tierjit::interp {

void register_misc_kernels(KernelRegistry& r) {
  register_resize_kernels(r);
  register_einsum_kernels(r);
  register_detection_kernels(r);
  register_signal_kernels(r);
  register_string_kernels(r);
  register_linalg_kernels(r);
  register_random_kernels(r);
}

}  // namespace tierjit::interp
