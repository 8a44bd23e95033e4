// Tier-0 kernels that create tensors from attributes or small inputs: Constant, ConstantOfShape,
// Range, EyeLike, Trilu (ONNX default domain, opsets 1..17). Part of the tensor family
// (tensor.cc registers them); data movement goes through the element mover (tensor_internal.h).
#include <algorithm>
#include <cmath>

#include "interp/kernels/common.h"
#include "interp/kernels/tensor_internal.h"

namespace tierjit::interp {

namespace {

// Writes the value 1 of type T at p[i] (T from dispatch_all; Half/BFloat16 as bit patterns).
template <class T>
void store_one(void* p, int64_t i) {
  if constexpr (std::is_same_v<T, Half>) {
    static_cast<uint16_t*>(p)[i] = 0x3C00;
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    static_cast<uint16_t*>(p)[i] = 0x3F80;
  } else {
    static_cast<T*>(p)[i] = T(1);
  }
}

template <class T>
Status range_typed(KernelContext& ctx, const Tensor& s, const Tensor& l, const Tensor& d) {
  const T start = s.data<T>()[0], limit = l.data<T>()[0], delta = d.data<T>()[0];
  if (delta == T(0)) return ctx.fail("input 2 'delta' must not be 0");
  int64_t n = 0;
  if constexpr (std::is_floating_point_v<T>) {
    double c = std::ceil((static_cast<double>(limit) - static_cast<double>(start)) /
                         static_cast<double>(delta));
    if (std::isnan(c)) return ctx.fail("range of {} to {} step {} is not finite", start, limit, delta);
    if (c > 9.0e18) return ctx.fail("range of {} to {} step {} is too long", start, limit, delta);
    n = c > 0 ? static_cast<int64_t>(c) : 0;
  } else {
    // Exact integer ceil((limit - start) / delta) in 128 bits (no overflow for int64 inputs).
    __int128 diff = static_cast<__int128>(limit) - static_cast<__int128>(start);
    __int128 dl = static_cast<__int128>(delta);
    if ((diff > 0 && dl > 0) || (diff < 0 && dl < 0)) {
      if (dl < 0) { diff = -diff; dl = -dl; }
      n = static_cast<int64_t>((diff + dl - 1) / dl);
    }
  }
  TJ_ASSIGN_OR_RETURN(Tensor* out, ctx.output(0, s.dtype(), {n}));
  T* o = out->data<T>();
  if constexpr (std::is_floating_point_v<T>) {
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(start + static_cast<T>(i) * delta);
  } else {  // unsigned arithmetic: no signed-overflow UB; values stay within [start, limit)
    const uint64_t s0 = static_cast<uint64_t>(static_cast<int64_t>(start));
    const uint64_t dl = static_cast<uint64_t>(static_cast<int64_t>(delta));
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(static_cast<int64_t>(s0 + static_cast<uint64_t>(i) * dl));
  }
  return Status();
}

}  // namespace

// Constant (opsets 1..17): output = the `value` tensor attribute, or value_float(s) /
// value_int(s) / value_string(s) (opset 12). sparse_value is unsupported.
Status constant_kernel(KernelContext& ctx) {
  const ir::Node& n = ctx.node();
  if (const Tensor* t = n.attr_tensor("value")) {
    ctx.set_output(0, *t);
    return Status();
  }
  if (n.has_attr("sparse_value"))
    return ctx.unsupported_here("sparse_value constants are not supported");
  if (const ir::Attribute* a = n.attr("value_float")) {
    ctx.set_output(0, Tensor::scalar<float>(a->f));
  } else if (const ir::Attribute* a = n.attr("value_floats")) {
    ctx.set_output(0, Tensor::from_vector<float>({static_cast<int64_t>(a->floats.size())}, a->floats));
  } else if (const ir::Attribute* a = n.attr("value_int")) {
    ctx.set_output(0, Tensor::scalar<int64_t>(a->i));
  } else if (const ir::Attribute* a = n.attr("value_ints")) {
    ctx.set_output(0, Tensor::from_vector<int64_t>({static_cast<int64_t>(a->ints.size())}, a->ints));
  } else if (const ir::Attribute* a = n.attr("value_string")) {
    ctx.set_output(0, Tensor::scalar<std::string>(a->s));
  } else if (const ir::Attribute* a = n.attr("value_strings")) {
    ctx.set_output(0, Tensor::from_vector<std::string>({static_cast<int64_t>(a->strings.size())},
                                                       a->strings));
  } else {
    return ctx.fail("Constant has no value attribute");
  }
  return Status();
}

// ConstantOfShape (opset 9): input 0 int64 shape (1-D, dims >= 0); attribute `value` a
// one-element tensor (default float32 0) gives dtype and fill value.
Status constant_of_shape_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* shape_t, ctx.required_input(0));
  if (shape_t->rank() > 1) return ctx.fail("input 0 'input' must be 1-D, got shape {}", shape_to_string(shape_t->shape()));
  TJ_ASSIGN_OR_RETURN(Shape shape, read_int64s(ctx, *shape_t, "input 0 'input'"));
  for (int64_t d : shape)
    if (d < 0) return ctx.fail("input 0 'input': negative dim {} in shape {}", d, shape_to_string(shape));
  Tensor value = Tensor::scalar<float>(0.0f);
  if (const Tensor* v = ctx.node().attr_tensor("value")) {
    if (v->numel() != 1) return ctx.fail("attribute 'value' must hold one element, got {}", v->numel());
    value = *v;
  }
  TJ_ASSIGN_OR_RETURN(Tensor* out, ctx.output(0, value.dtype(), shape));
  return dispatch_mover(ctx, value.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    std::fill_n(out->data<T>(), out->numel(), value.data<T>()[0]);
    return Status();
  });
}

// Range (opset 11): scalars start, limit, delta of one type (float, double, int16, int32,
// int64); output 1-D of max(ceil((limit - start) / delta), 0) elements start + i * delta.
Status range_kernel(KernelContext& ctx) {
  const Tensor* in[3];
  static const char* kNames[3] = {"start", "limit", "delta"};
  for (size_t i = 0; i < 3; ++i) {
    TJ_ASSIGN_OR_RETURN(in[i], ctx.required_input(i));
    if (in[i]->numel() != 1)
      return ctx.fail("input {} '{}' must be a scalar, got shape {}", i, kNames[i], shape_to_string(in[i]->shape()));
    if (in[i]->dtype() != in[0]->dtype())
      return ctx.fail("input {} '{}' has dtype {}, expected {}", i, kNames[i], dtype_name(in[i]->dtype()),
                      dtype_name(in[0]->dtype()));
  }
  switch (in[0]->dtype()) {
    case DType::kFloat32: return range_typed<float>(ctx, *in[0], *in[1], *in[2]);
    case DType::kFloat64: return range_typed<double>(ctx, *in[0], *in[1], *in[2]);
    case DType::kInt16: return range_typed<int16_t>(ctx, *in[0], *in[1], *in[2]);
    case DType::kInt32: return range_typed<int32_t>(ctx, *in[0], *in[1], *in[2]);
    case DType::kInt64: return range_typed<int64_t>(ctx, *in[0], *in[1], *in[2]);
    default: return ctx.unsupported_here("dtype {} not supported", dtype_name(in[0]->dtype()));
  }
}

// EyeLike (opset 9): 2-D input gives the shape; attribute dtype (default: the input's) and k
// (diagonal offset, default 0); output zeros with ones at (i, i + k).
Status eye_like_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* in, ctx.required_input(0));
  if (in->rank() != 2) return ctx.fail("input 0 'input' must be 2-D, got shape {}", shape_to_string(in->shape()));
  DType dt = in->dtype();
  if (ctx.node().has_attr("dtype")) {
    int64_t code = ctx.node().attr_int("dtype", 0);
    if (!dtype_is_valid(static_cast<int32_t>(code)) || code == static_cast<int64_t>(DType::kString))
      return ctx.fail("attribute 'dtype' {} is not a valid numeric dtype", code);
    dt = static_cast<DType>(code);
  }
  const int64_t k = ctx.node().attr_int("k", 0);
  const int64_t rows = in->dim(0), cols = in->dim(1);
  TJ_ASSIGN_OR_RETURN(Tensor* out, ctx.output(0, dt, in->shape()));
  if (out->nbytes() > 0) std::memset(out->raw_data(), 0, out->nbytes());
  return dispatch_all(ctx, dt, [&](auto tag) -> Status {
    using T = decltype(tag);
    for (int64_t i = 0; i < rows; ++i) {
      if (k > cols || k < -rows) break;
      int64_t j = i + k;
      if (j >= 0 && j < cols) store_one<T>(out->raw_data(), i * cols + j);
    }
    return Status();
  });
}

// Trilu (opset 14): input rank >= 2 (batches of [N, M] matrices), optional input 1 k (int64
// scalar, default 0), attribute upper (default 1). Keeps (i, j) with j - i >= k (upper) or
// j - i <= k (lower); zeros elsewhere ("" for strings).
Status trilu_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* in, ctx.required_input(0));
  if (in->rank() < 2) return ctx.fail("input 0 'input' must have rank >= 2, got shape {}", shape_to_string(in->shape()));
  int64_t k = 0;
  if (const Tensor* kt = ctx.input(1)) {
    TJ_ASSIGN_OR_RETURN(std::vector<int64_t> kv, read_int64s(ctx, *kt, "input 1 'k'"));
    if (kv.size() != 1) return ctx.fail("input 1 'k' must be a scalar, got {} values", kv.size());
    k = kv[0];
  }
  const bool upper = ctx.node().attr_int("upper", 1) != 0;
  const int64_t rows = in->dim(in->rank() - 2), cols = in->dim(in->rank() - 1);
  const int64_t lim = rows + cols + 1;
  k = std::clamp(k, -lim, lim);
  const int64_t batches = rows * cols == 0 ? 0 : in->numel() / (rows * cols);
  TJ_ASSIGN_OR_RETURN(Tensor* out, ctx.output(0, in->dtype(), in->shape()));
  return dispatch_mover(ctx, in->dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_trivially_copyable_v<T>) {
      if (out->nbytes() > 0) std::memset(out->raw_data(), 0, out->nbytes());
    }
    const T* src = in->data<T>();
    T* dst = out->data<T>();
    for (int64_t b = 0; b < batches; ++b) {
      for (int64_t i = 0; i < rows; ++i) {
        int64_t lo = upper ? std::clamp(i + k, int64_t{0}, cols) : 0;
        int64_t hi = upper ? cols : std::clamp(i + k + 1, int64_t{0}, cols);
        int64_t off = (b * rows + i) * cols;
        if (hi > lo) copy_run(dst + off + lo, src + off + lo, hi - lo);
      }
    }
    return Status();
  });
}

}  // namespace tierjit::interp
