// tierjit::Tensor — the one tensor type of tierjit: public API, feeds and outputs, initializers in
// the IR, and the interpreter's values. Dense, row-major (C order), 64-byte-aligned storage (or
// borrowed memory, aligned to its element size) that may be shared between tensors: a view
// (reshape, leading-axis slice) aliases its base's bytes.
// Copying a Tensor copies the handle, not the data (like a shared_ptr); clone() copies the data.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "tierjit/dtype.h"

namespace tierjit {

/// Dims of a tensor, outermost first. Every dim is >= 0; rank 0 (empty vector) is a scalar.
using Shape = std::vector<int64_t>;

/// Product of the dims (1 for rank 0). Saturates at INT64_MAX instead of overflowing.
int64_t shape_numel(const Shape& shape);

/// "[2, 3, 4]"
std::string shape_to_string(const Shape& shape);

/// Alignment in bytes of every tensor allocation.
inline constexpr size_t kTensorAlignment = 64;

/// Owns one aligned allocation, or borrows memory owned elsewhere (Tensor::borrow). Strings are
/// stored as constructed std::string objects.
class TensorStorage {
 public:
  TensorStorage(DType dtype, size_t num_elements);  ///< uninitialized numbers, empty strings
  /// Borrows `data` (num_elements of a numeric dtype), freeing nothing: `owner` is kept alive
  /// until this storage is destroyed (released then, on whichever thread drops the last view).
  TensorStorage(DType dtype, size_t num_elements, void* data, std::shared_ptr<const void> owner);
  ~TensorStorage();
  TensorStorage(const TensorStorage&) = delete;
  TensorStorage& operator=(const TensorStorage&) = delete;
  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  bool borrowed() const { return borrowed_; }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  size_t num_elements_ = 0;
  DType dtype_;
  std::shared_ptr<const void> owner_;  ///< what keeps borrowed memory alive (may be null)
  bool borrowed_ = false;
};

/// Maps C++ element types to DType (for typed accessors and factories).
template <class T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::kFloat32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::kFloat64; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::kInt8; };
template <> struct DTypeOf<int16_t> { static constexpr DType value = DType::kInt16; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::kInt32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::kInt64; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::kUInt8; };
template <> struct DTypeOf<uint16_t> { static constexpr DType value = DType::kUInt16; };
template <> struct DTypeOf<uint32_t> { static constexpr DType value = DType::kUInt32; };
template <> struct DTypeOf<uint64_t> { static constexpr DType value = DType::kUInt64; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::kBool; };
template <> struct DTypeOf<std::string> { static constexpr DType value = DType::kString; };

class Tensor {
 public:
  /// An undefined tensor (defined() == false), e.g. an omitted optional input.
  Tensor() = default;

  /// Allocates an uninitialized tensor (strings start empty). Throws std::bad_alloc on failure.
  /// Callers that take sizes from untrusted input check them against a memory limit first.
  static Tensor empty(DType dtype, Shape shape);
  /// Allocates and zero-fills (false for bool, "" for strings).
  static Tensor zeros(DType dtype, Shape shape);
  /// Copies numel(shape) elements of `dtype` from `data` (not for kString).
  static Tensor from_bytes(DType dtype, Shape shape, const void* data);
  /// Views numel(shape) elements of `dtype` at `data` without copying them (a zero-copy feed:
  /// the Python module borrows numpy arrays this way, as ONNX Runtime does). `data` must be
  /// aligned to dtype_size(dtype) (not necessarily 64 bytes) and stay valid and unchanged while
  /// any view of it is in use; `owner` (e.g. a reference to the array) is kept alive as long as
  /// any tensor views the storage. tierjit never writes to a borrowed tensor. Not for kString or
  /// kUndefined, and `data` not null unless numel(shape) == 0: std::invalid_argument.
  static Tensor borrow(DType dtype, Shape shape, void* data, std::shared_ptr<const void> owner);
  /// Copies `values` (values.size() must equal numel(shape)).
  template <class T>
  static Tensor from_vector(Shape shape, const std::vector<T>& values);
  /// Rank-0 tensor holding `v`.
  template <class T>
  static Tensor scalar(T v) { return from_vector<T>({}, std::vector<T>{v}); }

  bool defined() const { return dtype_ != DType::kUndefined; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t axis) const { return shape_[static_cast<size_t>(axis)]; }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }

  void* raw_data() { return data_; }
  const void* raw_data() const { return data_; }
  /// Typed pointer; T must match dtype() in size (not checked in release builds).
  template <class T> T* data() { return static_cast<T*>(data_); }
  template <class T> const T* data() const { return static_cast<const T*>(data_); }
  template <class T> std::span<T> span() { return {data<T>(), static_cast<size_t>(numel_)}; }
  template <class T> std::span<const T> span() const {
    return {data<T>(), static_cast<size_t>(numel_)};
  }
  /// Element i (flat, row-major) converted to double / int64 (any numeric dtype incl. f16).
  double value_as_double(int64_t i) const;
  int64_t value_as_int64(int64_t i) const;

  /// View with another shape of the same numel, sharing storage.
  Tensor reshaped(Shape shape) const;
  /// View of rows [begin, end) along axis 0, sharing storage.
  Tensor slice_rows(int64_t begin, int64_t end) const;
  /// Deep copy into fresh storage.
  Tensor clone() const;
  /// True if both tensors view the same storage.
  bool shares_storage_with(const Tensor& other) const { return storage_ == other.storage_; }
  /// Tensors (this one included) viewing this one's storage; 0 when undefined. Caches that hold
  /// a tensor to key on its data use it to drop entries nobody else holds any more.
  long storage_holders() const { return storage_.use_count(); }
  /// Bytes of the whole storage this tensor views (0 when undefined): more than nbytes() for a
  /// slice of a larger buffer.
  size_t storage_nbytes() const { return storage_ ? storage_->nbytes() : 0; }
  /// True if the storage is borrowed (Tensor::borrow) and so must never be written or handed out
  /// as a caller's own memory.
  bool borrowed() const { return storage_ && storage_->borrowed(); }

 private:
  std::shared_ptr<TensorStorage> storage_;
  void* data_ = nullptr;
  DType dtype_ = DType::kUndefined;
  Shape shape_;
  int64_t numel_ = 0;
};

template <class T>
Tensor Tensor::from_vector(Shape shape, const std::vector<T>& values) {
  Tensor t = empty(DTypeOf<T>::value, std::move(shape));
  T* out = t.data<T>();
  for (size_t i = 0; i < values.size() && i < static_cast<size_t>(t.numel()); ++i) out[i] = values[i];
  return t;
}

}  // namespace tierjit
