// Tier-0 kernels: the elementwise family's single registration point. The kernels live in
// unary.cc (math, predicates), activation.cc, binary.cc (arithmetic, logic, comparisons),
// pow_mod.cc (Pow, Mod, BitShift), variadic.cc (Max Min Sum Mean Where Clip) and cast.cc
// (Cast CastLike Identity); elementwise_util.h holds the shared broadcasting engine.
#include "interp/kernels/elementwise_util.h"

namespace tierjit::interp {

void register_elementwise_kernels(KernelRegistry& r) {
  register_unary_kernels(r);
  register_activation_kernels(r);
  register_binary_kernels(r);
  register_pow_mod_kernels(r);
  register_variadic_kernels(r);
  register_cast_kernels(r);
}

}  // namespace tierjit::interp
