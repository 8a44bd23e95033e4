// Signature building, keys and text form.
#include "runtime/signature.h"

#include <bit>
#include <limits>

#include <fmt/format.h>

namespace tierjit::runtime {

int64_t bucket(int64_t s) {
  if (s <= 1 || s > (int64_t{1} << 62)) return s;
  return static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(s)));
}

int64_t bucket_low(int64_t b) { return b <= 2 ? b : b / 2 + 1; }

const char* spec_level_name(SpecLevel level) {
  switch (level) {
    case SpecLevel::kExact: return "exact";
    case SpecLevel::kShapeClass: return "shape_class";
    case SpecLevel::kGeneric: return "generic";
  }
  return "?";
}

KeyBuilder::KeyBuilder(SpecLevel level, size_t num_inputs) {
  word(0x7469657273696700ull | static_cast<uint64_t>(level));
  word(num_inputs);
}

void KeyBuilder::word(uint64_t w) {
  if (n_ == buf_.size()) {
    spill_.add_bytes(buf_.data(), n_ * sizeof(uint64_t));
    spilled_ = true;
    n_ = 0;
  }
  buf_[n_++] = w;
}

void KeyBuilder::input(DType dtype, int32_t rank) {
  word((static_cast<uint64_t>(static_cast<uint32_t>(dtype)) << 32) | static_cast<uint32_t>(rank));
}

void KeyBuilder::dim(DimKind kind, int64_t value) {
  word(static_cast<uint64_t>(kind));
  word(static_cast<uint64_t>(kind == DimKind::kAny ? 0 : value));
}

void KeyBuilder::values(std::span<const int64_t> values) {
  word(values.size() + 1);
  for (int64_t v : values) word(static_cast<uint64_t>(v));
}

void KeyBuilder::no_values() { word(0); }

uint64_t KeyBuilder::digest() {
  if (!spilled_) return support::hash_bytes(buf_.data(), n_ * sizeof(uint64_t), 0x5eed);
  spill_.add_bytes(buf_.data(), n_ * sizeof(uint64_t));
  n_ = 0;
  return spill_.digest();
}

void Signature::add_input(DType dtype, std::span<const int64_t> dims) {
  Input in;
  in.dtype = dtype;
  in.rank = static_cast<int32_t>(dims.size());
  in.dim_offset = static_cast<uint32_t>(dims_.size());
  in.value_offset = static_cast<uint32_t>(values_.size());
  inputs_.push_back(in);
  dims_.insert(dims_.end(), dims.begin(), dims.end());
}

bool Signature::add_input_with_values(DType dtype, std::span<const int64_t> dims,
                                      std::span<const int64_t> values) {
  add_input(dtype, dims);
  if (values.size() > kMaxSpecializedValues) return false;
  inputs_.back().value_count = static_cast<int32_t>(values.size());
  values_.insert(values_.end(), values.begin(), values.end());
  return true;
}

Signature Signature::of_tensors(std::span<const Tensor* const> inputs,
                                std::span<const uint8_t> capture_values) {
  Signature sig;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor* t = inputs[i];
    if (t == nullptr) {
      sig.add_input(DType::kUndefined, {});
      continue;
    }
    bool capture = i < capture_values.size() && capture_values[i] != 0 &&
                   t->dtype() == DType::kInt64 &&
                   t->numel() <= static_cast<int64_t>(kMaxSpecializedValues);
    if (capture) {
      const int64_t* p = t->data<int64_t>();
      sig.add_input_with_values(t->dtype(), t->shape(),
                                std::span<const int64_t>(p, static_cast<size_t>(t->numel())));
    } else {
      sig.add_input(t->dtype(), t->shape());
    }
  }
  return sig;
}

void Signature::clear() {
  inputs_.clear();
  dims_.clear();
  values_.clear();
}

std::span<const int64_t> Signature::values(size_t i) const {
  const Input& in = inputs_[i];
  if (in.value_count <= 0) return {};
  return {values_.data() + in.value_offset, static_cast<size_t>(in.value_count)};
}

size_t Signature::input_of_flat(size_t flat) const {
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (flat < inputs_[i].dim_offset + static_cast<size_t>(inputs_[i].rank)) return i;
  }
  return inputs_.size();
}

bool Signature::same_layout(const Signature& other) const {
  if (inputs_.size() != other.inputs_.size()) return false;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (inputs_[i].dtype != other.inputs_[i].dtype || inputs_[i].rank != other.inputs_[i].rank)
      return false;
  }
  return true;
}

uint64_t Signature::exact_key() const {
  KeyBuilder k(SpecLevel::kExact, inputs_.size());
  for (size_t i = 0; i < inputs_.size(); ++i) {
    k.input(inputs_[i].dtype, inputs_[i].rank);
    for (int64_t d : dims(i)) k.dim(DimKind::kExact, d);
    if (has_values(i)) {
      k.values(values(i));
    } else {
      k.no_values();
    }
  }
  return k.digest();
}

uint64_t Signature::class_key(std::span<const uint8_t> dynamic) const {
  KeyBuilder k(SpecLevel::kShapeClass, inputs_.size());
  for (size_t i = 0; i < inputs_.size(); ++i) {
    k.input(inputs_[i].dtype, inputs_[i].rank);
    for (int32_t d = 0; d < inputs_[i].rank; ++d) {
      size_t flat = inputs_[i].dim_offset + static_cast<size_t>(d);
      bool dyn = flat < dynamic.size() && dynamic[flat] != 0;
      k.dim(dyn ? DimKind::kClass : DimKind::kExact, dyn ? bucket(dims_[flat]) : dims_[flat]);
    }
    k.no_values();
  }
  return k.digest();
}

uint64_t Signature::generic_key() const {
  KeyBuilder k(SpecLevel::kGeneric, inputs_.size());
  for (size_t i = 0; i < inputs_.size(); ++i) {
    k.input(inputs_[i].dtype, inputs_[i].rank);
    for (int32_t d = 0; d < inputs_[i].rank; ++d) k.dim(DimKind::kAny, 0);
    k.no_values();
  }
  return k.digest();
}

std::string Signature::to_string() const {
  std::string out = "(";
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (i) out += ", ";
    out += fmt::format("{}[{}]", dtype_name(inputs_[i].dtype), fmt::join(dims(i), ","));
    if (has_values(i)) out += fmt::format("={{{}}}", fmt::join(values(i), ","));
  }
  return out + ")";
}

bool operator==(const Signature::Input& a, const Signature::Input& b) {
  return a.dtype == b.dtype && a.rank == b.rank && a.dim_offset == b.dim_offset &&
         a.value_offset == b.value_offset && a.value_count == b.value_count;
}

bool operator==(const Signature& a, const Signature& b) {
  return a.inputs_ == b.inputs_ && a.dims_ == b.dims_ && a.values_ == b.values_;
}

}  // namespace tierjit::runtime
