// Code generator: kernel IR (kir::Function) -> LLVM IR -> optimized machine code in this process,
// through LLVM ORC (LLJIT). The only header of codegen/ that other folders include: it names no
// LLVM type. Compiles are thread-safe and may run on background threads while other threads call
// compiled kernels; a failed compile returns a Status (the caller falls back to tier 0).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "codegen/cpu_features.h"
#include "kir/kir.h"
#include "support/status.h"

namespace tierjit::codegen {

/// The one C ABI of every compiled kernel: buffers[i] is the i-th kir::BufferParam (element
/// type as declared, contiguous as the kernel's index expressions assume), dims[k] the k-th dim
/// parameter (int64). Buffers that are written must not overlap any other buffer.
using KernelFn = void (*)(void* const* buffers, const int64_t* dims);

/// Optimization tiers (DESIGN.md "Tiers"). tier 1: cheap pipeline chosen by measurement (see
/// docs/codegen.md); tier 2: the full -O2 pipeline with loop and SLP vectorization.
enum class Tier : uint8_t { kTier1 = 1, kTier2 = 2 };

struct CompileOptions {
  Tier tier = Tier::kTier2;
  bool keep_object = false;  ///< copy the relocatable object into CompiledKernel::object
};

/// A compiled (or linked) kernel. Copies share the code; the code is removed from the JIT (its
/// memory freed) when the last copy is destroyed, so callers must keep a copy while calling fn.
struct CompiledKernel {
  KernelFn fn = nullptr;
  int64_t compile_us = 0;      ///< wall time of compile(), µs (verify, emit, optimize, link)
  int64_t optimize_us = 0;     ///< of which the tier's IR pipeline, µs
  int64_t codegen_us = 0;      ///< of which instruction selection to object bytes, µs
  int64_t link_us = 0;         ///< of which linking into the JIT and symbol lookup, µs
  size_t object_bytes = 0;     ///< size of the relocatable object that was linked
  std::string symbol;          ///< unique symbol name in the JIT (process nonce + counter)
  std::string object;          ///< the ELF object bytes, if CompileOptions::keep_object
  std::shared_ptr<void> code;  ///< owns the code (a ResourceTracker inside)

  void operator()(void* const* buffers, const int64_t* dims) const { fn(buffers, dims); }
};

/// Verifies `f`, emits LLVM IR, runs the tier's pipeline for the host CPU, links the object.
/// Errors: kInvalidArgument (kir verifier), kUnsupported (a node/dtype codegen does not handle),
/// kInternal (LLVM failed). Never aborts on a bad kernel.
Expected<CompiledKernel> compile(const kir::Function& f, const CompileOptions& options = {});

/// Links an object that compile() produced (keep_object), e.g. from the code cache, and looks up
/// `symbol` in it. The object must have been built for this CPU's features by this tierjit build
/// (the cache key guarantees it). Errors: kInternal if it does not link (e.g. bad bytes, or an
/// object with this symbol is already loaded in this process).
Expected<CompiledKernel> link_object(std::string_view object, const std::string& symbol);

/// The optimized LLVM IR text of `f` at `options.tier` (for tests, `tierjit explain` and docs).
Expected<std::string> emit_llvm_ir(const kir::Function& f, const CompileOptions& options = {});

}  // namespace tierjit::codegen
