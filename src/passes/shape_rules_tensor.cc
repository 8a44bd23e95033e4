// Shape rules for tensor-manipulation ops: Constant, Shape, Size, Reshape, Flatten, Squeeze,
// Unsqueeze, Transpose, Concat, Split, Expand, Tile, Pad, ConstantOfShape, Range, DepthToSpace,
// SpaceToDepth. These also carry the contents of small integer tensors (shape arithmetic), so a
// Reshape target built by Shape -> Gather -> Unsqueeze -> Concat keeps its symbols.
// Source: ONNX operator specs, opsets 1..17 (attribute vs input forms branch on the node's opset).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "passes/shape_rules.h"

namespace tierjit::passes::shapes {
namespace {

using ir::Dim;
using ir::OpKind;
using ir::SymShape;

SymShape dims_of(const SymInts& v) {
  SymShape s;
  s.reserve(v.size());
  for (const SymInt& e : v) s.push_back(e.to_dim());
  return s;
}

// Length of a 1-D input whose length is a constant, or -1. A 1-D shape or axes input's length becomes an output rank (one Dim each). A declared length
// past kMaxRankFromLength (a graph input declared [2^60]) leaves the rank unknown instead: no real
// tensor has such a rank, and building its dims would exhaust memory at load.
constexpr int64_t kMaxRankFromLength = 1024;
int64_t const_length(const RuleContext& c, size_t i) {
  if (const SymInts* k = c.known(i)) return static_cast<int64_t>(k->size());
  const auto& s = c.shape(i);
  if (s && s->size() == 1 && (*s)[0].is_constant() && (*s)[0].value <= kMaxRankFromLength)
    return (*s)[0].value;
  return -1;
}

Status constant(RuleContext& c) {
  const ir::Node& n = c.node();
  if (const Tensor* t = n.attr_tensor("value")) {
    SymShape s;
    for (int64_t d : t->shape()) s.push_back(Dim::constant(d));
    c.set_output(0, t->dtype(), std::move(s));
    c.set_constant(0, t);
    return Status();
  }
  if (n.has_attr("value_float")) {
    c.set_output(0, DType::kFloat32, SymShape{});
  } else if (n.has_attr("value_floats")) {
    c.set_output(0, DType::kFloat32, SymShape{Dim::constant(static_cast<int64_t>(n.attr_floats("value_floats").size()))});
  } else if (n.has_attr("value_int")) {
    c.set_output(0, DType::kInt64, SymShape{});
    c.set_known(0, {SymInt::constant(n.attr_int("value_int", 0))});
  } else if (n.has_attr("value_ints")) {
    std::vector<int64_t> v = n.attr_ints("value_ints");
    c.set_output(0, DType::kInt64, SymShape{Dim::constant(static_cast<int64_t>(v.size()))});
    SymInts k;
    for (int64_t x : v) k.push_back(SymInt::constant(x));
    c.set_known(0, std::move(k));
  } else if (n.has_attr("value_string")) {
    c.set_output(0, DType::kString, SymShape{});
  } else if (n.has_attr("value_strings")) {
    c.set_output(0, DType::kString, SymShape{Dim::constant(static_cast<int64_t>(n.attr_strings("value_strings").size()))});
  }
  return Status();
}

Status shape(RuleContext& c) {
  const auto& in = c.shape(0);
  if (!in) {
    c.set_output(0, DType::kInt64, unknown_dims(1));
    return Status();
  }
  int64_t r = static_cast<int64_t>(in->size());
  int64_t start = 0, end = r;
  if (c.opset() >= 15) {
    start = c.node().attr_int("start", 0);
    end = c.node().attr_int("end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = std::clamp<int64_t>(start, 0, r);
    end = std::clamp<int64_t>(end, 0, r);
  }
  SymInts k;
  for (int64_t i = start; i < end; ++i) k.push_back(SymInt::from_dim((*in)[static_cast<size_t>(i)]));
  c.set_output(0, DType::kInt64, SymShape{Dim::constant(static_cast<int64_t>(k.size()))});
  c.set_known(0, std::move(k));
  return Status();
}

Status size(RuleContext& c) {
  c.set_output(0, DType::kInt64, SymShape{});
  if (const auto& in = c.shape(0)) c.set_known(0, {SymInt::from_dim(dim_product(*in, 0, in->size()))});
  return Status();
}

Status reshape(RuleContext& c) {
  std::optional<SymInts> target;
  if (c.opset() < 5) {
    SymInts t;
    for (int64_t v : c.node().attr_ints("shape")) t.push_back(SymInt::constant(v));
    target = std::move(t);
  } else if (const SymInts* k = c.known(1)) {
    target = *k;
  }
  if (const SymInts* k = c.known(0)) c.set_known(0, *k);
  if (!target) {
    int64_t len = const_length(c, 1);
    c.set_output(0, c.dtype(0), len >= 0 ? std::optional<SymShape>(unknown_dims(static_cast<size_t>(len))) : std::nullopt);
    return Status();
  }
  bool allowzero = c.opset() >= 14 && c.node().attr_int("allowzero", 0) != 0;
  const auto& in = c.shape(0);
  SymShape out(target->size());
  int minus_one = -1;
  for (size_t i = 0; i < target->size(); ++i) {
    const SymInt& e = (*target)[i];
    if (e.is_constant() && e.value == -1) {
      if (minus_one >= 0) return c.fail("shape has more than one -1");
      minus_one = static_cast<int>(i);
    } else if (e.is_constant() && e.value == 0 && !allowzero) {
      out[i] = in && i < in->size() ? (*in)[i] : Dim::unknown();
    } else if (e.is_constant() && e.value < -1) {
      return c.fail("shape element {} is {}", i, e.value);
    } else {
      out[i] = e.to_dim();
    }
  }
  if (minus_one >= 0) {
    Dim rest = Dim::unknown();
    if (in) {
      Dim total = dim_product(*in, 0, in->size());
      SymShape others = out;
      others[static_cast<size_t>(minus_one)] = Dim::constant(1);
      rest = dim_div_exact(total, dim_product(others, 0, others.size()));
    }
    out[static_cast<size_t>(minus_one)] = rest;
  }
  c.set_output(0, c.dtype(0), std::move(out));
  return Status();
}

Status flatten(RuleContext& c) {
  const auto& in = c.shape(0);
  if (!in) {
    c.set_output(0, c.dtype(0), unknown_dims(2));
    return Status();
  }
  int64_t axis = c.node().attr_int("axis", 1);
  int64_t r = static_cast<int64_t>(in->size());
  if (axis < -r || axis > r) return c.fail("axis {} out of range [{}, {}]", axis, -r, r);
  size_t a = static_cast<size_t>(axis < 0 ? axis + r : axis);
  c.set_output(0, c.dtype(0), SymShape{dim_product(*in, 0, a), dim_product(*in, a, in->size())});
  return Status();
}

Status squeeze(RuleContext& c) {
  bool present = false;
  auto axes = axes_arg(c, "axes", 1, 13, &present);
  const auto& in = c.shape(0);
  if (const SymInts* k = c.known(0)) c.set_known(0, *k);
  if (!in) {
    c.set_output(0, c.dtype(0), std::nullopt);
    return Status();
  }
  int64_t r = static_cast<int64_t>(in->size());
  if (!axes) {  // axes from a tensor computed at run time
    int64_t len = const_length(c, 1);
    c.set_output(0, c.dtype(0), len >= 0 && len <= r ? std::optional<SymShape>(unknown_dims(static_cast<size_t>(r - len)))
                                                     : std::nullopt);
    return Status();
  }
  std::vector<bool> drop(in->size(), false);
  if (!present || axes->empty()) {
    for (size_t i = 0; i < in->size(); ++i) {
      if (!(*in)[i].is_constant()) {  // a symbolic dim may or may not be 1 at run time
        c.set_output(0, c.dtype(0), std::nullopt);
        return Status();
      }
      drop[i] = (*in)[i].value == 1;
    }
  } else {
    for (int64_t a : *axes) {
      TJ_RETURN_IF_ERROR(c.normalize_axis(a, r, "axis"));
      const Dim& d = (*in)[static_cast<size_t>(a)];
      if (d.is_constant() && d.value != 1) return c.fail("cannot squeeze axis {} of size {}", a, d.value);
      drop[static_cast<size_t>(a)] = true;
    }
  }
  SymShape out;
  for (size_t i = 0; i < in->size(); ++i)
    if (!drop[i]) out.push_back((*in)[i]);
  c.set_output(0, c.dtype(0), std::move(out));
  return Status();
}

Status unsqueeze(RuleContext& c) {
  bool present = false;
  auto axes = axes_arg(c, "axes", 1, 13, &present);
  const auto& in = c.shape(0);
  if (const SymInts* k = c.known(0)) c.set_known(0, *k);
  if (!in || !axes) {
    int64_t len = axes ? static_cast<int64_t>(axes->size()) : const_length(c, 1);
    c.set_output(0, c.dtype(0), in && len >= 0 ? std::optional<SymShape>(unknown_dims(in->size() + static_cast<size_t>(len)))
                                               : std::nullopt);
    return Status();
  }
  int64_t out_rank = static_cast<int64_t>(in->size() + axes->size());
  std::vector<bool> is_new(static_cast<size_t>(out_rank), false);
  for (int64_t a : *axes) {
    TJ_RETURN_IF_ERROR(c.normalize_axis(a, out_rank, "axis"));
    if (is_new[static_cast<size_t>(a)]) return c.fail("axis {} repeated", a);
    is_new[static_cast<size_t>(a)] = true;
  }
  SymShape out;
  size_t j = 0;
  for (size_t i = 0; i < is_new.size(); ++i) out.push_back(is_new[i] ? Dim::constant(1) : (*in)[j++]);
  c.set_output(0, c.dtype(0), std::move(out));
  return Status();
}

Status transpose(RuleContext& c) {
  const auto& in = c.shape(0);
  std::vector<int64_t> perm = c.node().attr_ints("perm");
  if (!in) {
    c.set_output(0, c.dtype(0), perm.empty() ? std::nullopt : std::optional<SymShape>(unknown_dims(perm.size())));
    return Status();
  }
  int64_t r = static_cast<int64_t>(in->size());
  if (perm.empty()) {
    for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
  }
  if (static_cast<int64_t>(perm.size()) != r) return c.fail("perm has {} entries for rank {}", perm.size(), r);
  std::vector<bool> seen(static_cast<size_t>(r), false);
  SymShape out;
  for (int64_t p : perm) {
    TJ_RETURN_IF_ERROR(c.normalize_axis(p, r, "perm entry"));
    if (seen[static_cast<size_t>(p)]) return c.fail("perm is not a permutation");
    seen[static_cast<size_t>(p)] = true;
    out.push_back((*in)[static_cast<size_t>(p)]);
  }
  c.set_output(0, c.dtype(0), std::move(out));
  return Status();
}

Status concat(RuleContext& c) {
  std::optional<size_t> rank;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    if (i > 0) TJ_RETURN_IF_ERROR(c.same_dtype(0, i));
    const auto& s = c.shape(i);
    if (!s) continue;
    if (rank && *rank != s->size()) return c.fail("input {} has rank {}, expected {}", i, s->size(), *rank);
    rank = s->size();
  }
  // Tracked contents: 1-D pieces with known contents or a constant length.
  SymInts k;
  bool contents = true;
  for (size_t i = 0; i < c.num_inputs() && contents; ++i) {
    if (const SymInts* ki = c.known(i)) {
      k.insert(k.end(), ki->begin(), ki->end());
    } else {
      int64_t len = const_length(c, i);
      if (len < 0 || len > 64) contents = false;
      else k.insert(k.end(), static_cast<size_t>(len), SymInt::unknown());
    }
  }
  if (contents && rank && *rank == 1) c.set_known(0, std::move(k));
  if (!rank) {
    c.set_output(0, c.dtype(0), std::nullopt);
    return Status();
  }
  int64_t axis = c.node().attr_int("axis", c.opset() < 4 ? 1 : 0);  // Concat-1 defaults to 1
  TJ_RETURN_IF_ERROR(c.normalize_axis(axis, static_cast<int64_t>(*rank), "axis"));
  SymShape out = unknown_dims(*rank);
  Dim sum = Dim::constant(0);
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    const auto& s = c.shape(i);
    if (!s) {
      sum = Dim::unknown();
      continue;
    }
    for (size_t d = 0; d < *rank; ++d) {
      if (d == static_cast<size_t>(axis)) continue;
      const Dim& x = (*s)[d];
      if (x.is_constant()) {
        if (out[d].is_constant() && out[d].value != x.value)
          return c.fail("input {} dim {} is {}, expected {}", i, d, x.value, out[d].value);
        out[d] = x;
      } else if (x.is_symbol() && !out[d].is_constant() && !out[d].is_symbol()) {
        out[d] = x;
      }
    }
    sum = dim_add(sum, (*s)[static_cast<size_t>(axis)]);
  }
  out[static_cast<size_t>(axis)] = sum;
  c.set_output(0, c.dtype(0), std::move(out));
  return Status();
}

Status split(RuleContext& c) {
  const auto& in = c.shape(0);
  size_t n = c.num_outputs();
  if (!in) {
    for (size_t i = 0; i < n; ++i) c.set_output(i, c.dtype(0), std::nullopt);
    return Status();
  }
  int64_t axis = c.node().attr_int("axis", 0);
  TJ_RETURN_IF_ERROR(c.normalize_axis(axis, static_cast<int64_t>(in->size()), "axis"));
  std::optional<std::vector<int64_t>> sizes;
  if (c.opset() < 13) {
    if (c.node().has_attr("split")) sizes = c.node().attr_ints("split");
    else if (c.opset() < 2 && c.has_input(1)) sizes = c.const_ints(1);
  } else if (c.has_input(1)) {
    sizes = c.const_ints(1);
    if (!sizes) {
      for (size_t i = 0; i < n; ++i) {
        SymShape s = *in;
        s[static_cast<size_t>(axis)] = Dim::unknown();
        c.set_output(i, c.dtype(0), std::move(s));
      }
      return Status();
    }
  }
  const Dim& d = (*in)[static_cast<size_t>(axis)];
  if (sizes && !sizes->empty()) {
    if (sizes->size() != n) return c.fail("split has {} entries for {} outputs", sizes->size(), n);
    if (d.is_constant() && std::accumulate(sizes->begin(), sizes->end(), int64_t{0}) != d.value)
      return c.fail("split sizes sum to {}, but axis {} has size {}", std::accumulate(sizes->begin(), sizes->end(), int64_t{0}), axis, d.value);
  }
  for (size_t i = 0; i < n; ++i) {
    SymShape s = *in;
    if (sizes && !sizes->empty()) {
      s[static_cast<size_t>(axis)] = (*sizes)[i] >= 0 ? Dim::constant((*sizes)[i]) : Dim::unknown();
    } else if (d.is_constant() && d.value % static_cast<int64_t>(n) != 0) {
      s[static_cast<size_t>(axis)] = Dim::unknown();
    } else {
      s[static_cast<size_t>(axis)] = dim_div_exact(d, Dim::constant(static_cast<int64_t>(n)));
    }
    c.set_output(i, c.dtype(0), std::move(s));
  }
  return Status();
}

Status expand(RuleContext& c) {
  const SymInts* target = c.known(1);
  const auto& in = c.shape(0);
  if (!target || !in) {
    int64_t len = const_length(c, 1);
    std::optional<SymShape> s;
    if (in && len >= 0) s = unknown_dims(std::max(in->size(), static_cast<size_t>(len)));
    c.set_output(0, c.dtype(0), std::move(s));
    return Status();
  }
  SymShape t = dims_of(*target);
  std::string err;
  auto out = broadcast_shapes({&*in, &t}, &err);
  if (!err.empty()) return c.fail("{}", err);
  c.set_output(0, c.dtype(0), std::move(out));
  return Status();
}

Status tile(RuleContext& c) {
  const auto& in = c.shape(0);
  const SymInts* reps = c.known(1);
  if (!in) {
    c.set_output(0, c.dtype(0), std::nullopt);
    return Status();
  }
  SymShape out = *in;
  if (c.opset() < 6) {  // Tile-1: inputs (input, tiles, axis): one axis repeated `tiles` times
    const SymInts* axis = c.known(2);
    int64_t a = axis && axis->size() == 1 && (*axis)[0].is_constant() ? (*axis)[0].value : -1;
    for (size_t i = 0; i < out.size(); ++i)
      if (static_cast<int64_t>(i) == a || a < 0)
        out[i] = a >= 0 && reps && reps->size() == 1 ? sym_mul(SymInt::from_dim(out[i]), (*reps)[0]).to_dim() : Dim::unknown();
    c.set_output(0, c.dtype(0), std::move(out));
    return Status();
  }
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = reps && reps->size() == out.size() ? sym_mul(SymInt::from_dim(out[i]), (*reps)[i]).to_dim() : Dim::unknown();
  if (reps && reps->size() != out.size()) return c.fail("repeats has {} entries for rank {}", reps->size(), out.size());
  c.set_output(0, c.dtype(0), std::move(out));
  return Status();
}

Status pad(RuleContext& c) {
  const auto& in = c.shape(0);
  if (!in) {
    c.set_output(0, c.dtype(0), std::nullopt);
    return Status();
  }
  std::optional<std::vector<int64_t>> pads;
  if (c.opset() < 11) pads = c.node().attr_ints(c.opset() < 2 ? "paddings" : "pads");
  else pads = c.const_ints(1);
  SymShape out = *in;
  size_t r = in->size();
  if (pads && pads->size() != 2 * r) return c.fail("pads has {} entries for rank {}", pads->size(), r);
  for (size_t i = 0; i < r; ++i)
    out[i] = pads ? dim_add(out[i], Dim::constant((*pads)[i] + (*pads)[i + r])) : Dim::unknown();
  c.set_output(0, c.dtype(0), std::move(out));
  return Status();
}

Status constant_of_shape(RuleContext& c) {
  const Tensor* v = c.node().attr_tensor("value");
  DType dt = v ? v->dtype() : DType::kFloat32;
  if (const SymInts* k = c.known(0)) {
    SymShape s = dims_of(*k);
    c.set_output(0, dt, s);
    // A small integer fill is itself a shape tensor (e.g. [1, 1] suffixes of reduced shapes).
    if (dtype_is_integer(dt) && s.size() <= 1) {
      int64_t n = s.empty() ? 1 : (s[0].is_constant() ? s[0].value : -1);
      if (n >= 0 && n <= 64) c.set_known(0, SymInts(static_cast<size_t>(n), SymInt::constant(v && v->numel() == 1 ? v->value_as_int64(0) : 0)));
    }
  } else {
    int64_t len = const_length(c, 0);
    c.set_output(0, dt, len >= 0 ? std::optional<SymShape>(unknown_dims(static_cast<size_t>(len))) : std::nullopt);
  }
  return Status();
}

Status range(RuleContext& c) {
  TJ_RETURN_IF_ERROR(c.same_dtype(0, 1));
  TJ_RETURN_IF_ERROR(c.same_dtype(0, 2));
  const Tensor* s = c.constant(0);
  const Tensor* l = c.constant(1);
  const Tensor* d = c.constant(2);
  Dim n = Dim::unknown();
  if (s && l && d && s->numel() == 1 && l->numel() == 1 && d->numel() == 1) {
    double start = s->value_as_double(0), limit = l->value_as_double(0), delta = d->value_as_double(0);
    if (delta != 0 && std::isfinite(start) && std::isfinite(limit)) {
      double count = std::ceil((limit - start) / delta);
      if (count < 0) count = 0;
      if (count < 1e15) n = Dim::constant(static_cast<int64_t>(count));
    }
  } else if (const SymInts *ks = c.known(0), *kl = c.known(1), *kd = c.known(2);
             ks && kl && kd && ks->size() == 1 && kl->size() == 1 && kd->size() == 1) {
    // arange(0, S, 1) over a dim read from a shape: S elements (position ids).
    if ((*ks)[0] == SymInt::constant(0) && (*kd)[0] == SymInt::constant(1) && (*kl)[0].is_symbol())
      n = (*kl)[0].to_dim();
  }
  c.set_output(0, c.dtype(0), SymShape{n});
  return Status();
}

// DepthToSpace [N, C, H, W] -> [N, C/b^2, H*b, W*b]; SpaceToDepth the inverse.
Status depth_space(RuleContext& c) {
  const auto& in = c.shape(0);
  if (in && in->size() != 4) return c.fail("input has rank {}, expected 4", in->size());
  if (!in) {
    c.set_output(0, c.dtype(0), unknown_dims(4));
    return Status();
  }
  int64_t b = c.node().attr_int("blocksize", 0);
  if (b <= 0 || b > (int64_t{1} << 20)) return c.fail("blocksize {} out of range", b);
  Dim bb = Dim::constant(b), b2 = Dim::constant(b * b);
  SymShape out = *in;
  if (c.node().op() == OpKind::DepthToSpace) {
    out[1] = dim_div_exact(out[1], b2);
    out[2] = dim_mul(out[2], bb);
    out[3] = dim_mul(out[3], bb);
  } else {
    out[1] = dim_mul(out[1], b2);
    out[2] = dim_div_exact(out[2], bb);
    out[3] = dim_div_exact(out[3], bb);
  }
  c.set_output(0, c.dtype(0), std::move(out));
  return Status();
}

}  // namespace

void register_tensor_rules(RuleTable& t) {
  add_rule(t, OpKind::Constant, constant);
  add_rule(t, OpKind::Shape, shape);
  add_rule(t, OpKind::Size, size);
  add_rule(t, OpKind::Reshape, reshape);
  add_rule(t, OpKind::Flatten, flatten);
  add_rule(t, OpKind::Squeeze, squeeze);
  add_rule(t, OpKind::Unsqueeze, unsqueeze);
  add_rule(t, OpKind::Transpose, transpose);
  add_rule(t, OpKind::Concat, concat);
  add_rule(t, OpKind::Split, split);
  add_rule(t, OpKind::Expand, expand);
  add_rule(t, OpKind::Tile, tile);
  add_rule(t, OpKind::Pad, pad);
  add_rule(t, OpKind::ConstantOfShape, constant_of_shape);
  add_rule(t, OpKind::Range, range);
  add_rule(t, OpKind::DepthToSpace, depth_space);
  add_rule(t, OpKind::SpaceToDepth, depth_space);
}

}  // namespace tierjit::passes::shapes
