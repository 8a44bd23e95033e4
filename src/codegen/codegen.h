// Code generator: kernel IR (kir::Function) -> LLVM IR -> optimized machine code in this process,
// through LLVM ORC (LLJIT). The only header of codegen/ that other folders include: it names no
// LLVM type. Compiles are thread-safe and may run on background threads while other threads call
// compiled kernels; a failed compile returns a Status (the caller falls back to tier 0).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

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

/// Whole-plan compilation (DESIGN.md "Whole-plan compilation"): several kernels called in order
/// from one entry function, each with its buffer addresses and dims fixed at compile time, so
/// the optimizer sees one function (the kernels inlined, their dims constants) and a call pays
/// one indirect call instead of one per kernel.
struct ProgramArg {
  enum class Kind : uint8_t {
    kIo,       ///< the entry's buffers[value]: a pointer that changes per call (feeds, outputs)
    kArena,    ///< the entry's arena buffer (buffers[num_io]) + value bytes
    kAddress,  ///< the fixed address `value` (constants the program's owner keeps alive)
  };
  Kind kind = Kind::kIo;
  int64_t value = 0;
};
/// One kernel call of a Program: `fn`'s buffer parameters in order, then its dims.
struct ProgramCall {
  const kir::Function* fn = nullptr;  ///< must outlive compile_program
  std::vector<ProgramArg> buffers;    ///< one per fn->buffers
  std::vector<int64_t> dims;          ///< one per fn->dims: the values this call passes
};
/// The entry is a KernelFn: buffers[0..num_io) are the kIo pointers, buffers[num_io] the arena
/// base (64-byte aligned; may be null when no call reads kArena); dims is not read.
struct Program {
  std::string name;
  int64_t num_io = 0;
  std::vector<ProgramCall> calls;
};

/// Compiles `p` into one kernel (each call's kernel verified and emitted into one module, then
/// the tier's pipeline and the link as compile()). Errors: kInvalidArgument when a call's
/// argument counts do not match its kernel or an io index is out of range, else as compile().
Expected<CompiledKernel> compile_program(const Program& p, const CompileOptions& options = {});

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
