// Specialization constructors and keys; Guard compilation and checks.
#include "runtime/guard.h"

#include <algorithm>

#include <fmt/format.h>

namespace tierjit::runtime {

namespace {

bool flag(std::span<const uint8_t> mask, size_t i, bool if_empty) {
  if (mask.empty()) return if_empty;
  return i < mask.size() && mask[i] != 0;
}

Specialization base(SpecLevel level, const Signature& sig) {
  Specialization s;
  s.level = level;
  s.inputs.resize(sig.num_inputs());
  for (size_t i = 0; i < sig.num_inputs(); ++i) {
    s.inputs[i].dtype = sig.dtype(i);
    s.inputs[i].rank = sig.rank(i);
  }
  s.dims.resize(sig.num_dims());
  return s;
}

}  // namespace

Specialization Specialization::exact(const Signature& sig, std::span<const uint8_t> depends) {
  Specialization s = base(SpecLevel::kExact, sig);
  for (size_t f = 0; f < sig.num_dims(); ++f) {
    if (flag(depends, f, true)) s.dims[f] = {DimKind::kExact, sig.flat_dim(f)};
  }
  for (size_t i = 0; i < sig.num_inputs(); ++i) {
    if (sig.has_values(i)) {
      s.inputs[i].has_values = true;
      auto v = sig.values(i);
      s.inputs[i].values.assign(v.begin(), v.end());
    }
  }
  return s;
}

Specialization Specialization::shape_class(const Signature& sig, std::span<const uint8_t> dynamic,
                                           std::span<const uint8_t> depends) {
  Specialization s = base(SpecLevel::kShapeClass, sig);
  for (size_t f = 0; f < sig.num_dims(); ++f) {
    if (!flag(depends, f, true)) continue;
    int64_t d = sig.flat_dim(f);
    s.dims[f] = flag(dynamic, f, false) ? DimConstraint{DimKind::kClass, bucket(d)}
                                        : DimConstraint{DimKind::kExact, d};
  }
  return s;
}

Specialization Specialization::generic(const Signature& sig, std::span<const uint8_t> pinned) {
  Specialization s = base(SpecLevel::kGeneric, sig);
  for (size_t f = 0; f < sig.num_dims(); ++f)
    if (flag(pinned, f, false)) s.dims[f] = {DimKind::kExact, sig.flat_dim(f)};
  return s;
}

uint64_t Specialization::key() const {
  KeyBuilder k(level, inputs.size());
  size_t flat = 0;
  for (const InputSpec& in : inputs) {
    k.input(in.dtype, in.rank);
    for (int32_t d = 0; d < in.rank; ++d, ++flat) {
      const DimConstraint& c = flat < dims.size() ? dims[flat] : DimConstraint{};
      k.dim(c.kind, c.value);
    }
    if (in.has_values) {
      k.values(in.values);
    } else {
      k.no_values();
    }
  }
  uint64_t key = k.digest();
  return key == 0 ? 1 : key;
}

uint64_t Specialization::key_of(const Signature& sig) const {
  if (sig.num_inputs() != inputs.size() || sig.num_dims() != dims.size()) return 0;
  KeyBuilder k(level, inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (sig.rank(i) != inputs[i].rank) return 0;
    k.input(sig.dtype(i), sig.rank(i));
    for (int32_t d = 0; d < sig.rank(i); ++d) {
      size_t flat = sig.input(i).dim_offset + static_cast<size_t>(d);
      DimKind kind = dims[flat].kind;
      int64_t v = sig.flat_dim(flat);
      k.dim(kind, kind == DimKind::kClass ? bucket(v) : v);
    }
    if (inputs[i].has_values) {
      if (!sig.has_values(i)) return 0;
      k.values(sig.values(i));
    } else {
      k.no_values();
    }
  }
  uint64_t key = k.digest();
  return key == 0 ? 1 : key;
}

uint64_t Specialization::pattern_id() const {
  support::Hasher h;
  h.add_u64(static_cast<uint64_t>(level)).add_u64(inputs.size());
  for (const InputSpec& in : inputs) h.add_i64(in.rank).add_u64(in.has_values ? 1 : 0);
  for (const DimConstraint& c : dims) h.add_u64(static_cast<uint64_t>(c.kind));
  return h.digest();
}

std::string Specialization::to_string() const {
  std::string out = spec_level_name(level);
  size_t flat = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    out += i ? ", " : " ";
    out += fmt::format("{}[", dtype_name(inputs[i].dtype));
    for (int32_t d = 0; d < inputs[i].rank; ++d, ++flat) {
      if (d) out += ",";
      const DimConstraint& c = flat < dims.size() ? dims[flat] : DimConstraint{};
      if (c.kind == DimKind::kExact) out += std::to_string(c.value);
      if (c.kind == DimKind::kClass) out += fmt::format("<={}", c.value);
      if (c.kind == DimKind::kAny) out += "?";
    }
    out += "]";
    if (inputs[i].has_values) out += fmt::format("={{{}}}", fmt::join(inputs[i].values, ","));
  }
  return out;
}

Guard::Guard(const Specialization& spec) {
  size_t flat = 0;
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    const auto& in = spec.inputs[i];
    InputCheck ic{in.dtype, in.rank, -1, static_cast<uint32_t>(values_.size())};
    if (in.has_values) {
      ic.value_count = static_cast<int32_t>(in.values.size());
      values_.insert(values_.end(), in.values.begin(), in.values.end());
    }
    inputs_.push_back(ic);
    for (int32_t d = 0; d < in.rank; ++d, ++flat) {
      if (flat >= spec.dims.size()) break;
      const DimConstraint& c = spec.dims[flat];
      if (c.kind == DimKind::kAny) continue;
      int64_t lo = c.kind == DimKind::kClass ? bucket_low(c.value) : c.value;
      dims_.push_back({static_cast<uint32_t>(flat), static_cast<int32_t>(i), d, c.kind, lo,
                       c.value});
    }
  }
}

bool Guard::passes(const Signature& sig) const noexcept {
  if (sig.num_inputs() != inputs_.size()) return false;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const InputCheck& ic = inputs_[i];
    if (sig.dtype(i) != ic.dtype || sig.rank(i) != ic.rank) return false;
  }
  for (const DimCheck& c : dims_) {
    int64_t v = sig.flat_dim(c.flat);
    if (v < c.lo || v > c.hi) return false;
  }
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const InputCheck& ic = inputs_[i];
    if (ic.value_count < 0) continue;
    auto got = sig.values(i);
    if (!sig.has_values(i) || got.size() != static_cast<size_t>(ic.value_count) ||
        !std::equal(got.begin(), got.end(), values_.begin() + ic.value_offset))
      return false;
  }
  return true;
}

int Guard::failing_flat_dim(const Signature& sig) const noexcept {
  if (sig.num_inputs() != inputs_.size()) return -1;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (sig.rank(i) != inputs_[i].rank) return -1;
  }
  for (const DimCheck& c : dims_) {
    int64_t v = sig.flat_dim(c.flat);
    if (v < c.lo || v > c.hi) return static_cast<int>(c.flat);
  }
  return -1;
}

std::optional<GuardFailure> Guard::check(const Signature& sig) const {
  if (passes(sig)) return std::nullopt;
  GuardFailure f;
  if (sig.num_inputs() != inputs_.size()) {
    f.reason = fmt::format("signature has {} inputs, specialized for {}", sig.num_inputs(),
                           inputs_.size());
    return f;
  }
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const InputCheck& ic = inputs_[i];
    f.input = static_cast<int>(i);
    if (sig.dtype(i) != ic.dtype) {
      f.reason = fmt::format("input {}: specialized {}, got {}", i, dtype_name(ic.dtype),
                             dtype_name(sig.dtype(i)));
      return f;
    }
    if (sig.rank(i) != ic.rank) {
      f.reason = fmt::format("input {}: specialized rank {}, got {}", i, ic.rank, sig.rank(i));
      return f;
    }
  }
  for (const DimCheck& c : dims_) {
    int64_t v = sig.flat_dim(c.flat);
    if (v >= c.lo && v <= c.hi) continue;
    f.input = c.input;
    f.dim = c.dim;
    f.flat_dim = static_cast<int>(c.flat);
    if (c.kind == DimKind::kExact) {
      f.reason = fmt::format("input {} dim {}: specialized {}, got {}", c.input, c.dim, c.hi, v);
    } else {
      f.reason = fmt::format("input {} dim {}: class {} ({}..{}), got {}", c.input, c.dim, c.hi,
                             c.lo, c.hi, v);
    }
    return f;
  }
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const InputCheck& ic = inputs_[i];
    if (ic.value_count < 0) continue;
    auto want = std::span<const int64_t>(values_.data() + ic.value_offset,
                                         static_cast<size_t>(ic.value_count));
    auto got = sig.values(i);
    if (sig.has_values(i) && std::equal(got.begin(), got.end(), want.begin(), want.end()))
      continue;
    f.input = static_cast<int>(i);
    f.reason = sig.has_values(i)
                   ? fmt::format("input {} values: specialized {{{}}}, got {{{}}}", i,
                                 fmt::join(want, ","), fmt::join(got, ","))
                   : fmt::format("input {} values: specialized {{{}}}, got none", i,
                                 fmt::join(want, ","));
    return f;
  }
  f.input = -1;
  f.reason = "guard failed";  // unreachable: passes() and check() test the same things
  return f;
}

}  // namespace tierjit::runtime
