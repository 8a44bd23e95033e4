// lower_region(): checks the options against the region and dispatches on the region kind.
#include "kir/lower/lower.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "kernels/packed_gemm.h"
#include "kir/lower/lower_internal.h"

namespace tierjit::kir {

const char* shape_level_name(ShapeLevel level) {
  switch (level) {
    case ShapeLevel::kExact: return "exact";
    case ShapeLevel::kShapeClass: return "shape_class";
    case ShapeLevel::kGeneric: return "generic";
  }
  return "?";
}

namespace {

Status check_specs(const passes::Region& region, const std::vector<const ir::Value*>& values,
                   const std::vector<TensorSpec>& specs, const char* what) {
  if (specs.size() != values.size())
    return invalid_argument("{}", "region '" + region.name + "': " + std::to_string(specs.size()) +
                                  " " + what + " specs for " + std::to_string(values.size()) + " " +
                                  what + "s");
  for (size_t i = 0; i < specs.size(); ++i) {
    const TensorSpec& s = specs[i];
    if (s.bounds.size() != s.dims.size())
      return invalid_argument("{}", "region '" + region.name + "': " + what + " " +
                                    std::to_string(i) + ": bounds and dims differ in length");
    const auto& shape = values[i]->type().shape;
    if (shape && shape->size() != s.dims.size())
      return invalid_argument("{}", "region '" + region.name + "': " + what + " " +
                                    std::to_string(i) + " has rank " + std::to_string(shape->size()) +
                                    ", spec gives " + std::to_string(s.dims.size()));
  }
  return Status();
}

}  // namespace

Expected<LoweredRegion> lower_region(const passes::Region& region, const LowerOptions& options) {
  TJ_RETURN_IF_ERROR(check_specs(region, region.inputs, options.inputs, "input"));
  TJ_RETURN_IF_ERROR(check_specs(region, region.outputs, options.outputs, "output"));
  if (!options.input_values.empty() && options.input_values.size() != region.inputs.size())
    return invalid_argument("region '{}': {} input values for {} inputs", region.name,
                            options.input_values.size(), region.inputs.size());
  for (size_t i = 0; i < options.input_values.size(); ++i) {
    const Tensor& t = options.input_values[i];
    if (!t.defined()) continue;
    int64_t numel = 1;
    for (int64_t d : options.inputs[i].dims) numel = d < 0 ? -1 : numel * d;
    if (t.dtype() != options.inputs[i].dtype || (numel >= 0 && numel != t.numel()))
      return invalid_argument("region '{}': input {} value is {} {}, spec gives {} with {} elements",
                              region.name, i, dtype_name(t.dtype()), shape_to_string(t.shape()),
                              dtype_name(options.inputs[i].dtype), numel);
  }
  Expected<LoweredRegion> out = unsupported("region '{}': no lowering", region.name);
  switch (region.kind) {
    case passes::RegionKind::kElementwise: out = lowering::lower_elementwise(region, options); break;
    case passes::RegionKind::kReduction: out = lowering::lower_reduction(region, options); break;
    case passes::RegionKind::kMatMulEpilogue: out = lowering::lower_matmul(region, options); break;
    case passes::RegionKind::kRecurrent: out = lowering::lower_recurrent(region, options); break;
    case passes::RegionKind::kShapeOnly:
    case passes::RegionKind::kOpaque: break;
  }
  if (out.ok()) {
    out->input_layouts.resize(region.inputs.size(), InputLayout::kAsIs);
    return out;
  }
  if (passes::is_compiled_kind(region.kind)) return out;
  return unsupported("{}", "region '" + region.name + "': " +
                           std::string(passes::region_kind_name(region.kind)) +
                           " regions are not compiled");
}

std::vector<std::map<std::string, int64_t>> tuning_candidates(const passes::Region& region,
                                                              const LowerOptions& options) {
  std::vector<std::map<std::string, int64_t>> out = {{}};
  if (region.kind != passes::RegionKind::kMatMulEpilogue) return out;
  // A Conv takes the knobs below as a 1x1, stride-1, unpadded product on X in place, or when its
  // K = C/group x KH x KW is at most 32 (group 1): other convolutions go through the kernel
  // layer's tiles, and their generated im2col + GEMM alternative lost to them on every measured
  // layer (docs/lowering.md "Tiers").
  if (const ir::Node* n = region.anchor; n && n->op() == ir::OpKind::Conv) {
    const ir::Value* w = n->num_inputs() > 1 ? n->input(1) : nullptr;
    if (!w || !w->type().shape || w->type().shape->size() != 4) return out;
    const ir::SymShape& ws = *w->type().shape;
    auto all_equal = [&](const char* name, int64_t want) {
      const ir::Attribute* a = n->attr(name);
      return !a || std::all_of(a->ints.begin(), a->ints.end(), [&](int64_t v) { return v == want; });
    };
    const std::string auto_pad = n->attr_string("auto_pad", "NOTSET");
    const bool one_by_one = ws[2].value == 1 && ws[3].value == 1 && all_equal("strides", 1) &&
                            all_equal("pads", 0) && auto_pad != "SAME_UPPER" &&
                            auto_pad != "SAME_LOWER";
    const bool small_k = n->attr_int("group", 1) == 1 && ws[1].is_constant() &&
                         ws[2].is_constant() && ws[3].is_constant() &&
                         ws[1].value * ws[2].value * ws[3].value <= 32;
    if (!one_by_one && !small_k) return out;
  }
  // Register tiles of mr rows x nr columns keep mr * nr / lanes accumulators in vector registers
  // (32 with AVX-512, 16 with AVX2; a few stay free for the B loads and the A broadcast).
  const int64_t lanes = options.vector_lanes;
  const int64_t max_acc = lanes >= 16 ? 28 : 12;
  for (int64_t nr_vecs : {1, 2, 3, 4})
    for (int64_t mr : {4, 6, 8, 12, 14}) {
      if (mr * nr_vecs > max_acc || mr * nr_vecs < 8) continue;
      for (int64_t kc : {256, 512})
        out.push_back({{"mr", mr}, {"nr", nr_vecs * lanes}, {"kc", kc}});
    }
  return out;
}

Expected<Tensor> prepare_input(InputLayout layout, const Tensor& t) {
  if (layout == InputLayout::kAsIs) {
    Tensor copy = Tensor::empty(t.dtype(), t.shape());
    std::memcpy(copy.raw_data(), t.raw_data(), t.nbytes());
    return copy;
  }
  if (layout == InputLayout::kGemmPanelsPerDirection) {
    if (t.rank() != 3 || t.dtype() != DType::kFloat32 || t.dim(1) < 1)
      return invalid_argument("per-direction GEMM panels need a float32 [D, N >= 1, K] weight, got {} {}",
                              dtype_name(t.dtype()), shape_to_string(t.shape()));
    const int64_t dirs = t.dim(0), n = t.dim(1), k = t.dim(2);
    const int64_t per = kernels::gemm_packed_floats(n, k);
    Tensor out = Tensor::empty(DType::kFloat32, {dirs * per});
    for (int64_t d = 0; d < dirs; ++d)
      kernels::gemm_pack_b_f32(t.data<float>() + d * n * k, out.data<float>() + d * per, n, k, 1);
    return out;
  }
  if (layout == InputLayout::kGemmPanelsTransposed && t.rank() > 2) {  // a 1x1 conv's [M, C, 1, 1]
    int64_t k = 1;
    for (int64_t d = 1; d < t.rank(); ++d) k *= t.dim(d);
    Tensor flat = Tensor::empty(t.dtype(), {t.dim(0), k});
    std::memcpy(flat.raw_data(), t.raw_data(), t.nbytes());
    return prepare_input(layout, flat);
  }
  if (t.rank() != 2)
    return invalid_argument("a transposed or packed input must be 2-D, got shape {}",
                            shape_to_string(t.shape()));
  if (layout == InputLayout::kGemmPanels || layout == InputLayout::kGemmPanelsTransposed) {
    const bool trans = layout == InputLayout::kGemmPanelsTransposed;
    const int64_t k = trans ? t.dim(1) : t.dim(0), n = trans ? t.dim(0) : t.dim(1);
    if (t.dtype() != DType::kFloat32 || n < 1)
      return invalid_argument("GEMM panels need a float32 weight with N >= 1, got {} {}",
                              dtype_name(t.dtype()), shape_to_string(t.shape()));
    Tensor out = Tensor::empty(DType::kFloat32, {kernels::gemm_packed_floats(n, k)});
    kernels::gemm_pack_b_f32(t.data<float>(), out.data<float>(), n, k, trans ? 1 : 0);
    return out;
  }
  const int64_t rows = t.dim(0), cols = t.dim(1);
  const size_t es = dtype_size(t.dtype());
  Tensor out = Tensor::empty(t.dtype(), {cols, rows});
  const auto* src = static_cast<const char*>(t.raw_data());
  auto* dst = static_cast<char*>(out.raw_data());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      std::memcpy(dst + (c * rows + r) * es, src + (r * cols + c) * es, es);
  return out;
}

ConstantDims constant_dims_required(const passes::Region& region) {
  ConstantDims out;
  const bool conv = region.kind == passes::RegionKind::kMatMulEpilogue && region.anchor &&
                    region.anchor->op() == ir::OpKind::Conv;
  auto mask = [&](const ir::Value* v) {
    const size_t rank = v->type().shape ? v->type().shape->size() : 0;
    std::vector<bool> m(rank, false);
    if (conv && !v->is_constant())
      for (size_t d = 1; d < rank; ++d) m[d] = true;
    return m;
  };
  for (const ir::Value* v : region.inputs) out.inputs.push_back(mask(v));
  for (const ir::Value* v : region.outputs) out.outputs.push_back(mask(v));
  return out;
}

std::string lowering_gap(const passes::Region& region) {
  if (has_lowering(region)) return "";
  if (region.kind == passes::RegionKind::kShapeOnly) return "shape-only: evaluated when a plan is made";
  std::string ops;
  for (const ir::Node* n : region.nodes) {
    if (!ops.empty()) ops += ", ";
    ops += fmt::format("{} '{}'", ir::op_name(n->op()), n->name());
    if (ops.size() > 160) {
      ops += ", ...";
      break;
    }
  }
  if (region.kind == passes::RegionKind::kOpaque) return ops + ": no lowering (opaque region)";
  return fmt::format("{} region of {}: an op, dtype, rank or attribute has no lowering",
                     passes::region_kind_name(region.kind), ops);
}

bool has_lowering(const passes::Region& region) {
  switch (region.kind) {
    case passes::RegionKind::kElementwise: return lowering::elementwise_supported(region);
    case passes::RegionKind::kReduction: return lowering::reduction_supported(region);
    case passes::RegionKind::kMatMulEpilogue: return lowering::matmul_supported(region);
    case passes::RegionKind::kRecurrent: return lowering::recurrent_supported(region);
    default: return false;
  }
}

}  // namespace tierjit::kir
