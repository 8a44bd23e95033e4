// Tensor storage and views (public API, include/tierjit/tensor.h).
#include "tierjit/tensor.h"

#include <cstdlib>
#include <limits>
#include <new>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "support/buffer_pool.h"
#include "support/check.h"
#include "support/float16.h"

namespace tierjit {

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  bool saturated = false;  // a zero dim still makes the product 0
  for (int64_t d : shape) {
    if (d == 0) return 0;
    saturated = saturated || __builtin_mul_overflow(n, d, &n);
  }
  return saturated ? std::numeric_limits<int64_t>::max() : n;
}

std::string shape_to_string(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

TensorStorage::TensorStorage(DType dtype, size_t num_elements)
    : num_elements_(num_elements), dtype_(dtype) {
  size_t bytes = num_elements * dtype_size(dtype);
  nbytes_ = bytes;
  size_t alloc = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  if (alloc == 0) alloc = kTensorAlignment;
  data_ = support::buffer_alloc(alloc);  // large ones pooled off the malloc heap (buffer_pool.h)
  if (dtype == DType::kString) {
    auto* s = static_cast<std::string*>(data_);
    for (size_t i = 0; i < num_elements; ++i) new (s + i) std::string();
  }
}

TensorStorage::TensorStorage(DType dtype, size_t num_elements, void* data,
                             std::shared_ptr<const void> owner)
    : data_(data), nbytes_(num_elements * dtype_size(dtype)), num_elements_(num_elements),
      dtype_(dtype), owner_(std::move(owner)), borrowed_(true) {}

TensorStorage::~TensorStorage() {
  if (borrowed_) return;  // the owner is released with this object
  if (dtype_ == DType::kString) {
    auto* s = static_cast<std::string*>(data_);
    for (size_t i = 0; i < num_elements_; ++i) s[i].~basic_string();
  }
  size_t alloc = (nbytes_ + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  support::buffer_free(data_, alloc == 0 ? kTensorAlignment : alloc);
}

Tensor Tensor::empty(DType dtype, Shape shape) {
  Tensor t;
  t.dtype_ = dtype;
  t.numel_ = shape_numel(shape);
  t.shape_ = std::move(shape);
  t.storage_ = std::make_shared<TensorStorage>(dtype, static_cast<size_t>(t.numel_));
  t.data_ = t.storage_->data();
  return t;
}

Tensor Tensor::zeros(DType dtype, Shape shape) {
  Tensor t = empty(dtype, std::move(shape));
  if (dtype != DType::kString && t.nbytes() > 0) std::memset(t.data_, 0, t.nbytes());
  return t;
}

Tensor Tensor::from_bytes(DType dtype, Shape shape, const void* data) {
  TJ_CHECK(dtype != DType::kString);
  Tensor t = empty(dtype, std::move(shape));
  if (t.nbytes() > 0) std::memcpy(t.data_, data, t.nbytes());
  return t;
}

Tensor Tensor::borrow(DType dtype, Shape shape, void* data, std::shared_ptr<const void> owner) {
  if (dtype == DType::kString || dtype == DType::kUndefined)
    throw std::invalid_argument(fmt::format("Tensor::borrow: dtype {} cannot be borrowed", dtype_name(dtype)));
  Tensor t;
  t.dtype_ = dtype;
  t.numel_ = shape_numel(shape);
  t.shape_ = std::move(shape);
  const size_t es = dtype_size(dtype);
  if (t.numel_ > 0 && data == nullptr) throw std::invalid_argument("Tensor::borrow: null data");
  if (es > 0 && reinterpret_cast<uintptr_t>(data) % es != 0)
    throw std::invalid_argument(fmt::format("Tensor::borrow: data {} is not aligned to {} bytes", data, es));
  t.storage_ = std::make_shared<TensorStorage>(dtype, static_cast<size_t>(t.numel_), data, std::move(owner));
  t.data_ = data;
  return t;
}

double Tensor::value_as_double(int64_t i) const {
  switch (dtype_) {
    case DType::kFloat32: return data<float>()[i];
    case DType::kFloat64: return data<double>()[i];
    case DType::kFloat16: return support::half_to_float(data<uint16_t>()[i]);
    case DType::kBFloat16: return support::bfloat16_to_float(data<uint16_t>()[i]);
    case DType::kInt8: return data<int8_t>()[i];
    case DType::kInt16: return data<int16_t>()[i];
    case DType::kInt32: return data<int32_t>()[i];
    case DType::kInt64: return static_cast<double>(data<int64_t>()[i]);
    case DType::kUInt8: return data<uint8_t>()[i];
    case DType::kUInt16: return data<uint16_t>()[i];
    case DType::kUInt32: return data<uint32_t>()[i];
    case DType::kUInt64: return static_cast<double>(data<uint64_t>()[i]);
    case DType::kBool: return data<bool>()[i] ? 1.0 : 0.0;
    default: return 0.0;
  }
}

int64_t Tensor::value_as_int64(int64_t i) const {
  switch (dtype_) {
    case DType::kInt8: return data<int8_t>()[i];
    case DType::kInt16: return data<int16_t>()[i];
    case DType::kInt32: return data<int32_t>()[i];
    case DType::kInt64: return data<int64_t>()[i];
    case DType::kUInt8: return data<uint8_t>()[i];
    case DType::kUInt16: return data<uint16_t>()[i];
    case DType::kUInt32: return data<uint32_t>()[i];
    case DType::kUInt64: return static_cast<int64_t>(data<uint64_t>()[i]);
    case DType::kBool: return data<bool>()[i] ? 1 : 0;
    default: return static_cast<int64_t>(value_as_double(i));
  }
}

Tensor Tensor::reshaped(Shape shape) const {
  TJ_CHECK(shape_numel(shape) == numel_);
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::slice_rows(int64_t begin, int64_t end) const {
  TJ_CHECK(rank() >= 1 && 0 <= begin && begin <= end && end <= shape_[0]);
  Tensor t = *this;
  int64_t row = shape_[0] == 0 ? 0 : numel_ / shape_[0];
  t.shape_[0] = end - begin;
  t.numel_ = row * (end - begin);
  t.data_ = static_cast<char*>(data_) + static_cast<size_t>(begin * row) * dtype_size(dtype_);
  return t;
}

Tensor Tensor::clone() const {
  if (!defined()) return Tensor();
  Tensor t = empty(dtype_, shape_);
  if (dtype_ == DType::kString) {
    for (int64_t i = 0; i < numel_; ++i) t.data<std::string>()[i] = data<std::string>()[i];
  } else if (nbytes() > 0) {
    std::memcpy(t.data_, data_, nbytes());
  }
  return t;
}

}  // namespace tierjit
