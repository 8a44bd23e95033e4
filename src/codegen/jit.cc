// ORC JIT wrapper (jit.h) and the conversion of llvm::Error to Status.
#include "codegen/jit.h"

#include <mutex>

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/Support/TargetSelect.h>

#include "codegen/codegen_internal.h"

namespace tierjit::codegen {

Status status_from(llvm::Error err, std::string_view what) {
  return internal_error("codegen: {}: {}", what, llvm::toString(std::move(err)));
}

Expected<Jit*> Jit::instance() {
  static std::once_flag once;
  static Jit* jit = nullptr;
  static Status error;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    auto built = llvm::orc::LLJITBuilder().create();
    if (!built) {
      error = status_from(built.takeError(), "creating the LLJIT");
      return;
    }
    std::unique_ptr<llvm::orc::LLJIT> lljit = std::move(*built);
    auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
        lljit->getDataLayout().getGlobalPrefix());
    if (!gen) {
      error = status_from(gen.takeError(), "process symbol generator");
      return;
    }
    lljit->getMainJITDylib().addGenerator(std::move(*gen));
    jit = new Jit(std::move(lljit));  // lives until exit: kernels may run in static destructors
  });
  if (!jit) return error;
  return jit;
}

Expected<Jit::Loaded> Jit::add_object(std::unique_ptr<llvm::MemoryBuffer> object,
                                      const std::string& symbol) {
  Loaded out;
  out.tracker = jit_->getMainJITDylib().createResourceTracker();
  if (llvm::Error err = jit_->addObjectFile(out.tracker, std::move(object))) {
    return status_from(std::move(err), "adding object " + symbol);
  }
  auto addr = jit_->lookup(symbol);
  if (!addr) {
    Status s = status_from(addr.takeError(), "looking up " + symbol);
    llvm::consumeError(out.tracker->remove());
    return s;
  }
  out.address = addr->getValue();
  return out;
}

}  // namespace tierjit::codegen
