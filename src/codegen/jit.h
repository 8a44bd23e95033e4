// The ORC JIT wrapper (after LLVM's LLJIT examples): one LLJIT per process; objects are added
// under their own ResourceTracker so a kernel's code can be removed again; the main JITDylib
// resolves libc/libm symbols (expf, memset, ...) from the process. Thread-safe. Private to codegen.
#pragma once

#include <llvm/ExecutionEngine/Orc/LLJIT.h>

#include <memory>
#include <string>

#include "support/status.h"

namespace tierjit::codegen {

class Jit {
 public:
  /// The process-wide JIT, created on first use; an error if LLVM could not create it.
  static Expected<Jit*> instance();

  struct Loaded {
    uint64_t address = 0;                  ///< of the looked-up symbol
    llvm::orc::ResourceTrackerSP tracker;  ///< remove() frees the object's code
  };
  /// Links a relocatable object under a new tracker and returns the address of `symbol`.
  Expected<Loaded> add_object(std::unique_ptr<llvm::MemoryBuffer> object,
                              const std::string& symbol);

 private:
  explicit Jit(std::unique_ptr<llvm::orc::LLJIT> jit) : jit_(std::move(jit)) {}
  std::unique_ptr<llvm::orc::LLJIT> jit_;
};

}  // namespace tierjit::codegen
