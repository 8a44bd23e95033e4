// Tier-0 kernels that cut, pad or replicate boxes of a tensor: Slice, Pad, Tile, Expand (ONNX
// default domain, opsets 1..17). Slice, Tile and Expand are one strided_copy each (Slice returns a
// view when the cut is contiguous); Pad maps every output index to an input index per axis.
#include <algorithm>
#include <limits>

#include "interp/kernels/common.h"
#include "interp/kernels/tensor_internal.h"

namespace tierjit::interp {

namespace {

// A one-element tensor of dtype `dt` holding v (numeric dtypes and bool).
Expected<Tensor> scalar_of(const KernelContext& ctx, DType dt, double v) {
  Tensor t = Tensor::empty(dt, {});
  TJ_RETURN_IF_ERROR(dispatch_all(ctx, dt, [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, Half>) {
      t.data<uint16_t>()[0] = support::float_to_half(static_cast<float>(v));
    } else if constexpr (std::is_same_v<T, BFloat16>) {
      t.data<uint16_t>()[0] = support::float_to_bfloat16(static_cast<float>(v));
    } else if constexpr (std::is_same_v<T, bool>) {
      t.data<bool>()[0] = v != 0.0;
    } else {
      t.data<T>()[0] = static_cast<T>(v);
    }
    return Status();
  }));
  return t;
}

// Source index of output index o along an axis of input size n padded by `begin` in front;
// -1 means "the constant". mode: 0 constant, 1 edge, 2 reflect.
int64_t pad_source(int64_t o, int64_t begin, int64_t n, int mode) {
  int64_t i = o - begin;
  if (i >= 0 && i < n) return i;
  if (mode == 0 || n == 0) return -1;
  if (mode == 1) return i < 0 ? 0 : n - 1;
  if (n == 1) return 0;
  const int64_t period = 2 * (n - 1);
  i %= period;
  if (i < 0) i += period;
  return i >= n ? period - i : i;
}

}  // namespace

// Slice (opsets 1, 10, 11, 13): attributes starts/ends/axes before 10; inputs starts, ends,
// optional axes and steps (int32/int64) from 10. Negative starts/ends count from the back and
// are clamped to the axis (INT64_MAX / INT64_MIN mean "to the end"); steps may be negative, not 0.
Status slice_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* in, ctx.required_input(0));
  const int64_t r = in->rank();
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.node().opset() < 10) {
    starts = ctx.node().attr_ints("starts");
    ends = ctx.node().attr_ints("ends");
    axes = ctx.node().attr_ints("axes");
  } else {
    TJ_ASSIGN_OR_RETURN(const Tensor* st, ctx.required_input(1));
    TJ_ASSIGN_OR_RETURN(const Tensor* en, ctx.required_input(2));
    TJ_ASSIGN_OR_RETURN(starts, read_int64s(ctx, *st, "input 1 'starts'"));
    TJ_ASSIGN_OR_RETURN(ends, read_int64s(ctx, *en, "input 2 'ends'"));
    if (const Tensor* ax = ctx.input(3)) { TJ_ASSIGN_OR_RETURN(axes, read_int64s(ctx, *ax, "input 3 'axes'")); }
    if (const Tensor* sp = ctx.input(4)) { TJ_ASSIGN_OR_RETURN(steps, read_int64s(ctx, *sp, "input 4 'steps'")); }
  }
  const size_t k = starts.size();
  if (ends.size() != k) return ctx.fail("'starts' has {} values but 'ends' has {}", k, ends.size());
  if (axes.empty()) {
    for (size_t i = 0; i < k; ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (steps.empty()) steps.assign(k, 1);
  if (axes.size() != k) return ctx.fail("'axes' has {} values but 'starts' has {}", axes.size(), k);
  if (steps.size() != k) return ctx.fail("'steps' has {} values but 'starts' has {}", steps.size(), k);

  Shape out_shape = in->shape();
  std::vector<int64_t> start(static_cast<size_t>(r), 0), step(static_cast<size_t>(r), 1);
  std::vector<bool> seen(static_cast<size_t>(r), false);
  for (size_t i = 0; i < k; ++i) {
    if (axes[i] < -r || axes[i] >= r) return ctx.fail("'axes' value {} is out of range for rank {}", axes[i], r);
    const int64_t ax = axes[i] < 0 ? axes[i] + r : axes[i];
    if (seen[ax]) return ctx.fail("'axes' lists axis {} twice", axes[i]);
    seen[ax] = true;
    const int64_t n = in->dim(ax), s = steps[i];
    if (s == 0) return ctx.fail("'steps' value for axis {} is 0", axes[i]);
    int64_t b = starts[i], e = ends[i];
    if (b < 0) b = b < -n ? 0 : b + n;  // avoid overflow at INT64_MIN
    if (e < 0) e = e < -n ? -1 : e + n;
    int64_t cnt;
    if (s > 0) {
      b = std::clamp<int64_t>(b, 0, n);
      e = std::clamp<int64_t>(e, 0, n);
      cnt = e > b ? (e - b - 1) / s + 1 : 0;
    } else if (n == 0) {
      b = 0;
      cnt = 0;
    } else {
      b = std::clamp<int64_t>(b, 0, n - 1);
      e = std::clamp<int64_t>(e, -1, n - 1);
      const int64_t neg = s == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -s;
      cnt = b > e ? (b - e - 1) / neg + 1 : 0;
    }
    start[ax] = b;
    step[ax] = s;
    out_shape[ax] = cnt;
  }
  const int64_t out_numel = shape_numel(out_shape);
  std::vector<int64_t> in_strides = row_major_strides(in->shape());
  int64_t offset = 0;
  if (out_numel > 0)
    for (int64_t d = 0; d < r; ++d) offset += start[d] * in_strides[d];
  // Contiguous cut -> view: outer dims of extent 1, then one dim with step 1, then full dims.
  bool contiguous = true;
  int64_t j = 0;
  while (j < r && out_shape[j] == 1) ++j;
  if (j < r && step[j] != 1) contiguous = false;
  for (int64_t d = j + 1; d < r && contiguous; ++d)
    if (out_shape[d] != in->dim(d) || (out_shape[d] > 1 && step[d] != 1)) contiguous = false;
  if (contiguous || out_numel == 0) {
    if (out_numel == 0) offset = 0;
    ctx.set_output(0, in->reshaped({in->numel()}).slice_rows(offset, offset + out_numel).reshaped(out_shape));
    return Status();
  }
  std::vector<int64_t> src_strides(static_cast<size_t>(r));
  for (int64_t d = 0; d < r; ++d) src_strides[d] = in_strides[d] * step[d];
  TJ_ASSIGN_OR_RETURN(Tensor* out, ctx.output(0, in->dtype(), out_shape));
  return copy_strided_from(ctx, *in, offset, src_strides, *out);
}

// Pad (opsets 1, 2, 11, 13): pads [b_0..b_{n-1}, e_0..e_{n-1}] from attribute `pads` (`paddings`
// in opset 1) before 11, int64 input 1 from 11 (for the axes of optional input 3, default all);
// mode constant (value from attribute `value` / input 2, default 0), edge or reflect. Negative
// pads crop. Error: an output dim < 0, edge/reflect padding of an empty axis.
Status pad_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* in, ctx.required_input(0));
  const int64_t r = in->rank();
  const int opset = ctx.node().opset();
  std::string mode_s = ctx.node().attr_string("mode", "constant");
  int mode;
  if (mode_s == "constant") mode = 0;
  else if (mode_s == "edge") mode = 1;
  else if (mode_s == "reflect") mode = 2;
  else return ctx.unsupported_here("mode '{}' is not supported (constant, edge, reflect)", mode_s);

  std::vector<int64_t> pads, axes;
  Tensor cval;
  if (opset < 11) {
    pads = ctx.node().attr_ints(opset < 2 ? "paddings" : "pads");
    TJ_ASSIGN_OR_RETURN(cval, scalar_of(ctx, in->dtype(), ctx.node().attr_float("value", 0.0f)));
  } else {
    TJ_ASSIGN_OR_RETURN(const Tensor* pt, ctx.required_input(1));
    TJ_ASSIGN_OR_RETURN(pads, read_int64s(ctx, *pt, "input 1 'pads'"));
    if (const Tensor* cv = ctx.input(2)) {
      if (cv->numel() != 1) return ctx.fail("input 2 'constant_value' must hold one value, got {}", cv->numel());
      if (cv->dtype() != in->dtype())
        return ctx.fail("input 2 'constant_value' has dtype {}, expected {}", dtype_name(cv->dtype()),
                        dtype_name(in->dtype()));
      cval = *cv;
    } else if (in->dtype() == DType::kString) {
      cval = Tensor::scalar<std::string>("");
    } else {
      TJ_ASSIGN_OR_RETURN(cval, scalar_of(ctx, in->dtype(), 0.0));
    }
    if (const Tensor* at = ctx.input(3)) { TJ_ASSIGN_OR_RETURN(axes, read_int64s(ctx, *at, "input 3 'axes'")); }
  }
  if (axes.empty())
    for (int64_t d = 0; d < r; ++d) axes.push_back(d);
  if (pads.size() != 2 * axes.size())
    return ctx.fail("'pads' has {} values, expected {} (2 per axis)", pads.size(), 2 * axes.size());
  std::vector<int64_t> begin(static_cast<size_t>(r), 0), end(static_cast<size_t>(r), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    TJ_ASSIGN_OR_RETURN(int64_t ax, normalize_axis(ctx, axes[i], r));
    begin[ax] = pads[i];
    end[ax] = pads[i + axes.size()];
  }
  Shape out_shape(static_cast<size_t>(r));
  for (int64_t d = 0; d < r; ++d) {
    if (__builtin_add_overflow(in->dim(d), begin[d], &out_shape[d]) ||
        __builtin_add_overflow(out_shape[d], end[d], &out_shape[d]))
      return ctx.fail("pads {} overflow axis {}", shape_to_string(pads), d);
    if (out_shape[d] < 0)
      return ctx.fail("pads {} crop axis {} of size {} below 0", shape_to_string(pads), d, in->dim(d));
    if (mode != 0 && in->dim(d) == 0 && out_shape[d] > 0)
      return ctx.fail("{} padding of axis {} of size 0 is undefined", mode_s, d);
  }
  TJ_ASSIGN_OR_RETURN(Tensor* out, ctx.output(0, in->dtype(), out_shape));
  if (out->numel() == 0) return Status();
  // Per-axis maps from output index to input index (-1: constant).
  std::vector<std::vector<int64_t>> map(static_cast<size_t>(r));
  for (int64_t d = 0; d < r; ++d) {
    map[d].resize(static_cast<size_t>(out_shape[d]));
    for (int64_t o = 0; o < out_shape[d]; ++o) map[d][o] = pad_source(o, begin[d], in->dim(d), mode);
  }
  return dispatch_mover(ctx, in->dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T c = cval.data<T>()[0];
    const T* src = in->data<T>();
    T* dst = out->data<T>();
    if (r == 0) {
      dst[0] = src[0];
      return Status();
    }
    const std::vector<int64_t> in_strides = row_major_strides(in->shape());
    const int64_t w = out_shape[r - 1], n = in->dim(r - 1), b = begin[r - 1];
    const int64_t lo = std::clamp<int64_t>(b, 0, w), hi = std::clamp<int64_t>(b + n, 0, w);
    const std::vector<int64_t>& last = map[r - 1];
    std::vector<int64_t> idx(static_cast<size_t>(r - 1), 0);
    const int64_t rows = out->numel() / w;
    for (int64_t row = 0; row < rows; ++row) {
      T* drow = dst + row * w;
      int64_t soff = 0;
      bool is_const = false;
      for (int64_t d = 0; d + 1 < r; ++d) {
        int64_t m = map[d][idx[d]];
        if (m < 0) { is_const = true; break; }
        soff += m * in_strides[d];
      }
      if (is_const) {
        std::fill_n(drow, w, c);
      } else {
        const T* srow = src + soff;
        for (int64_t j = 0; j < lo; ++j) drow[j] = last[j] < 0 ? c : srow[last[j]];
        if (hi > lo) copy_run(drow + lo, srow + (lo - b), hi - lo);
        for (int64_t j = std::max(hi, lo); j < w; ++j) drow[j] = last[j] < 0 ? c : srow[last[j]];
      }
      for (int64_t d = r - 2; d >= 0; --d) {
        if (++idx[d] < out_shape[d]) break;
        idx[d] = 0;
      }
    }
    return Status();
  });
}

// Tile (opsets 1, 6, 13): output dim d = input dim d × repeats[d] (int64 input 1, one value >= 0
// per axis). Opset 1 takes scalar inputs `tiles` and `axis` instead.
Status tile_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* in, ctx.required_input(0));
  const int64_t r = in->rank();
  TJ_ASSIGN_OR_RETURN(const Tensor* rt, ctx.required_input(1));
  TJ_ASSIGN_OR_RETURN(std::vector<int64_t> reps, read_int64s(ctx, *rt, "input 1 'repeats'"));
  if (ctx.node().opset() < 6) {
    TJ_ASSIGN_OR_RETURN(const Tensor* at, ctx.required_input(2));
    TJ_ASSIGN_OR_RETURN(std::vector<int64_t> av, read_int64s(ctx, *at, "input 2 'axis'"));
    if (reps.size() != 1 || av.size() != 1) return ctx.fail("inputs 'tiles' and 'axis' must be scalars");
    TJ_ASSIGN_OR_RETURN(int64_t ax, normalize_axis(ctx, av[0], r));
    int64_t t = reps[0];
    reps.assign(static_cast<size_t>(r), 1);
    reps[ax] = t;
  }
  if (static_cast<int64_t>(reps.size()) != r)
    return ctx.fail("input 1 'repeats' has {} values for input rank {}", reps.size(), r);
  Shape big, final_shape;
  std::vector<int64_t> strides;
  std::vector<int64_t> in_strides = row_major_strides(in->shape());
  for (int64_t d = 0; d < r; ++d) {
    if (reps[d] < 0) return ctx.fail("input 1 'repeats' {} has a negative value", shape_to_string(reps));
    big.push_back(reps[d]);
    big.push_back(in->dim(d));
    strides.push_back(0);
    strides.push_back(in_strides[d]);
    int64_t fd = 0;
    if (__builtin_mul_overflow(reps[d], in->dim(d), &fd))
      return ctx.fail("input 1 'repeats' {} overflows the output size", shape_to_string(reps));
    final_shape.push_back(fd);
  }
  TJ_RETURN_IF_ERROR(ctx.check_size(in->dtype(), final_shape));
  TJ_ASSIGN_OR_RETURN(Tensor* out, ctx.output(0, in->dtype(), big));
  TJ_RETURN_IF_ERROR(copy_strided_from(ctx, *in, 0, strides, *out));
  Tensor t = *out;
  ctx.set_output(0, t.reshaped(std::move(final_shape)));
  return Status();
}

// Expand (opsets 8, 13): broadcasts input 0 with the int64 shape in input 1 (numpy rules in both
// directions: a 1 in `shape` keeps the input's dim). Error: incompatible shapes.
Status expand_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* in, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* st, ctx.required_input(1));
  if (st->rank() != 1) return ctx.fail("input 1 'shape' must be 1-D, got shape {}", shape_to_string(st->shape()));
  TJ_ASSIGN_OR_RETURN(Shape shape, read_int64s(ctx, *st, "input 1 'shape'"));
  for (int64_t d : shape)
    if (d < 0) return ctx.fail("input 1 'shape' {} has a negative dim", shape_to_string(shape));
  std::optional<Shape> out_shape = broadcast_shapes(in->shape(), shape);
  if (!out_shape)
    return ctx.fail("input shape {} cannot expand to {}", shape_to_string(in->shape()), shape_to_string(shape));
  if (*out_shape == in->shape()) {
    ctx.set_output(0, *in);
    return Status();
  }
  TJ_ASSIGN_OR_RETURN(Tensor* out, ctx.output(0, in->dtype(), *out_shape));
  return copy_strided_from(ctx, *in, 0, broadcast_strides(in->shape(), *out_shape), *out);
}

}  // namespace tierjit::interp
