// Shared nn kernel helpers (see nn_common.h): window geometry, quantization parameters and the
// float16/bfloat16 <-> float32 copies.
#include "interp/kernels/nn_common.h"

#include <optional>
#include <string>

#include "support/checked_math.h"

namespace tierjit::interp::nn {

Status check_pool_pads(const KernelContext& ctx, const Window& w) {
  for (size_t i = 0; i < w.kernel.size(); ++i)
    if (w.pad_begin[i] >= w.kernel[i] || w.pad_end[i] >= w.kernel[i])
      return ctx.fail("pads {} and {} on spatial axis {} must be smaller than the kernel ({}): a "
                      "window wholly in the padding has no value",
                      w.pad_begin[i], w.pad_end[i], i, w.kernel[i]);
  return Status();
}

Expected<Window> resolve_window(const KernelContext& ctx, const std::vector<int64_t>& in_spatial,
                                const std::vector<int64_t>& kernel, bool ceil_mode,
                                bool use_dilations) {
  const ir::Node& node = ctx.node();
  const size_t r = in_spatial.size();
  Window w;
  w.kernel = kernel;
  if (kernel.size() != r)
    return ctx.fail("kernel_shape has {} dims but the input has {} spatial dims", kernel.size(), r);
  w.strides = node.attr_ints("strides", std::vector<int64_t>(r, 1));
  w.dilations = use_dilations ? node.attr_ints("dilations", std::vector<int64_t>(r, 1))
                              : std::vector<int64_t>(r, 1);
  std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * r, 0));
  if (w.strides.size() != r) return ctx.fail("strides has {} values, expected {}", w.strides.size(), r);
  if (w.dilations.size() != r)
    return ctx.fail("dilations has {} values, expected {}", w.dilations.size(), r);
  if (pads.size() != 2 * r) return ctx.fail("pads has {} values, expected {}", pads.size(), 2 * r);
  std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" &&
      auto_pad != "VALID")
    return ctx.fail("auto_pad '{}' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", auto_pad);
  w.pad_begin.resize(r);
  w.pad_end.resize(r);
  w.out.resize(r);
  for (size_t i = 0; i < r; ++i) {
    if (kernel[i] <= 0) return ctx.fail("kernel dim {} is {}, must be positive", i, kernel[i]);
    if (w.strides[i] <= 0) return ctx.fail("stride {} is {}, must be positive", i, w.strides[i]);
    if (w.dilations[i] <= 0) return ctx.fail("dilation {} is {}, must be positive", i, w.dilations[i]);
    // Window sizes from attributes: every sum and product must fit int64 (no wrapped sizes).
    const std::optional<int64_t> eff_or = support::checked_mul(kernel[i] - 1, w.dilations[i]);
    const int64_t in = in_spatial[i];
    constexpr int64_t kMaxSize = int64_t{1} << 60;  // sums of three of them still fit
    if (!eff_or || *eff_or > kMaxSize || pads[i] > kMaxSize || pads[i + r] > kMaxSize ||
        w.strides[i] > kMaxSize || in > kMaxSize)
      return ctx.fail("kernel {}, dilation {}, stride {} or pads on spatial axis {} are too large "
                      "(sizes overflow int64)",
                      kernel[i], w.dilations[i], w.strides[i], i);
    const int64_t eff = *eff_or + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t out = (in + w.strides[i] - 1) / w.strides[i];
      const int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[i] + eff - in);
      w.pad_begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pad_end[i] = total - w.pad_begin[i];
      w.out[i] = out;
      continue;
    }
    if (auto_pad == "VALID") {
      w.pad_begin[i] = w.pad_end[i] = 0;
    } else {
      w.pad_begin[i] = pads[i];
      w.pad_end[i] = pads[i + r];
      if (w.pad_begin[i] < 0 || w.pad_end[i] < 0)
        return ctx.fail("pads must be non-negative, got {} and {} on spatial axis {}",
                        w.pad_begin[i], w.pad_end[i], i);
    }
    const int64_t padded = in + w.pad_begin[i] + w.pad_end[i];
    // With ceil_mode a window longer than the padded input still has one position when the
    // stride reaches past the shortfall (ONNX's output-size formula: ceil((padded - eff) /
    // stride) + 1 = 1; ONNX Runtime computes it): its taps past the end are skipped.
    if (padded < eff && !(ceil_mode && eff - padded < w.strides[i]))
      return ctx.fail("kernel extent {} on spatial axis {} exceeds the padded input size {}", eff, i,
                      padded);
    int64_t out;
    if (ceil_mode) {
      out = (padded - eff + w.strides[i] - 1) / w.strides[i] + 1;
      if ((out - 1) * w.strides[i] >= in + w.pad_begin[i]) --out;
    } else {
      out = (padded - eff) / w.strides[i] + 1;
    }
    w.out[i] = out;
  }
  return w;
}

const Tensor* graph_constant(const KernelContext& ctx, size_t index, const Tensor* t) {
  const ir::Value* v = ctx.node().input(index);
  return t && v && v->is_constant() && t->shares_storage_with(v->constant()) ? t : nullptr;
}

std::vector<float> to_f32(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  if (t.dtype() == DType::kFloat16)
    for (int64_t i = 0; i < t.numel(); ++i) v[i] = support::half_to_float(t.data<uint16_t>()[i]);
  else
    for (int64_t i = 0; i < t.numel(); ++i) v[i] = support::bfloat16_to_float(t.data<uint16_t>()[i]);
  return v;
}

void from_f32(const std::vector<float>& v, Tensor& t) {
  uint16_t* o = t.data<uint16_t>();
  if (t.dtype() == DType::kFloat16)
    for (size_t i = 0; i < v.size(); ++i) o[i] = support::float_to_half(v[i]);
  else
    for (size_t i = 0; i < v.size(); ++i) o[i] = support::float_to_bfloat16(v[i]);
}

std::vector<int32_t> read_int32s(const Tensor& t) {
  std::vector<int32_t> v(static_cast<size_t>(t.numel()));
  switch (t.dtype()) {
    case DType::kUInt8: for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.data<uint8_t>()[i]; break;
    case DType::kInt8: for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.data<int8_t>()[i]; break;
    case DType::kInt32: for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.data<int32_t>()[i]; break;
    default: for (int64_t i = 0; i < t.numel(); ++i) v[i] = static_cast<int32_t>(t.value_as_int64(i));
  }
  return v;
}

Expected<std::vector<int32_t>> read_zero_point(const KernelContext& ctx, const Tensor* zp,
                                               int64_t count, const char* what) {
  if (!zp) return std::vector<int32_t>(static_cast<size_t>(count), 0);
  if (!dtype_is_integer(zp->dtype()))
    return ctx.fail("{} must be an integer tensor, got {}", what, dtype_name(zp->dtype()));
  if (zp->numel() == 1) return std::vector<int32_t>(static_cast<size_t>(count), read_int32s(*zp)[0]);
  if (zp->rank() != 1 || zp->numel() != count)
    return ctx.fail("{} has shape {}, expected a scalar or [{}]", what, shape_to_string(zp->shape()),
                    count);
  return read_int32s(*zp);
}

Expected<std::vector<float>> read_scale(const KernelContext& ctx, const Tensor* scale, int64_t count,
                                        const char* what) {
  if (!scale) return ctx.fail("{} is required", what);
  if (!dtype_is_float(scale->dtype()))
    return ctx.fail("{} must be a float tensor, got {}", what, dtype_name(scale->dtype()));
  std::vector<double> d = read_doubles(*scale);
  if (d.size() == 1) return std::vector<float>(static_cast<size_t>(count), static_cast<float>(d[0]));
  if (scale->rank() != 1 || scale->numel() != count)
    return ctx.fail("{} has shape {}, expected a scalar or [{}]", what,
                    shape_to_string(scale->shape()), count);
  return std::vector<float>(d.begin(), d.end());
}

}  // namespace tierjit::interp::nn
