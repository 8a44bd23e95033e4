// Kernel selection (tier 3, DESIGN.md "Tier"): for one region at one exact shape, compile the
// tuning candidates the lowering offers (kir::tuning_candidates) and, where the caller provides
// it, the library path (the region run by tier 0, whose MatMul/Gemm/Conv call oneDNN), measure
// each on the call's own data with repetitions interleaved across candidates, and keep the
// fastest. Every measurement is kept for the decision log and the benchmarks.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "kir/lower/lower.h"
#include "support/status.h"
#include "tierjit/tensor.h"

namespace tierjit::runtime {

struct KernelCandidate {
  std::string name;                       ///< "generated mr=6 nr=32 kc=256", "library (tier 0)"
  std::map<std::string, int64_t> tuning;  ///< the lowering's knobs (empty: defaults)
  bool library = false;
  Status status;             ///< not ok: lowering or compile failed (then not measured)
  double best_us = 0;        ///< fastest repetition, µs per call
  double median_us = 0;      ///< median repetition, µs per call
  int64_t compile_us = 0;    ///< lower + compile wall time, µs (0 for the library)
};

struct KernelSelection {
  std::vector<KernelCandidate> candidates;
  int chosen = -1;               ///< index into candidates (the lowest best_us)
  kir::LoweredRegion lowered;    ///< of the chosen candidate, when generated
  /// Its prepared constant inputs (region_exec.h prepare_inputs; empty Tensor: as is).
  std::vector<Tensor> prepared_inputs;
  codegen::CompiledKernel kernel;  ///< fn == nullptr when the library was chosen
  int64_t total_us = 0;          ///< wall time of the whole selection, µs
  /// Tuning candidates whose kernel IR equalled an earlier candidate's (not compiled again).
  int duplicates = 0;
  /// False when the default candidate or the library took under SelectOptions::min_search_us:
  /// then `unsearched` tuning candidates were not compiled.
  bool searched = true;
  int unsearched = 0;

  const KernelCandidate& choice() const { return candidates[chosen]; }
  /// "chose generated mr=8 nr=32 kc=256: 101.2 µs (best of 5); generated mr=6 ...: 110.9 µs; ..."
  std::string summary() const;
};

struct SelectOptions {
  int reps = 5;                ///< repetitions per candidate (interleaved), >= 1
  int64_t min_rep_us = 2000;   ///< a repetition loops calls until it lasts at least this long
  codegen::Tier codegen_tier = codegen::Tier::kTier2;
  /// µs per call under which the default candidate or the library ends the search: the other
  /// tuning candidates (a compile each, ~0.1 s) are tried only when both take at least this.
  double min_search_us = 50;
};

/// Selects the fastest kernel for `region` under `options` (an exact or shape-class request; its
/// `tuning` is ignored — the candidates replace it). The default candidate and the library are
/// compiled and timed first; the other tuning candidates only when both take at least
/// `select.min_search_us` per call, each compiled unless its kernel IR equals an earlier one's. `buffers` and `dims` are one call's
/// arguments in the kernel ABI of kir/lower/lower.h (inputs then outputs, no workspace; every
/// candidate gets its own workspace); outputs are overwritten. `run_library` (may be empty) runs
/// the region once by tier 0 and is measured as the "library" candidate. Errors: kUnsupported
/// when no candidate lowers and compiles and there is no library (the statuses are in the
/// message), or the first error of run_library.
Expected<KernelSelection> select_kernel(const passes::Region& region, const kir::LowerOptions& options,
                                        const std::vector<void*>& buffers,
                                        const std::vector<int64_t>& dims,
                                        const std::function<Status()>& run_library,
                                        const SelectOptions& select = {});

}  // namespace tierjit::runtime
