// Compiled versions of Regions: lowering (kir/lower) + codegen into a CompiledRegion, the
// per-region store that shares them between Plans, and the first-call check of a new version
// against tier 0 (verify mode). Knows shapes only through the value shapes a Plan recorded.
// Failures are Status values: the caller keeps the region on tier 0 and logs the reason.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/memory_cache.h"
#include "codegen/codegen.h"
#include "kir/lower/lower.h"
#include "passes/region.h"
#include "runtime/version_table.h"
#include "support/status.h"
#include "tierjit/tensor.h"

namespace tierjit::runtime {

/// One compiled version of a region (kernel ABI: kir/lower/lower.h).
struct CompiledRegion {
  codegen::CompiledKernel kernel;
  int tier = 1;                 ///< tier it serves as (1..3)
  kir::ShapeLevel level = kir::ShapeLevel::kGeneric;
  int64_t workspace_bytes = 0;  ///< scratch the kernel needs per call (64-byte aligned)
  uint64_t key = 0;             ///< CompileRequest key (region, tier, level, specs)
  std::vector<std::string> notes;
  int64_t lower_us = 0;         ///< time in lower_region, µs
  /// The kernel IR the code was compiled from (whole-plan compilation emits it again, into one
  /// program with the plan's other kernels).
  std::shared_ptr<const kir::Function> ir;
  /// Per region input: the prepared copy of a constant input the kernel reads instead of the
  /// input's own data (kir::LoweredRegion::input_layouts), or an empty Tensor (as is). Computed
  /// once when the version is compiled; counted in bytes().
  std::vector<Tensor> prepared_inputs;
  bool has_prepared_inputs = false;
  /// Sets prepared_inputs (one per region input, empty Tensor = as is; prepare_inputs()'s
  /// result) and whether any is set.
  void set_prepared_inputs(std::vector<Tensor> prepared) {
    prepared_inputs = std::move(prepared);
    has_prepared_inputs = false;
    for (const Tensor& t : prepared_inputs) has_prepared_inputs = has_prepared_inputs || t.numel() > 0;
  }
  /// Points buffers[i] (the kernel ABI's input i) at the prepared copies; a no-op without any.
  void bind_prepared(void** buffers) const {
    if (!has_prepared_inputs) return;
    for (size_t i = 0; i < prepared_inputs.size(); ++i)
      if (prepared_inputs[i].numel() > 0) buffers[i] = const_cast<void*>(prepared_inputs[i].raw_data());
  }
  size_t bytes() const {
    size_t b = kernel.object_bytes + sizeof(*this);
    for (const Tensor& t : prepared_inputs) b += t.nbytes();
    return b;
  }
};

/// What to compile a region as.
struct CompileRequest {
  int tier = 2;  ///< 1..3
  kir::ShapeLevel level = kir::ShapeLevel::kExact;
  int vector_lanes = 8;
  int threads = 1;
  /// kShapeClass: one byte per flat dim of the region's inputs (Signature order), 1 = the dim
  /// varies and the code reads it at run time, knowing its bucket; every other dim is a constant
  /// of the code (Specialization::shape_class with the same mask guards it).
  std::vector<uint8_t> class_dims;
  /// kExact: per region input, its value when the code may take it as a constant (value
  /// specialization: specialized_input_values in plan.h), else an undefined Tensor.
  std::vector<Tensor> input_values;
};

/// A CompiledRegion as the VersionTable's entry (adaptive mode). Plans call the kernel directly;
/// run() serves other callers: outputs must be allocated by the caller with their shapes.
class CompiledEntry : public VersionEntry {
 public:
  explicit CompiledEntry(std::shared_ptr<const CompiledRegion> c) : c_(std::move(c)) {}
  Status run(const RegionCall& call) const override;
  size_t code_bytes() const override { return c_->bytes(); }
  const std::shared_ptr<const CompiledRegion>& compiled() const { return c_; }

 private:
  std::shared_ptr<const CompiledRegion> c_;
};

/// Lowering options for `region` under `request`: specs from `shapes`/`dtypes` (indexed by
/// Value::id(), the shapes of one call). Exact: every dim; generic: only dims the graph fixes
/// (and constants' dims), -1 elsewhere. Shape class: the input dims of request.class_dims of
/// size >= 2 are -1 with their bucket as bound, every other input dim a constant; an output dim
/// whose graph symbol names an input dim gets that dim's treatment, other output dims are -1.
/// Dims kir::constant_dims_required names are constants at every level.
kir::LowerOptions lower_options(const passes::Region& region, const std::vector<Shape>& shapes,
                                const std::vector<DType>& dtypes, const CompileRequest& request);
/// Key of a compile: region id, tier, level, lanes, threads and every spec (equal keys give
/// interchangeable code for this Session's graph).
uint64_t compile_key(const passes::Region& region, const kir::LowerOptions& options);

/// The prepared copies of `region`'s constant inputs that `layouts` (kir::LoweredRegion::
/// input_layouts) ask for; an empty Tensor where the input is read as is. Copies are shared
/// process-wide by every version asking for the same constant in the same layout (bounded). Errors: kInternal when
/// a non-constant input is asked for, prepare_input's errors; each prefixed "lowering: ".
Expected<std::vector<Tensor>> prepare_inputs(const passes::Region& region,
                                             const std::vector<kir::InputLayout>& layouts);

/// Lowers and compiles (constant inputs prepared once, CompiledRegion::prepared_inputs). Errors: lowering's kUnsupported / kInvalidArgument, codegen's errors,
/// each prefixed "lowering: " or "codegen: ".
Expected<std::shared_ptr<const CompiledRegion>> compile_region(const passes::Region& region,
                                                               const kir::LowerOptions& options,
                                                               int tier, uint64_t key);

/// Runs `compiled` once on `inputs` (Region::inputs order) into fresh outputs of the given dtypes
/// and shapes (Region::outputs order). For verification and tests; the Plan path calls the kernel
/// directly.
std::vector<Tensor> run_compiled(const CompiledRegion& compiled,
                                 const std::vector<const Tensor*>& inputs,
                                 const std::vector<DType>& out_dtypes,
                                 const std::vector<Shape>& out_shapes);

/// Compares a compiled version's outputs with tier 0's: same dtype and shape; floats within
/// |got - want| <= atol + rtol·|want| (NaN matches NaN, ±inf must be equal), other dtypes exact.
/// Error (kInternal) names the output, the flat index and both values.
Status compare_outputs(const std::vector<Tensor>& got, const std::vector<const Tensor*>& want,
                       double rtol = 1e-3, double atol = 1e-4);

/// Compiled versions per region, shared by the Plans that resolve to the same key (a Plan holds
/// a shared_ptr, the store a weak one), backed by the L1 code cache (cache/memory_cache.h: a byte
/// budget, eviction by value) so code outlives the Plans that used it while it is worth its
/// bytes; and the keys whose compile failed (not retried). Thread-safe.
class RegionCodeStore {
 public:
  /// `l1_budget_bytes`: the L1 cache's budget (0: code lives only as long as a Plan holds it).
  explicit RegionCodeStore(size_t num_regions, size_t l1_budget_bytes = 0)
      : regions_(num_regions), l1_(l1_budget_bytes) {}
  /// Live code under the key (held by L1 or by a Plan), or null. `from_l1` (may be null) is set
  /// when the L1 cache held it (a cache hit to log: a new Plan reuses compiled code).
  std::shared_ptr<const CompiledRegion> find(int region, uint64_t key, bool* from_l1 = nullptr) const;
  /// Installs `c` unless the key already holds live code; returns the code now under the key.
  /// Entries L1 evicted to make room are appended to `evicted` (may be null) for the log.
  std::shared_ptr<const CompiledRegion> install(int region, std::shared_ptr<const CompiledRegion> c,
                                                std::vector<cache::Eviction>* evicted = nullptr);
  cache::MemoryCacheStats l1_stats() const { return l1_.stats(); }
  /// The failure recorded for the key, or nullopt.
  std::optional<std::string> failure(int region, uint64_t key) const;
  void record_failure(int region, uint64_t key, std::string reason);

 private:
  struct PerRegion {
    std::unordered_map<uint64_t, std::weak_ptr<const CompiledRegion>> code;
    std::unordered_map<uint64_t, std::string> failed;
  };
  mutable std::mutex mu_;
  std::vector<PerRegion> regions_;
  mutable cache::MemoryCache l1_;
};

}  // namespace tierjit::runtime
