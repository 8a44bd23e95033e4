// codegen driver (codegen.h): verify -> emit LLVM IR -> verify the module -> tier pipeline ->
// object code for the host CPU -> link into the process JIT under a ResourceTracker. Every step
// on its own LLVMContext and TargetMachine, so compiles run concurrently on any thread.
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/SmallVectorMemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <random>
#include <string_view>

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
  // Tier 1 selects instructions with FastISel (SelectionDAG doubled instruction selection's time
  // on vector code) but runs -O1's machine passes (machine LICM and CSE, peephole, scheduling):
  // at CodeGenOpt::None a region whose code outside the microkernels is vector math (a SiLU or
  // GELU epilogue, a softmax row, an elementwise chain) ran 10-25% slower than at tier 2 for a
  // third less codegen time (docs/codegen.md). Above CodeGenOpt::None registers are allocated as
  // at -O2 (greedy allocator): the fast one spilled loop-carried vector accumulators every
  // iteration (tier-1 LayerNorm rows 5x slower than tier 0's).
  jtmb.setCodeGenOptLevel(tier == Tier::kTier1 ? llvm::CodeGenOpt::Less
                                               : llvm::CodeGenOpt::Default);
  auto tm = jtmb.createTargetMachine();
  if (!tm) return status_from(tm.takeError(), "creating the target machine");
  if (tier == Tier::kTier1) (*tm)->setFastISel(true);
  return std::move(*tm);
}

using Clock = std::chrono::steady_clock;
int64_t us_since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t).count();
}

// "tj_<name>_<process nonce>_<counter>": unique in this process, and objects loaded from the
// code cache (built by another process, with another nonce) do not collide with fresh ones.
std::string unique_symbol(const std::string& name) {
  static const std::string nonce = [] {
    std::random_device rd;
    return fmt::format("{:08x}", rd());
  }();
  static std::atomic<uint64_t> counter{0};
  std::string s = "tj_";
  for (char c : name) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s + "_" + nonce + "_" + std::to_string(counter.fetch_add(1));
}

// Links `object` into the JIT; the kernel owns the code through its ResourceTracker.
Expected<CompiledKernel> link(std::unique_ptr<llvm::MemoryBuffer> object,
                              const std::string& symbol) {
  auto t_link = Clock::now();
  TJ_ASSIGN_OR_RETURN(Jit * jit, Jit::instance());
  TJ_ASSIGN_OR_RETURN(Jit::Loaded loaded, jit->add_object(std::move(object), symbol));
  CompiledKernel k;
  k.fn = reinterpret_cast<KernelFn>(loaded.address);
  k.symbol = symbol;
  auto* tracker = new llvm::orc::ResourceTrackerSP(std::move(loaded.tracker));
  k.code = std::shared_ptr<void>(tracker, [symbol](void* p) {
    auto* rt = static_cast<llvm::orc::ResourceTrackerSP*>(p);
    if (llvm::Error err = (*rt)->remove()) {
      TJ_LOG_WARN("codegen: removing {}: {}", symbol, llvm::toString(std::move(err)));
    }
    delete rt;
  });
  k.link_us = us_since(t_link);
  return k;
}

struct Built {
  int64_t optimize_us = 0;
  std::unique_ptr<llvm::LLVMContext> ctx;
  std::unique_ptr<llvm::TargetMachine> tm;
  std::unique_ptr<llvm::Module> module;
};

// LLVM's diagnostics for one kernel go to tierjit's log, not stderr: the optimizer's "loop not
// vectorized: the optimizer was unable to perform the requested transformation" (a loop we asked
// to vectorize that it left scalar; the code is still correct) is a debug message, as every
// remark and note; errors (none expected: the module is verified first) are warnings.
void log_llvm_diagnostic(const llvm::DiagnosticInfo& info, void* kernel_name) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::DiagnosticPrinterRawOStream printer(os);
  info.print(printer);
  std::string_view message = os.str();
  constexpr std::string_view kNoLocation = "<unknown>:0:0: ";  // our IR carries no debug locations
  if (message.substr(0, kNoLocation.size()) == kNoLocation) message.remove_prefix(kNoLocation.size());
  const auto& name = *static_cast<const std::string*>(kernel_name);
  if (info.getSeverity() == llvm::DS_Error) TJ_LOG_WARN("codegen: LLVM on kernel '{}': {}", name, message);
  else TJ_LOG_DEBUG("codegen: LLVM on kernel '{}': {}", name, message);
}

// Verified, optimized module whose contents `emit` writes into the empty module (`name`: of the
// kernel or program, for errors and LLVM's diagnostics).
Expected<Built> build(const std::string& name, Tier tier, const std::string& symbol,
                      const std::function<Status(llvm::Module&)>& emit) {
  TJ_RETURN_IF_ERROR(Jit::instance().status());  // initializes the native target once
  Built out;
  out.ctx = std::make_unique<llvm::LLVMContext>();
  // The name outlives every diagnostic: they are reported during emit and run_pipeline below.
  out.ctx->setDiagnosticHandlerCallBack(log_llvm_diagnostic, const_cast<std::string*>(&name));
  TJ_ASSIGN_OR_RETURN(out.tm, make_target_machine(tier));
  out.module = std::make_unique<llvm::Module>(symbol, *out.ctx);
  out.module->setTargetTriple(out.tm->getTargetTriple().str());
  out.module->setDataLayout(out.tm->createDataLayout());
  TJ_RETURN_IF_ERROR(emit(*out.module));
  std::string msg;
  llvm::raw_string_ostream os(msg);
  if (llvm::verifyModule(*out.module, &os)) {
    return internal_error("codegen: kernel '{}' produced invalid LLVM IR: {}", name, os.str());
  }
  auto t0 = Clock::now();
  run_pipeline(*out.module, *out.tm, tier);
  out.optimize_us = us_since(t0);
  return out;
}

Expected<Built> build(const kir::Function& f, Tier tier, const std::string& symbol) {
  TJ_RETURN_IF_ERROR(kir::verify(f));
  return build(f.name, tier, symbol,
               [&](llvm::Module& m) { return emit_function(f, m, symbol); });
}

// Object code of `built` linked into the JIT; `t0`: when the compile started (compile_us).
Expected<CompiledKernel> finish(Built built, const std::string& symbol, const CompileOptions& options,
                                Clock::time_point t0) {
  auto t_codegen = Clock::now();
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
  int64_t codegen_us = us_since(t_codegen);
  std::string kept =
      options.keep_object ? std::string(object.data(), object.size()) : std::string();
  TJ_ASSIGN_OR_RETURN(CompiledKernel k,
                      link(std::make_unique<llvm::SmallVectorMemoryBuffer>(
                               std::move(object), symbol, /*RequiresNullTerminator=*/false),
                           symbol));
  k.codegen_us = codegen_us;
  k.optimize_us = built.optimize_us;
  k.object_bytes = object_bytes;
  k.object = std::move(kept);
  k.compile_us = us_since(t0);
  TJ_LOG_DEBUG("codegen: compiled {} at tier {} in {} us ({} bytes)", symbol,
               static_cast<int>(options.tier), k.compile_us, object_bytes);
  return k;
}

}  // namespace

Expected<CompiledKernel> compile(const kir::Function& f, const CompileOptions& options) {
  auto t0 = Clock::now();
  std::string symbol = unique_symbol(f.name);
  TJ_ASSIGN_OR_RETURN(Built built, build(f, options.tier, symbol));
  return finish(std::move(built), symbol, options, t0);
}

Expected<CompiledKernel> compile_program(const Program& p, const CompileOptions& options) {
  auto t0 = Clock::now();
  TJ_RETURN_IF_ERROR(check_program(p));
  std::string symbol = unique_symbol(p.name);
  TJ_ASSIGN_OR_RETURN(Built built, build(p.name, options.tier, symbol, [&](llvm::Module& m) {
                        return emit_program(p, m, symbol);
                      }));
  return finish(std::move(built), symbol, options, t0);
}

Expected<CompiledKernel> link_object(std::string_view object, const std::string& symbol) {
  auto t0 = Clock::now();
  TJ_ASSIGN_OR_RETURN(CompiledKernel k,
                      link(llvm::MemoryBuffer::getMemBufferCopy(
                               llvm::StringRef(object.data(), object.size()), symbol),
                           symbol));
  k.object_bytes = object.size();
  k.compile_us = us_since(t0);
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
