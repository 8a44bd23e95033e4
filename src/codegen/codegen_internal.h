// Internal interfaces of codegen/ (LLVM types allowed: this header is private to src/codegen).
// llvm_emit.cc: kir -> LLVM IR; math_emit.cc: vectorizable exp/log/tanh/erf; pipelines.cc:
// per-tier pass pipelines; jit.cc: the ORC wrapper; codegen.cc drives them.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "kir/kir.h"
#include "support/status.h"

namespace tierjit::codegen {

/// Emits `f` as `void symbol(ptr buffers, ptr dims)` into a new module for `tm`. Requires
/// kir::verify(f) ok. Errors: kUnsupported for dtypes or nodes not lowered yet.
Expected<std::unique_ptr<llvm::Module>> emit_module(const kir::Function& f, llvm::LLVMContext& ctx,
                                                    llvm::TargetMachine& tm,
                                                    const std::string& symbol);

/// Emits `f` as `void symbol(ptr buffers, ptr dims)` into the existing module `m` (whole-plan
/// programs put several kernels in one module). Errors as emit_module.
Status emit_function(const kir::Function& f, llvm::Module& m, const std::string& symbol);

/// Checks a Program's shape (argument counts, io indices, kernels verified); kInvalidArgument.
Status check_program(const Program& p);
/// Emits `p`'s kernels (internal functions) and its entry `symbol` into `m` (program.cc).
Status emit_program(const Program& p, llvm::Module& m, const std::string& symbol);

/// Runs the tier's optimization pipeline on `m` (module passes; codegen is separate).
void run_pipeline(llvm::Module& m, llvm::TargetMachine& tm, Tier tier);

/// Vectorizable float32 math (scalar or vector of float), max errors in docs/codegen.md.
llvm::Value* emit_exp_f32(llvm::IRBuilder<>& b, llvm::Value* x);
llvm::Value* emit_log_f32(llvm::IRBuilder<>& b, llvm::Value* x);
llvm::Value* emit_tanh_f32(llvm::IRBuilder<>& b, llvm::Value* x);
llvm::Value* emit_erf_f32(llvm::IRBuilder<>& b, llvm::Value* x);

/// Lowers a kir math intrinsic of `dtype` operands (scalar or vector values in `args`):
/// float32 exp/log/tanh/erf/sigmoid as the polynomials below, the rest as LLVM intrinsics or
/// libm calls. Errors: kUnsupported.
Expected<llvm::Value*> emit_intrinsic(llvm::IRBuilder<>& b, llvm::Module& m, kir::Intrinsic op,
                                      DType dtype, const std::vector<llvm::Value*>& args);

/// `name` (a libm function of one double or float) applied lane by lane.
llvm::Value* emit_libm_per_lane(llvm::IRBuilder<>& b, llvm::Module& m, const char* name,
                                llvm::Value* x);

/// A Status from an llvm::Error (consumes it), prefixed with `what`.
Status status_from(llvm::Error err, std::string_view what);

}  // namespace tierjit::codegen
