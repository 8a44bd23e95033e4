// Shape rules for indexing and selection ops: Slice, Gather, GatherElements, GatherND, OneHot,
// TopK, and the data-dependent NonZero, Unique, Compress (their data-dependent dims are unknown).
// Slice and Gather also carry tracked shape-tensor contents (Shape -> Gather / Slice).
// Source: ONNX operator specs, opsets 1..17 (Slice < 10 and TopK < 10 take attributes).
#include <algorithm>
#include <limits>

#include "passes/shape_rules.h"

namespace tierjit::passes::shapes {
namespace {

using ir::Dim;
using ir::OpKind;
using ir::SymShape;

constexpr int64_t kBigEnd = std::numeric_limits<int32_t>::max();  // "to the end" in exporters

// Length of x[start:end:step] over a constant extent (ONNX Slice clamping rules).
int64_t slice_length(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (dim <= 0) return 0;
  if (start < 0) start = start < -dim ? 0 : start + dim;
  if (end < 0) end = end < -dim ? -1 : end + dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    if (end <= start) return 0;
    return (end - start - 1) / step + 1;
  }
  start = std::clamp<int64_t>(start, 0, dim - 1);
  end = std::clamp<int64_t>(end, -1, dim - 1);
  if (start <= end) return 0;
  int64_t s = -step;
  return (start - end - 1) / s + 1;
}

// Start index used by the slice over a constant extent (for slicing tracked contents).
int64_t slice_begin(int64_t dim, int64_t start, int64_t step) {
  if (dim <= 0) return 0;
  if (start < 0) start = start < -dim ? 0 : start + dim;
  return step > 0 ? std::clamp<int64_t>(start, 0, dim) : std::clamp<int64_t>(start, 0, dim - 1);
}

Dim slice_dim(const Dim& d, const SymInt& start, const SymInt& end, int64_t step) {
  if (d.is_constant() && start.is_constant() && end.is_constant())
    return Dim::constant(slice_length(d.value, start.value, end.value, step));
  if (step != 1 || !start.is_constant() || start.value != 0) return Dim::unknown();
  if (d.is_symbol()) {
    if (end.is_constant() && end.value >= kBigEnd) return d;
    if (end.is_symbol() && end.symbol == d.symbol) return d;
    if (end.is_constant() && end.value >= 0) return dim_min_const(d, end.value);
    return Dim::unknown();
  }
  if (d.is_constant() && end.is_symbol()) return dim_min_const(end.to_dim(), d.value);
  return Dim::unknown();
}

Status slice(RuleContext& c) {
  const auto& in = c.shape(0);
  std::optional<SymInts> starts, ends;
  std::optional<std::vector<int64_t>> axes, steps;
  auto to_syms = [](const std::vector<int64_t>& v) {
    SymInts r;
    for (int64_t x : v) r.push_back(SymInt::constant(x));
    return r;
  };
  if (c.opset() < 10) {
    starts = to_syms(c.node().attr_ints("starts"));
    ends = to_syms(c.node().attr_ints("ends"));
    if (c.node().has_attr("axes")) axes = c.node().attr_ints("axes");
  } else {
    if (const SymInts* k = c.known(1)) starts = *k;
    if (const SymInts* k = c.known(2)) ends = *k;
    if (c.has_input(3)) {
      axes = c.const_ints(3);
      if (!axes) starts.reset();  // axes unknown: any dim may change
    }
    if (c.has_input(4)) {
      steps = c.const_ints(4);
      if (!steps) starts.reset();
    }
  }
  if (!in) {
    c.set_output(0, c.dtype(0), std::nullopt);
    return Status();
  }
  int64_t r = static_cast<int64_t>(in->size());
  if (!starts || !ends) {
    SymShape out = *in;
    if (axes) {
      for (int64_t a : *axes) {
        TJ_RETURN_IF_ERROR(c.normalize_axis(a, r, "axis"));
        out[static_cast<size_t>(a)] = Dim::unknown();
      }
    } else {
      out = unknown_dims(in->size());
    }
    c.set_output(0, c.dtype(0), std::move(out));
    return Status();
  }
  size_t n = starts->size();
  if (ends->size() != n) return c.fail("starts has {} entries but ends has {}", n, ends->size());
  if (!axes) {
    axes.emplace();
    for (size_t i = 0; i < n; ++i) axes->push_back(static_cast<int64_t>(i));
  }
  if (!steps || steps->empty()) steps = std::vector<int64_t>(n, 1);
  if (axes->size() != n || steps->size() != n)
    return c.fail("starts, ends, axes and steps have different lengths");
  SymShape out = *in;
  const SymInts* data = c.known(0);
  bool contents_ok = data && r == 1;
  int64_t begin = 0, len = 0, step0 = 1;
  for (size_t i = 0; i < n; ++i) {
    int64_t a = (*axes)[i];
    TJ_RETURN_IF_ERROR(c.normalize_axis(a, r, "axis"));
    int64_t st = (*steps)[i];
    if (st == 0) return c.fail("step {} is 0", i);
    out[static_cast<size_t>(a)] = slice_dim((*in)[static_cast<size_t>(a)], (*starts)[i], (*ends)[i], st);
    if (contents_ok) {
      int64_t extent = static_cast<int64_t>(data->size());
      if ((*starts)[i].is_constant() && (*ends)[i].is_constant()) {
        begin = slice_begin(extent, (*starts)[i].value, st);
        len = slice_length(extent, (*starts)[i].value, (*ends)[i].value, st);
        step0 = st;
      } else {
        contents_ok = false;
      }
    }
  }
  if (contents_ok) {
    SymInts k;
    for (int64_t j = 0; j < len; ++j) k.push_back((*data)[static_cast<size_t>(begin + j * step0)]);
    c.set_known(0, std::move(k));
  }
  c.set_output(0, c.dtype(0), std::move(out));
  return Status();
}

Status gather(RuleContext& c) {
  const auto& data = c.shape(0);
  const auto& idx = c.shape(1);
  if (c.dtype(1) != DType::kUndefined && c.dtype(1) != DType::kInt32 && c.dtype(1) != DType::kInt64)
    return c.fail("input 1 'indices' has dtype {}, expected int32 or int64", dtype_name(c.dtype(1)));
  if (!data || !idx) {
    c.set_output(0, c.dtype(0), std::nullopt);
    return Status();
  }
  int64_t r = static_cast<int64_t>(data->size());
  if (r == 0) return c.fail("input 0 'data' is a scalar");
  int64_t axis = c.node().attr_int("axis", 0);
  TJ_RETURN_IF_ERROR(c.normalize_axis(axis, r, "axis"));
  size_t a = static_cast<size_t>(axis);
  SymShape out(data->begin(), data->begin() + static_cast<std::ptrdiff_t>(a));
  out.insert(out.end(), idx->begin(), idx->end());
  out.insert(out.end(), data->begin() + static_cast<std::ptrdiff_t>(a) + 1, data->end());
  c.set_output(0, c.dtype(0), std::move(out));
  // Shape -> Gather: pick tracked elements.
  const SymInts* k = c.known(0);
  auto indices = c.const_ints(1);
  if (k && indices && r == 1) {
    SymInts picked;
    int64_t n = static_cast<int64_t>(k->size());
    for (int64_t i : *indices) {
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Status();  // fails at run time with a precise message
      picked.push_back((*k)[static_cast<size_t>(i)]);
    }
    c.set_known(0, std::move(picked));
  }
  return Status();
}

Status gather_elements(RuleContext& c) {
  c.set_output(0, c.dtype(0), c.shape(1));
  return Status();
}

Status gather_nd(RuleContext& c) {
  const auto& data = c.shape(0);
  const auto& idx = c.shape(1);
  int64_t b = c.opset() >= 12 ? c.node().attr_int("batch_dims", 0) : 0;
  if (!data || !idx || idx->empty() || !idx->back().is_constant()) {
    c.set_output(0, c.dtype(0), std::nullopt);
    return Status();
  }
  int64_t last = idx->back().value;
  int64_t r = static_cast<int64_t>(data->size());
  if (b < 0 || b + last > r) return c.fail("indices address {} dims after {} batch dims of a rank-{} input", last, b, r);
  SymShape out(idx->begin(), idx->end() - 1);
  out.insert(out.end(), data->begin() + static_cast<std::ptrdiff_t>(b + last), data->end());
  c.set_output(0, c.dtype(0), std::move(out));
  return Status();
}

Status one_hot(RuleContext& c) {
  const auto& idx = c.shape(0);
  if (!idx) {
    c.set_output(0, c.dtype(2), std::nullopt);
    return Status();
  }
  int64_t axis = c.node().attr_int("axis", -1);
  TJ_RETURN_IF_ERROR(c.normalize_axis(axis, static_cast<int64_t>(idx->size()), "axis", true));
  Dim depth = Dim::unknown();
  if (const Tensor* t = c.constant(1); t && t->numel() == 1) {
    double v = t->value_as_double(0);
    if (v >= 0 && v < 1e15) depth = Dim::constant(static_cast<int64_t>(v));
  } else if (const SymInts* k = c.known(1); k && k->size() == 1) {
    depth = (*k)[0].to_dim();
  }
  SymShape out = *idx;
  out.insert(out.begin() + axis, depth);
  c.set_output(0, c.dtype(2), std::move(out));
  return Status();
}

Status top_k(RuleContext& c) {
  const auto& in = c.shape(0);
  if (!in) {
    c.set_output(0, c.dtype(0), std::nullopt);
    c.set_output(1, DType::kInt64, std::nullopt);
    return Status();
  }
  int64_t axis = c.node().attr_int("axis", -1);
  TJ_RETURN_IF_ERROR(c.normalize_axis(axis, static_cast<int64_t>(in->size()), "axis"));
  Dim k = Dim::unknown();
  if (c.opset() < 10) {
    k = SymInt::constant(c.node().attr_int("k", -1)).to_dim();
  } else if (const SymInts* kk = c.known(1); kk && kk->size() == 1) {
    k = (*kk)[0].to_dim();
  }
  SymShape out = *in;
  out[static_cast<size_t>(axis)] = k;
  c.set_output(0, c.dtype(0), out);
  c.set_output(1, DType::kInt64, std::move(out));
  return Status();
}

Status non_zero(RuleContext& c) {
  const auto& in = c.shape(0);
  Dim r = in ? Dim::constant(static_cast<int64_t>(in->size())) : Dim::unknown();
  c.set_output(0, DType::kInt64, SymShape{r, Dim::unknown()});
  return Status();
}

Status unique(RuleContext& c) {
  const auto& in = c.shape(0);
  const ir::Node& n = c.node();
  if (n.has_attr("axis") && in) {
    int64_t axis = n.attr_int("axis", 0);
    TJ_RETURN_IF_ERROR(c.normalize_axis(axis, static_cast<int64_t>(in->size()), "axis"));
    SymShape y = *in;
    y[static_cast<size_t>(axis)] = Dim::unknown();
    c.set_output(0, c.dtype(0), std::move(y));
    c.set_output(2, DType::kInt64, SymShape{(*in)[static_cast<size_t>(axis)]});
  } else {
    c.set_output(0, c.dtype(0), n.has_attr("axis") ? std::nullopt : std::optional<SymShape>(unknown_dims(1)));
    c.set_output(2, DType::kInt64,
                 in && !n.has_attr("axis") ? SymShape{dim_product(*in, 0, in->size())} : unknown_dims(1));
  }
  c.set_output(1, DType::kInt64, unknown_dims(1));
  c.set_output(3, DType::kInt64, unknown_dims(1));
  return Status();
}

Status compress(RuleContext& c) {
  const auto& in = c.shape(0);
  if (!c.node().has_attr("axis")) {
    c.set_output(0, c.dtype(0), unknown_dims(1));
    return Status();
  }
  if (!in) {
    c.set_output(0, c.dtype(0), std::nullopt);
    return Status();
  }
  int64_t axis = c.node().attr_int("axis", 0);
  TJ_RETURN_IF_ERROR(c.normalize_axis(axis, static_cast<int64_t>(in->size()), "axis"));
  SymShape out = *in;
  out[static_cast<size_t>(axis)] = Dim::unknown();
  c.set_output(0, c.dtype(0), std::move(out));
  return Status();
}

}  // namespace

void register_index_rules(RuleTable& t) {
  add_rule(t, OpKind::Slice, slice);
  add_rule(t, OpKind::Gather, gather);
  add_rule(t, OpKind::GatherElements, gather_elements);
  add_rule(t, OpKind::GatherND, gather_nd);
  add_rule(t, OpKind::OneHot, one_hot);
  add_rule(t, OpKind::TopK, top_k);
  add_rule(t, OpKind::NonZero, non_zero);
  add_rule(t, OpKind::Unique, unique);
  add_rule(t, OpKind::Compress, compress);
}

}  // namespace tierjit::passes::shapes
