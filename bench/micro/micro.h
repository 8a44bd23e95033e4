// Shared helpers of the micro-benchmarks (bench/micro): build small graphs in memory, run them
// on tier 0 through src/interp, fill inputs with deterministic random values, and register
// benchmarks under the naming convention the report generator (scripts/micro_report.py) groups.
//
// Naming convention: every benchmark is named "<family>.<case>/<system>".
//   family  matmul, conv, elementwise, reduction, compile, peak (one table each in the report)
//   case    the shape or region, e.g. "matmul.512x512x512", "compile.mlp"
//   system  tier0, tier1, tier2, tier3, library (for peak: the instruction set, e.g. avx512)
// Cases of the same "<family>.<case>" with different systems become side-by-side columns with
// ratios vs tier0 and vs library. Compiled tiers plug in by adding a file bench/micro/*.cc that
// calls register_case("matmul.512x512x512", "tier2", ...) (picked up by the glob in
// bench/CMakeLists.txt); compile-time cases use family "compile" and time one compilation.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "interp/executor.h"
#include "ir/graph.h"

namespace tierjit::bench {

/// Tensor of `shape` with values uniform in [lo, hi) from a fixed-seed generator (float32).
Tensor random_tensor(const Shape& shape, uint64_t seed, float lo = -1.f, float hi = 1.f);

ir::Attribute attr_int(int64_t v);
ir::Attribute attr_float(float v);
ir::Attribute attr_ints(std::vector<int64_t> v);

/// Builds a graph node by node. Inputs added with feed() are supplied per run (in call order);
/// constant() adds an initializer, as a loaded model's weights are.
class GraphBuilder {
 public:
  GraphBuilder() : graph_(std::make_unique<ir::Graph>("bench")) {}
  /// A fed graph input of `dtype` (float32 unless given) with a constant shape; dims k with a
  /// non-empty `symbols[k]` are declared symbolic instead (a model's dynamic batch or sequence:
  /// generic-level code reads them at run time), `shape` still gives the fed tensor's dims.
  ir::Value* feed(const std::string& name, const Shape& shape, DType dtype = DType::kFloat32,
                  const std::vector<std::string>& symbols = {});
  /// An initializer holding `t`.
  ir::Value* constant(const std::string& name, Tensor t);
  /// Adds one node (opset 17 unless given) with one output; returns the output value.
  ir::Value* node(ir::OpKind op, std::vector<ir::Value*> inputs,
                  std::vector<std::pair<std::string, ir::Attribute>> attrs = {}, int opset = 17);
  void output(ir::Value* v) { graph_->outputs().push_back(v); }
  std::unique_ptr<ir::Graph> finish() { return std::move(graph_); }

 private:
  std::unique_ptr<ir::Graph> graph_;
  int next_ = 0;
};

/// A graph and its feeds, run on tier 0 single-threaded (ExecOptions::intra_op_threads = 1).
class Tier0Program {
 public:
  Tier0Program(std::unique_ptr<ir::Graph> g, std::vector<Tensor> feeds)
      : graph_(std::move(g)), feeds_(std::move(feeds)) {}
  /// One run; false (and `error` set) if the interpreter returned an error.
  bool run(std::string* error);
  /// The standard timed loop: one warm-up run, then run() per iteration; a failing run ends
  /// the benchmark with SkipWithError.
  void time(benchmark::State& state);
  /// The graph and feeds, for building a CompiledProgram (compiled.h) of the same case.
  std::unique_ptr<ir::Graph> take_graph() { return std::move(graph_); }
  const std::vector<Tensor>& feeds() const { return feeds_; }

 private:
  std::unique_ptr<ir::Graph> graph_;
  std::vector<Tensor> feeds_;
};

/// Registers "<family_case>/<system>" timed in wall-clock time. `flop` (> 0 for arithmetic
/// kernels) is the floating-point operation count of one iteration: it is recorded in the
/// counter "flop" and shown as the rate counter "FLOPS".
/// Returns the registered benchmark (e.g. to set Repetitions()).
benchmark::internal::Benchmark* register_case(const std::string& family_case,
                                              const std::string& system,
                                              std::function<void(benchmark::State&)> body,
                                              double flop = 0);

/// A benchmark body for a tier-0 program: `make()` (returning a Tier0Program) runs on the first
/// repetition, not at registration, so the inputs of cases filtered out are never built.
template <class Make>
std::function<void(benchmark::State&)> tier0_case(Make make) {
  auto program = std::make_shared<std::unique_ptr<Tier0Program>>();
  return [program, make](benchmark::State& state) {
    if (!*program) *program = std::make_unique<Tier0Program>(make());
    (*program)->time(state);
  };
}

}  // namespace tierjit::bench
