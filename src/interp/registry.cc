// The op registry: the one list of kernel families.
#include "interp/registry.h"

namespace tierjit::interp {

const KernelRegistry& KernelRegistry::global() {
  static const KernelRegistry instance = [] {
    KernelRegistry r;
    register_elementwise_kernels(r);
    register_reduction_kernels(r);
    register_tensor_kernels(r);
    register_nn_kernels(r);
    register_control_kernels(r);
    register_misc_kernels(r);
    return r;
  }();
  return instance;
}

}  // namespace tierjit::interp
