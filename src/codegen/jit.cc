// ORC JIT wrapper (jit.h) and the conversion of llvm::Error to Status.
#include "codegen/jit.h"

#include <fmt/format.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Object/SymbolSize.h>
#include <llvm/Support/TargetSelect.h>
#include <omp.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "codegen/codegen_internal.h"
#include "kernels/microkernels.h"
#include "support/cpu_load.h"

// libgomp's entry for `#pragma omp parallel` (parallel For loops call it; see llvm_emit.cc).
extern "C" void GOMP_parallel(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags);

// Team size for a parallel loop, as GOMP_parallel's num_threads (support::team_for): 0 (the
// default team) while no other process and no background compile of this one holds the spare
// cores, the usable cores when the default team has more threads than that, else 1 (run on the
// caller). A team whose second thread waits for a busy core is several times slower than one
// thread (mlp's long trace: 940 -> 750 ms once calls stopped using the team during compiles).
extern "C" unsigned tierjit_team_threads() {
  const int team = omp_get_max_threads();
  if (team <= 1) return 0;
  const int now = tierjit::support::team_for(team);
  return now == team ? 0 : static_cast<unsigned>(now);
}

namespace tierjit::codegen {

namespace {

// TIERJIT_PERF_MAP=1: each linked object's functions are appended to /tmp/perf-<pid>.map
// ("address size name" in hex, Linux perf's JIT map format), so `perf report` names compiled
// code by its region ("tj_conv_4_<nonce>_<n>") instead of a bare address. The functions' load
// addresses follow from the entry symbol's: one object's code is one section, linked whole.
bool perf_map_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("TIERJIT_PERF_MAP");
    return v != nullptr && v[0] != '\0' && v[0] != '0';
  }();
  return on;
}

void append_perf_map(const llvm::MemoryBuffer& object, const std::string& symbol,
                     uint64_t address) {
  auto obj = llvm::object::ObjectFile::createObjectFile(object.getMemBufferRef());
  if (!obj) {
    llvm::consumeError(obj.takeError());
    return;
  }
  uint64_t entry = 0;
  bool found = false;
  for (const llvm::object::SymbolRef& sym : (*obj)->symbols()) {
    auto name = sym.getName();
    auto value = sym.getValue();
    if (name && value && *name == symbol) {
      entry = *value;
      found = true;
    }
    if (!name) llvm::consumeError(name.takeError());
    if (!value) llvm::consumeError(value.takeError());
  }
  if (!found) return;
  std::string lines;
  for (const auto& [sym, size] : llvm::object::computeSymbolSizes(**obj)) {
    auto type = sym.getType();
    auto name = sym.getName();
    auto value = sym.getValue();
    if (type && name && value && *type == llvm::object::SymbolRef::ST_Function && size > 0)
      lines += fmt::format("{:x} {:x} {}\n", address + *value - entry, size, name->str());
    if (!type) llvm::consumeError(type.takeError());
    if (!name) llvm::consumeError(name.takeError());
    if (!value) llvm::consumeError(value.takeError());
  }
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (std::FILE* f = std::fopen(fmt::format("/tmp/perf-{}.map", getpid()).c_str(), "a")) {
    std::fputs(lines.c_str(), f);
    std::fclose(f);
  }
}

}  // namespace

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
    // The OpenMP runtime entries, defined explicitly so they resolve even where the process
    // would not otherwise load libgomp (this library links it).
    auto sym = [&](auto* fn) {
      return llvm::JITEvaluatedSymbol(llvm::pointerToJITTargetAddress(fn),
                                      llvm::JITSymbolFlags::Exported);
    };
    llvm::orc::SymbolMap symbols = {
        {lljit->mangleAndIntern("GOMP_parallel"), sym(&GOMP_parallel)},
        {lljit->mangleAndIntern("omp_get_thread_num"), sym(&omp_get_thread_num)},
        {lljit->mangleAndIntern("omp_get_num_threads"), sym(&omp_get_num_threads)},
        {lljit->mangleAndIntern("tierjit_team_threads"), sym(&tierjit_team_threads)},
    };
    // The kernel layer's microkernels (kernels/microkernels.def), by their registered addresses:
    // compiled code never finds them through the process's symbol table.
    for (const kernels::MicrokernelInfo& mk : kernels::microkernels())
      symbols[lljit->mangleAndIntern(llvm::StringRef(mk.symbol.data(), mk.symbol.size()))] =
          llvm::JITEvaluatedSymbol(llvm::pointerToJITTargetAddress(mk.address),
                                   llvm::JITSymbolFlags::Exported);
    if (llvm::Error err =
            lljit->getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(symbols)))) {
      error = status_from(std::move(err), "defining the OpenMP and microkernel symbols");
      return;
    }
    jit = new Jit(std::move(lljit));  // lives until exit: kernels may run in static destructors
  });
  if (!jit) return error;
  return jit;
}

Expected<Jit::Loaded> Jit::add_object(std::unique_ptr<llvm::MemoryBuffer> object,
                                      const std::string& symbol) {
  Loaded out;
  out.tracker = jit_->getMainJITDylib().createResourceTracker();
  // The perf map reads the object after linking: keep a copy (only when asked for).
  std::unique_ptr<llvm::MemoryBuffer> copy =
      perf_map_enabled() ? llvm::MemoryBuffer::getMemBufferCopy(object->getBuffer()) : nullptr;
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
  if (copy) append_perf_map(*copy, symbol, out.address);
  return out;
}

}  // namespace tierjit::codegen
