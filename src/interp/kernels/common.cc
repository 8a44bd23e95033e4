// Helpers shared by the tier-0 kernel families (see common.h).
#include "interp/kernels/common.h"

namespace tierjit::interp {

Expected<int64_t> normalize_axis(const KernelContext& ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank || (rank == 0 && axis != 0 && axis != -1))
    return ctx.fail("axis {} is out of range for rank {}", axis, rank);
  return axis < 0 ? axis + rank : axis;
}

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da == db || db == 1) out[i] = da;
    else if (da == 1) out[i] = db;
    else return std::nullopt;
  }
  return out;
}

Expected<Shape> broadcast_all(const KernelContext& ctx, const std::vector<const Tensor*>& ins) {
  Shape out;
  bool first = true;
  for (size_t i = 0; i < ins.size(); ++i) {
    if (!ins[i]) continue;
    if (first) { out = ins[i]->shape(); first = false; continue; }
    auto b = broadcast_shapes(out, ins[i]->shape());
    if (!b)
      return ctx.fail("input {} shape {} does not broadcast with {}", i,
                      shape_to_string(ins[i]->shape()), shape_to_string(out));
    out = *b;
  }
  return out;
}

std::vector<int64_t> row_major_strides(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * shape[i + 1];
  return s;
}

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> s(out.size(), 0);
  std::vector<int64_t> in_s = row_major_strides(in);
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) s[off + i] = in[i] == 1 ? 0 : in_s[i];
  return s;
}

Expected<std::vector<int64_t>> read_int64s(const KernelContext& ctx, const Tensor& t,
                                           const char* what) {
  if (!dtype_is_integer(t.dtype()))
    return ctx.fail("{} must be an integer tensor, got {}", what, dtype_name(t.dtype()));
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.value_as_int64(i);
  return v;
}

std::vector<double> read_doubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.value_as_double(i);
  return v;
}

}  // namespace tierjit::interp
