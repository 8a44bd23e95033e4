// Tier-0 kernels: MaxUnpool, MaxRoiPool and RoiAlign (float32/float64/float16).
// RoiAlign follows ONNX Runtime's reference implementation (bilinear samples on a regular grid;
// mode "max" takes the largest weighted corner value), as the ONNX backend tests expect.
// Source: ONNX operator spec, MaxUnpool 9/11, MaxRoiPool 1, RoiAlign 10/16.
#include <cmath>

#include "interp/kernels/nn_common.h"
#include "interp/kernels/nn_kernels.h"

namespace tierjit::interp::nn {
namespace {

template <class F>
Status dispatch_float(const KernelContext& ctx, DType t, F&& f) {
  switch (t) {
    case DType::kFloat32: return f(float{});
    case DType::kFloat64: return f(double{});
    case DType::kFloat16: return f(Half{});
    default: return ctx.unsupported_here("dtype {} not supported", dtype_name(t));
  }
}

// MaxUnpool(X, I, output_shape?): Y zero-filled, Y.flat[I[i]] = X[i].
Status max_unpool_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* ind, ctx.required_input(1));
  const Tensor* shape_in = ctx.input(2);
  if (x->rank() < 3) return ctx.fail("input X must have rank >= 3, got {}", shape_to_string(x->shape()));
  if (ind->shape() != x->shape())
    return ctx.fail("indices I {} must have the shape of X {}", shape_to_string(ind->shape()),
                    shape_to_string(x->shape()));
  const size_t r = static_cast<size_t>(x->rank() - 2);
  // Default output shape from kernel_shape / strides / pads; indices address this shape.
  Shape dflt{x->dim(0), x->dim(1)};
  std::vector<int64_t> k = ctx.node().attr_ints("kernel_shape");
  std::vector<int64_t> st = ctx.node().attr_ints("strides", std::vector<int64_t>(r, 1));
  std::vector<int64_t> pads = ctx.node().attr_ints("pads", std::vector<int64_t>(2 * r, 0));
  if (k.size() != r || st.size() != r || pads.size() != 2 * r)
    return ctx.fail("kernel_shape/strides/pads lengths do not match {} spatial dims", r);
  for (size_t d = 0; d < r; ++d) {
    const int64_t v = (x->dim(static_cast<int64_t>(d) + 2) - 1) * st[d] + k[d] - pads[d] - pads[d + r];
    if (v < 0) return ctx.fail("output spatial dim {} would be negative ({})", d, v);
    dflt.push_back(v);
  }
  Shape out = dflt;
  if (shape_in) {
    TJ_ASSIGN_OR_RETURN(std::vector<int64_t> s, read_int64s(ctx, *shape_in, "output_shape"));
    if (s.size() != r + 2) return ctx.fail("output_shape has {} values, expected {}", s.size(), r + 2);
    for (size_t d = 0; d < s.size(); ++d)
      if (s[d] < dflt[d])
        return ctx.fail("output_shape {} is smaller than the inferred {}", shape_to_string(s),
                        shape_to_string(dflt));
    out = s;
  }
  TJ_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x->dtype(), out));
  std::memset(y->raw_data(), 0, y->nbytes());
  TJ_ASSIGN_OR_RETURN(std::vector<int64_t> idx, read_int64s(ctx, *ind, "indices I"));
  const int64_t total = shape_numel(dflt);
  const std::vector<int64_t> ds = row_major_strides(dflt), os = row_major_strides(out);
  const size_t es = dtype_size(x->dtype());
  for (int64_t i = 0; i < x->numel(); ++i) {
    if (idx[i] < 0 || idx[i] >= total)
      return ctx.fail("index {} at position {} is out of range [0, {})", idx[i], i, total);
    int64_t dst = 0;  // same multi-index in the (possibly larger) output shape
    for (size_t d = 0, rem = static_cast<size_t>(idx[i]); d < dflt.size(); ++d) {
      dst += static_cast<int64_t>(rem / static_cast<size_t>(ds[d])) * os[d];
      rem %= static_cast<size_t>(ds[d]);
    }
    std::memcpy(static_cast<char*>(y->raw_data()) + dst * es,
                static_cast<const char*>(x->raw_data()) + i * es, es);
  }
  return Status();
}

// MaxRoiPool(X [N,C,H,W], rois [R,5] = (batch, x1, y1, x2, y2)) -> [R, C, ph, pw].
Status max_roi_pool_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* rois, ctx.required_input(1));
  if (x->rank() != 4) return ctx.fail("input X must be 4-D, got {}", shape_to_string(x->shape()));
  if (rois->rank() != 2 || rois->dim(1) != 5)
    return ctx.fail("rois must be [num_rois, 5], got {}", shape_to_string(rois->shape()));
  std::vector<int64_t> pooled = ctx.node().attr_ints("pooled_shape");
  if (pooled.size() != 2 || pooled[0] <= 0 || pooled[1] <= 0)
    return ctx.fail("pooled_shape must be two positive values");
  const double scale = ctx.node().attr_float("spatial_scale", 1.f);
  const int64_t n = x->dim(0), c = x->dim(1), h = x->dim(2), w = x->dim(3), nr = rois->dim(0);
  const int64_t ph = pooled[0], pw = pooled[1];
  TJ_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x->dtype(), {nr, c, ph, pw}));
  const std::vector<double> rv = read_doubles(*rois);
  return dispatch_float(ctx, x->dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* xd = x->data<T>();
    T* yd = y->data<T>();
    for (int64_t r = 0; r < nr; ++r) {
      const int64_t b = static_cast<int64_t>(rv[r * 5]);
      if (b < 0 || b >= n) return ctx.fail("roi {} has batch index {} out of range [0, {})", r, b, n);
      const int64_t sw = std::llround(rv[r * 5 + 1] * scale), sh = std::llround(rv[r * 5 + 2] * scale);
      const int64_t ew = std::llround(rv[r * 5 + 3] * scale), eh = std::llround(rv[r * 5 + 4] * scale);
      const double bh = static_cast<double>(std::max<int64_t>(eh - sh + 1, 1)) / static_cast<double>(ph);
      const double bw = static_cast<double>(std::max<int64_t>(ew - sw + 1, 1)) / static_cast<double>(pw);
      for (int64_t ch = 0; ch < c; ++ch) {
        const T* plane = xd + (b * c + ch) * h * w;
        for (int64_t i = 0; i < ph; ++i)
          for (int64_t j = 0; j < pw; ++j) {
            int64_t hs = static_cast<int64_t>(std::floor(static_cast<double>(i) * bh)) + sh;
            int64_t he = static_cast<int64_t>(std::ceil(static_cast<double>(i + 1) * bh)) + sh;
            int64_t ws = static_cast<int64_t>(std::floor(static_cast<double>(j) * bw)) + sw;
            int64_t we = static_cast<int64_t>(std::ceil(static_cast<double>(j + 1) * bw)) + sw;
            hs = std::clamp<int64_t>(hs, 0, h); he = std::clamp<int64_t>(he, 0, h);
            ws = std::clamp<int64_t>(ws, 0, w); we = std::clamp<int64_t>(we, 0, w);
            compute_t<T> best = 0;
            if (he > hs && we > ws) {
              best = std::numeric_limits<compute_t<T>>::lowest();
              for (int64_t yy = hs; yy < he; ++yy)
                for (int64_t xx = ws; xx < we; ++xx) best = std::max(best, load(plane[yy * w + xx]));
            }
            yd[((r * c + ch) * ph + i) * pw + j] = store<T>(best);
          }
      }
    }
    return Status();
  });
}

struct Sample {
  int64_t pos[4];
  double wt[4];
};

// RoiAlign(X [N,C,H,W], rois [R,4] = (x1, y1, x2, y2), batch_indices [R]) -> [R, C, oh, ow].
Status roi_align_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* rois, ctx.required_input(1));
  TJ_ASSIGN_OR_RETURN(const Tensor* bi, ctx.required_input(2));
  const ir::Node& node = ctx.node();
  if (x->rank() != 4) return ctx.fail("input X must be 4-D, got {}", shape_to_string(x->shape()));
  if (rois->rank() != 2 || rois->dim(1) != 4)
    return ctx.fail("rois must be [num_rois, 4], got {}", shape_to_string(rois->shape()));
  if (bi->rank() != 1 || bi->dim(0) != rois->dim(0))
    return ctx.fail("batch_indices must be [{}], got {}", rois->dim(0), shape_to_string(bi->shape()));
  const std::string mode = node.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") return ctx.fail("mode '{}' is not avg or max", mode);
  const std::string ctm = node.attr_string(
      "coordinate_transformation_mode", node.opset() >= 16 ? "half_pixel" : "output_half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    return ctx.fail("coordinate_transformation_mode '{}' is not half_pixel or output_half_pixel", ctm);
  const bool half_pixel = ctm == "half_pixel";
  const int64_t oh = node.attr_int("output_height", 1), ow = node.attr_int("output_width", 1);
  const int64_t sampling = node.attr_int("sampling_ratio", 0);
  const double scale = node.attr_float("spatial_scale", 1.f);
  if (oh <= 0 || ow <= 0) return ctx.fail("output_height and output_width must be positive");
  const int64_t n = x->dim(0), c = x->dim(1), h = x->dim(2), w = x->dim(3), nr = rois->dim(0);
  if ((h == 0 || w == 0) && nr > 0 && c > 0)
    return ctx.fail("input X {} has an empty spatial dim", shape_to_string(x->shape()));
  TJ_ASSIGN_OR_RETURN(std::vector<int64_t> batch, read_int64s(ctx, *bi, "batch_indices"));
  const std::vector<double> rv = read_doubles(*rois);
  TJ_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x->dtype(), {nr, c, oh, ow}));
  return dispatch_float(ctx, x->dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* xd = x->data<T>();
    T* yd = y->data<T>();
    std::vector<Sample> samples;
    for (int64_t r = 0; r < nr; ++r) {
      if (batch[r] < 0 || batch[r] >= n)
        return ctx.fail("batch_indices[{}] = {} is out of range [0, {})", r, batch[r], n);
      const double off = half_pixel ? 0.5 : 0.0;
      const double x0 = rv[r * 4] * scale - off, y0 = rv[r * 4 + 1] * scale - off;
      double rw = rv[r * 4 + 2] * scale - off - x0, rh = rv[r * 4 + 3] * scale - off - y0;
      if (!half_pixel) { rw = std::max(rw, 1.0); rh = std::max(rh, 1.0); }
      const double bh = rh / static_cast<double>(oh), bw = rw / static_cast<double>(ow);
      const int64_t gh = sampling > 0 ? sampling : static_cast<int64_t>(std::ceil(rh / static_cast<double>(oh)));
      const int64_t gw = sampling > 0 ? sampling : static_cast<int64_t>(std::ceil(rw / static_cast<double>(ow)));
      const double count = static_cast<double>(std::max<int64_t>(gh * gw, 1));
      samples.clear();
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j)
          for (int64_t iy = 0; iy < gh; ++iy)
            for (int64_t ix = 0; ix < gw; ++ix) {
              double yy = y0 + static_cast<double>(i) * bh + (static_cast<double>(iy) + 0.5) * bh / static_cast<double>(gh);
              double xx = x0 + static_cast<double>(j) * bw + (static_cast<double>(ix) + 0.5) * bw / static_cast<double>(gw);
              Sample s{};
              if (yy < -1.0 || yy > static_cast<double>(h) || xx < -1.0 || xx > static_cast<double>(w)) {
                samples.push_back(s);
                continue;
              }
              yy = std::max(yy, 0.0);
              xx = std::max(xx, 0.0);
              int64_t yl = static_cast<int64_t>(yy), xl = static_cast<int64_t>(xx), yh, xh;
              if (yl >= h - 1) { yh = yl = h - 1; yy = static_cast<double>(yl); } else { yh = yl + 1; }
              if (xl >= w - 1) { xh = xl = w - 1; xx = static_cast<double>(xl); } else { xh = xl + 1; }
              const double ly = yy - static_cast<double>(yl), lx = xx - static_cast<double>(xl);
              const double hy = 1 - ly, hx = 1 - lx;
              s = Sample{{yl * w + xl, yl * w + xh, yh * w + xl, yh * w + xh}, {hy * hx, hy * lx, ly * hx, ly * lx}};
              samples.push_back(s);
            }
      const int64_t per_bin = gh * gw;
      for (int64_t ch = 0; ch < c; ++ch) {
        const T* plane = xd + (batch[r] * c + ch) * h * w;
        for (int64_t b = 0; b < oh * ow; ++b) {
          double acc = 0;
          bool first = true;
          for (int64_t t = 0; t < per_bin; ++t) {
            const Sample& s = samples[b * per_bin + t];
            double v[4];
            for (int q = 0; q < 4; ++q) v[q] = s.wt[q] * static_cast<double>(load(plane[s.pos[q]]));
            if (mode == "avg") {
              acc += v[0] + v[1] + v[2] + v[3];
            } else {
              const double m = std::max(std::max(v[0], v[1]), std::max(v[2], v[3]));
              acc = first ? m : std::max(acc, m);
              first = false;
            }
          }
          if (mode == "avg") acc /= count;
          yd[(r * c + ch) * oh * ow + b] = store<T>(static_cast<compute_t<T>>(acc));
        }
      }
    }
    return Status();
  });
}

}  // namespace

void register_roi_kernels(KernelRegistry& r) {
  r.add(ir::OpKind::MaxUnpool, max_unpool_kernel);
  r.add(ir::OpKind::MaxRoiPool, max_roi_pool_kernel);
  r.add(ir::OpKind::RoiAlign, roi_align_kernel);
}

}  // namespace tierjit::interp::nn
