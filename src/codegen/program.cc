// Whole-plan programs (codegen.h "Whole-plan compilation"): every call's kernel is emitted into
// the module as an internal function, and the entry stores each call's buffer addresses into a
// stack array, points its dims at a constant global and calls it. The kernels are called once
// each, so the -O2 inliner folds them into the entry, where the loads of their buffers and dims
// become the constants and arena offsets given here.
#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalVariable.h>

#include "codegen/codegen_internal.h"

namespace tierjit::codegen {

Status check_program(const Program& p) {
  if (p.num_io < 0) return invalid_argument("program '{}': num_io {} < 0", p.name, p.num_io);
  for (size_t k = 0; k < p.calls.size(); ++k) {
    const ProgramCall& c = p.calls[k];
    if (!c.fn) return invalid_argument("program '{}': call {} has no kernel", p.name, k);
    if (c.buffers.size() != c.fn->buffers.size() || c.dims.size() != c.fn->dims.size())
      return invalid_argument("program '{}': call {} ('{}') passes {} buffers and {} dims, the kernel "
                              "takes {} and {}",
                              p.name, k, c.fn->name, c.buffers.size(), c.dims.size(),
                              c.fn->buffers.size(), c.fn->dims.size());
    for (const ProgramArg& a : c.buffers)
      if (a.kind == ProgramArg::Kind::kIo && (a.value < 0 || a.value >= p.num_io))
        return invalid_argument("program '{}': call {} reads io buffer {} of {}", p.name, k,
                                a.value, p.num_io);
    TJ_RETURN_IF_ERROR(kir::verify(*c.fn));
  }
  return Status();
}

Status emit_program(const Program& p, llvm::Module& m, const std::string& symbol) {
  llvm::LLVMContext& ctx = m.getContext();
  auto* ptr_ty = llvm::PointerType::get(ctx, 0);
  auto* i64 = llvm::Type::getInt64Ty(ctx);
  std::vector<llvm::Function*> kernels;
  for (size_t k = 0; k < p.calls.size(); ++k) {
    const std::string name = symbol + "_k" + std::to_string(k);
    TJ_RETURN_IF_ERROR(emit_function(*p.calls[k].fn, m, name));
    llvm::Function* f = m.getFunction(name);
    f->setLinkage(llvm::GlobalValue::InternalLinkage);
    kernels.push_back(f);
  }
  auto* fn_ty = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr_ty, ptr_ty}, false);
  auto* entry_fn = llvm::Function::Create(fn_ty, llvm::Function::ExternalLinkage, symbol, m);
  entry_fn->addFnAttr(llvm::Attribute::NoUnwind);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", entry_fn));
  llvm::Value* io = entry_fn->getArg(0);
  llvm::Value* arena = b.CreateAlignedLoad(
      ptr_ty, b.CreateConstInBoundsGEP1_64(ptr_ty, io, static_cast<uint64_t>(p.num_io)), llvm::Align(8),
      "arena");
  for (size_t k = 0; k < p.calls.size(); ++k) {
    const ProgramCall& c = p.calls[k];
    const auto n = static_cast<uint64_t>(std::max<size_t>(c.buffers.size(), 1));
    llvm::AllocaInst* bufs = b.CreateAlloca(llvm::ArrayType::get(ptr_ty, n), nullptr, "bufs");
    bufs->setAlignment(llvm::Align(8));
    for (size_t j = 0; j < c.buffers.size(); ++j) {
      const ProgramArg& a = c.buffers[j];
      llvm::Value* ptr = nullptr;
      switch (a.kind) {
        case ProgramArg::Kind::kIo:
          ptr = b.CreateAlignedLoad(
              ptr_ty, b.CreateConstInBoundsGEP1_64(ptr_ty, io, static_cast<uint64_t>(a.value)),
              llvm::Align(8));
          break;
        case ProgramArg::Kind::kArena:
          ptr = b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), arena, static_cast<uint64_t>(a.value));
          break;
        case ProgramArg::Kind::kAddress:
          ptr = b.CreateIntToPtr(llvm::ConstantInt::get(i64, static_cast<uint64_t>(a.value)), ptr_ty);
          break;
      }
      b.CreateAlignedStore(ptr, b.CreateConstInBoundsGEP2_64(bufs->getAllocatedType(), bufs, 0, j),
                           llvm::Align(8));
    }
    std::vector<llvm::Constant*> dims;
    for (int64_t d : c.dims) dims.push_back(llvm::ConstantInt::get(i64, static_cast<uint64_t>(d)));
    if (dims.empty()) dims.push_back(llvm::ConstantInt::get(i64, 0));
    auto* dims_ty = llvm::ArrayType::get(i64, dims.size());
    auto* global = new llvm::GlobalVariable(m, dims_ty, /*isConstant=*/true,
                                            llvm::GlobalValue::PrivateLinkage,
                                            llvm::ConstantArray::get(dims_ty, dims),
                                            symbol + "_dims" + std::to_string(k));
    global->setAlignment(llvm::Align(8));
    b.CreateCall(kernels[k], {bufs, global});
  }
  b.CreateRetVoid();
  return Status();
}

}  // namespace tierjit::codegen
