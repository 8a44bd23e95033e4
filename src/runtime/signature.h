// Signature: what one call of a Region looks like — per input its dtype, rank, dims and (for small
// int64 inputs such as shape tensors, when the caller asks) their values — with the three keys of
// DESIGN.md "Specialization": exact key, class key (dynamic dims bucketed) and generic key.
// Dims are addressed by a *flat index*: input 0's dims first, then input 1's, ... (used by Guard,
// DimTracker and Profile alike). Plain value type; building one reuses its storage after clear().
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "support/hash.h"
#include "tierjit/dtype.h"
#include "tierjit/tensor.h"

namespace tierjit::runtime {

/// Most values of one int64 input a Signature records for value specialization.
inline constexpr size_t kMaxSpecializedValues = 8;

/// Shape class of a dim size (DESIGN.md "Specialization"): bucket(0) = 0, bucket(1) = 1,
/// otherwise 2^ceil(log2 s) (2 -> 2, 3 -> 4, 5 -> 8, 128 -> 128, 129 -> 256). Sizes above 2^62
/// and negative sizes (not real dims) are their own class: bucket(s) = s.
int64_t bucket(int64_t s);
/// Smallest size whose bucket is `b` (b a bucket value): 0 -> 0, 1 -> 1, 2 -> 2, 4 -> 3,
/// 128 -> 65. The class of b is the closed range [bucket_low(b), b].
int64_t bucket_low(int64_t b);

/// Level of a Specialization (DESIGN.md): every dim constant / dynamic dims in a bucket / symbolic.
enum class SpecLevel : uint8_t { kExact = 0, kShapeClass = 1, kGeneric = 2 };
/// "exact", "shape_class", "generic".
const char* spec_level_name(SpecLevel level);

/// How a Specialization constrains one dim (kAny: the code does not depend on it, or generic).
enum class DimKind : uint8_t { kAny = 0, kExact = 1, kClass = 2 };

/// Builds the 64-bit keys of signatures and specializations from the same words, so that
/// Specialization::key() equals the signature key it serves. No allocation for up to 64 words.
class KeyBuilder {
 public:
  explicit KeyBuilder(SpecLevel level, size_t num_inputs);
  void input(DType dtype, int32_t rank);
  void dim(DimKind kind, int64_t value);
  void values(std::span<const int64_t> values);  ///< for one input: count then values
  void no_values();
  uint64_t digest();

 private:
  void word(uint64_t w);
  std::array<uint64_t, 64> buf_;
  size_t n_ = 0;
  support::Hasher spill_;
  bool spilled_ = false;
};

class Signature {
 public:
  struct Input {
    DType dtype = DType::kUndefined;
    int32_t rank = 0;
    uint32_t dim_offset = 0;    ///< flat index of this input's dim 0
    uint32_t value_offset = 0;  ///< into the values array
    int32_t value_count = -1;   ///< -1: no values recorded
  };

  /// Appends an input with its dims (rank = dims.size()).
  void add_input(DType dtype, std::span<const int64_t> dims);
  /// Same, recording `values` for value specialization. Returns false (values not recorded,
  /// the input still added) when values.size() > kMaxSpecializedValues.
  bool add_input_with_values(DType dtype, std::span<const int64_t> dims,
                             std::span<const int64_t> values);
  /// Signature of tensors; values are recorded for inputs i with capture_values[i] != 0 that are
  /// int64 with at most kMaxSpecializedValues elements. A null tensor (omitted optional input) is
  /// recorded as dtype kUndefined, rank 0.
  static Signature of_tensors(std::span<const Tensor* const> inputs,
                              std::span<const uint8_t> capture_values = {});
  /// Empties the signature, keeping its storage.
  void clear();

  size_t num_inputs() const { return inputs_.size(); }
  const Input& input(size_t i) const { return inputs_[i]; }
  DType dtype(size_t i) const { return inputs_[i].dtype; }
  int32_t rank(size_t i) const { return inputs_[i].rank; }
  std::span<const int64_t> dims(size_t i) const {
    return {dims_.data() + inputs_[i].dim_offset, static_cast<size_t>(inputs_[i].rank)};
  }
  bool has_values(size_t i) const { return inputs_[i].value_count >= 0; }
  std::span<const int64_t> values(size_t i) const;
  /// Number of dims over all inputs (the flat index range).
  size_t num_dims() const { return dims_.size(); }
  int64_t flat_dim(size_t flat) const { return dims_[flat]; }
  std::span<const int64_t> flat_dims() const { return dims_; }
  /// Input index owning flat dim `flat` (its dim index is flat - input(i).dim_offset).
  size_t input_of_flat(size_t flat) const;
  /// Same number of inputs with the same dtypes and ranks.
  bool same_layout(const Signature& other) const;

  /// Key of exact specialization: dtypes, ranks, every dim, recorded values. Equal signatures
  /// have equal keys; use it as the signature's hash.
  uint64_t exact_key() const;
  uint64_t hash() const { return exact_key(); }
  /// Key of shape-class specialization: dims with dynamic[flat] != 0 bucketed, other dims exact,
  /// no values. `dynamic` shorter than num_dims() counts as 0 for the missing dims.
  uint64_t class_key(std::span<const uint8_t> dynamic) const;
  /// Key of generic specialization: dtypes and ranks only.
  uint64_t generic_key() const;

  /// "(float32[8,64], int64[2]={1,2})".
  std::string to_string() const;

  friend bool operator==(const Signature& a, const Signature& b);

 private:
  std::vector<Input> inputs_;
  std::vector<int64_t> dims_;
  std::vector<int64_t> values_;
};

bool operator==(const Signature::Input& a, const Signature::Input& b);

}  // namespace tierjit::runtime
