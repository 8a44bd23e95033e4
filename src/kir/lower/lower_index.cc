// Index helpers of the lowerings (lower_index.h): ABI names, dims as constants or Vars, and the
// broadcast plan (dropped size-1 axes, collapsed axes, per-input strides).
#include "kir/lower/lower_index.h"

#include "kir/builder.h"

namespace tierjit::kir::lowering {

std::string input_dim_name(size_t i, size_t k) {
  return "in" + std::to_string(i) + "_d" + std::to_string(k);
}
std::string output_dim_name(size_t j, size_t k) {
  return "out" + std::to_string(j) + "_d" + std::to_string(k);
}
std::string input_buffer_name(size_t i) { return "in" + std::to_string(i); }
std::string output_buffer_name(size_t j) { return "out" + std::to_string(j); }

Function abi_function(const std::string& name, const LowerOptions& options, bool workspace) {
  Function f;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    f.name += ok ? c : '_';
  }
  if (f.name.empty()) f.name = "region";
  for (size_t i = 0; i < options.inputs.size(); ++i)
    f.buffers.push_back({input_buffer_name(i), options.inputs[i].dtype});
  for (size_t j = 0; j < options.outputs.size(); ++j)
    f.buffers.push_back({output_buffer_name(j), options.outputs[j].dtype});
  if (workspace) f.buffers.push_back({"workspace", DType::kUInt8});
  for (size_t i = 0; i < options.inputs.size(); ++i)
    for (size_t k = 0; k < options.inputs[i].dims.size(); ++k) f.dims.push_back(input_dim_name(i, k));
  for (size_t j = 0; j < options.outputs.size(); ++j)
    for (size_t k = 0; k < options.outputs[j].dims.size(); ++k)
      f.dims.push_back(output_dim_name(j, k));
  return f;
}

namespace {

TensorDims dims_of(const ir::Value* value, const TensorSpec& spec, bool output, size_t index) {
  TensorDims out;
  const auto& shape = value ? value->type().shape : std::nullopt;
  for (size_t k = 0; k < spec.dims.size(); ++k) {
    DimInfo d;
    if (spec.dims[k] >= 0) {
      d.value = spec.dims[k];
      d.expr = imm(d.value);
      d.may_be_one = d.value == 1;
    } else {
      d.expr = var(output ? output_dim_name(index, k) : input_dim_name(index, k));
      if (shape && k < shape->size() && (*shape)[k].is_symbol()) d.symbol = (*shape)[k].symbol;
      d.may_be_one = !(k < spec.bounds.size() && spec.bounds[k] >= 2);
    }
    out.push_back(std::move(d));
  }
  return out;
}

DimInfo const_dim(int64_t v) {
  DimInfo d;
  d.value = v;
  d.expr = imm(v);
  d.may_be_one = v == 1;
  return d;
}

}  // namespace

TensorDims input_dims(const passes::Region& region, const LowerOptions& options, size_t i) {
  return dims_of(i < region.inputs.size() ? region.inputs[i] : nullptr, options.inputs[i], false, i);
}
TensorDims output_dims(const passes::Region& region, const LowerOptions& options, size_t j) {
  return dims_of(j < region.outputs.size() ? region.outputs[j] : nullptr, options.outputs[j], true,
                 j);
}

int64_t const_value(const Expr& e) {
  const auto* c = e ? e->as<IntImm>() : nullptr;
  return c ? c->value : -1;
}

Expr mul_i64(const Expr& a, const Expr& b) {
  const int64_t ca = const_value(a), cb = const_value(b);
  if (ca >= 0 && cb >= 0) return imm(ca * cb);
  if (ca == 0 || cb == 0) return imm(0);
  if (ca == 1) return b;
  if (cb == 1) return a;
  return mul(a, b);
}

Expr add_i64(const Expr& a, const Expr& b) {
  const int64_t ca = const_value(a), cb = const_value(b);
  if (ca >= 0 && cb >= 0) return imm(ca + cb);
  if (ca == 0) return b;
  if (cb == 0) return a;
  return add(a, b);
}

Expr dims_product(const TensorDims& dims, size_t begin, size_t end) {
  Expr p = imm(1);
  for (size_t k = begin; k < end && k < dims.size(); ++k) p = mul_i64(p, dims[k].expr);
  return p;
}
Expr numel(const TensorDims& dims) { return dims_product(dims, 0, dims.size()); }

int64_t const_numel(const TensorDims& dims) {
  int64_t n = 1;
  for (const DimInfo& d : dims) {
    if (!d.is_const()) return -1;
    n *= d.value;
  }
  return n;
}

bool same_dim(const DimInfo& a, const DimInfo& b) {
  if (a.is_const() || b.is_const()) return a.value == b.value;
  return !a.symbol.empty() && a.symbol == b.symbol;
}

Expr flat_index(const std::vector<Expr>& idx, const std::vector<Expr>& strides) {
  Expr sum = imm(0);
  for (size_t a = 0; a < idx.size() && a < strides.size(); ++a)
    sum = add_i64(sum, mul_i64(idx[a], strides[a]));
  return sum;
}

Stmt wrap_lets(const std::vector<std::pair<std::string, Expr>>& lets, Stmt body) {
  for (size_t i = lets.size(); i-- > 0;) body = let(lets[i].first, lets[i].second, std::move(body));
  return body;
}

BroadcastPlan plan_broadcast(const TensorDims& out, const std::vector<TensorDims>& ins,
                             const std::string& prefix, bool assume_no_runtime_broadcast) {
  BroadcastPlan p;
  const size_t rank = out.size();
  auto bind = [&](const std::string& name, const Expr& e) -> Expr {
    if (e->kind == NodeKind::kIntImm || e->kind == NodeKind::kVar) return e;
    p.lets.emplace_back(prefix + name, e);
    return var(prefix + name);
  };

  // Per input: its dims aligned to the output's axes (1 where absent or where the output's dim
  // is the constant 1), the row-major strides over them, and the access per output axis.
  const size_t n_in = ins.size();
  std::vector<std::vector<DimInfo>> eff(n_in, std::vector<DimInfo>(rank, const_dim(1)));
  std::vector<std::vector<Expr>> full_stride(n_in, std::vector<Expr>(rank));
  std::vector<std::vector<AxisAccess>> full_access(n_in, std::vector<AxisAccess>(rank));
  for (size_t i = 0; i < n_in; ++i) {
    const TensorDims& in = ins[i];
    for (size_t a = 0; a < rank; ++a) {
      const size_t lead = rank - a;  // input axis k aligns with a when in.size() - k == lead
      if (in.size() >= lead && !(out[a].is_const() && out[a].value == 1))
        eff[i][a] = in[in.size() - lead];
    }
    Expr s = imm(1);
    for (size_t a = rank; a-- > 0;) {
      full_stride[i][a] = s;
      const DimInfo& d = eff[i][a];
      AxisAccess acc;
      if (d.is_const()) acc = d.value == 1 ? AxisAccess::kBroadcast : AxisAccess::kSame;
      else acc = (same_dim(d, out[a]) || !d.may_be_one) ? AxisAccess::kSame : AxisAccess::kUnknown;
      if (acc == AxisAccess::kUnknown) {
        p.has_unknown = true;
        if (assume_no_runtime_broadcast) {
          p.assumptions.push_back(compare(CmpOp::kEq, d.expr, out[a].expr));
          acc = AxisAccess::kSame;
        }
      }
      // The input's dim as the code knows it best: a constant of the output when they are equal.
      const Expr dim = (acc == AxisAccess::kSame && out[a].is_const()) ? out[a].expr : d.expr;
      full_access[i][a] = acc;
      if (a > 0) s = bind("st" + std::to_string(i) + "_" + std::to_string(a - 1), mul_i64(s, dim));
    }
  }

  // Keep output axes not of constant size 1; merge neighbours every input walks alike.
  std::vector<std::vector<size_t>> groups;
  for (size_t a = 0; a < rank; ++a) {
    if (out[a].is_const() && out[a].value == 1) continue;
    bool merge = !groups.empty();
    for (size_t i = 0; i < n_in && merge; ++i) {
      const AxisAccess prev = full_access[i][groups.back().back()];
      merge = prev == full_access[i][a] && prev != AxisAccess::kUnknown;
    }
    if (merge) groups.back().push_back(a);
    else groups.push_back({a});
  }
  const size_t n_loops = groups.size();
  p.strides.assign(n_in, std::vector<Expr>(n_loops));
  p.access.assign(n_in, std::vector<AxisAccess>(n_loops));
  for (size_t g = 0; g < n_loops; ++g) {
    Expr ext = imm(1);
    for (size_t a : groups[g]) ext = mul_i64(ext, out[a].expr);
    p.const_extents.push_back(const_value(ext));
    p.extents.push_back(bind("ext" + std::to_string(g), ext));
    const size_t inner = groups[g].back();
    for (size_t i = 0; i < n_in; ++i) {
      const AxisAccess acc = full_access[i][inner];
      p.access[i][g] = acc;
      if (acc == AxisAccess::kBroadcast) {
        p.strides[i][g] = imm(0);
      } else if (acc == AxisAccess::kSame) {
        p.strides[i][g] = full_stride[i][inner];
      } else {
        p.strides[i][g] = bind("bs" + std::to_string(i) + "_" + std::to_string(g),
                               select(compare(CmpOp::kEq, eff[i][inner].expr, imm(1)), imm(0),
                                      full_stride[i][inner]));
      }
    }
  }
  p.out_strides.assign(n_loops, imm(1));
  for (size_t g = n_loops; g-- > 1;)
    p.out_strides[g - 1] = bind("os" + std::to_string(g - 1), mul_i64(p.out_strides[g], p.extents[g]));
  return p;
}

}  // namespace tierjit::kir::lowering
