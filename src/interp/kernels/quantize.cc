// Tier-0 kernels: QuantizeLinear (per tensor / per axis, uint8/int8 saturation, round half to
// even), DequantizeLinear and DynamicQuantizeLinear (uint8, asymmetric, range including 0).
// Source: ONNX operator spec, QuantizeLinear 10/13, DequantizeLinear 10/13, DynamicQuantizeLinear 11.
#include <cmath>

#include "interp/kernels/nn_common.h"
#include "interp/kernels/nn_kernels.h"

namespace tierjit::interp::nn {
namespace {

// Scale / zero point index of every element: per tensor (block = numel) or per `axis`.
struct AxisMap {
  int64_t count = 1, inner = 1;  // element i uses parameter (i / inner) % count
};

Expected<AxisMap> param_axis(const KernelContext& ctx, const Tensor& x, const Tensor& scale) {
  AxisMap m;
  if (scale.rank() == 0 || (scale.rank() == 1 && scale.numel() == 1 && ctx.node().opset() < 13)) {
    m.inner = std::max<int64_t>(x.numel(), 1);
    return m;
  }
  if (scale.rank() != 1)
    return ctx.fail("scale must be a scalar or 1-D, got {}", shape_to_string(scale.shape()));
  if (scale.numel() == 1 && x.rank() == 0) return m;
  TJ_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, ctx.node().attr_int("axis", 1), x.rank()));
  if (x.dim(axis) != scale.numel()) {
    if (scale.numel() == 1) {  // a 1-element 1-D scale is per tensor
      m.inner = std::max<int64_t>(x.numel(), 1);
      return m;
    }
    return ctx.fail("scale has {} values but axis {} of x {} has {}", scale.numel(), axis,
                    shape_to_string(x.shape()), x.dim(axis));
  }
  m.count = scale.numel();
  for (int64_t d = axis + 1; d < x.rank(); ++d) m.inner *= x.dim(d);
  return m;
}

template <class Q>
void quantize_loop(const std::vector<float>& xv, const std::vector<float>& sc,
                   const std::vector<int32_t>& zp, const AxisMap& m, Q* y) {
  int32_t lo, hi;
  quant_range(DTypeOf<Q>::value, lo, hi);
  for (size_t i = 0; i < xv.size(); ++i) {
    const int64_t p = (static_cast<int64_t>(i) / m.inner) % m.count;
    const float q = std::nearbyint(xv[i] / sc[p]);
    y[i] = static_cast<Q>(round_saturate(q + static_cast<float>(zp[p]), lo, hi));
  }
}

std::vector<float> read_floats(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  if (t.dtype() == DType::kFloat32) std::copy(t.data<float>(), t.data<float>() + t.numel(), v.begin());
  else for (int64_t i = 0; i < t.numel(); ++i) v[i] = static_cast<float>(t.value_as_double(i));
  return v;
}

Status quantize_linear_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* scale, ctx.required_input(1));
  const Tensor* zp = ctx.input(2);
  if (!dtype_is_float(x->dtype()) && x->dtype() != DType::kInt32)
    return ctx.fail("x must be float or int32, got {}", dtype_name(x->dtype()));
  TJ_ASSIGN_OR_RETURN(AxisMap m, param_axis(ctx, *x, *scale));
  const DType out_t = zp ? zp->dtype() : DType::kUInt8;
  if (out_t != DType::kUInt8 && out_t != DType::kInt8)
    return ctx.fail("y_zero_point must be uint8 or int8, got {}", dtype_name(out_t));
  if (zp && zp->numel() != scale->numel())
    return ctx.fail("y_zero_point has {} values but y_scale has {}", zp->numel(), scale->numel());
  TJ_ASSIGN_OR_RETURN(std::vector<float> sc, read_scale(ctx, scale, scale->numel(), "y_scale"));
  TJ_ASSIGN_OR_RETURN(std::vector<int32_t> zpv, read_zero_point(ctx, zp, scale->numel(), "y_zero_point"));
  TJ_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out_t, x->shape()));
  const std::vector<float> xv = read_floats(*x);
  if (out_t == DType::kUInt8) quantize_loop(xv, sc, zpv, m, y->data<uint8_t>());
  else quantize_loop(xv, sc, zpv, m, y->data<int8_t>());
  return Status();
}

Status dequantize_linear_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* scale, ctx.required_input(1));
  const Tensor* zp = ctx.input(2);
  if (x->dtype() != DType::kUInt8 && x->dtype() != DType::kInt8 && x->dtype() != DType::kInt32)
    return ctx.fail("x must be uint8, int8 or int32, got {}", dtype_name(x->dtype()));
  if (zp && zp->dtype() != x->dtype())
    return ctx.fail("x_zero_point dtype {} differs from x's {}", dtype_name(zp->dtype()),
                    dtype_name(x->dtype()));
  if (zp && zp->numel() != scale->numel())
    return ctx.fail("x_zero_point has {} values but x_scale has {}", zp->numel(), scale->numel());
  TJ_ASSIGN_OR_RETURN(AxisMap m, param_axis(ctx, *x, *scale));
  TJ_ASSIGN_OR_RETURN(std::vector<float> sc, read_scale(ctx, scale, scale->numel(), "x_scale"));
  TJ_ASSIGN_OR_RETURN(std::vector<int32_t> zpv, read_zero_point(ctx, zp, scale->numel(), "x_zero_point"));
  TJ_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, DType::kFloat32, x->shape()));
  const std::vector<int32_t> xv = read_int32s(*x);
  float* yd = y->data<float>();
  for (size_t i = 0; i < xv.size(); ++i) {
    const int64_t p = (static_cast<int64_t>(i) / m.inner) % m.count;
    yd[i] = static_cast<float>(static_cast<int64_t>(xv[i]) - zpv[p]) * sc[p];
  }
  return Status();
}

// y_scale = (max(0, max x) - min(0, min x)) / 255; y_zero_point = saturate(round(-min / scale)).
Status dynamic_quantize_linear_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  if (x->dtype() != DType::kFloat32)
    return ctx.fail("x must be float32, got {}", dtype_name(x->dtype()));
  if (ctx.num_outputs() < 3) return ctx.fail("expects 3 outputs (y, y_scale, y_zero_point)");
  const float* xd = x->data<float>();
  float lo = 0.f, hi = 0.f;
  for (int64_t i = 0; i < x->numel(); ++i) {
    lo = std::min(lo, xd[i]);
    hi = std::max(hi, xd[i]);
  }
  const float scale = (hi - lo) / 255.f;
  const int32_t zp = scale == 0.f ? 0 : round_saturate(0.f - lo / scale, 0, 255);
  TJ_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, DType::kUInt8, x->shape()));
  TJ_ASSIGN_OR_RETURN(Tensor * ys, ctx.output(1, DType::kFloat32, {}));
  TJ_ASSIGN_OR_RETURN(Tensor * yz, ctx.output(2, DType::kUInt8, {}));
  ys->data<float>()[0] = scale;
  yz->data<uint8_t>()[0] = static_cast<uint8_t>(zp);
  uint8_t* yd = y->data<uint8_t>();
  for (int64_t i = 0; i < x->numel(); ++i)
    yd[i] = scale == 0.f ? static_cast<uint8_t>(zp)
                         : static_cast<uint8_t>(round_saturate(std::nearbyint(xd[i] / scale) + static_cast<float>(zp), 0, 255));
  return Status();
}

}  // namespace

void register_quantize_kernels(KernelRegistry& r) {
  r.add(ir::OpKind::QuantizeLinear, quantize_linear_kernel);
  r.add(ir::OpKind::DequantizeLinear, dequantize_linear_kernel);
  r.add(ir::OpKind::DynamicQuantizeLinear, dynamic_quantize_linear_kernel);
}

}  // namespace tierjit::interp::nn
