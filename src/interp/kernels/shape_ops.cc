// Tier-0 kernels that change only the shape of a tensor, or read it: Shape, Size, Reshape,
// Flatten, Squeeze, Unsqueeze, and Dropout (inference; training mode with a numpy-compatible
// seeded mask) — ONNX default domain, opsets 1..17. Reshape/Flatten/Squeeze/Unsqueeze and
// inference Dropout return views that share the input's storage.
#include <algorithm>
#include <random>

#include "interp/kernels/common.h"
#include "interp/kernels/tensor_internal.h"

namespace tierjit::interp {

// Shape (opsets 1, 13, 15): 1-D int64 of the input's dims; opset 15 attributes start (default 0)
// and end (default rank), negative counts from the back, both clamped to [0, rank].
Status shape_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* in, ctx.required_input(0));
  const int64_t r = in->rank();
  int64_t start = 0, end = r;
  if (ctx.node().opset() >= 15) {
    start = ctx.node().attr_int("start", 0);
    end = ctx.node().attr_int("end", r);
  }
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  const int64_t n = std::max<int64_t>(end - start, 0);
  TJ_ASSIGN_OR_RETURN(Tensor* out, ctx.output(0, DType::kInt64, {n}));
  for (int64_t i = 0; i < n; ++i) out->data<int64_t>()[i] = in->dim(start + i);
  return Status();
}

// Size (opsets 1, 13): int64 scalar, the number of elements of the input.
Status size_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* in, ctx.required_input(0));
  ctx.set_output(0, Tensor::scalar<int64_t>(in->numel()));
  return Status();
}

// Reshape (opsets 1, 5, 13, 14): target shape from attribute `shape` (opset < 5) or int64 input 1.
// A 0 copies the input dim at that index unless allowzero=1 (opset 14); one -1 is inferred.
// Errors: two -1, dims < -1, a 0 past the input rank, element count mismatch. Returns a view.
Status reshape_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* in, ctx.required_input(0));
  std::vector<int64_t> req;
  if (ctx.node().opset() < 5) {
    req = ctx.node().attr_ints("shape");
  } else {
    TJ_ASSIGN_OR_RETURN(const Tensor* st, ctx.required_input(1));
    if (st->rank() != 1) return ctx.fail("input 1 'shape' must be 1-D, got shape {}", shape_to_string(st->shape()));
    TJ_ASSIGN_OR_RETURN(req, read_int64s(ctx, *st, "input 1 'shape'"));
  }
  const bool allowzero = ctx.node().opset() >= 14 && ctx.node().attr_int("allowzero", 0) != 0;
  Shape out(req.size());
  int64_t infer = -1, known = 1;
  bool has_zero = false;
  for (size_t i = 0; i < req.size(); ++i) {
    int64_t d = req[i];
    if (d == -1) {
      if (infer >= 0) return ctx.fail("input 1 'shape' {} has more than one -1", shape_to_string(req));
      infer = static_cast<int64_t>(i);
      continue;
    }
    if (d < -1) return ctx.fail("input 1 'shape' {} has invalid dim {}", shape_to_string(req), d);
    if (d == 0 && !allowzero) {
      if (static_cast<int64_t>(i) >= in->rank())
        return ctx.fail("input 1 'shape' {}: 0 at index {} copies a dim the input {} lacks",
                        shape_to_string(req), i, shape_to_string(in->shape()));
      d = in->dim(static_cast<int64_t>(i));
    }
    if (d == 0) has_zero = true;
    out[i] = d;
  }
  {
    Shape others;
    for (size_t i = 0; i < out.size(); ++i)
      if (static_cast<int64_t>(i) != infer) others.push_back(out[i]);
    known = shape_numel(others);  // saturates instead of overflowing
  }
  if (infer >= 0) {
    if (allowzero && has_zero)
      return ctx.fail("input 1 'shape' {}: -1 with a 0 dim is invalid when allowzero=1", shape_to_string(req));
    if (known == 0 || in->numel() % known != 0)
      return ctx.fail("cannot reshape input of shape {} to {}", shape_to_string(in->shape()), shape_to_string(req));
    out[static_cast<size_t>(infer)] = in->numel() / known;
  }
  if (shape_numel(out) != in->numel())
    return ctx.fail("cannot reshape input of shape {} ({} elements) to {}", shape_to_string(in->shape()),
                    in->numel(), shape_to_string(out));
  ctx.set_output(0, in->reshaped(std::move(out)));
  return Status();
}

// Flatten (opsets 1, 9, 11, 13): 2-D view [prod(dims[:axis]), prod(dims[axis:])]; attribute axis
// (default 1) in [-rank, rank].
Status flatten_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* in, ctx.required_input(0));
  const int64_t r = in->rank();
  int64_t axis = ctx.node().attr_int("axis", 1);
  if (axis < -r || axis > r) return ctx.fail("axis {} is out of range for rank {}", axis, r);
  if (axis < 0) axis += r;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < r; ++d) (d < axis ? outer : inner) *= in->dim(d);
  ctx.set_output(0, in->reshaped({outer, inner}));
  return Status();
}

// Squeeze (opsets 1, 11, 13): removes the listed axes (attribute before 13, optional int64 input
// 1 from 13), each of size 1; with no (or empty) axes, removes every size-1 dim. Returns a view.
Status squeeze_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* in, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(IntList axes, int_list_attr_or_input(ctx, "axes", 1, 13));
  const int64_t r = in->rank();
  std::vector<bool> drop(static_cast<size_t>(r), false);
  if (!axes.has_value || axes.values.empty()) {  // an empty axes input also squeezes all (as ORT)
    for (int64_t d = 0; d < r; ++d) drop[d] = in->dim(d) == 1;
  } else {
    for (int64_t a : axes.values) {
      TJ_ASSIGN_OR_RETURN(int64_t ax, normalize_axis(ctx, a, r));
      if (in->dim(ax) != 1)
        return ctx.fail("cannot squeeze axis {} of size {} (input shape {})", a, in->dim(ax),
                        shape_to_string(in->shape()));
      drop[ax] = true;
    }
  }
  Shape out;
  for (int64_t d = 0; d < r; ++d)
    if (!drop[d]) out.push_back(in->dim(d));
  ctx.set_output(0, in->reshaped(std::move(out)));
  return Status();
}

// Unsqueeze (opsets 1, 11, 13): inserts size-1 dims at `axes` (attribute before 13, int64 input 1
// from 13), given in the output's rank (rank + len(axes)), negative allowed, no duplicates.
Status unsqueeze_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* in, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(IntList axes, int_list_attr_or_input(ctx, "axes", 1, 13));
  if (!axes.has_value) return ctx.fail("axes are required");
  const int64_t out_rank = in->rank() + static_cast<int64_t>(axes.values.size());
  std::vector<bool> ins(static_cast<size_t>(out_rank), false);
  for (int64_t a : axes.values) {
    TJ_ASSIGN_OR_RETURN(int64_t ax, normalize_axis(ctx, a, out_rank));
    if (ins[ax]) return ctx.fail("axes list axis {} twice", a);
    ins[ax] = true;
  }
  Shape out(static_cast<size_t>(out_rank));
  int64_t k = 0;
  for (int64_t d = 0; d < out_rank; ++d) out[d] = ins[d] ? 1 : in->dim(k++);
  ctx.set_output(0, in->reshaped(std::move(out)));
  return Status();
}

namespace {

// Training-mode Dropout: mask = u >= ratio with u uniform in [0, 1) drawn in row-major order
// from MT19937 seeded by the `seed` attribute (std::random_device when absent), 53-bit doubles as
// numpy's RandomState.random_sample makes them — so a given seed reproduces
// `np.random.seed(seed); np.random.uniform(0, 1, shape) >= ratio`. Output = x * mask / (1 - ratio).
Status training_dropout(KernelContext& ctx, const Tensor& in, double ratio) {
  const uint32_t seed = ctx.node().has_attr("seed")
                            ? static_cast<uint32_t>(ctx.node().attr_int("seed", 0))
                            : std::random_device{}();
  std::mt19937 gen(seed);
  TJ_ASSIGN_OR_RETURN(Tensor* out, ctx.output(0, in.dtype(), in.shape()));
  Tensor* mask = nullptr;
  if (ctx.wants_output(1)) { TJ_ASSIGN_OR_RETURN(mask, ctx.output(1, DType::kBool, in.shape())); }
  const double scale = 1.0 / (1.0 - ratio);
  for (int64_t i = 0; i < in.numel(); ++i) {
    const uint32_t a = gen() >> 5, b = gen() >> 6;
    const bool keep = (a * 67108864.0 + b) / 9007199254740992.0 >= ratio;
    if (mask) mask->data<bool>()[i] = keep;
    switch (in.dtype()) {
      case DType::kFloat32:
        out->data<float>()[i] = keep ? in.data<float>()[i] * static_cast<float>(scale) : 0.0f;
        break;
      case DType::kFloat64:
        out->data<double>()[i] = keep ? in.data<double>()[i] * scale : 0.0;
        break;
      case DType::kFloat16:
        out->data<uint16_t>()[i] = support::float_to_half(
            keep ? support::half_to_float(in.data<uint16_t>()[i]) * static_cast<float>(scale) : 0.0f);
        break;
      default:
        return ctx.unsupported_here("dtype {} not supported", dtype_name(in.dtype()));
    }
  }
  return Status();
}

}  // namespace

// Dropout (opsets 1, 6, 7, 10, 12, 13): by default inference. Output 0 = the input (a view); the
// optional mask is all true (bool from opset 10, ones of the input dtype before). From opset 12,
// training_mode=true with ratio > 0 drops elements at random (training_dropout); ratio 0 is identity.
Status dropout_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* in, ctx.required_input(0));
  const int opset = ctx.node().opset();
  if (opset >= 12) {
    double ratio = 0.5;
    if (const Tensor* rt = ctx.input(1)) {
      if (rt->numel() != 1 || !dtype_is_float(rt->dtype()))
        return ctx.fail("input 1 'ratio' must be a float scalar");
      ratio = rt->value_as_double(0);
    }
    bool training = false;
    if (const Tensor* tm = ctx.input(2)) {
      if (tm->numel() != 1 || tm->dtype() != DType::kBool)
        return ctx.fail("input 2 'training_mode' must be a bool scalar");
      training = tm->data<bool>()[0];
    }
    if (training && !(ratio >= 0.0 && ratio < 1.0))
      return ctx.fail("input 1 'ratio' {} must be in [0, 1)", ratio);
    if (training && ratio > 0.0) return training_dropout(ctx, *in, ratio);
  }
  ctx.set_output(0, *in);
  if (ctx.wants_output(1)) {
    DType mask_dt = opset >= 10 ? DType::kBool : in->dtype();
    TJ_ASSIGN_OR_RETURN(Tensor* mask, ctx.output(1, mask_dt, in->shape()));
    if (mask_dt == DType::kBool) {
      std::fill_n(mask->data<bool>(), mask->numel(), true);
    } else {
      TJ_RETURN_IF_ERROR(dispatch_all(ctx, mask_dt, [&](auto tag) -> Status {
        using T = decltype(tag);
        if constexpr (std::is_same_v<T, Half>) {
          std::fill_n(mask->data<uint16_t>(), mask->numel(), uint16_t{0x3C00});
        } else if constexpr (std::is_same_v<T, BFloat16>) {
          std::fill_n(mask->data<uint16_t>(), mask->numel(), uint16_t{0x3F80});
        } else {
          std::fill_n(mask->data<T>(), mask->numel(), T(1));
        }
        return Status();
      }));
    }
  }
  return Status();
}

}  // namespace tierjit::interp
