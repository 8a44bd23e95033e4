// codegen driver (codegen.h): verify -> emit LLVM IR -> verify the module -> tier pipeline ->
// object code for the host CPU -> link into the process JIT under a ResourceTracker. Every step
// on its own LLVMContext and TargetMachine, so compiles run concurrently on any thread.
#include <atomic>
#include <chrono>

#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/SmallVectorMemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

#include "codegen/codegen_internal.h"
#include "codegen/jit.h"
#include "support/log.h"

namespace tierjit::codegen {

namespace {

Expected<std::unique_ptr<llvm::TargetMachine>> make_target_machine(Tier tier) {
  const CpuInfo& cpu = host_cpu();
  llvm::orc::JITTargetMachineBuilder jtmb{llvm::Triple(cpu.triple)};
  jtmb.setCPU(cpu.cpu);
  std::vector<std::string> feats;
  for (size_t start = 0; start < cpu.features.size();) {
    size_t end = cpu.features.find(',', start);
    if (end == std::string::npos) end = cpu.features.size();
    feats.push_back(cpu.features.substr(start, end - start));
    start = end + 1;
  }
  jtmb.addFeatures(feats);
  jtmb.setCodeGenOptLevel(tier == Tier::kTier1 ? llvm::CodeGenOpt::Less : llvm::CodeGenOpt::Default);
  auto tm = jtmb.createTargetMachine();
  if (!tm) return status_from(tm.takeError(), "creating the target machine");
  return std::move(*tm);
}

std::string unique_symbol(const std::string& name) {
  static std::atomic<uint64_t> counter{0};
  std::string s = "tj_";
  for (char c : name) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s + "_" + std::to_string(counter.fetch_add(1));
}

struct Built {
  std::unique_ptr<llvm::LLVMContext> ctx;
  std::unique_ptr<llvm::TargetMachine> tm;
  std::unique_ptr<llvm::Module> module;
};

// Verified, optimized module for `f`.
Expected<Built> build(const kir::Function& f, Tier tier, const std::string& symbol) {
  TJ_RETURN_IF_ERROR(kir::verify(f));
  TJ_RETURN_IF_ERROR(Jit::instance().status());  // initializes the native target once
  Built out;
  out.ctx = std::make_unique<llvm::LLVMContext>();
  TJ_ASSIGN_OR_RETURN(out.tm, make_target_machine(tier));
  TJ_ASSIGN_OR_RETURN(out.module, emit_module(f, *out.ctx, *out.tm, symbol));
  std::string msg;
  llvm::raw_string_ostream os(msg);
  if (llvm::verifyModule(*out.module, &os)) {
    return internal_error("codegen: kernel '{}' produced invalid LLVM IR: {}", f.name, os.str());
  }
  run_pipeline(*out.module, *out.tm, tier);
  return out;
}

}  // namespace

Expected<CompiledKernel> compile(const kir::Function& f, const CompileOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  std::string symbol = unique_symbol(f.name);
  TJ_ASSIGN_OR_RETURN(Built built, build(f, options.tier, symbol));

  llvm::SmallVector<char, 0> object;
  {
    llvm::raw_svector_ostream os(object);
    llvm::legacy::PassManager pm;
    if (built.tm->addPassesToEmitFile(pm, os, nullptr, llvm::CGFT_ObjectFile)) {
      return internal_error("codegen: the target cannot emit object files");
    }
    pm.run(*built.module);
  }
  size_t object_bytes = object.size();
  TJ_ASSIGN_OR_RETURN(Jit * jit, Jit::instance());
  TJ_ASSIGN_OR_RETURN(Jit::Loaded loaded,
                      jit->add_object(std::make_unique<llvm::SmallVectorMemoryBuffer>(
                                          std::move(object), symbol, /*RequiresNullTerminator=*/false),
                                      symbol));

  CompiledKernel k;
  k.fn = reinterpret_cast<KernelFn>(loaded.address);
  k.symbol = symbol;
  k.object_bytes = object_bytes;
  auto* tracker = new llvm::orc::ResourceTrackerSP(std::move(loaded.tracker));
  k.code = std::shared_ptr<void>(tracker, [symbol](void* p) {
    auto* rt = static_cast<llvm::orc::ResourceTrackerSP*>(p);
    if (llvm::Error err = (*rt)->remove()) {
      TJ_LOG_WARN("codegen: removing {}: {}", symbol, llvm::toString(std::move(err)));
    }
    delete rt;
  });
  k.compile_us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
  TJ_LOG_DEBUG("codegen: compiled {} at tier {} in {} us ({} bytes)", symbol, static_cast<int>(options.tier),
               k.compile_us, object_bytes);
  return k;
}

Expected<std::string> emit_llvm_ir(const kir::Function& f, const CompileOptions& options) {
  TJ_ASSIGN_OR_RETURN(Built built, build(f, options.tier, unique_symbol(f.name)));
  std::string text;
  llvm::raw_string_ostream os(text);
  built.module->print(os, nullptr);
  return os.str();
}

}  // namespace tierjit::codegen
