// Tier-0 kernels: detection and sampling ops. NonMaxSuppression (opsets 10, 11): greedy per
// (batch, class) box selection by score with an IoU threshold. GridSample (opset 16): samples a
// 4-D N,C,H,W input at normalized grid positions (bilinear / nearest / bicubic; zeros / border /
// reflection padding; align_corners), following onnx.reference and ONNX Runtime.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "interp/kernels/common.h"
#include "interp/kernels/misc_internal.h"

namespace tierjit::interp {

namespace {

// ---- NonMaxSuppression ----

struct Box {
  double y1, x1, y2, x2;
};

Box read_box(const Tensor& boxes, int64_t offset, bool center) {
  double v[4];
  for (int k = 0; k < 4; ++k) v[k] = boxes.value_as_double(offset + k);
  if (center) {  // [x_center, y_center, width, height]
    return {v[1] - v[3] / 2, v[0] - v[2] / 2, v[1] + v[3] / 2, v[0] + v[2] / 2};
  }
  return {std::min(v[0], v[2]), std::min(v[1], v[3]), std::max(v[0], v[2]), std::max(v[1], v[3])};
}

double iou(const Box& a, const Box& b) {
  const double area_a = (a.y2 - a.y1) * (a.x2 - a.x1), area_b = (b.y2 - b.y1) * (b.x2 - b.x1);
  if (area_a <= 0 || area_b <= 0) return 0.0;
  const double ih = std::max(0.0, std::min(a.y2, b.y2) - std::max(a.y1, b.y1));
  const double iw = std::max(0.0, std::min(a.x2, b.x2) - std::max(a.x1, b.x1));
  const double inter = ih * iw;
  return inter / (area_a + area_b - inter);
}

// Inputs: boxes [B, N, 4], scores [B, C, N], max_output_boxes_per_class (int64, optional, 0),
// iou_threshold (float, optional, 0), score_threshold (float, optional: keep score > it).
// Output: selected_indices [K, 3] int64 of (batch, class, box), per batch and class in
// selection order.
Status nms_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* boxes, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* scores, ctx.required_input(1));
  if (boxes->rank() != 3 || boxes->dim(2) != 4)
    return ctx.fail("input 0 'boxes' must have shape [batch, boxes, 4], got {}",
                    shape_to_string(boxes->shape()));
  if (scores->rank() != 3 || scores->dim(0) != boxes->dim(0) || scores->dim(2) != boxes->dim(1))
    return ctx.fail("input 1 'scores' must have shape [{}, classes, {}], got {}", boxes->dim(0),
                    boxes->dim(1), shape_to_string(scores->shape()));
  if (!dtype_is_float(boxes->dtype()) || !dtype_is_float(scores->dtype()))
    return ctx.fail("boxes and scores must be float tensors");
  int64_t max_out = 0;
  if (const Tensor* t = ctx.input(2); t && t->numel() > 0) max_out = t->value_as_int64(0);
  double iou_th = 0.0;
  if (const Tensor* t = ctx.input(3); t && t->numel() > 0) iou_th = t->value_as_double(0);
  bool has_score_th = false;
  double score_th = 0.0;
  if (const Tensor* t = ctx.input(4); t && t->numel() > 0) {
    has_score_th = true;
    score_th = t->value_as_double(0);
  }
  if (iou_th < 0 || iou_th > 1)
    return ctx.fail("input 3 'iou_threshold' {} is outside [0, 1]", iou_th);
  const bool center = ctx.node().attr_int("center_point_box", 0) != 0;
  const int64_t batch = boxes->dim(0), n = boxes->dim(1), classes = scores->dim(1);

  std::vector<int64_t> selected;  // triples
  std::vector<int64_t> order;
  std::vector<Box> bx(static_cast<size_t>(n));
  std::vector<double> sc(static_cast<size_t>(n));
  for (int64_t b = 0; b < batch && max_out > 0; ++b) {
    for (int64_t i = 0; i < n; ++i) bx[i] = read_box(*boxes, (b * n + i) * 4, center);
    for (int64_t c = 0; c < classes; ++c) {
      order.clear();
      for (int64_t i = 0; i < n; ++i) {
        sc[i] = scores->value_as_double((b * classes + c) * n + i);
        if (!has_score_th || sc[i] > score_th) order.push_back(i);
      }
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t z) { return sc[a] > sc[z]; });
      std::vector<int64_t> kept;
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= max_out) break;
        bool keep = true;
        for (int64_t k : kept)
          if (iou(bx[i], bx[k]) > iou_th) {
            keep = false;
            break;
          }
        if (!keep) continue;
        kept.push_back(i);
        selected.insert(selected.end(), {b, c, i});
      }
    }
  }
  TJ_ASSIGN_OR_RETURN(Tensor * out,
                      ctx.output(0, DType::kInt64, {static_cast<int64_t>(selected.size() / 3), 3}));
  std::copy(selected.begin(), selected.end(), out->data<int64_t>());
  return Status();
}

// ---- GridSample ----

enum class Pad { kZeros, kBorder, kReflection };

double reflect(double x, double lo, double hi) {
  const double rng = hi - lo;
  if (rng <= 0) return lo;
  if (x < lo) {
    const double dx = lo - x;
    const int64_t k = static_cast<int64_t>(dx / rng);
    const double r = dx - static_cast<double>(k) * rng;
    return k % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi;
    const int64_t k = static_cast<int64_t>(dx / rng);
    const double r = dx - static_cast<double>(k) * rng;
    return k % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

void cubic_coeffs(double t, double* c) {
  const double a = -0.75;
  t = std::fabs(t);
  c[0] = ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a;
  c[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
  c[2] = ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1;
  c[3] = ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a;
}

struct Plane {
  const double* data;
  int64_t h, w;
  Pad pad;
  double lo_y, hi_y, lo_x, hi_x;  // borders for reflection
  double at(int64_t y, int64_t x) const {
    switch (pad) {
      case Pad::kZeros:
        if (y < 0 || y >= h || x < 0 || x >= w) return 0.0;
        break;
      case Pad::kBorder:
        y = std::clamp<int64_t>(y, 0, h - 1);
        x = std::clamp<int64_t>(x, 0, w - 1);
        break;
      case Pad::kReflection:
        y = static_cast<int64_t>(reflect(static_cast<double>(y), lo_y, hi_y));
        x = static_cast<int64_t>(reflect(static_cast<double>(x), lo_x, hi_x));
        y = std::clamp<int64_t>(y, 0, h - 1);
        x = std::clamp<int64_t>(x, 0, w - 1);
        break;
    }
    return data[y * w + x];
  }
};

// Inputs: X [N, C, H, W], grid [N, Hout, Wout, 2] with (x, y) in [-1, 1]. Output [N, C, Hout,
// Wout].
Status grid_sample_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* grid, ctx.required_input(1));
  if (x->rank() != 4)
    return ctx.fail("input 0 'X' must be 4-D [N, C, H, W], got {}", shape_to_string(x->shape()));
  if (grid->rank() != 4 || grid->dim(0) != x->dim(0) || grid->dim(3) != 2)
    return ctx.fail("input 1 'grid' must have shape [{}, H_out, W_out, 2], got {}", x->dim(0),
                    shape_to_string(grid->shape()));
  if (!dtype_is_float(x->dtype()) || !dtype_is_float(grid->dtype()))
    return ctx.fail("X and grid must be float tensors");
  const std::string mode = ctx.node().attr_string("mode", "bilinear");
  const std::string pm = ctx.node().attr_string("padding_mode", "zeros");
  const bool align = ctx.node().attr_int("align_corners", 0) != 0;
  int interp;  // 0 nearest, 1 bilinear, 2 bicubic
  if (mode == "nearest")
    interp = 0;
  else if (mode == "bilinear" || mode == "linear")
    interp = 1;
  else if (mode == "bicubic" || mode == "cubic")
    interp = 2;
  else
    return ctx.fail("attribute 'mode': unknown value '{}'", mode);
  Pad pad;
  if (pm == "zeros")
    pad = Pad::kZeros;
  else if (pm == "border")
    pad = Pad::kBorder;
  else if (pm == "reflection")
    pad = Pad::kReflection;
  else
    return ctx.fail("attribute 'padding_mode': unknown value '{}'", pm);

  const int64_t n = x->dim(0), c = x->dim(1), h = x->dim(2), w = x->dim(3);
  const int64_t ho = grid->dim(1), wo = grid->dim(2);
  TJ_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, x->dtype(), {n, c, ho, wo}));
  if (out->numel() == 0) return Status();
  if (h == 0 || w == 0)
    return ctx.fail("input 0 'X' has an empty spatial dim: {}", shape_to_string(x->shape()));
  const std::vector<double> xd = read_doubles(*x);
  const std::vector<double> gd = read_doubles(*grid);
  std::vector<double> res(static_cast<size_t>(out->numel()));
  const double lo_x = align ? 0.0 : -0.5, hi_x = align ? w - 1.0 : w - 0.5;
  const double lo_y = align ? 0.0 : -0.5, hi_y = align ? h - 1.0 : h - 0.5;
  auto denorm = [&](double v, int64_t len) {
    return align ? (v + 1) / 2.0 * static_cast<double>(len - 1)
                 : ((v + 1) * static_cast<double>(len) - 1) / 2.0;
  };
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t ch = 0; ch < c; ++ch) {
      Plane p{xd.data() + (b * c + ch) * h * w, h, w, pad, lo_y, hi_y, lo_x, hi_x};
      for (int64_t oy = 0; oy < ho; ++oy) {
        for (int64_t ox = 0; ox < wo; ++ox) {
          const double* g = gd.data() + ((b * ho + oy) * wo + ox) * 2;
          double fx = denorm(g[0], w), fy = denorm(g[1], h);
          if (interp == 0) {
            fx = std::nearbyint(fx);
            fy = std::nearbyint(fy);
          }
          if (fx < lo_x || fx > hi_x) {
            if (pad == Pad::kBorder)
              fx = std::clamp(fx, 0.0, static_cast<double>(w - 1));
            else if (pad == Pad::kReflection)
              fx = reflect(fx, lo_x, hi_x);
          }
          if (fy < lo_y || fy > hi_y) {
            if (pad == Pad::kBorder)
              fy = std::clamp(fy, 0.0, static_cast<double>(h - 1));
            else if (pad == Pad::kReflection)
              fy = reflect(fy, lo_y, hi_y);
          }
          double v;
          if (interp == 0) {
            v = p.at(static_cast<int64_t>(fy), static_cast<int64_t>(fx));
          } else if (interp == 1) {
            const double x0 = std::floor(fx), y0 = std::floor(fy);
            const double dx = fx - x0, dy = fy - y0;
            const int64_t ix = static_cast<int64_t>(x0), iy = static_cast<int64_t>(y0);
            const double top = (1 - dx) * p.at(iy, ix) + dx * p.at(iy, ix + 1);
            const double bot = (1 - dx) * p.at(iy + 1, ix) + dx * p.at(iy + 1, ix + 1);
            v = (1 - dy) * top + dy * bot;
          } else {
            const double x0 = std::floor(fx), y0 = std::floor(fy);
            double cx[4], cy[4];
            cubic_coeffs(fx - x0, cx);
            cubic_coeffs(fy - y0, cy);
            const int64_t ix = static_cast<int64_t>(x0) - 1, iy = static_cast<int64_t>(y0) - 1;
            v = 0;
            for (int i = 0; i < 4; ++i) {
              double row = 0;
              for (int j = 0; j < 4; ++j) row += cx[j] * p.at(iy + i, ix + j);
              v += cy[i] * row;
            }
          }
          res[((b * c + ch) * ho + oy) * wo + ox] = v;
        }
      }
    }
  }
  return dispatch_all(ctx, x->dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    T* o = out->data<T>();
    for (size_t i = 0; i < res.size(); ++i) {
      if constexpr (std::is_same_v<T, Half>)
        o[i] = Half{support::float_to_half(static_cast<float>(res[i]))};
      else if constexpr (std::is_same_v<T, BFloat16>)
        o[i] = BFloat16{support::float_to_bfloat16(static_cast<float>(res[i]))};
      else
        o[i] = static_cast<T>(res[i]);
    }
    return Status();
  });
}

}  // namespace

void register_detection_kernels(KernelRegistry& r) {
  r.add(ir::OpKind::NonMaxSuppression, nms_kernel);
  r.add(ir::OpKind::GridSample, grid_sample_kernel);
}

}  // namespace tierjit::interp
