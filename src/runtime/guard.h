// Specialization (what a compiled version assumes about its Signature) and Guard (the check at the
// version's entry that a call meets those assumptions; DESIGN.md "Specialization", "Guard").
// A Guard checks dtypes, ranks, and only the dims the code depends on; a failure carries its
// reason in the words of the decision log ("input 0 dim 1: specialized 128, got 77").
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/signature.h"

namespace tierjit::runtime {

/// Constraint on one flat dim: kAny (unconstrained), kExact (== value), kClass (bucket == value).
struct DimConstraint {
  DimKind kind = DimKind::kAny;
  int64_t value = 0;
};

/// Assumptions of a compiled version about its call signature.
struct Specialization {
  struct InputSpec {
    DType dtype = DType::kUndefined;
    int32_t rank = 0;
    bool has_values = false;      ///< exact only: the input's values are constants of the code
    std::vector<int64_t> values;  ///< when has_values
  };
  SpecLevel level = SpecLevel::kGeneric;
  std::vector<InputSpec> inputs;
  std::vector<DimConstraint> dims;  ///< one per flat dim of the signature it was built from

  /// Every dim the code depends on constant (depends[flat] != 0; empty = every dim), and the
  /// values the signature recorded.
  static Specialization exact(const Signature& sig, std::span<const uint8_t> depends = {});
  /// Dims with dynamic[flat] != 0 constrained to their bucket, the other depended-on dims exact.
  static Specialization shape_class(const Signature& sig, std::span<const uint8_t> dynamic,
                                    std::span<const uint8_t> depends = {});
  /// Dtypes and ranks only, and the dims with pinned[flat] != 0 exact (the dims a region's code
  /// needs as constants at every level, kir::constant_dims_required: a Conv's C/H/W).
  static Specialization generic(const Signature& sig, std::span<const uint8_t> pinned = {});

  /// Key of this specialization (never 0). With full `depends`: exact(s).key() == s.exact_key(),
  /// shape_class(s, dyn).key() == s.class_key(dyn), generic(s).key() == s.generic_key().
  uint64_t key() const;
  /// The key `sig` has under this specialization's pattern (the kind of each dim constraint and
  /// which inputs carry values): equals key() when sig meets the specialization (and, with
  /// probability 2^-64, on a collision — the Guard confirms). 0 when the layout differs.
  uint64_t key_of(const Signature& sig) const;
  /// Identity of the pattern: specializations with equal pattern ids share key_of().
  uint64_t pattern_id() const;
  /// "exact float32[8,64]", "shape_class float32[<=128,64]", "generic float32[?,?]".
  std::string to_string() const;
};

/// Why a guard failed. input/dim are -1 where not about one input/dim; flat_dim is the flat index
/// of the failing dim or -1.
struct GuardFailure {
  int input = -1;
  int dim = -1;
  int flat_dim = -1;
  std::string reason;
};

/// The entry check of one version, compiled from a Specialization into flat arrays.
class Guard {
 public:
  Guard() = default;  ///< accepts any signature with zero inputs only
  explicit Guard(const Specialization& spec);

  /// True when `sig` meets the assumptions. No allocation; cost O(inputs + constrained dims).
  bool passes(const Signature& sig) const noexcept;
  /// nullopt when `sig` meets the assumptions (no allocation on that path); otherwise the first
  /// failing check with its reason:
  ///   "signature has 3 inputs, specialized for 2"
  ///   "input 0: specialized float32, got int64"     "input 0: specialized rank 2, got 3"
  ///   "input 0 dim 1: specialized 128, got 77"      "input 0 dim 1: class 128 (65..128), got 300"
  ///   "input 1 values: specialized {1,2}, got {1,3}" ("got none" when the call recorded none)
  std::optional<GuardFailure> check(const Signature& sig) const;
  /// Flat index of the first checked dim `sig` fails, or -1 (none fails, or the layout differs).
  /// No allocation: the per-call way to learn which dim drifts.
  int failing_flat_dim(const Signature& sig) const noexcept;
  /// Number of dims this guard checks (the dims the code depends on).
  size_t num_dim_checks() const { return dims_.size(); }

 private:
  struct InputCheck {
    DType dtype;
    int32_t rank;
    int32_t value_count;  ///< -1: values not checked
    uint32_t value_offset;
  };
  struct DimCheck {
    uint32_t flat;
    int32_t input;
    int32_t dim;
    DimKind kind;
    int64_t lo, hi;  ///< allowed closed range; value (exact) or bucket (class) is hi
  };
  std::vector<InputCheck> inputs_;
  std::vector<DimCheck> dims_;
  std::vector<int64_t> values_;
};

}  // namespace tierjit::runtime
