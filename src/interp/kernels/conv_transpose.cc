// Tier-0 kernel: ConvTranspose (any spatial rank, groups, dilations, pads / auto_pad /
// output_padding / output_shape): per (batch, group) a GEMM col = W_g^T * X_g (oneDNN sgemm for
// float32/float16, loops for float64) followed by col2im accumulation into Y.
// Source: ONNX operator spec, ConvTranspose 1/11 (pads from output_shape as the spec's equations).
#include "interp/kernels/conv_ref.h"
#include "interp/kernels/nn_kernels.h"
#include "support/checked_math.h"

namespace tierjit::interp::nn {
namespace {

// Geometry in "convolution" orientation: in_spatial = Y's spatial dims, out_spatial = X's.
// in_channels = M (Y channels), out_channels = C (X channels).
Expected<ConvGeometry> setup_conv_transpose(const KernelContext& ctx, const Tensor& x, const Tensor& w) {
  const ir::Node& node = ctx.node();
  if (x.rank() < 3)
    return ctx.fail("input X must have rank >= 3 [N, C, spatial...], got {}", shape_to_string(x.shape()));
  if (w.rank() != x.rank())
    return ctx.fail("weight W {} must have the rank of X {}", shape_to_string(w.shape()),
                    shape_to_string(x.shape()));
  const size_t r = static_cast<size_t>(x.rank() - 2);
  ConvGeometry g;
  g.group = node.attr_int("group", 1);
  if (g.group <= 0) return ctx.fail("group must be positive, got {}", g.group);
  g.batch = x.dim(0);
  g.out_channels = x.dim(1);
  if (w.dim(0) != x.dim(1))
    return ctx.fail("channel mismatch: X has {} channels but W {} expects {}", x.dim(1),
                    shape_to_string(w.shape()), w.dim(0));
  if (x.dim(1) % g.group != 0)
    return ctx.fail("group {} does not divide the {} input channels", g.group, x.dim(1));
  const std::optional<int64_t> in_channels = support::checked_mul(w.dim(1), g.group);
  if (!in_channels) return ctx.fail("group {} x W's {} channels overflows int64", g.group, w.dim(1));
  g.in_channels = *in_channels;
  g.out_spatial.assign(x.shape().begin() + 2, x.shape().end());
  g.kernel.assign(w.shape().begin() + 2, w.shape().end());
  if (node.has_attr("kernel_shape") && node.attr_ints("kernel_shape") != g.kernel)
    return ctx.fail("kernel_shape attribute does not match W {}", shape_to_string(w.shape()));
  g.strides = node.attr_ints("strides", std::vector<int64_t>(r, 1));
  g.dilations = node.attr_ints("dilations", std::vector<int64_t>(r, 1));
  std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * r, 0));
  std::vector<int64_t> out_pad = node.attr_ints("output_padding", std::vector<int64_t>(r, 0));
  std::vector<int64_t> out_shape = node.attr_ints("output_shape");
  if (out_shape.size() == r + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  if (g.strides.size() != r || g.dilations.size() != r || pads.size() != 2 * r ||
      out_pad.size() != r || (!out_shape.empty() && out_shape.size() != r))
    return ctx.fail("strides/dilations/pads/output_padding/output_shape lengths do not match {} "
                    "spatial dims", r);
  g.pad_begin.resize(r);
  g.pad_end.resize(r);
  g.in_spatial.resize(r);
  for (size_t i = 0; i < r; ++i) {
    if (g.strides[i] <= 0 || g.dilations[i] <= 0)
      return ctx.fail("strides and dilations must be positive");
    // The full output extent from attributes and dims, every step checked (no wrapped sizes).
    std::optional<int64_t> full_or = support::checked_mul(g.strides[i], g.out_spatial[i] - 1);
    const std::optional<int64_t> span = support::checked_mul(g.kernel[i] - 1, g.dilations[i]);
    if (full_or && span) full_or = support::checked_add(*full_or, *span);
    if (full_or) full_or = support::checked_add(*full_or, out_pad[i]);
    if (full_or) full_or = support::checked_add(*full_or, 1);
    if (!full_or || !span || (!out_shape.empty() && out_shape[i] > (int64_t{1} << 62)) ||
        pads[i] > (int64_t{1} << 62) || pads[i + r] > (int64_t{1} << 62))
      return ctx.fail("strides, dilations, pads, output_padding or kernel on spatial axis {} are "
                      "too large (sizes overflow int64)", i);
    const int64_t full = *full_or;
    int64_t target = -1;
    if (!out_shape.empty()) target = out_shape[i];
    else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const std::optional<int64_t> same = support::checked_mul(g.out_spatial[i], g.strides[i]);
      if (!same) return ctx.fail("stride {} on spatial axis {} is too large (sizes overflow int64)", g.strides[i], i);
      target = *same;
    }
    if (target >= 0) {
      const int64_t total = std::max<int64_t>(0, full - target);
      if (auto_pad == "SAME_UPPER") {
        g.pad_begin[i] = total / 2;
        g.pad_end[i] = total - total / 2;
      } else {
        g.pad_begin[i] = total - total / 2;
        g.pad_end[i] = total / 2;
      }
      g.in_spatial[i] = target;
    } else {
      if (auto_pad != "VALID") {
        g.pad_begin[i] = pads[i];
        g.pad_end[i] = pads[i + r];
      }
      if (g.pad_begin[i] < 0 || g.pad_end[i] < 0) return ctx.fail("pads must be non-negative");
      g.in_spatial[i] = full - g.pad_begin[i] - g.pad_end[i];
    }
    if (g.in_spatial[i] < 0)
      return ctx.fail("output spatial dim {} would be {} (pads larger than the output)", i, g.in_spatial[i]);
  }
  return g;
}

template <class T>
void conv_transpose_run(const ConvGeometry& g, const T* x, const T* w, const T* bias, T* y) {
  const int64_t cg = g.out_channels / g.group, mg = g.in_channels / g.group;
  const int64_t kk = shape_numel(g.kernel), xs = shape_numel(g.out_spatial);
  const int64_t ys = shape_numel(g.in_spatial);
  std::fill(y, y + g.batch * g.in_channels * ys, T{});
  std::vector<T> col(static_cast<size_t>(mg * kk * xs));
  std::vector<T> wt;  // W_g^T for the loop GEMM
  for (int64_t gi = 0; gi < g.group; ++gi) {
    const T* wg = w + gi * cg * mg * kk;
    if constexpr (!std::is_same_v<T, float>) {
      wt.resize(static_cast<size_t>(mg * kk * cg));
      for (int64_t c = 0; c < cg; ++c)
        for (int64_t j = 0; j < mg * kk; ++j) wt[j * cg + c] = wg[c * mg * kk + j];
    }
    for (int64_t n = 0; n < g.batch; ++n) {
      const T* xg = x + (n * g.out_channels + gi * cg) * xs;
      if constexpr (std::is_same_v<T, float>) {
        (void)sgemm(true, false, mg * kk, xs, cg, 1.f, wg, mg * kk, xg, xs, 0.f, col.data(), xs);
      } else {
        ref_gemm<T>(mg * kk, xs, cg, wt.data(), cg, xg, xs, col.data(), xs);
      }
      col2im_add(g, col.data(), mg, y + (n * g.in_channels + gi * mg) * ys);
    }
  }
  if (bias) {
    for (int64_t n = 0; n < g.batch; ++n)
      for (int64_t m = 0; m < g.in_channels; ++m) {
        T* p = y + (n * g.in_channels + m) * ys;
        for (int64_t i = 0; i < ys; ++i) p[i] += bias[m];
      }
  }
}

Status conv_transpose_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* w, ctx.required_input(1));
  const Tensor* b = ctx.input(2);
  if (w->dtype() != x->dtype() || (b && b->dtype() != x->dtype()))
    return ctx.fail("X, W and B must share one dtype");
  TJ_ASSIGN_OR_RETURN(ConvGeometry g, setup_conv_transpose(ctx, *x, *w));
  if (b && (b->rank() != 1 || b->dim(0) != g.in_channels))
    return ctx.fail("bias B has shape {}, expected [{}]", shape_to_string(b->shape()), g.in_channels);
  Shape ys{g.batch, g.in_channels};
  ys.insert(ys.end(), g.in_spatial.begin(), g.in_spatial.end());
  TJ_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x->dtype(), ys));
  if (y->numel() == 0) return Status();
  set_dnnl_threads(ctx.options().intra_op_threads);
  switch (x->dtype()) {
    case DType::kFloat32:
      conv_transpose_run<float>(g, x->data<float>(), w->data<float>(), b ? b->data<float>() : nullptr,
                                y->data<float>());
      return Status();
    case DType::kFloat64:
      conv_transpose_run<double>(g, x->data<double>(), w->data<double>(),
                                 b ? b->data<double>() : nullptr, y->data<double>());
      return Status();
    case DType::kFloat16: {
      std::vector<float> fx = to_f32(*x), fw = to_f32(*w), fb = b ? to_f32(*b) : std::vector<float>();
      std::vector<float> fy(static_cast<size_t>(y->numel()));
      conv_transpose_run<float>(g, fx.data(), fw.data(), b ? fb.data() : nullptr, fy.data());
      from_f32(fy, *y);
      return Status();
    }
    default: return ctx.unsupported_here("ConvTranspose on {} is not supported", dtype_name(x->dtype()));
  }
}

}  // namespace

void register_conv_transpose_kernels(KernelRegistry& r) {
  r.add(ir::OpKind::ConvTranspose, conv_transpose_kernel);
}

}  // namespace tierjit::interp::nn
