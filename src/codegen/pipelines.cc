// Per-tier LLVM optimization pipelines (new pass manager). Tier 2 is the stock -O2 module
// pipeline with loop and SLP vectorization. Tier 1 is a trimmed function pipeline chosen by
// measurement (docs/codegen.md): our emitter already produces SSA with rotated loops, so the
// cleanup passes that -O2 runs to get there are skipped; it keeps instcombine/CSE/LICM and the
// loop vectorizer, which is where the 30-55x of -O2 over -O0 comes from.
#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Transforms/InstCombine/InstCombine.h>
#include <llvm/Transforms/Scalar/EarlyCSE.h>
#include <llvm/Transforms/Scalar/LICM.h>
#include <llvm/Transforms/Scalar/SROA.h>
#include <llvm/Transforms/Scalar/SimplifyCFG.h>
#include <llvm/Transforms/Vectorize/LoopVectorize.h>

#include "codegen/codegen_internal.h"

namespace tierjit::codegen {

void run_pipeline(llvm::Module& m, llvm::TargetMachine& tm, Tier tier) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.SLPVectorization = tier == Tier::kTier2;
  pto.LoopUnrolling = tier == Tier::kTier2;
  llvm::PassBuilder pb(&tm, pto);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);

  llvm::ModulePassManager mpm;
  if (tier == Tier::kTier2) {
    mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
  } else {
    llvm::FunctionPassManager fpm;
    // Allocate scratch (reduction accumulators) into registers: left in memory, every step of an
    // accumulator chain waits on a store-to-load forward (tier-1 softmax rows ran 2x slower).
    fpm.addPass(llvm::SROAPass(llvm::SROAOptions::PreserveCFG));
    fpm.addPass(llvm::EarlyCSEPass(/*UseMemorySSA=*/false));
    fpm.addPass(llvm::InstCombinePass());
    fpm.addPass(llvm::createFunctionToLoopPassAdaptor(llvm::LICMPass(llvm::LICMOptions()),
                                                      /*UseMemorySSA=*/true));
    fpm.addPass(llvm::LoopVectorizePass(llvm::LoopVectorizeOptions()));
    fpm.addPass(llvm::InstCombinePass());
    fpm.addPass(llvm::SimplifyCFGPass());
    mpm.addPass(llvm::createModuleToFunctionPassAdaptor(std::move(fpm)));
  }
  mpm.run(m, mam);
}

}  // namespace tierjit::codegen
