// Tier-0 kernels: Conv (1-D..3-D on oneDNN for float32/float16; any rank on plain loops for
// float64), ConvInteger and QLinearConv (int32 accumulation on plain loops).
// Source: ONNX operator spec, Conv 1/11, ConvInteger 10, QLinearConv 10.
#include <algorithm>

#include "interp/kernels/conv_ref.h"
#include "interp/kernels/dnnl_util.h"
#include "interp/kernels/nn_common.h"
#include "interp/kernels/nn_kernels.h"
#include "support/checked_math.h"

namespace tierjit::interp::nn {
namespace {

// Checks X [N, C, D1..Dk] and W [M, C/group, k1..kk] (their shapes) and resolves the geometry
// of ctx.node().
Expected<ConvGeometry> setup_conv_shapes(const KernelContext& ctx, const Shape& xs, const Shape& ws) {
  if (xs.size() < 3)
    return ctx.fail("input X must have rank >= 3 [N, C, spatial...], got {}", shape_to_string(xs));
  if (ws.size() != xs.size())
    return ctx.fail("weight W {} must have the rank of X {}", shape_to_string(ws),
                    shape_to_string(xs));
  const ir::Node& node = ctx.node();
  ConvGeometry g;
  g.batch = xs[0];
  g.in_channels = xs[1];
  g.out_channels = ws[0];
  g.group = node.attr_int("group", 1);
  if (g.group <= 0) return ctx.fail("group must be positive, got {}", g.group);
  if (!support::checked_mul(ws[1], g.group) || ws[1] * g.group != g.in_channels)
    return ctx.fail("channel mismatch: X has {} channels but W {} with group {} expects {}",
                    g.in_channels, shape_to_string(ws), g.group,
                    support::checked_mul(ws[1], g.group).value_or(-1));
  if (g.out_channels % g.group != 0)
    return ctx.fail("group {} does not divide the {} output channels", g.group, g.out_channels);
  g.in_spatial.assign(xs.begin() + 2, xs.end());
  std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
  if (node.has_attr("kernel_shape") && node.attr_ints("kernel_shape") != kernel)
    return ctx.fail("kernel_shape attribute does not match W {}", shape_to_string(ws));
  TJ_ASSIGN_OR_RETURN(Window win, resolve_window(ctx, g.in_spatial, kernel, false));
  g.kernel = win.kernel;
  g.strides = win.strides;
  g.dilations = win.dilations;
  g.pad_begin = win.pad_begin;
  g.pad_end = win.pad_end;
  g.out_spatial = win.out;
  return g;
}

Expected<ConvGeometry> setup_conv(const KernelContext& ctx, const Tensor& x, const Tensor& w) {
  return setup_conv_shapes(ctx, x.shape(), w.shape());
}

Shape conv_out_shape(const ConvGeometry& g) {
  Shape s{g.batch, g.out_channels};
  s.insert(s.end(), g.out_spatial.begin(), g.out_spatial.end());
  return s;
}

Status check_bias(const KernelContext& ctx, const Tensor* b, int64_t m, const char* what) {
  if (b && (b->rank() != 1 || b->dim(0) != m))
    return ctx.fail("{} has shape {}, expected [{}]", what, shape_to_string(b->shape()), m);
  return Status();
}

// True when the graph leaves a spatial dim of the node's input (dims 2...) symbolic or unknown.
bool symbolic_spatial(const ir::Node& node) {
  const ir::Value* x = node.input(0);
  if (!x || !x->type().shape) return true;
  const auto& dims = *x->type().shape;
  for (size_t i = 2; i < dims.size(); ++i)
    if (!dims[i].is_constant()) return true;
  return false;
}

// float32 convolution: oneDNN for spatial rank 1..3 with every dim > 0, loops otherwise; zeros in
// a warm-up run when the spatial dims are symbolic (ExecOptions::warm_up).
Status conv_f32(const KernelContext& ctx, const ConvGeometry& g, const float* x, const float* w,
                const Tensor* constant_w, const float* bias, float* y) {
  const int64_t out_numel = shape_numel(conv_out_shape(g));
  if (out_numel == 0) return Status();
  set_dnnl_threads(ctx.options().intra_op_threads);  // also for the sgemm in conv_ref
  if (ctx.options().warm_up && symbolic_spatial(ctx.node())) {
    // The warm-up's values are dropped: no primitive (nor sgemm kernels) for 1x1 images.
    std::fill(y, y + out_numel, 0.f);
    return Status();
  }
  const int64_t spatial_in = shape_numel(g.in_spatial);
  if (g.in_spatial.size() <= 3 && g.in_channels > 0 && spatial_in > 0)
    return dnnl_conv_f32(g, x, w, constant_w, bias, y, ctx.options().intra_op_threads);
  conv_ref<float>(g, x, w, y);
  if (bias) add_channel_bias(g, bias, y);
  return Status();
}

Status conv_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* w, ctx.required_input(1));
  const Tensor* b = ctx.input(2);
  if (w->dtype() != x->dtype() || (b && b->dtype() != x->dtype()))
    return ctx.fail("X, W and B must share one dtype, got {}, {}{}{}", dtype_name(x->dtype()),
                    dtype_name(w->dtype()), b ? " and " : "", b ? dtype_name(b->dtype()) : "");
  TJ_ASSIGN_OR_RETURN(ConvGeometry g, setup_conv(ctx, *x, *w));
  TJ_RETURN_IF_ERROR(check_bias(ctx, b, g.out_channels, "bias B"));
  TJ_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x->dtype(), conv_out_shape(g)));
  switch (x->dtype()) {
    case DType::kFloat32: {
      // Weights that are graph constants get their oneDNN-layout copy cached across calls.
      return conv_f32(ctx, g, x->data<float>(), w->data<float>(), graph_constant(ctx, 1, w),
                      b ? b->data<float>() : nullptr, y->data<float>());
    }
    case DType::kFloat16: {
      std::vector<float> fx = to_f32(*x), fw = to_f32(*w), fb = b ? to_f32(*b) : std::vector<float>();
      std::vector<float> fy(static_cast<size_t>(y->numel()));
      TJ_RETURN_IF_ERROR(conv_f32(ctx, g, fx.data(), fw.data(), nullptr, b ? fb.data() : nullptr, fy.data()));
      from_f32(fy, *y);
      return Status();
    }
    case DType::kFloat64:
      conv_ref<double>(g, x->data<double>(), w->data<double>(), y->data<double>());
      if (b) add_channel_bias(g, b->data<double>(), y->data<double>());
      return Status();
    default: return ctx.unsupported_here("Conv on {} is not supported", dtype_name(x->dtype()));
  }
}

// x - x_zp and w - w_zp[m] as int32, then the int32 convolution. Zero padding of the shifted
// input equals padding with x_zero_point, as the spec requires.
Expected<std::vector<int32_t>> integer_conv(const KernelContext& ctx, const Tensor& x,
                                            const Tensor* x_zp, const Tensor& w, const Tensor* w_zp,
                                            ConvGeometry& g) {
  auto is_8bit = [](DType t) { return t == DType::kUInt8 || t == DType::kInt8; };
  if (!is_8bit(x.dtype()) || !is_8bit(w.dtype()))
    return ctx.fail("X and W must be uint8 or int8, got {} and {}", dtype_name(x.dtype()),
                    dtype_name(w.dtype()));
  TJ_ASSIGN_OR_RETURN(g, setup_conv(ctx, x, w));
  TJ_ASSIGN_OR_RETURN(std::vector<int32_t> xzp, read_zero_point(ctx, x_zp, 1, "x_zero_point"));
  TJ_ASSIGN_OR_RETURN(std::vector<int32_t> wzp,
                      read_zero_point(ctx, w_zp, g.out_channels, "w_zero_point"));
  std::vector<int32_t> xi = read_int32s(x), wi = read_int32s(w);
  for (int32_t& v : xi) v -= xzp[0];
  const int64_t per_m = g.out_channels ? w.numel() / g.out_channels : 0;
  for (size_t i = 0; i < wi.size(); ++i) wi[i] -= wzp[static_cast<int64_t>(i) / per_m];
  std::vector<int32_t> y(static_cast<size_t>(shape_numel(conv_out_shape(g))));
  if (!y.empty()) conv_ref<int32_t>(g, xi.data(), wi.data(), y.data());
  return y;
}

Status conv_integer_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* w, ctx.required_input(1));
  ConvGeometry g;
  TJ_ASSIGN_OR_RETURN(std::vector<int32_t> acc, integer_conv(ctx, *x, ctx.input(2), *w, ctx.input(3), g));
  TJ_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, DType::kInt32, conv_out_shape(g)));
  std::copy(acc.begin(), acc.end(), y->data<int32_t>());
  return Status();
}

// QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B):
// y = saturate(round((acc + B[m]) * x_scale * w_scale[m] / y_scale) + y_zp).
Status qlinear_conv_kernel(KernelContext& ctx) {
  for (size_t i : {0, 1, 3, 4, 6})
    if (!ctx.input(i)) return ctx.fail("input {} is required", i);
  ConvGeometry g;
  TJ_ASSIGN_OR_RETURN(std::vector<int32_t> acc,
                      integer_conv(ctx, *ctx.input(0), ctx.input(2), *ctx.input(3), ctx.input(5), g));
  TJ_ASSIGN_OR_RETURN(std::vector<float> xs, read_scale(ctx, ctx.input(1), 1, "x_scale"));
  TJ_ASSIGN_OR_RETURN(std::vector<float> ws, read_scale(ctx, ctx.input(4), g.out_channels, "w_scale"));
  TJ_ASSIGN_OR_RETURN(std::vector<float> ys, read_scale(ctx, ctx.input(6), 1, "y_scale"));
  const Tensor* yzp_t = ctx.input(7);
  const DType out_t = yzp_t ? yzp_t->dtype() : ctx.input(0)->dtype();
  if (out_t != DType::kUInt8 && out_t != DType::kInt8)
    return ctx.fail("y_zero_point must be uint8 or int8, got {}", dtype_name(out_t));
  TJ_ASSIGN_OR_RETURN(std::vector<int32_t> yzp, read_zero_point(ctx, yzp_t, 1, "y_zero_point"));
  const Tensor* b = ctx.input(8);
  TJ_RETURN_IF_ERROR(check_bias(ctx, b, g.out_channels, "bias B"));
  if (b && b->dtype() != DType::kInt32) return ctx.fail("bias B must be int32, got {}", dtype_name(b->dtype()));
  TJ_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out_t, conv_out_shape(g)));
  int32_t lo, hi;
  quant_range(out_t, lo, hi);
  const int64_t sp = shape_numel(g.out_spatial);
  for (int64_t i = 0; i < static_cast<int64_t>(acc.size()); ++i) {
    const int64_t m = (i / sp) % g.out_channels;
    const int32_t a = acc[i] + (b ? b->data<int32_t>()[m] : 0);
    const float v = static_cast<float>(a) * (xs[0] * ws[m] / ys[0]) + static_cast<float>(yzp[0]);
    const int32_t q = round_saturate(v, lo, hi);
    if (out_t == DType::kUInt8) y->data<uint8_t>()[i] = static_cast<uint8_t>(q);
    else y->data<int8_t>()[i] = static_cast<int8_t>(q);
  }
  return Status();
}

}  // namespace

void register_conv_kernels(KernelRegistry& r) {
  r.add(ir::OpKind::Conv, conv_kernel);
  r.add(ir::OpKind::ConvInteger, conv_integer_kernel);
  r.add(ir::OpKind::QLinearConv, qlinear_conv_kernel);
}

}  // namespace tierjit::interp::nn
