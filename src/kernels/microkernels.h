// The registry of microkernels compiled code calls (microkernels.def): their
// ids, signatures and addresses. kir::CallKernel names a microkernel by id;
// codegen defines each one's symbol in the JIT at its address here; the
// verifier checks calls against the signature.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "tierjit/dtype.h"

namespace tierjit::kernels {

enum class Microkernel : uint8_t {
#define TJ_MICROKERNEL(name, function, pointers, ints) k##name,
#include "kernels/microkernels.def"
};

struct MicrokernelInfo {
  Microkernel id;
  std::string_view name;      ///< the C++ function's name, e.g. "gemm_panel_rows_f32"
  std::string_view symbol;    ///< its symbol in the JIT: "tierjit_mk_" + name
  std::string_view pointers;  ///< one letter per pointer argument: 'f' float32
  int ints = 0;               ///< int64 arguments after the pointers
  void* address = nullptr;    ///< the function

  int num_pointers() const { return static_cast<int>(pointers.size()); }
  /// The element dtype of pointer argument i (< num_pointers()).
  DType pointer_dtype(int i) const;
};

/// Every microkernel, in microkernels.def order (index = static_cast<int>(id)).
std::span<const MicrokernelInfo> microkernels();
const MicrokernelInfo& microkernel_info(Microkernel k);

}  // namespace tierjit::kernels
