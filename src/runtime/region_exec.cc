// Compiled versions of Regions (see region_exec.h).
#include "runtime/region_exec.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>
#include <span>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "runtime/signature.h"
#include "support/hash.h"

namespace tierjit::runtime {

namespace {

// `constant`: dims the lowering needs as constants at every level (kir::constant_dims_required).
// `varying` (kShapeClass only, one byte per dim of this input): dims read at run time.
kir::TensorSpec spec_of(const ir::Value& v, const std::vector<Shape>& shapes,
                        const std::vector<DType>& dtypes, kir::ShapeLevel level,
                        const std::vector<bool>& constant, std::span<const uint8_t> varying) {
  kir::TensorSpec s;
  const size_t id = static_cast<size_t>(v.id());
  s.dtype = dtypes[id];
  const Shape& shape = shapes[id];
  s.dims.assign(shape.size(), -1);
  s.bounds.assign(shape.size(), -1);
  const auto& sym = v.type().shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    bool graph_fixed = v.is_constant() ||
                       (sym && sym->size() == shape.size() && (*sym)[d].is_constant() &&
                        (*sym)[d].value == shape[d]);
    const bool required = d < constant.size() && constant[d];
    if (level == kir::ShapeLevel::kExact || graph_fixed || required) {
      s.dims[d] = shape[d];
    } else if (level == kir::ShapeLevel::kShapeClass) {
      const bool varies = d < varying.size() && varying[d] != 0;
      const int64_t b = bucket(shape[d]);
      if (!varies || b <= 1) s.dims[d] = shape[d];  // sizes 0 and 1 are classes of their own
      else s.bounds[d] = b;
    }
  }
  return s;
}

// Output specs at the shape-class level: an output dim carrying the same graph symbol as an input
// dim ("N", "seq") is that input dim's constant or bucket; other symbolic dims stay -1.
void class_output_dims(const passes::Region& region, const kir::LowerOptions& o,
                       kir::TensorSpec& out, const ir::Value& v) {
  const auto& sym = v.type().shape;
  if (!sym || sym->size() != out.dims.size()) return;
  for (size_t d = 0; d < out.dims.size(); ++d) {
    if (out.dims[d] >= 0 || !(*sym)[d].is_symbol()) continue;
    for (size_t i = 0; i < region.inputs.size() && out.dims[d] < 0 && out.bounds[d] < 0; ++i) {
      const auto& isym = region.inputs[i]->type().shape;
      if (!isym || isym->size() != o.inputs[i].dims.size()) continue;
      for (size_t k = 0; k < isym->size(); ++k) {
        if (!(*isym)[k].is_symbol() || (*isym)[k].symbol != (*sym)[d].symbol) continue;
        out.dims[d] = o.inputs[i].dims[k];
        out.bounds[d] = o.inputs[i].bounds[k];
        break;
      }
    }
  }
}

void hash_specs(support::Hasher& h, const std::vector<kir::TensorSpec>& specs) {
  h.add_u64(specs.size());
  for (const kir::TensorSpec& s : specs) {
    h.add_u64(static_cast<uint64_t>(s.dtype)).add_u64(s.dims.size());
    for (int64_t d : s.dims) h.add_u64(static_cast<uint64_t>(d));
    for (int64_t b : s.bounds) h.add_u64(static_cast<uint64_t>(b));
  }
}

bool is_float(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kFloat16 ||
         t == DType::kBFloat16;
}

int64_t elapsed_us(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                               t0)
      .count();
}

}  // namespace

kir::LowerOptions lower_options(const passes::Region& region, const std::vector<Shape>& shapes,
                                const std::vector<DType>& dtypes, const CompileRequest& request) {
  kir::LowerOptions o;
  o.level = request.level;
  o.tier = std::clamp(request.tier, 1, 3);
  o.vector_lanes = request.vector_lanes;
  o.threads = request.threads;
  o.prepare_constant_inputs = true;  // compile_region prepares them; every caller binds them
  const kir::ConstantDims constant = kir::constant_dims_required(region);
  const std::span<const uint8_t> varying(request.class_dims);
  size_t flat = 0;
  for (size_t i = 0; i < region.inputs.size(); ++i) {
    const size_t rank = shapes[static_cast<size_t>(region.inputs[i]->id())].size();
    o.inputs.push_back(spec_of(*region.inputs[i], shapes, dtypes, o.level, constant.inputs[i],
                               flat < varying.size() ? varying.subspan(flat) : varying.subspan(0, 0)));
    flat += rank;
  }
  for (size_t j = 0; j < region.outputs.size(); ++j) {
    o.outputs.push_back(spec_of(*region.outputs[j], shapes, dtypes,
                                o.level == kir::ShapeLevel::kShapeClass ? kir::ShapeLevel::kGeneric
                                                                        : o.level,
                                constant.outputs[j], {}));
    if (o.level == kir::ShapeLevel::kShapeClass)
      class_output_dims(region, o, o.outputs.back(), *region.outputs[j]);
  }
  if (o.level == kir::ShapeLevel::kExact) {
    o.input_values = request.input_values;
    o.input_values.resize(region.inputs.size());
  }
  return o;
}

uint64_t compile_key(const passes::Region& region, const kir::LowerOptions& options) {
  support::Hasher h;
  h.add_u64(static_cast<uint64_t>(region.id))
      .add_u64(static_cast<uint64_t>(options.level))
      .add_u64(static_cast<uint64_t>(options.tier))
      .add_u64(static_cast<uint64_t>(options.vector_lanes))
      .add_u64(static_cast<uint64_t>(options.threads));
  hash_specs(h, options.inputs);
  hash_specs(h, options.outputs);
  for (const Tensor& t : options.input_values) {  // value specialization: the values are code
    h.add_u64(t.defined() ? static_cast<uint64_t>(t.numel()) : ~uint64_t{0});
    if (t.defined() && t.dtype() == DType::kInt64)
      for (int64_t v : t.span<const int64_t>()) h.add_u64(static_cast<uint64_t>(v));
  }
  return h.digest();
}

namespace {

// Prepared copies shared by every version that asks for the same constant in the same layout
// (one exact version per hot shape must not multiply a layer's weights: six shapes of the mlp
// made 9 MB of copies, more than L2, and cycling shapes ran 2.8x slower). Keyed by the
// constant's storage (each entry keeps it alive so the address cannot be reused), dtype and
// shape (folded Reshape / Flatten / Slice constants share storage with another shape). Bounded.
class PreparedCache {
 public:
  Expected<Tensor> get(const Tensor& constant, kir::InputLayout layout) {
    // Storage, shape and dtype: folded Reshape / Flatten / Slice constants share B's storage
    // with another shape, and must not get B's prepared copy.
    const Key key{constant.raw_data(), static_cast<int>(layout), constant.dtype(), constant.shape()};
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = items_.find(key);
      if (it != items_.end()) return it->second.prepared;
    }
    auto prepared = kir::prepare_input(layout, constant);
    if (!prepared.ok()) return prepared.status();
    std::lock_guard<std::mutex> lock(mu_);
    auto it = items_.find(key);  // another thread may have prepared it meanwhile
    if (it != items_.end()) return it->second.prepared;
    const size_t bytes = prepared->nbytes() + constant.nbytes();
    if (bytes_ + bytes > kBudgetBytes) {  // versions keep their own references
      items_.clear();
      bytes_ = 0;
    }
    items_.emplace(key, Item{constant, prepared.value()});
    bytes_ += bytes;
    return prepared;
  }

 private:
  static constexpr size_t kBudgetBytes = size_t{256} << 20;
  using Key = std::tuple<const void*, int, DType, Shape>;
  struct Item {
    Tensor source;  // keeps the constant's storage (the key's address) alive
    Tensor prepared;
  };
  std::mutex mu_;
  std::map<Key, Item> items_;
  size_t bytes_ = 0;
};

PreparedCache& prepared_cache() {
  static PreparedCache cache;
  return cache;
}

}  // namespace

Expected<std::vector<Tensor>> prepare_inputs(const passes::Region& region,
                                             const std::vector<kir::InputLayout>& layouts) {
  std::vector<Tensor> out(region.inputs.size());
  for (size_t i = 0; i < layouts.size() && i < region.inputs.size(); ++i) {
    if (layouts[i] == kir::InputLayout::kAsIs) continue;
    const ir::Value* v = region.inputs[i];
    if (!v->is_constant())
      return internal_error("lowering: region '{}' asked for a prepared layout of non-constant input {}",
                            region.name, i);
    auto prepared = prepared_cache().get(v->constant(), layouts[i]);
    if (!prepared.ok()) return Status(prepared.status()).with_prefix("lowering");
    out[i] = std::move(prepared.value());
  }
  return out;
}

Expected<std::shared_ptr<const CompiledRegion>> compile_region(const passes::Region& region,
                                                               const kir::LowerOptions& options,
                                                               int tier, uint64_t key) {
  auto t0 = std::chrono::steady_clock::now();
  auto lowered = kir::lower_region(region, options);
  if (!lowered.ok()) return Status(lowered.status()).with_prefix("lowering");
  int64_t lower_us = elapsed_us(t0);
  codegen::CompileOptions co;
  co.tier = options.tier >= 2 ? codegen::Tier::kTier2 : codegen::Tier::kTier1;
  auto kernel = codegen::compile(lowered.value().fn, co);
  if (!kernel.ok()) return Status(kernel.status()).with_prefix("codegen");
  auto c = std::make_shared<CompiledRegion>();
  c->kernel = std::move(kernel.value());
  c->tier = tier;
  c->level = options.level;
  c->workspace_bytes = lowered.value().workspace_bytes;
  c->key = key;
  c->notes = std::move(lowered.value().notes);
  c->lower_us = lower_us;
  c->ir = std::make_shared<const kir::Function>(std::move(lowered.value().fn));
  auto prepared = prepare_inputs(region, lowered.value().input_layouts);
  if (!prepared.ok()) return prepared.status();
  c->set_prepared_inputs(std::move(prepared.value()));
  return std::shared_ptr<const CompiledRegion>(std::move(c));
}

std::vector<Tensor> run_compiled(const CompiledRegion& compiled,
                                 const std::vector<const Tensor*>& inputs,
                                 const std::vector<DType>& out_dtypes,
                                 const std::vector<Shape>& out_shapes) {
  std::vector<void*> buffers;
  std::vector<int64_t> dims;
  for (const Tensor* t : inputs) {
    buffers.push_back(const_cast<void*>(t->raw_data()));
    dims.insert(dims.end(), t->shape().begin(), t->shape().end());
  }
  std::vector<Tensor> outs;
  for (size_t i = 0; i < out_shapes.size(); ++i) {
    outs.push_back(Tensor::empty(out_dtypes[i], out_shapes[i]));
    buffers.push_back(outs.back().raw_data());
    dims.insert(dims.end(), out_shapes[i].begin(), out_shapes[i].end());
  }
  Tensor workspace;
  if (compiled.workspace_bytes > 0) {
    workspace = Tensor::empty(DType::kUInt8, {compiled.workspace_bytes});
    buffers.push_back(workspace.raw_data());
  }
  compiled.bind_prepared(buffers.data());
  compiled.kernel(buffers.data(), dims.data());
  return outs;
}

Status CompiledEntry::run(const RegionCall& call) const {
  std::vector<void*> buffers;
  std::vector<int64_t> dims;
  for (const Tensor* t : call.inputs) {
    buffers.push_back(const_cast<void*>(t->raw_data()));
    dims.insert(dims.end(), t->shape().begin(), t->shape().end());
  }
  for (Tensor* t : call.outputs) {
    if (!t->defined()) return invalid_argument("compiled region: output not allocated by the caller");
    buffers.push_back(t->raw_data());
    dims.insert(dims.end(), t->shape().begin(), t->shape().end());
  }
  Tensor workspace;
  if (c_->workspace_bytes > 0) {
    workspace = Tensor::empty(DType::kUInt8, {c_->workspace_bytes});
    buffers.push_back(workspace.raw_data());
  }
  c_->bind_prepared(buffers.data());
  c_->kernel(buffers.data(), dims.data());
  return Status();
}

Status compare_outputs(const std::vector<Tensor>& got, const std::vector<const Tensor*>& want,
                       double rtol, double atol) {
  if (got.size() != want.size())
    return internal_error("{} outputs, tier 0 gave {}", got.size(), want.size());
  for (size_t o = 0; o < got.size(); ++o) {
    const Tensor& g = got[o];
    const Tensor& w = *want[o];
    if (g.dtype() != w.dtype() || g.shape() != w.shape())
      return internal_error("output {}: {}{}, tier 0 gave {}{}", o, dtype_name(g.dtype()),
                            shape_to_string(g.shape()), dtype_name(w.dtype()),
                            shape_to_string(w.shape()));
    const bool fl = is_float(w.dtype());
    for (int64_t i = 0; i < w.numel(); ++i) {
      if (fl) {
        double a = g.value_as_double(i), b = w.value_as_double(i);
        if (std::isnan(a) && std::isnan(b)) continue;
        if (a == b) continue;  // equal infinities
        if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b) ||
            std::fabs(a - b) > atol + rtol * std::fabs(b))
          return internal_error("output {} [{}]: {} vs tier 0 {} (rtol {}, atol {})", o, i, a, b,
                                rtol, atol);
      } else if (g.value_as_int64(i) != w.value_as_int64(i)) {
        return internal_error("output {} [{}]: {} vs tier 0 {}", o, i, g.value_as_int64(i),
                              w.value_as_int64(i));
      }
    }
  }
  return Status();
}

namespace {

/// The L1 key of a region's compile key (one cache serves every region of the session).
uint64_t l1_key(int region, uint64_t key) {
  return key ^ (static_cast<uint64_t>(region) * 0x9e3779b97f4a7c15ull);
}

}  // namespace

std::shared_ptr<const CompiledRegion> RegionCodeStore::find(int region, uint64_t key,
                                                            bool* from_l1) const {
  if (from_l1) *from_l1 = false;
  std::lock_guard<std::mutex> lock(mu_);
  // L1 first: the lookup counts as its hit or miss and refreshes the entry's access times.
  if (auto cached = l1_.find_as<CompiledRegion>(l1_key(region, key))) {
    if (from_l1) *from_l1 = true;
    return cached;
  }
  // Evicted from L1 but still run by a cached Plan: share it.
  auto& code = regions_[static_cast<size_t>(region)].code;
  auto it = code.find(key);
  return it == code.end() ? nullptr : it->second.lock();
}

std::shared_ptr<const CompiledRegion> RegionCodeStore::install(
    int region, std::shared_ptr<const CompiledRegion> c, std::vector<cache::Eviction>* evicted) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& code = regions_[static_cast<size_t>(region)].code;
  // Drop entries whose code is gone, so the map stays as small as the live code.
  if (code.size() > 64)
    std::erase_if(code, [](const auto& kv) { return kv.second.expired(); });
  auto& slot = code[c->key];
  if (auto live = slot.lock()) return live;
  slot = c;
  auto ev = l1_.insert(l1_key(region, c->key), c, c->bytes(), c->kernel.compile_us + c->lower_us,
                       /*saved_us_per_hit=*/0.0,
                       "region " + std::to_string(region) + " tier " + std::to_string(c->tier));
  if (evicted) evicted->insert(evicted->end(), ev.begin(), ev.end());
  return c;
}

std::optional<std::string> RegionCodeStore::failure(int region, uint64_t key) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto& failed = regions_[static_cast<size_t>(region)].failed;
  auto it = failed.find(key);
  if (it == failed.end()) return std::nullopt;
  return it->second;
}

void RegionCodeStore::record_failure(int region, uint64_t key, std::string reason) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& failed = regions_[static_cast<size_t>(region)].failed;
  if (failed.size() >= 4096) failed.clear();  // bounded; a forgotten failure is retried once
  failed[key] = std::move(reason);
}

}  // namespace tierjit::runtime
