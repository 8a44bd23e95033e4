// Tier-0 kernels: LRN (opsets 1, 13), MeanVarianceNormalization (opsets 1, 9, 13) and
// LpNormalization (opset 1): normalizations over a window of channels, an axis set, or one axis.
// Sums accumulate in double.
#include <algorithm>
#include <cmath>
#include <vector>

#include "interp/kernels/reduce_util.h"

namespace tierjit::interp {
namespace {

/// LRN: X float [N, C, D1..Dk]; attributes size (required, >= 1), alpha (1e-4), beta (0.75),
/// bias (1.0). square_sum[n,c,s] = sum of x[n,c',s]^2 over c' in
/// [c - floor((size-1)/2), c + ceil((size-1)/2)] within [0, C);
/// Y = X / (bias + alpha / size * square_sum)^beta.
Status lrn_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  const ir::Node& node = ctx.node();
  if (x->rank() < 2)
    return ctx.fail("input 0 'X' must have rank >= 2 ([N, C, ...]), got shape {}",
                    shape_to_string(x->shape()));
  if (!node.has_attr("size")) return ctx.fail("attribute size is required");
  const int64_t size = node.attr_int("size", 1);
  if (size < 1) return ctx.fail("attribute size must be >= 1, got {}", size);
  const double alpha = node.attr_float("alpha", 1e-4f), beta = node.attr_float("beta", 0.75f),
               bias = node.attr_float("bias", 1.0f);
  const int64_t N = x->dim(0), C = x->dim(1), S = ori_view(x->shape(), 0, 2).inner;
  const int64_t lo = (size - 1) / 2, hi = size - 1 - lo;  // floor and ceil of (size-1)/2
  return dispatch_float(ctx, x->dtype(), "input 0 'X'", [&](auto tag) -> Status {
    using T = decltype(tag);
    TJ_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x->dtype(), x->shape()));
    const T* xp = x->data<T>();
    T* yp = y->data<T>();
    constexpr int64_t kBlock = 64;
    const int64_t blocks = (S + kBlock - 1) / kBlock;
    const int threads = ctx.options().intra_op_threads;
    kernels::parallel_for_if(x->numel() * size > kParallelWork, threads, N * C * blocks, [&](int64_t task) {
      const int64_t nc = task / blocks, n = nc / C, c = nc % C;
      const int64_t s0 = (task % blocks) * kBlock, sn = std::min(kBlock, S - s0);
      double sq[kBlock] = {};
      for (int64_t cc = std::max<int64_t>(0, c - lo); cc <= std::min(C - 1, c + hi); ++cc) {
        const T* row = xp + (n * C + cc) * S + s0;
        for (int64_t s = 0; s < sn; ++s) {
          double v = load_as<double>(row[s]);
          sq[s] += v * v;
        }
      }
      const int64_t off = nc * S + s0;
      for (int64_t s = 0; s < sn; ++s)
        yp[off + s] =
            store_as<T>(load_as<double>(xp[off + s]) / std::pow(bias + alpha / size * sq[s], beta));
    });
    return Status();
  });
}

/// MeanVarianceNormalization: X float; attribute axes (default [0, 2, 3]) from opset 9;
/// before 9, across_channels (0) and normalize_variance (1): axes [2..) or [1..).
/// Y = (X - mean) / (sqrt(var) + 1e-9) with mean, population var over axes (the ONNX function
/// body; var computed two-pass instead of E[X^2] - E[X]^2). Errors: axis out of range or repeated.
Status mvn_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  const ir::Node& node = ctx.node();
  const int64_t rank = x->rank();
  std::vector<int64_t> axes;
  bool normalize_variance = true;
  if (node.opset() < 9) {
    for (int64_t d = node.attr_int("across_channels", 0) ? 1 : 2; d < rank; ++d) axes.push_back(d);
    normalize_variance = node.attr_int("normalize_variance", 1) != 0;
  } else {
    axes = node.attr_ints("axes", {0, 2, 3});
  }
  std::vector<bool> mask(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    TJ_ASSIGN_OR_RETURN(int64_t ax, normalize_axis(ctx, a, rank));
    if (rank == 0) continue;
    if (mask[ax]) return ctx.fail("axis {} is repeated in axes", a);
    mask[ax] = true;
  }
  std::vector<int64_t> kd, ks, rd, rs;
  const std::vector<int64_t> strides = row_major_strides(x->shape());
  for (int64_t d = 0; d < rank; ++d) {
    (mask[d] ? rd : kd).push_back(x->dim(d));
    (mask[d] ? rs : ks).push_back(strides[d]);
  }
  const std::vector<int64_t> koff = offsets_of(kd, ks), roff = offsets_of(rd, rs);
  return dispatch_float(ctx, x->dtype(), "input 0 'X'", [&](auto tag) -> Status {
    using T = decltype(tag);
    TJ_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x->dtype(), x->shape()));
    if (x->numel() == 0) return Status();
    const T* xp = x->data<T>();
    T* yp = y->data<T>();
    const int64_t K = static_cast<int64_t>(koff.size()), R = static_cast<int64_t>(roff.size());
    kernels::parallel_for_if(K * R > kParallelWork, ctx.options().intra_op_threads, K, [&](int64_t k) {
      const T* xb = xp + koff[k];
      double s = 0, q = 0;
      for (int64_t r = 0; r < R; ++r) s += load_as<double>(xb[roff[r]]);
      const double mean = s / static_cast<double>(R);
      for (int64_t r = 0; r < R; ++r) {
        double d = load_as<double>(xb[roff[r]]) - mean;
        q += d * d;
      }
      const double inv =
          normalize_variance ? 1.0 / (std::sqrt(q / static_cast<double>(R)) + 1e-9) : 1.0;
      for (int64_t r = 0; r < R; ++r)
        yp[koff[k] + roff[r]] = store_as<T>((load_as<double>(xb[roff[r]]) - mean) * inv);
    });
    return Status();
  });
}

/// LpNormalization: X float; attributes axis (default -1), p (default 2; 1 or 2).
/// Y = X / ||X||_p along axis; where the norm is 0 the output is 0 (ONNX reference).
Status lp_norm_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  const ir::Node& node = ctx.node();
  const int64_t p = node.attr_int("p", 2);
  if (p != 1 && p != 2) return ctx.fail("attribute p must be 1 or 2, got {}", p);
  if (x->rank() == 0) return ctx.fail("input 0 'input' must have rank >= 1");
  TJ_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, node.attr_int("axis", -1), x->rank()));
  const OriView v = ori_view(x->shape(), axis, axis + 1);
  return dispatch_float(ctx, x->dtype(), "input 0 'input'", [&](auto tag) -> Status {
    using T = decltype(tag);
    TJ_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x->dtype(), x->shape()));
    const T* xp = x->data<T>();
    T* yp = y->data<T>();
    const int64_t R = v.reduce, I = v.inner;
    constexpr int64_t kBlock = 64;
    const int64_t blocks = (I + kBlock - 1) / kBlock;
    const int threads = ctx.options().intra_op_threads;
    kernels::parallel_for_if(x->numel() > kParallelWork, threads, v.outer * blocks, [&](int64_t task) {
      const int64_t o = task / blocks, j0 = (task % blocks) * kBlock, jn = std::min(kBlock, I - j0);
      const int64_t base = o * R * I + j0;
      double acc[kBlock] = {};
      for (int64_t r = 0; r < R; ++r)
        for (int64_t j = 0; j < jn; ++j) {
          double a = load_as<double>(xp[base + r * I + j]);
          acc[j] += p == 1 ? std::fabs(a) : a * a;
        }
      for (int64_t j = 0; j < jn; ++j) {
        double norm = p == 1 ? acc[j] : std::sqrt(acc[j]);
        acc[j] = norm == 0 ? 0.0 : 1.0 / norm;
      }
      for (int64_t r = 0; r < R; ++r)
        for (int64_t j = 0; j < jn; ++j)
          yp[base + r * I + j] = store_as<T>(load_as<double>(xp[base + r * I + j]) * acc[j]);
    });
    return Status();
  });
}

}  // namespace

void register_local_normalization_ops(KernelRegistry& r) {
  r.add(ir::OpKind::LRN, lrn_kernel);
  r.add(ir::OpKind::MeanVarianceNormalization, mvn_kernel);
  r.add(ir::OpKind::LpNormalization, lp_norm_kernel);
}

}  // namespace tierjit::interp
