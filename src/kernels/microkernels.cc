// The microkernel registry (microkernels.h): one row per entry of
// microkernels.def, each function's signature checked at compile time against
// its entry.
#include "kernels/microkernels.h"

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "kernels/conv_tiles.h"
#include "kernels/packed_gemm.h"
#include "kernels/recurrent_gemm.h"

namespace tierjit::kernels {

namespace {

// True when `fn` takes P pointers then I int64 arguments and returns nothing.
template <size_t P, size_t I, class... Args>
constexpr bool signature_matches(void (*)(Args...)) {
  if constexpr (sizeof...(Args) != P + I) {
    return false;
  } else {
    using Tuple = std::tuple<Args...>;
    return []<size_t... K>(std::index_sequence<K...>) {
      return ((K < P ? std::is_pointer_v<std::tuple_element_t<K, Tuple>>
                     : std::is_same_v<std::tuple_element_t<K, Tuple>, int64_t>)&&...);
    }
    (std::make_index_sequence<P + I>{});
  }
}

#define TJ_MICROKERNEL(name, function, pointers, ints)                              \
  static_assert(signature_matches<sizeof(pointers) - 1, ints>(&function), #function \
                " does not match its microkernels.def entry (pointers, then "       \
                "int64 arguments)");
#include "kernels/microkernels.def"

}  // namespace

std::span<const MicrokernelInfo> microkernels() {
  static const MicrokernelInfo table[] = {
#define TJ_MICROKERNEL(name, function, pointers, ints) \
  {Microkernel::k##name,                               \
   #function,                                          \
   "tierjit_mk_" #function,                            \
   pointers,                                           \
   ints,                                               \
   reinterpret_cast<void*>(&function)},
#include "kernels/microkernels.def"
  };
  return table;
}

const MicrokernelInfo& microkernel_info(Microkernel k) {
  return microkernels()[static_cast<size_t>(k)];
}

DType MicrokernelInfo::pointer_dtype(int i) const {
  switch (pointers[static_cast<size_t>(i)]) {
    case 'f':
      return DType::kFloat32;
    default:
      return DType::kUndefined;
  }
}

}  // namespace tierjit::kernels
