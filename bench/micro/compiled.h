// Compiled tiers in the micro-benchmarks: a CompiledProgram takes a case's graph and feeds (the
// same Tier0Program makers the tier-0 cases use), partitions it, lowers every region at one tier
// and specialization level (kir/lower/lower.h), compiles it (codegen/) and runs the regions in
// order on preallocated buffers — the compiled code alone, without the runtime's dispatch.
// Regions without a lowering run on tier 0 inside the same program (and are named in notes()).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "kir/lower/lower.h"
#include "micro.h"
#include "passes/partition.h"

namespace tierjit::bench {

/// Runs every node of `g` on tier 0 in order (single thread), keeping every value: `values` is
/// indexed by Value::id() and holds feeds, constants and every node output. Errors: the first
/// node's error.
Status run_all_tier0(const ir::Graph& g, const std::vector<Tensor>& feeds, std::vector<Tensor>& values);

/// LowerOptions for `region` with the shapes in `values` (by Value::id()): dims the graph fixes
/// are constants at every level, the others constants only at kExact (bounds are not set).
kir::LowerOptions lower_options(const passes::Region& region, const std::vector<Tensor>& values,
                                int tier, kir::ShapeLevel level);

struct CompiledProgramOptions {
  int tier = 2;  ///< 1, 2 or 3 (3: kernel selection per region, runtime/kernel_select.h)
  kir::ShapeLevel level = kir::ShapeLevel::kExact;
  std::map<std::string, int64_t> tuning;         ///< tier-3 knobs for every region
  int threads = 1;
};

/// Single-threaded exact-level options at `tier` (what the tier columns of the report use).
inline CompiledProgramOptions exact_at_tier(int tier) {
  CompiledProgramOptions o;
  o.tier = tier;
  o.level = kir::ShapeLevel::kExact;
  o.threads = 1;
  return o;
}

class CompiledProgram {
 public:
  /// Infers shapes, partitions, runs tier 0 once (for every value's shape and the reference
  /// outputs), lowers and compiles each region. Errors: the first lowering/compile error of a
  /// region whose kind is compiled (elementwise, reduction, matmul_epilogue), or a tier-0 error.
  static Expected<std::unique_ptr<CompiledProgram>> make(Tier0Program program,
                                                         const CompiledProgramOptions& options);
  /// Runs every region once (compiled ones through their kernels).
  void run();
  /// Largest |compiled - tier 0| over the graph outputs after run() (a sanity check, printed as
  /// the "max_abs_err" counter).
  double max_abs_error() const;
  /// The standard timed loop: one warm-up run, then run() per iteration.
  void time(benchmark::State& state);
  /// Compile wall time of each compiled region, µs.
  const std::vector<int64_t>& compile_us() const { return compile_us_; }
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  struct Step;
  CompiledProgram() = default;
  std::unique_ptr<ir::Graph> graph_;
  std::unique_ptr<passes::Partition> partition_;  ///< regions point into graph_
  std::vector<Step> steps_;
  std::vector<Tensor> values_;  ///< by Value::id()
  std::vector<Tensor> reference_;
  std::vector<int64_t> compile_us_;
  std::vector<std::string> notes_;
  int threads_ = 1;
  double fastest_candidate_us_ = 0;  ///< tier 3: sum over regions of the fastest candidate
  double chosen_candidate_us_ = 0;   ///< tier 3: sum over regions of the chosen candidate

 public:
  ~CompiledProgram();
};

/// A benchmark body running `make()`'s program compiled at `options` (built on first use).
template <class Make>
std::function<void(benchmark::State&)> compiled_case(Make make, CompiledProgramOptions options) {
  auto program = std::make_shared<std::unique_ptr<CompiledProgram>>();
  auto error = std::make_shared<std::string>();
  return [program, error, make, options](benchmark::State& state) {
    if (!*program && error->empty()) {
      auto p = CompiledProgram::make(make(), options);
      if (p.ok())
        *program = std::move(p).value();
      else
        *error = p.status().message();
    }
    if (!*program) {
      state.SkipWithError(error->c_str());
      return;
    }
    (*program)->time(state);
  };
}

}  // namespace tierjit::bench
