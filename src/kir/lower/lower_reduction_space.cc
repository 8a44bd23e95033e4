// The iteration space of a reduction region (lower_reduction.cc): run-time dims of the values,
// the stride of every tensor access over the space (broadcast dims get stride 0, dims that may or
// may not broadcast get a run-time select), coalescing of adjacent dims into groups, and the
// value of any region value at a point (prologue/epilogue ops inlined, lower_ops.h).
#include <algorithm>

#include "kir/lower/lower_ops.h"
#include "kir/lower/lower_reduction_internal.h"

namespace tierjit::kir::lowering::reduction {

bool is_const(const Expr& e, int64_t v) {
  const auto* i = e->as<IntImm>();
  return i && i->value == v;
}

Expr mul_fold(const Expr& a, const Expr& b) {
  if (is_const(a, 1)) return b;
  if (is_const(b, 1)) return a;
  const auto* x = a->as<IntImm>();
  const auto* y = b->as<IntImm>();
  if (x && y) return imm(x->value * y->value);
  if ((x && x->value == 0) || (y && y->value == 0)) return imm(0);
  return mul(a, b);
}

Expr add_fold(const Expr& a, const Expr& b) {
  if (is_const(a, 0)) return b;
  if (is_const(b, 0)) return a;
  const auto* x = a->as<IntImm>();
  const auto* y = b->as<IntImm>();
  if (x && y) return imm(x->value + y->value);
  return add(a, b);
}

Expr product(const std::vector<Expr>& xs) {
  Expr p = imm(1);
  for (const Expr& x : xs) p = mul_fold(p, x);
  return p;
}

namespace {

// Broadcast of two run-time dims that are known to be compatible.
Expr broadcast_dim(const Expr& a, const Expr& b) {
  if (is_const(a, 1)) return b;
  if (is_const(b, 1)) return a;
  if (structural_equal(a, b)) return a;
  if (a->as<IntImm>()) return a;
  if (b->as<IntImm>()) return b;
  return select(compare(CmpOp::kEq, a, imm(1)), b, a);
}

}  // namespace

Status Lowering::build_dims() {
  auto add_symbols = [&](const std::vector<const ir::Value*>& values,
                         const std::vector<TensorSpec>& specs) {
    for (size_t i = 0; i < values.size(); ++i) {
      const auto& shape = values[i]->type().shape;
      if (!shape) continue;
      for (size_t k = 0; k < shape->size() && k < specs[i].dims.size(); ++k) {
        const ir::Dim& d = (*shape)[k];
        if (!d.is_symbol()) continue;
        if (specs[i].dims[k] >= 0) symbol_dim_[d.symbol] = imm(specs[i].dims[k]);
      }
    }
  };
  // Constants first (a spec that fixes a symbol fixes it everywhere), then the first dim var.
  add_symbols(region_.inputs, opt_.inputs);
  add_symbols(region_.outputs, opt_.outputs);
  auto add_vars = [&](const std::vector<const ir::Value*>& values,
                      const std::vector<TensorSpec>& specs, const char* prefix) {
    for (size_t i = 0; i < values.size(); ++i) {
      const auto& shape = values[i]->type().shape;
      if (!shape) continue;
      for (size_t k = 0; k < shape->size() && k < specs[i].dims.size(); ++k) {
        const ir::Dim& d = (*shape)[k];
        if (d.is_symbol() && !symbol_dim_.count(d.symbol))
          symbol_dim_[d.symbol] =
              var(prefix + std::to_string(i) + "_d" + std::to_string(k));
      }
    }
  };
  add_vars(region_.inputs, opt_.inputs, "in");
  add_vars(region_.outputs, opt_.outputs, "out");
  TJ_ASSIGN_OR_RETURN(space_dims_, dims_of(anchor_->input(0)));
  if (static_cast<int>(space_dims_.size()) != rank_)
    return unsupported("region '{}': anchor input rank mismatch", region_.name);
  return Status();
}

Expected<std::vector<Expr>> Lowering::dims_of(const ir::Value* v) {
  if (auto it = dims_memo_.find(v); it != dims_memo_.end()) return it->second;
  std::vector<Expr> out;
  auto from_spec = [&](const TensorSpec& spec, const std::string& prefix) {
    const auto& shape = v->type().shape;
    for (size_t k = 0; k < spec.dims.size(); ++k) {
      if (spec.dims[k] >= 0) {
        out.push_back(imm(spec.dims[k]));
      } else if (shape && k < shape->size() && (*shape)[k].is_symbol() &&
                 symbol_dim_.count((*shape)[k].symbol)) {
        out.push_back(symbol_dim_[(*shape)[k].symbol]);
      } else {
        out.push_back(var(prefix + "_d" + std::to_string(k)));
      }
    }
  };
  if (auto it = input_index_.find(v); it != input_index_.end()) {
    from_spec(opt_.inputs[static_cast<size_t>(it->second)], "in" + std::to_string(it->second));
  } else if (auto jt = output_index_.find(v); jt != output_index_.end()) {
    from_spec(opt_.outputs[static_cast<size_t>(jt->second)], "out" + std::to_string(jt->second));
  } else {
    const auto& shape = v->type().shape;
    if (!shape) return unsupported("region '{}': value '{}' has unknown rank", region_.name, v->name());
    const ir::Node* p = v->producer();
    std::vector<Expr> derived;
    bool need_derived = false;
    for (const ir::Dim& d : *shape)
      need_derived |= !d.is_constant() && !(d.is_symbol() && symbol_dim_.count(d.symbol));
    if (need_derived) {
      if (p && nodes_.count(p)) {
        derived.assign(shape->size(), imm(1));
        for (const ir::Value* in : p->inputs()) {
          if (!in) continue;
          TJ_ASSIGN_OR_RETURN(std::vector<Expr> id, dims_of(in));
          if (id.size() > derived.size())
            return unsupported("region '{}': '{}' has a higher rank than '{}'", region_.name,
                               in->name(), v->name());
          const size_t off = derived.size() - id.size();
          for (size_t k = 0; k < id.size(); ++k) derived[off + k] = broadcast_dim(derived[off + k], id[k]);
        }
      } else if (p == anchor_ && v == anchor_->output(0) && !space_dims_.empty()) {
        for (int d : out_to_in_)
          derived.push_back(reduces_dims() && reduced_[static_cast<size_t>(d)]
                                ? imm(1)
                                : space_dims_[static_cast<size_t>(d)]);
      } else if (p == anchor_ && v == anchor_->output(0) && rank_ == 0) {
        // rank 0: no dims
      } else {
        return unsupported("region '{}': cannot derive the dims of '{}'", region_.name, v->name());
      }
      if (derived.size() != shape->size())
        return unsupported("region '{}': rank of '{}' does not match its operands", region_.name,
                           v->name());
    }
    for (size_t k = 0; k < shape->size(); ++k) {
      const ir::Dim& d = (*shape)[k];
      if (d.is_constant())
        out.push_back(imm(d.value));
      else if (d.is_symbol() && symbol_dim_.count(d.symbol))
        out.push_back(symbol_dim_[d.symbol]);
      else
        out.push_back(derived[k]);
    }
  }
  dims_memo_[v] = out;
  return out;
}

Expected<std::vector<Stride>> Lowering::map_tensor(const ir::Value* v, const std::vector<Expr>& vdims,
                                                   SpaceKind space) {
  std::vector<Expr> target;
  std::vector<int> to_space;
  if (space == SpaceKind::kIn) {
    target = space_dims_;
    for (int d = 0; d < rank_; ++d) to_space.push_back(d);
  } else {
    for (int d : out_to_in_) {
      target.push_back(reduces_dims() && reduced_[static_cast<size_t>(d)] ? imm(1)
                                                                           : space_dims_[static_cast<size_t>(d)]);
      to_space.push_back(d);
    }
  }
  const size_t m = target.size(), r = vdims.size();
  if (r > m)
    return unsupported("region '{}': '{}' has rank {} above the anchor's {}", region_.name,
                       v->name(), r, m);
  std::vector<Stride> out(static_cast<size_t>(rank_));
  std::vector<Expr> st(r, imm(1));
  for (size_t k = r; k-- > 1;) st[k - 1] = mul_fold(st[k], vdims[k]);
  for (size_t k = 0; k < r; ++k) {
    const size_t t = k + m - r;
    const size_t d = static_cast<size_t>(to_space[t]);
    const Expr& sd = target[t];
    const Expr& td = vdims[k];
    Stride s;
    if (is_const(sd, 1) || is_const(td, 1) ||
        (space == SpaceKind::kOut && reduces_dims() && reduced_[d])) {
      s.kind = Stride::kZero;
    } else if (structural_equal(td, sd) || td->as<IntImm>()) {
      if (td->as<IntImm>() && sd->as<IntImm>() && !structural_equal(td, sd))
        return unsupported("region '{}': '{}' dim {} does not broadcast", region_.name, v->name(), k);
      s.kind = Stride::kPlain;
      s.value = st[k];
      s.unit = k + 1 == r;
    } else {
      s.kind = Stride::kRuntime;
      s.value = select(compare(CmpOp::kEq, td, imm(1)), imm(0), st[k]);
    }
    out[d] = s;
  }
  return out;
}

Status Lowering::collect_accesses() {
  std::set<std::pair<const ir::Value*, SpaceKind>> seen;
  std::function<Status(const ir::Value*, SpaceKind)> walk = [&](const ir::Value* v,
                                                                SpaceKind space) -> Status {
    if (!v || !seen.insert({v, space}).second) return Status();
    if (input_index_.count(v)) {
      TJ_ASSIGN_OR_RETURN(std::vector<Expr> vd, dims_of(v));
      TJ_ASSIGN_OR_RETURN(std::vector<Stride> s, map_tensor(v, vd, space));
      access_index_[{v, space}] = static_cast<int>(raw_.size());
      raw_.push_back(std::move(s));
      return Status();
    }
    const ir::Node* p = v->producer();
    if (p && nodes_.count(p)) {
      for (const ir::Value* in : p->inputs()) TJ_RETURN_IF_ERROR(walk(in, space));
      return Status();
    }
    if (p == anchor_ && v == anchor_->output(0) && space == SpaceKind::kOut) return Status();
    return unsupported("region '{}': value '{}' cannot be read here", region_.name, v->name());
  };
  TJ_RETURN_IF_ERROR(walk(anchor_->input(0), SpaceKind::kIn));
  if (op_ == AnchorOp::kLayerNorm) {
    TJ_RETURN_IF_ERROR(walk(anchor_->input(1), SpaceKind::kIn));
    TJ_RETURN_IF_ERROR(walk(anchor_->input(2), SpaceKind::kIn));
  }
  for (const ir::Value* v : region_.outputs) {
    const bool stat = v->producer() == anchor_ && v != anchor_->output(0);
    const SpaceKind space = stat ? SpaceKind::kIn : SpaceKind::kOut;
    if (!stat) TJ_RETURN_IF_ERROR(walk(v, SpaceKind::kOut));
    TJ_ASSIGN_OR_RETURN(std::vector<Expr> vd, dims_of(v));
    TJ_ASSIGN_OR_RETURN(std::vector<Stride> s, map_tensor(v, vd, space));
    access_index_[{v, space}] = static_cast<int>(raw_.size());
    raw_.push_back(std::move(s));
  }
  return Status();
}

Status Lowering::build_groups() {
  auto compatible = [&](int a, int b) {
    for (const auto& acc : raw_) {
      const Stride& x = acc[static_cast<size_t>(a)];
      const Stride& y = acc[static_cast<size_t>(b)];
      const bool ok = (x.kind == Stride::kZero && y.kind == Stride::kZero) ||
                      (x.kind == Stride::kPlain && y.kind == Stride::kPlain);
      if (!ok) return false;
    }
    return true;
  };
  groups_.clear();
  for (int d = 0; d < rank_; ++d) {
    if (is_const(space_dims_[static_cast<size_t>(d)], 1)) continue;  // index always 0
    const bool red = reduced_[static_cast<size_t>(d)];
    if (!groups_.empty() && groups_.back().reduced == red && compatible(groups_.back().dims.back(), d)) {
      groups_.back().dims.push_back(d);
      groups_.back().extent = mul_fold(groups_.back().extent, space_dims_[static_cast<size_t>(d)]);
    } else {
      Group g;
      g.dims = {d};
      g.extent = space_dims_[static_cast<size_t>(d)];
      g.reduced = red;
      groups_.push_back(g);
    }
  }
  grouped_.clear();
  for (const auto& acc : raw_) {
    std::vector<Stride> g;
    for (const Group& grp : groups_) g.push_back(acc[static_cast<size_t>(grp.dims.back())]);
    grouped_.push_back(std::move(g));
  }
  return Status();
}

Expr Lowering::flat_index(const std::vector<Stride>& strides, const Point& p, bool* broadcast_scalar) {
  *broadcast_scalar = false;
  Expr base = imm(0);
  const size_t G = strides.size();
  for (size_t g = 0; g < G; ++g) {
    const Stride& s = strides[g];
    if (s.kind == Stride::kZero) continue;
    if (g + 1 == G && p.lanes > 1) continue;
    base = add_fold(base, mul_fold(p.idx[g], s.value));
  }
  if (p.lanes == 1 || G == 0) {
    *broadcast_scalar = p.lanes > 1;
    return base;
  }
  const Stride& last = strides[G - 1];
  if (last.kind == Stride::kZero) {
    *broadcast_scalar = true;
    return base;
  }
  if (last.unit) return ramp(add_fold(base, p.idx[G - 1]), imm(1), p.lanes);
  return ramp(add_fold(base, mul_fold(p.idx[G - 1], last.value)), last.value, p.lanes);
}

Expr Lowering::load_at(const std::string& buffer, DType dtype, const std::vector<Stride>& strides,
                       const Point& p) {
  bool bcast = false;
  Expr idx = flat_index(strides, p, &bcast);
  if (bcast) return broadcast(load(Type{dtype, 1}, buffer, idx), p.lanes);
  return load(Type{dtype, p.lanes}, buffer, idx);
}

Stmt Lowering::store_at(const std::string& buffer, const std::vector<Stride>& strides,
                        const Point& p, Expr value) {
  bool bcast = false;
  Expr idx = flat_index(strides, p, &bcast);
  return store(buffer, idx, std::move(value));  // callers never store with a broadcast index
}

Expected<Expr> Lowering::value_at(const ir::Value* v, SpaceKind space, const Point& p,
                                  const Expr& anchor_value) {
  if (v == anchor_->output(0) && space == SpaceKind::kOut && anchor_value) return anchor_value;
  if (auto it = input_index_.find(v); it != input_index_.end()) {
    Expr c = scalar_constant(v);  // e.g. attention's 1/sqrt(d)
    const size_t i = static_cast<size_t>(it->second);
    if (!c && i < opt_.input_values.size()) c = scalar_immediate(opt_.input_values[i]);
    if (c) return widen(c, p.lanes);
    auto at = access_index_.find({v, space});
    if (at == access_index_.end())
      return internal_error("region '{}': no access for '{}'", region_.name, v->name());
    return load_at("in" + std::to_string(it->second), opt_.inputs[static_cast<size_t>(it->second)].dtype,
                   grouped_[static_cast<size_t>(at->second)], p);
  }
  const ir::Node* n = v->producer();
  if (!n || !nodes_.count(n))
    return unsupported("region '{}': value '{}' cannot be read here", region_.name, v->name());
  std::vector<Expr> operands;
  for (const ir::Value* in : n->inputs()) {
    if (!in) {
      operands.push_back(nullptr);
      continue;
    }
    TJ_ASSIGN_OR_RETURN(Expr e, value_at(in, space, p, anchor_value));
    operands.push_back(std::move(e));
  }
  if (v != n->output(0))
    return unsupported("region '{}': node '{}' output '{}' is not output 0", region_.name, n->name(),
                       v->name());
  return lower_elementwise_op(*n, operands);
}

}  // namespace tierjit::kir::lowering::reduction
