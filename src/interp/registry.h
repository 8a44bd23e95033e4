// The op registry: OpKind -> tier-0 kernel. Each op family registers its kernels in
// kernels/<family>.cc through one register_<family>_kernels() call listed in registry.cc.
#pragma once

#include <array>

#include "interp/kernel.h"
#include "ir/op_kind.h"

namespace tierjit::interp {

class KernelRegistry {
 public:
  void add(ir::OpKind op, KernelFn fn) { fns_[static_cast<size_t>(op)] = fn; }
  /// The kernel for `op`, or nullptr if tier 0 has none.
  KernelFn find(ir::OpKind op) const { return fns_[static_cast<size_t>(op)]; }
  /// The process-wide registry with every family registered (built once, then read-only).
  static const KernelRegistry& global();

 private:
  std::array<KernelFn, static_cast<size_t>(ir::OpKind::kNumOps)> fns_{};
};

// One per family file in kernels/ (declared here so registry.cc is the only list).
void register_elementwise_kernels(KernelRegistry& r);   // kernels/elementwise.cc (+ unary.cc, binary.cc ...)
void register_reduction_kernels(KernelRegistry& r);     // kernels/reduction.cc, softmax, norms
void register_tensor_kernels(KernelRegistry& r);        // kernels/tensor_*.cc: shape/layout/indexing
void register_nn_kernels(KernelRegistry& r);            // kernels/nn_*.cc: matmul, gemm, conv, pool, rnn
void register_control_kernels(KernelRegistry& r);       // kernels/control.cc: If, Loop, Scan
void register_misc_kernels(KernelRegistry& r);          // kernels/misc_*.cc: quantization, signal, strings, losses

}  // namespace tierjit::interp
