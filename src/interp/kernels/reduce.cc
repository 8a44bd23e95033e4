// Tier-0 kernels: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare (ONNX opsets
// 1..18 forms) and the spatial reductions GlobalAveragePool/GlobalMaxPool/GlobalLpPool.
// One driver serves all: reduced axes that form one contiguous block run as [outer, reduce,
// inner] with the inner dim contiguous (vectorizable); other axis sets gather through offset
// tables. Floats accumulate in double (a float32 sum of 2^26 ones is exactly 67108864);
// integers accumulate in 64 bits and wrap to the element type.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "interp/kernels/reduce_util.h"

namespace tierjit::interp {
namespace {

enum class ReduceKind {
  kSum,
  kMean,
  kMax,
  kMin,
  kProd,
  kL1,
  kL2,
  kLogSum,
  kLogSumExp,
  kSumSquare,
  kLp
};

/// double -> integer T without undefined behaviour: NaN -> 0, out of range -> clamped.
template <class T>
T saturate_cast(double v) {
  if constexpr (std::is_floating_point_v<T> || kIsHalfLike<T>) {
    return store_as<T>(v);
  } else {
    if (std::isnan(v)) return T{0};
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest()))
      return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max()))
      return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
}

/// The arithmetic of one reduction over element type T. Accumulator A: double for floats (and
/// for LogSumExp on any type), int64/uint64 for integers (wrapping, computed in uint64).
/// Empty reductions give: Sum/L1/L2/SumSquare 0, Prod 1, Max -inf (lowest integer), Min +inf
/// (largest integer), Mean NaN (0 for integers), LogSum and LogSumExp -inf (ONNX opset 18 text).
template <ReduceKind K, class T>
struct Reducer {
  static constexpr bool kFloat =
      kIsFloatLike<T> || K == ReduceKind::kLogSumExp || K == ReduceKind::kLp;
  using A = std::conditional_t<kFloat, double,
                               std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;
  static constexpr bool kNeedsMax = K == ReduceKind::kLogSumExp;
  double p = 2;  // kLp only

  static A wrap_add(A a, A b) {
    if constexpr (kFloat)
      return a + b;
    else
      return static_cast<A>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  }
  static A wrap_mul(A a, A b) {
    if constexpr (kFloat)
      return a * b;
    else
      return static_cast<A>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  }
  static A abs_of(A v) {
    if constexpr (std::is_unsigned_v<A>)
      return v;
    else if constexpr (kFloat)
      return std::fabs(v);
    else
      return v < 0 ? static_cast<A>(0 - static_cast<uint64_t>(v)) : v;
  }
  static A max_of(A a, A v) {
    if constexpr (kFloat)
      return (v > a || std::isnan(v)) ? v : a;  // NaN sticks
    else
      return v > a ? v : a;
  }
  static A min_of(A a, A v) {
    if constexpr (kFloat)
      return (v < a || std::isnan(v)) ? v : a;
    else
      return v < a ? v : a;
  }
  static A lowest() {
    if constexpr (kFloat)
      return -std::numeric_limits<double>::infinity();
    else
      return static_cast<A>(std::numeric_limits<T>::lowest());
  }
  static A highest() {
    if constexpr (kFloat)
      return std::numeric_limits<double>::infinity();
    else
      return static_cast<A>(std::numeric_limits<T>::max());
  }

  A init() const {
    if constexpr (K == ReduceKind::kMax)
      return lowest();
    else if constexpr (K == ReduceKind::kMin)
      return highest();
    else if constexpr (K == ReduceKind::kProd)
      return A{1};
    else
      return A{0};
  }
  A step(A a, T xe, [[maybe_unused]] double m) const {
    A x = load_as<A>(xe);
    if constexpr (K == ReduceKind::kMax)
      return max_of(a, x);
    else if constexpr (K == ReduceKind::kMin)
      return min_of(a, x);
    else if constexpr (K == ReduceKind::kProd)
      return wrap_mul(a, x);
    else if constexpr (K == ReduceKind::kL1)
      return wrap_add(a, abs_of(x));
    else if constexpr (K == ReduceKind::kL2 || K == ReduceKind::kSumSquare)
      return wrap_add(a, wrap_mul(x, x));
    else if constexpr (K == ReduceKind::kLogSumExp)
      return a + std::exp(x - m);
    else if constexpr (K == ReduceKind::kLp) {
      double ax = std::fabs(static_cast<double>(x));
      return a + (p == 2 ? ax * ax : p == 1 ? ax : std::pow(ax, p));
    } else
      return wrap_add(a, x);  // Sum, Mean, LogSum
  }
  A combine(A a, A b) const {
    if constexpr (K == ReduceKind::kMax)
      return max_of(a, b);
    else if constexpr (K == ReduceKind::kMin)
      return min_of(a, b);
    else if constexpr (K == ReduceKind::kProd)
      return wrap_mul(a, b);
    else
      return wrap_add(a, b);
  }
  T finish(A a, [[maybe_unused]] int64_t n, [[maybe_unused]] double m) const {
    if constexpr (K == ReduceKind::kMean) {
      if constexpr (kFloat)
        return store_as<T>(a / static_cast<double>(n));
      else
        return n == 0 ? T{0} : static_cast<T>(a / static_cast<A>(n));
    } else if constexpr (K == ReduceKind::kL2) {
      return saturate_cast<T>(std::sqrt(static_cast<double>(a)));
    } else if constexpr (K == ReduceKind::kLogSum) {
      return saturate_cast<T>(std::log(static_cast<double>(a)));
    } else if constexpr (K == ReduceKind::kLogSumExp) {
      if (std::isinf(m) || std::isnan(m)) return saturate_cast<T>(m);  // -inf (empty), +inf, NaN
      return saturate_cast<T>(m + std::log(a));
    } else if constexpr (K == ReduceKind::kLp) {
      return store_as<T>(p == 2 ? std::sqrt(a) : p == 1 ? a : std::pow(a, 1.0 / p));
    } else if constexpr (kFloat) {
      return store_as<T>(a);
    } else {
      return static_cast<T>(a);
    }
  }
};

/// NaN-propagating max of the reduced values (the shift of LogSumExp).
template <class T>
double max_shift(double m, T x) {
  double v = load_as<double>(x);
  return (v > m || std::isnan(v)) ? v : m;
}

/// Accumulates row[0..R) with 8 independent partial accumulators (shorter dependency chains,
/// vectorizable; same accuracy class as one double accumulator).
template <class Op, class T>
typename Op::A accumulate_row(const Op& op, const T* row, int64_t R, double m) {
  using A = typename Op::A;
  A acc[8];
  for (auto& a : acc) a = op.init();
  int64_t r = 0;
  for (; r + 8 <= R; r += 8)
    for (int k = 0; k < 8; ++k) acc[k] = op.step(acc[k], row[r + k], m);
  for (; r < R; ++r) acc[0] = op.step(acc[0], row[r], m);
  return op.combine(op.combine(op.combine(acc[0], acc[1]), op.combine(acc[2], acc[3])),
                    op.combine(op.combine(acc[4], acc[5]), op.combine(acc[6], acc[7])));
}

/// One long row reduced by `threads` threads, each over a contiguous chunk (used when there are
/// fewer outputs than threads, e.g. a reduction over every axis).
template <class Op, class T>
T reduce_row_parallel(const Op& op, const T* row, int64_t R, int threads) {
  using A = typename Op::A;
  constexpr int kMaxChunks = 64;
  const int chunks = std::min(threads, kMaxChunks);
  double m = 0;
  if constexpr (Op::kNeedsMax) {
    double part_max[kMaxChunks];
#pragma omp parallel for num_threads(chunks)
    for (int c = 0; c < chunks; ++c) {
      double mc = -std::numeric_limits<double>::infinity();
      for (int64_t r = R * c / chunks; r < R * (c + 1) / chunks; ++r) mc = max_shift(mc, row[r]);
      part_max[c] = mc;
    }
    m = -std::numeric_limits<double>::infinity();
    for (int c = 0; c < chunks; ++c)
      m = (part_max[c] > m || std::isnan(part_max[c])) ? part_max[c] : m;
  }
  A parts[kMaxChunks];
#pragma omp parallel for num_threads(chunks)
  for (int c = 0; c < chunks; ++c) {
    const int64_t r0 = R * c / chunks, r1 = R * (c + 1) / chunks;
    parts[c] = accumulate_row(op, row + r0, r1 - r0, m);
  }
  A a = parts[0];
  for (int c = 1; c < chunks; ++c) a = op.combine(a, parts[c]);
  return op.finish(a, R, m);
}

/// [outer, reduce, inner] driver: y[o, j] = reduce_r x[o, r, j].
template <class Op, class T>
void reduce_ori(const Op& op, const T* x, T* y, int64_t O, int64_t R, int64_t I, int threads) {
  using A = typename Op::A;
  constexpr double kNoShift = 0;
  if (I == 1 && O < threads && R > 4 * kParallelWork) {
    for (int64_t o = 0; o < O; ++o) y[o] = reduce_row_parallel(op, x + o * R, R, threads);
    return;
  }
  if (I == 1) {
    kernels::parallel_for_if(O * R > kParallelWork, threads, O, [&](int64_t o) {
      const T* row = x + o * R;
      double m = kNoShift;
      if constexpr (Op::kNeedsMax) {
        m = -std::numeric_limits<double>::infinity();
        for (int64_t r = 0; r < R; ++r) m = max_shift(m, row[r]);
      }
      y[o] = op.finish(accumulate_row(op, row, R, m), R, m);
    });
    return;
  }
  for_each_column_block(O, R, I, threads, [&](int64_t o, int64_t j0, int64_t jn) {
    const T* base = x + o * R * I + j0;
    double m[kColumnBlock];
    A acc[kColumnBlock];
    for (int64_t j = 0; j < jn; ++j) {
      m[j] = kNoShift;
      acc[j] = op.init();
    }
    if constexpr (Op::kNeedsMax) {
      for (int64_t j = 0; j < jn; ++j) m[j] = -std::numeric_limits<double>::infinity();
      for (int64_t r = 0; r < R; ++r)
        for (int64_t j = 0; j < jn; ++j) m[j] = max_shift(m[j], base[r * I + j]);
    }
    if (jn == kColumnBlock) {  // full block: constant trip count, so the j loop vectorizes
      for (int64_t r = 0; r < R; ++r) {
        const T* row = base + r * I;
        for (int64_t j = 0; j < kColumnBlock; ++j) acc[j] = op.step(acc[j], row[j], m[j]);
      }
    } else {
      for (int64_t r = 0; r < R; ++r) {
        const T* row = base + r * I;
        for (int64_t j = 0; j < jn; ++j) acc[j] = op.step(acc[j], row[j], m[j]);
      }
    }
    T* out = y + o * I + j0;
    for (int64_t j = 0; j < jn; ++j) out[j] = op.finish(acc[j], R, m[j]);
  });
}

/// Gather driver for scattered axis sets: y[k] = reduce_r x[koff[k] + roff[r]].
template <class Op, class T>
void reduce_gather(const Op& op, const T* x, T* y, const std::vector<int64_t>& koff,
                   const std::vector<int64_t>& roff, int threads) {
  const int64_t K = static_cast<int64_t>(koff.size()), R = static_cast<int64_t>(roff.size());
  kernels::parallel_for_if(K * R > kParallelWork, threads, K, [&](int64_t k) {
    const T* base = x + koff[k];
    double m = 0;
    if constexpr (Op::kNeedsMax) {
      m = -std::numeric_limits<double>::infinity();
      for (int64_t r = 0; r < R; ++r) m = max_shift(m, base[roff[r]]);
    }
    auto a = op.init();
    for (int64_t r = 0; r < R; ++r) a = op.step(a, base[roff[r]], m);
    y[k] = op.finish(a, R, m);
  });
}

/// Reduces `x` over the axes marked in `reduce_mask` into `y` (already allocated, numel = product
/// of the kept dims). Handles size-0 and size-1 dims.
template <class Op, class T>
void reduce_masked(const Op& op, const Tensor& x, Tensor& y, const std::vector<bool>& reduce_mask,
                   int threads) {
  const Shape& shape = x.shape();
  T* yp = y.data<T>();
  if (y.numel() == 0) return;
  if (x.numel() == 0) {  // some reduced dim is 0: every output is the empty reduction
    const T v = op.finish(op.init(), 0, -std::numeric_limits<double>::infinity());
    std::fill(yp, yp + y.numel(), v);
    return;
  }
  // Coalesce: drop size-1 dims, merge neighbours with the same flag.
  std::vector<int64_t> sizes;
  std::vector<bool> flags;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!flags.empty() && flags.back() == reduce_mask[d])
      sizes.back() *= shape[d];
    else {
      sizes.push_back(shape[d]);
      flags.push_back(reduce_mask[d]);
    }
  }
  int64_t reduced_groups = std::count(flags.begin(), flags.end(), true);
  if (reduced_groups <= 1) {
    int64_t O = 1, R = 1, I = 1;
    bool seen = false;
    for (size_t g = 0; g < sizes.size(); ++g) {
      if (flags[g]) {
        R = sizes[g];
        seen = true;
      } else if (seen)
        I = sizes[g];
      else
        O = sizes[g];
    }
    if (!seen) {
      O *= I;
      I = 1;
    }  // nothing to reduce (all reduced dims were 1)
    reduce_ori(op, x.data<T>(), yp, O, R, I, threads);
    return;
  }
  std::vector<int64_t> kd, ks, rd, rs;
  int64_t stride = 1;
  std::vector<int64_t> strides(sizes.size());
  for (int64_t g = static_cast<int64_t>(sizes.size()) - 1; g >= 0; --g) {
    strides[g] = stride;
    stride *= sizes[g];
  }
  for (size_t g = 0; g < sizes.size(); ++g) {
    (flags[g] ? rd : kd).push_back(sizes[g]);
    (flags[g] ? rs : ks).push_back(strides[g]);
  }
  reduce_gather(op, x.data<T>(), yp, offsets_of(kd, ks), offsets_of(rd, rs), threads);
}

template <ReduceKind K>
Status run_reduce(KernelContext& ctx, const Tensor& x, const std::vector<bool>& mask,
                  Shape out_shape, double p = 2) {
  return dispatch_all(ctx, x.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      return ctx.fail("input 0 'data': bool is not supported by this reduction");
    } else {
      TJ_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.dtype(), std::move(out_shape)));
      Reducer<K, T> op;
      op.p = p;
      reduce_masked<Reducer<K, T>, T>(op, x, *y, mask, ctx.options().intra_op_threads);
      return Status();
    }
  });
}

/// ReduceXxx: axes from input 1 (ReduceSum >= 13, every Reduce op >= 18) or attribute `axes`;
/// keepdims (default 1); noop_with_empty_axes (default 0): empty axes -> identity, else all.
template <ReduceKind K>
Status reduce_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  const ir::Node& node = ctx.node();
  std::vector<int64_t> axes;
  if (const Tensor* a = ctx.input(1)) {
    TJ_ASSIGN_OR_RETURN(axes, read_int64s(ctx, *a, "input 1 'axes'"));
  } else {
    axes = node.attr_ints("axes");
  }
  const bool keepdims = node.attr_int("keepdims", 1) != 0;
  const bool noop = node.attr_int("noop_with_empty_axes", 0) != 0;
  const int64_t rank = x->rank();
  if (axes.empty() && noop) {
    return dispatch_all(ctx, x->dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, bool>) {
        return ctx.fail("input 0 'data': bool is not supported by this reduction");
      } else {
        ctx.set_output(0, *x);  // ONNX: "the output tensor is equivalent to the input tensor"
        return Status();
      }
    });
  }
  std::vector<bool> mask(static_cast<size_t>(rank), axes.empty());
  for (int64_t a : axes) {
    if (rank == 0 && (a == 0 || a == -1)) continue;  // a scalar reduces to itself
    TJ_ASSIGN_OR_RETURN(int64_t ax, normalize_axis(ctx, a, rank));
    if (mask[ax]) return ctx.fail("axis {} is repeated in axes", a);
    mask[ax] = true;
  }
  Shape out;
  for (int64_t d = 0; d < rank; ++d) {
    if (!mask[d])
      out.push_back(x->dim(d));
    else if (keepdims)
      out.push_back(1);
  }
  return run_reduce<K>(ctx, *x, mask, std::move(out));
}

/// GlobalAveragePool / GlobalMaxPool / GlobalLpPool (opsets 1, 2): X [N, C, D1..Dk] float ->
/// [N, C, 1..1], reducing every spatial dim. GlobalLpPool's p (default 2) is an int attribute.
template <ReduceKind K>
Status global_pool_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  if (x->rank() < 2)
    return ctx.fail("input 0 'X' must have rank >= 2 ([N, C, ...]), got shape {}",
                    shape_to_string(x->shape()));
  TJ_RETURN_IF_ERROR(dispatch_float(ctx, x->dtype(), "input 0 'X'", [](auto) { return Status(); }));
  std::vector<bool> mask(static_cast<size_t>(x->rank()), true);
  mask[0] = mask[1] = false;
  Shape out = x->shape();
  for (size_t d = 2; d < out.size(); ++d) out[d] = 1;
  double p = 2;
  if constexpr (K == ReduceKind::kLp) {
    p = ctx.node().attr_float("p", 2.0f);  // int from opset 2, float in opset 1
    if (p <= 0) return ctx.fail("attribute p must be positive, got {}", p);
  }
  return run_reduce<K>(ctx, *x, mask, std::move(out), p);
}

}  // namespace

void register_reduce_ops(KernelRegistry& r) {
  using ir::OpKind;
  r.add(OpKind::ReduceSum, reduce_kernel<ReduceKind::kSum>);
  r.add(OpKind::ReduceMean, reduce_kernel<ReduceKind::kMean>);
  r.add(OpKind::ReduceMax, reduce_kernel<ReduceKind::kMax>);
  r.add(OpKind::ReduceMin, reduce_kernel<ReduceKind::kMin>);
  r.add(OpKind::ReduceProd, reduce_kernel<ReduceKind::kProd>);
  r.add(OpKind::ReduceL1, reduce_kernel<ReduceKind::kL1>);
  r.add(OpKind::ReduceL2, reduce_kernel<ReduceKind::kL2>);
  r.add(OpKind::ReduceLogSum, reduce_kernel<ReduceKind::kLogSum>);
  r.add(OpKind::ReduceLogSumExp, reduce_kernel<ReduceKind::kLogSumExp>);
  r.add(OpKind::ReduceSumSquare, reduce_kernel<ReduceKind::kSumSquare>);
  r.add(OpKind::GlobalAveragePool, global_pool_kernel<ReduceKind::kMean>);
  r.add(OpKind::GlobalMaxPool, global_pool_kernel<ReduceKind::kMax>);
  r.add(OpKind::GlobalLpPool, global_pool_kernel<ReduceKind::kLp>);
}

}  // namespace tierjit::interp
