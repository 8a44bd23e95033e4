// Tier-0 kernels that read elements at computed positions: Gather, GatherElements, GatherND,
// Compress, NonZero, OneHot, ReverseSequence (ONNX default domain, opsets 1..17). Every index is
// checked before any data moves: an out-of-range index is an error naming the input and value.
#include <algorithm>

#include "interp/kernels/common.h"
#include "interp/kernels/tensor_internal.h"

namespace tierjit::interp {

namespace {

// Reads integer indices and maps them from [-n, n) to [0, n); error names input and value.
Expected<std::vector<int64_t>> read_indices(const KernelContext& ctx, const Tensor& t, size_t input,
                                            const char* name, int64_t n) {
  if (t.dtype() != DType::kInt32 && t.dtype() != DType::kInt64)
    return ctx.fail("input {} '{}' must be int32 or int64, got {}", input, name, dtype_name(t.dtype()));
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    int64_t x = t.value_as_int64(i);
    if (x < -n || x >= n)
      return ctx.fail("input {} '{}': index {} out of range [{}, {})", input, name, x, -n, n);
    v[i] = x < 0 ? x + n : x;
  }
  return v;
}

template <class T>
bool is_nonzero(T v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return (v.bits & 0x7FFF) != 0;
  } else {
    return v != T(0);
  }
}

}  // namespace

Expected<int64_t> elements_indices_axis(const KernelContext& ctx, const Tensor& data, const Tensor& indices) {
  const int64_t r = data.rank();
  if (indices.rank() != r)
    return ctx.fail("input 1 'indices' shape {} must have the rank of data {}", shape_to_string(indices.shape()),
                    shape_to_string(data.shape()));
  TJ_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, ctx.node().attr_int("axis", 0), r));
  for (int64_t d = 0; d < r; ++d)
    if (d != axis && indices.dim(d) > data.dim(d))
      return ctx.fail("input 1 'indices' shape {} exceeds data shape {} on axis {}",
                      shape_to_string(indices.shape()), shape_to_string(data.shape()), d);
  return axis;
}

// Gather (opsets 1, 11, 13): out = data[:axis] + indices.shape + data[axis+1:]; attribute axis
// (default 0); indices int32/int64 in [-dim, dim).
Status gather_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* data, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* it, ctx.required_input(1));
  const int64_t r = data->rank();
  if (r == 0) return ctx.fail("input 0 'data' is a scalar; Gather needs rank >= 1");
  TJ_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, ctx.node().attr_int("axis", 0), r));
  const int64_t n = data->dim(axis);
  TJ_ASSIGN_OR_RETURN(std::vector<int64_t> idx, read_indices(ctx, *it, 1, "indices", n));
  Shape out_shape(data->shape().begin(), data->shape().begin() + axis);
  out_shape.insert(out_shape.end(), it->shape().begin(), it->shape().end());
  out_shape.insert(out_shape.end(), data->shape().begin() + axis + 1, data->shape().end());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= data->dim(d);
  for (int64_t d = axis + 1; d < r; ++d) inner *= data->dim(d);
  TJ_ASSIGN_OR_RETURN(Tensor* out, ctx.output(0, data->dtype(), out_shape));
  if (out->numel() == 0) return Status();
  return dispatch_mover(ctx, data->dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T* src = data->data<T>();
    T* dst = out->data<T>();
    const int64_t k = static_cast<int64_t>(idx.size());
    for (int64_t o = 0; o < outer; ++o) {
      const T* base = src + o * n * inner;
      if (inner == 1) {
        for (int64_t j = 0; j < k; ++j) dst[j] = base[idx[j]];
      } else {
        for (int64_t j = 0; j < k; ++j) copy_run(dst + j * inner, base + idx[j] * inner, inner);
      }
      dst += k * inner;
    }
    return Status();
  });
}

// GatherElements (opsets 11, 13): out has the shape of indices (same rank as data, each dim
// other than axis <= data's); out[i..] = data[i.. with i_axis = indices[i..]].
Status gather_elements_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* data, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* it, ctx.required_input(1));
  const int64_t r = data->rank();
  if (r == 0) return ctx.fail("input 0 'data' is a scalar; GatherElements needs rank >= 1");
  TJ_ASSIGN_OR_RETURN(int64_t axis, elements_indices_axis(ctx, *data, *it));
  TJ_ASSIGN_OR_RETURN(std::vector<int64_t> idx, read_indices(ctx, *it, 1, "indices", data->dim(axis)));
  TJ_ASSIGN_OR_RETURN(Tensor* out, ctx.output(0, data->dtype(), it->shape()));
  if (out->numel() == 0) return Status();
  const std::vector<int64_t> ds = row_major_strides(data->shape());
  return dispatch_mover(ctx, data->dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T* src = data->data<T>();
    T* dst = out->data<T>();
    std::vector<int64_t> pos(static_cast<size_t>(r), 0);
    const int64_t w = it->dim(r - 1);
    const int64_t sw = axis == r - 1 ? 0 : ds[r - 1];
    int64_t base = 0;  // offset of pos in data, excluding the axis coordinate
    for (int64_t e = 0; e < out->numel(); e += w) {
      for (int64_t j = 0; j < w; ++j) dst[e + j] = src[base + j * sw + idx[e + j] * ds[axis]];
      for (int64_t d = r - 2; d >= 0; --d) {
        const int64_t step = d == axis ? 0 : ds[d];
        if (++pos[d] < it->dim(d)) { base += step; break; }
        base -= step * (pos[d] - 1);
        pos[d] = 0;
      }
    }
    return Status();
  });
}

// GatherND (opsets 11, 12, 13): indices [..., m] address slices of data after `batch_dims`
// (attribute, default 0, opset 12) leading dims shared by data and indices; out shape =
// indices.shape[:-1] + data.shape[batch_dims + m:].
Status gather_nd_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* data, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* it, ctx.required_input(1));
  if (it->dtype() != DType::kInt64 && it->dtype() != DType::kInt32)
    return ctx.fail("input 1 'indices' must be int64, got {}", dtype_name(it->dtype()));
  const int64_t r = data->rank(), q = it->rank();
  const int64_t b = ctx.node().attr_int("batch_dims", 0);
  if (r < 1 || q < 1) return ctx.fail("data and indices need rank >= 1");
  if (b < 0 || b >= std::min(r, q))
    return ctx.fail("batch_dims {} must be in [0, min(rank(data), rank(indices)) = {})", b, std::min(r, q));
  const int64_t m = it->dim(q - 1);
  if (m > r - b)
    return ctx.fail("input 1 'indices' last dim {} exceeds rank(data) - batch_dims = {}", m, r - b);
  for (int64_t d = 0; d < b; ++d)
    if (it->dim(d) != data->dim(d))
      return ctx.fail("batch dim {} differs: data {} vs indices {}", d, shape_to_string(data->shape()),
                      shape_to_string(it->shape()));
  Shape out_shape(it->shape().begin(), it->shape().end() - 1);
  out_shape.insert(out_shape.end(), data->shape().begin() + b + m, data->shape().end());
  int64_t batches = 1, tuples = 1, inner = 1;
  for (int64_t d = 0; d < b; ++d) batches *= data->dim(d);
  for (int64_t d = b; d < q - 1; ++d) tuples *= it->dim(d);
  for (int64_t d = b + m; d < r; ++d) inner *= data->dim(d);
  const std::vector<int64_t> ds = row_major_strides(data->shape());
  const int64_t batch_stride = b > 0 ? ds[b - 1] : 0;
  // Resolve every tuple to a data offset first (validates all indices).
  std::vector<int64_t> offs(static_cast<size_t>(batches * tuples));
  for (int64_t t = 0; t < batches * tuples; ++t) {
    int64_t off = (t / tuples) * batch_stride;
    for (int64_t k = 0; k < m; ++k) {
      const int64_t n = data->dim(b + k);
      int64_t x = it->value_as_int64(t * m + k);
      if (x < -n || x >= n)
        return ctx.fail("input 1 'indices': index {} out of range [{}, {}) for data axis {}", x, -n, n, b + k);
      off += (x < 0 ? x + n : x) * ds[b + k];
    }
    offs[t] = off;
  }
  TJ_ASSIGN_OR_RETURN(Tensor* out, ctx.output(0, data->dtype(), out_shape));
  if (out->numel() == 0) return Status();
  return dispatch_mover(ctx, data->dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    for (size_t t = 0; t < offs.size(); ++t)
      copy_run(out->data<T>() + static_cast<int64_t>(t) * inner, data->data<T>() + offs[t], inner);
    return Status();
  });
}

// Compress (opsets 9, 11): keeps the slices along `axis` (or the elements of the flattened
// input when axis is absent) whose entry in the 1-D bool condition is true. A condition shorter
// than the axis drops the rest; a true entry past the end is an error.
Status compress_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* in, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* cond, ctx.required_input(1));
  if (cond->rank() != 1) return ctx.fail("input 1 'condition' must be 1-D, got shape {}", shape_to_string(cond->shape()));
  Tensor src = *in;
  int64_t axis = 0;
  if (ctx.node().has_attr("axis")) {
    TJ_ASSIGN_OR_RETURN(axis, normalize_axis(ctx, ctx.node().attr_int("axis", 0), in->rank()));
    if (in->rank() == 0) return ctx.fail("input 0 is a scalar; Compress with an axis needs rank >= 1");
  } else {
    src = in->reshaped({in->numel()});
  }
  const int64_t n = src.dim(axis);
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < cond->numel(); ++i) {
    if (cond->value_as_int64(i) == 0) continue;
    if (i >= n) return ctx.fail("input 1 'condition' is true at {} beyond axis size {}", i, n);
    keep.push_back(i);
  }
  Shape out_shape = src.shape();
  out_shape[axis] = static_cast<int64_t>(keep.size());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= src.dim(d);
  for (int64_t d = axis + 1; d < src.rank(); ++d) inner *= src.dim(d);
  TJ_ASSIGN_OR_RETURN(Tensor* out, ctx.output(0, in->dtype(), out_shape));
  if (out->numel() == 0) return Status();
  return dispatch_mover(ctx, in->dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    T* dst = out->data<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k : keep) {
        copy_run(dst, src.data<T>() + (o * n + k) * inner, inner);
        dst += inner;
      }
    return Status();
  });
}

// NonZero (opsets 9, 13): int64 [rank, nnz] of the coordinates of non-zero elements in
// row-major order ([1, nnz] for a scalar, as ONNX Runtime does).
Status nonzero_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* in, ctx.required_input(0));
  std::vector<int64_t> flat;
  TJ_RETURN_IF_ERROR(dispatch_all(ctx, in->dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* p = static_cast<const T*>(in->raw_data());
    for (int64_t i = 0; i < in->numel(); ++i)
      if (is_nonzero<T>(p[i])) flat.push_back(i);
    return Status();
  }));
  const int64_t r = in->rank(), nnz = static_cast<int64_t>(flat.size());
  TJ_ASSIGN_OR_RETURN(Tensor* out, ctx.output(0, DType::kInt64, {std::max<int64_t>(r, 1), nnz}));
  int64_t* o = out->data<int64_t>();
  if (r == 0) {
    std::fill_n(o, nnz, 0);
    return Status();
  }
  for (int64_t j = 0; j < nnz; ++j) {
    int64_t rem = flat[j];
    for (int64_t d = r - 1; d >= 0; --d) {
      o[d * nnz + j] = rem % in->dim(d);
      rem /= in->dim(d);
    }
  }
  return Status();
}

// OneHot (opsets 9, 11): output = indices.shape with `depth` inserted at axis (default -1);
// values = [off, on] (2 elements, output dtype). Indices (any numeric, negative count from
// depth) outside [-depth, depth) give an all-off row, as the spec says. Error: depth < 1.
Status one_hot_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* it, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* dt, ctx.required_input(1));
  TJ_ASSIGN_OR_RETURN(const Tensor* vals, ctx.required_input(2));
  if (dt->numel() != 1) return ctx.fail("input 1 'depth' must be a scalar, got shape {}", shape_to_string(dt->shape()));
  if (vals->numel() != 2) return ctx.fail("input 2 'values' must hold 2 elements [off, on], got {}", vals->numel());
  const double depth_d = dt->value_as_double(0);
  if (!(depth_d >= 1.0) || depth_d > 9.0e18) return ctx.fail("input 1 'depth' must be >= 1, got {}", depth_d);
  const int64_t depth = static_cast<int64_t>(depth_d);
  const int64_t q = it->rank();
  TJ_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, ctx.node().attr_int("axis", -1), q + 1));
  Shape out_shape = it->shape();
  out_shape.insert(out_shape.begin() + axis, depth);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= it->dim(d);
  for (int64_t d = axis; d < q; ++d) inner *= it->dim(d);
  TJ_ASSIGN_OR_RETURN(Tensor* out, ctx.output(0, vals->dtype(), out_shape));
  const bool float_idx = dtype_is_float(it->dtype());
  return dispatch_mover(ctx, vals->dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    T* dst = out->data<T>();
    std::fill_n(dst, out->numel(), vals->data<T>()[0]);
    const T on = vals->data<T>()[1];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t p = o * inner + i;
        int64_t x = float_idx ? static_cast<int64_t>(std::clamp(it->value_as_double(p), -9.0e18, 9.0e18))
                              : it->value_as_int64(p);
        if (x < 0) x += depth;
        if (x < 0 || x >= depth) continue;
        dst[(o * depth + x) * inner + i] = on;
      }
    return Status();
  });
}

// ReverseSequence (opset 10): input rank >= 2 with time_axis and batch_axis (0/1, defaults 0 and
// 1); for batch b reverses the first sequence_lens[b] steps (int64, in [0, time steps]).
Status reverse_sequence_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* in, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* lt, ctx.required_input(1));
  if (in->rank() < 2) return ctx.fail("input 0 must have rank >= 2, got shape {}", shape_to_string(in->shape()));
  const int64_t ta = ctx.node().attr_int("time_axis", 0), ba = ctx.node().attr_int("batch_axis", 1);
  if (!((ta == 0 && ba == 1) || (ta == 1 && ba == 0)))
    return ctx.fail("time_axis {} and batch_axis {} must be 0 and 1 in some order", ta, ba);
  const int64_t steps = in->dim(ta), batch = in->dim(ba);
  TJ_ASSIGN_OR_RETURN(std::vector<int64_t> lens, read_int64s(ctx, *lt, "input 1 'sequence_lens'"));
  if (static_cast<int64_t>(lens.size()) != batch)
    return ctx.fail("input 1 'sequence_lens' has {} values for batch size {}", lens.size(), batch);
  for (int64_t l : lens)
    if (l < 0 || l > steps) return ctx.fail("input 1 'sequence_lens': length {} out of range [0, {}]", l, steps);
  const std::vector<int64_t> s = row_major_strides(in->shape());
  const int64_t inner = in->rank() > 2 ? s[1] : 1;
  TJ_ASSIGN_OR_RETURN(Tensor* out, ctx.output(0, in->dtype(), in->shape()));
  return dispatch_mover(ctx, in->dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t = 0; t < steps; ++t) {
        const int64_t st = t < lens[b] ? lens[b] - 1 - t : t;
        copy_run(out->data<T>() + t * s[ta] + b * s[ba], in->data<T>() + st * s[ta] + b * s[ba], inner);
      }
    return Status();
  });
}

}  // namespace tierjit::interp
