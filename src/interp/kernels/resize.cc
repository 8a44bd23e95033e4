// Tier-0 kernels: Resize (opsets 10, 11, 13) and the deprecated Upsample (opsets 7, 9).
// Separable: the tensor is resized one axis at a time in double precision, each output position
// taking n neighbours (2 for nearest/linear, 4 for cubic) with per-position weights, exactly as
// onnx.reference's Resize (coordinate modes, nearest rounding, cubic_coeff_a, exclude_outside,
// tf_crop_and_resize extrapolation). Results are cast to the input dtype on store.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "interp/kernels/common.h"
#include "interp/kernels/misc_internal.h"

namespace tierjit::interp {

namespace {

enum class Mode { kNearest, kLinear, kCubic };
enum class Coord {
  kHalfPixel,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfCropAndResize,
  kTfHalfPixelForNn
};
// kSimple: floor when upsampling, ceil when downsampling (Resize-10 and Upsample, as ORT does).
enum class Nearest { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kSimple };

struct ResizeParams {
  Mode mode = Mode::kNearest;
  Coord coord = Coord::kHalfPixel;
  Nearest nearest = Nearest::kRoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
};

// Weights of the n neighbours for a fractional position `ratio` in (0, 1].
void coefficients(const ResizeParams& p, double ratio, double scale, double* c) {
  switch (p.mode) {
    case Mode::kNearest: {
      bool hi;
      if (ratio == 1.0) {
        c[0] = 0;
        c[1] = 1;
        return;
      }
      switch (p.nearest) {
        case Nearest::kRoundPreferFloor:
          hi = ratio > 0.5;
          break;
        case Nearest::kRoundPreferCeil:
          hi = ratio >= 0.5;
          break;
        case Nearest::kFloor:
          hi = false;
          break;
        case Nearest::kCeil:
          hi = true;
          break;
        default:
          hi = scale < 1.0;
          break;
      }
      c[0] = hi ? 0 : 1;
      c[1] = hi ? 1 : 0;
      return;
    }
    case Mode::kLinear:
      c[0] = 1 - ratio;
      c[1] = ratio;
      return;
    case Mode::kCubic: {
      const double a = p.cubic_a, r = ratio, s = 1 - ratio;
      c[0] = ((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a;
      c[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
      c[2] = ((a + 2) * s - (a + 3)) * s * s + 1;
      c[3] = ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a;
      return;
    }
  }
}

// Source coordinate of output index y along one axis.
double source_coord(const ResizeParams& p, double y, double scale, int64_t in_w, int64_t out_w,
                    double roi_start, double roi_end) {
  const double out_w_f = scale * static_cast<double>(in_w);
  switch (p.coord) {
    case Coord::kAlignCorners:
      return out_w_f == 1 ? 0.0 : y * static_cast<double>(in_w - 1) / (out_w_f - 1);
    case Coord::kAsymmetric:
      return y / scale;
    case Coord::kTfCropAndResize: {
      double x = out_w_f == 1
                     ? (roi_end - roi_start) * static_cast<double>(in_w - 1) / 2
                     : y * (roi_end - roi_start) * static_cast<double>(in_w - 1) / (out_w_f - 1);
      return x + roi_start * static_cast<double>(in_w - 1);
    }
    case Coord::kPytorchHalfPixel:
      return out_w > 1 ? (y + 0.5) / scale - 0.5 : -0.5;
    case Coord::kTfHalfPixelForNn:
      return (y + 0.5) / scale;
    case Coord::kHalfPixel:
      break;
  }
  return (y + 0.5) / scale - 0.5;
}

// Resizes `in` (shape `shape`, doubles) along `axis` to out_w positions.
std::vector<double> resize_axis(const ResizeParams& p, const std::vector<double>& in, Shape& shape,
                                int64_t axis, double scale, int64_t out_w, double roi_start,
                                double roi_end, int threads) {
  const int64_t in_w = shape[axis];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  for (int64_t d = axis + 1; d < static_cast<int64_t>(shape.size()); ++d) inner *= shape[d];
  const int n = p.mode == Mode::kCubic ? 4 : 2;
  std::vector<int64_t> idx(static_cast<size_t>(out_w * n));
  std::vector<double> w(static_cast<size_t>(out_w * n));
  std::vector<char> extrapolate(static_cast<size_t>(out_w), 0);
  for (int64_t j = 0; j < out_w; ++j) {
    const double x =
        source_coord(p, static_cast<double>(j), scale, in_w, out_w, roi_start, roi_end);
    if (p.coord == Coord::kTfCropAndResize && (x < 0 || x > static_cast<double>(in_w - 1)))
      extrapolate[j] = 1;
    const double fl = std::floor(x);
    const bool integral = x == fl;
    const double ratio = integral ? 1.0 : x - fl;
    double* c = &w[j * n];
    coefficients(p, ratio, scale, c);
    const int64_t start = static_cast<int64_t>(fl) - n / 2 + (integral ? 0 : 1);
    double sum = 0;
    for (int t = 0; t < n; ++t) {
      int64_t k = start + t;
      if (p.exclude_outside && (k < 0 || k >= in_w)) c[t] = 0;
      sum += c[t];
      idx[j * n + t] = std::clamp<int64_t>(k, 0, in_w - 1);
    }
    if (p.exclude_outside && sum != 0)
      for (int t = 0; t < n; ++t) c[t] /= sum;
  }
  shape[axis] = out_w;
  std::vector<double> out(static_cast<size_t>(outer * out_w * inner));
  const int64_t rows = outer * out_w;
  kernels::parallel_for_if(rows * inner * n > 65536, threads, rows, [&](int64_t q) {
    const int64_t o = q / out_w, j = q % out_w;
    const double* src = in.data() + o * in_w * inner;
    double* dst = out.data() + q * inner;
    if (extrapolate[j]) {
      std::fill(dst, dst + inner, p.extrapolation);
      return;
    }
    std::fill(dst, dst + inner, 0.0);
    for (int t = 0; t < n; ++t) {
      const double c = w[j * n + t];
      if (c == 0) continue;
      const double* s = src + idx[j * n + t] * inner;
      for (int64_t i = 0; i < inner; ++i) dst[i] += c * s[i];
    }
  });
  return out;
}

template <class T>
void store(const std::vector<double>& v, Tensor& out) {
  T* o = out.data<T>();
  for (size_t i = 0; i < v.size(); ++i) {
    if constexpr (std::is_same_v<T, Half>) {
      o[i] = Half{support::float_to_half(static_cast<float>(v[i]))};
    } else if constexpr (std::is_same_v<T, BFloat16>) {
      o[i] = BFloat16{support::float_to_bfloat16(static_cast<float>(v[i]))};
    } else if constexpr (std::is_floating_point_v<T>) {
      o[i] = static_cast<T>(v[i]);
    } else if constexpr (std::is_same_v<T, bool>) {
      o[i] = v[i] != 0;
    } else {
      double r = std::nearbyint(v[i]);
      r = std::clamp(r, static_cast<double>(std::numeric_limits<T>::lowest()),
                     static_cast<double>(std::numeric_limits<T>::max()));
      o[i] = static_cast<T>(r);
    }
  }
}

// Resizes x to out_shape with per-axis scales (roi: 2*rank entries or empty).
Status run_resize(KernelContext& ctx, const Tensor& x, const ResizeParams& p,
                  const std::vector<double>& scales, const Shape& out_shape,
                  const std::vector<double>& roi) {
  const int64_t rank = x.rank();
  TJ_RETURN_IF_ERROR(ctx.check_size(DType::kFloat64, out_shape));
  TJ_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, x.dtype(), out_shape));
  std::vector<double> data(static_cast<size_t>(x.numel()));
  TJ_RETURN_IF_ERROR(dispatch_all(ctx, x.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* src = x.data<T>();
    for (size_t i = 0; i < data.size(); ++i) {
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
        data[i] = to_float(src[i]);
      else
        data[i] = static_cast<double>(src[i]);
    }
    return Status();
  }));
  Shape shape = x.shape();
  // Shrinking axes first keeps the double intermediates no larger than input or output; the
  // axes are independent, so the order does not change the result beyond rounding.
  std::vector<int64_t> order;
  for (int64_t a = 0; a < rank; ++a)
    if (out_shape[a] <= shape[a]) order.push_back(a);
  for (int64_t a = 0; a < rank; ++a)
    if (out_shape[a] > shape[a]) order.push_back(a);
  for (int64_t a : order) {
    const double rs = roi.empty() ? 0.0 : roi[a], re = roi.empty() ? 1.0 : roi[a + rank];
    const bool roi_identity = p.coord != Coord::kTfCropAndResize || (rs == 0.0 && re == 1.0);
    if (std::fabs(scales[a] - 1.0) < 1e-9 && out_shape[a] == shape[a] && roi_identity) continue;
    if (shape[a] == 0 || out_shape[a] == 0) {
      shape[a] = out_shape[a];
      data.assign(static_cast<size_t>(shape_numel(shape)), 0.0);
      continue;
    }
    Shape next = shape;
    next[a] = out_shape[a];
    TJ_RETURN_IF_ERROR(ctx.check_size(DType::kFloat64, next));
    data = resize_axis(p, data, shape, a, scales[a], out_shape[a], rs, re,
                       ctx.options().intra_op_threads);
  }
  return dispatch_all(ctx, x.dtype(), [&](auto tag) -> Status {
    store<decltype(tag)>(data, *out);
    return Status();
  });
}

Expected<ResizeParams> read_params(KernelContext& ctx, bool legacy) {
  const ir::Node& n = ctx.node();
  ResizeParams p;
  const std::string mode = n.attr_string("mode", "nearest");
  if (mode == "nearest")
    p.mode = Mode::kNearest;
  else if (mode == "linear" || mode == "bilinear" || mode == "trilinear")
    p.mode = Mode::kLinear;
  else if (mode == "cubic" && !legacy)
    p.mode = Mode::kCubic;
  else
    return ctx.fail("attribute 'mode': unknown value '{}'", mode);
  if (legacy) {
    p.coord = Coord::kAsymmetric;
    p.nearest = Nearest::kSimple;
    return p;
  }
  const std::string ct = n.attr_string("coordinate_transformation_mode", "half_pixel");
  if (ct == "half_pixel")
    p.coord = Coord::kHalfPixel;
  else if (ct == "pytorch_half_pixel")
    p.coord = Coord::kPytorchHalfPixel;
  else if (ct == "align_corners")
    p.coord = Coord::kAlignCorners;
  else if (ct == "asymmetric")
    p.coord = Coord::kAsymmetric;
  else if (ct == "tf_crop_and_resize")
    p.coord = Coord::kTfCropAndResize;
  else if (ct == "tf_half_pixel_for_nn")
    p.coord = Coord::kTfHalfPixelForNn;
  else
    return ctx.fail("attribute 'coordinate_transformation_mode': unknown value '{}'", ct);
  const std::string nm = n.attr_string("nearest_mode", "round_prefer_floor");
  if (nm == "round_prefer_floor")
    p.nearest = Nearest::kRoundPreferFloor;
  else if (nm == "round_prefer_ceil")
    p.nearest = Nearest::kRoundPreferCeil;
  else if (nm == "floor")
    p.nearest = Nearest::kFloor;
  else if (nm == "ceil")
    p.nearest = Nearest::kCeil;
  else
    return ctx.fail("attribute 'nearest_mode': unknown value '{}'", nm);
  p.cubic_a = n.attr_float("cubic_coeff_a", -0.75f);
  p.exclude_outside = n.attr_int("exclude_outside", 0) != 0;
  p.extrapolation = n.attr_float("extrapolation_value", 0.0f);
  return p;
}

// Output shape from scales: floor(scale * dim).
Expected<Shape> shape_from_scales(KernelContext& ctx, const Tensor& x,
                                  const std::vector<double>& scales) {
  if (static_cast<int64_t>(scales.size()) != x.rank())
    return ctx.fail("'scales' has {} entries, input rank is {}", scales.size(), x.rank());
  Shape out(scales.size());
  for (size_t a = 0; a < scales.size(); ++a) {
    if (!(scales[a] > 0) || !std::isfinite(scales[a]))
      return ctx.fail("'scales'[{}] = {} must be positive", a, scales[a]);
    double d = std::floor(scales[a] * static_cast<double>(x.dim(static_cast<int64_t>(a))));
    if (d > 1e15) return ctx.fail("'scales'[{}] = {} gives a dim too large", a, scales[a]);
    out[a] = static_cast<int64_t>(d);
  }
  return out;
}

// Resize: opset 10 (X, scales) behaves like Upsample; 11+ (X, roi, scales, sizes).
Status resize_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  const bool legacy = ctx.node().opset() < 11;
  TJ_ASSIGN_OR_RETURN(ResizeParams p, read_params(ctx, legacy));
  const Tensor* roi_t = legacy ? nullptr : ctx.input(1);
  const Tensor* scales_t = ctx.input(legacy ? 1 : 2);
  const Tensor* sizes_t = legacy ? nullptr : ctx.input(3);
  if (scales_t && scales_t->numel() == 0) scales_t = nullptr;
  if (sizes_t && sizes_t->numel() == 0) sizes_t = nullptr;
  if (scales_t && sizes_t)
    return ctx.fail("give only one of 'scales' (input 2) and 'sizes' (input 3)");
  if (!scales_t && !sizes_t) return ctx.fail("one of 'scales' and 'sizes' is required");
  std::vector<double> roi;
  if (roi_t && roi_t->numel() > 0 && p.coord == Coord::kTfCropAndResize) {
    roi = read_doubles(*roi_t);
    if (static_cast<int64_t>(roi.size()) != 2 * x->rank())
      return ctx.fail("input 1 'roi' has {} entries, expected 2 * rank = {}", roi.size(),
                      2 * x->rank());
  }
  std::vector<double> scales;
  Shape out_shape;
  if (scales_t) {
    scales = read_doubles(*scales_t);
    TJ_ASSIGN_OR_RETURN(out_shape, shape_from_scales(ctx, *x, scales));
  } else {
    TJ_ASSIGN_OR_RETURN(out_shape, read_int64s(ctx, *sizes_t, "input 3 'sizes'"));
    if (static_cast<int64_t>(out_shape.size()) != x->rank())
      return ctx.fail("input 3 'sizes' has {} entries, input rank is {}", out_shape.size(),
                      x->rank());
    scales.resize(out_shape.size());
    for (size_t a = 0; a < out_shape.size(); ++a) {
      if (out_shape[a] < 0)
        return ctx.fail("input 3 'sizes'[{}] = {} is negative", a, out_shape[a]);
      const int64_t in = x->dim(static_cast<int64_t>(a));
      scales[a] = in == 0 ? 1.0 : static_cast<double>(out_shape[a]) / static_cast<double>(in);
    }
  }
  return run_resize(ctx, *x, p, scales, out_shape, roi);
}

// Upsample: opset 7 takes attribute `scales`, opset 9 input 1 `scales`.
Status upsample_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(ResizeParams p, read_params(ctx, true));
  std::vector<double> scales;
  if (ctx.node().opset() < 9 || !ctx.input(1)) {
    for (float f : ctx.node().attr_floats("scales")) scales.push_back(f);
  } else {
    scales = read_doubles(*ctx.input(1));
  }
  TJ_ASSIGN_OR_RETURN(Shape out_shape, shape_from_scales(ctx, *x, scales));
  return run_resize(ctx, *x, p, scales, out_shape, {});
}

}  // namespace

void register_resize_kernels(KernelRegistry& r) {
  r.add(ir::OpKind::Resize, resize_kernel);
  r.add(ir::OpKind::Upsample, upsample_kernel);
}

}  // namespace tierjit::interp
