// Shared helpers of the tier-0 reduction family (reduce.cc, argminmax.cc, softmax.cc,
// normalization*.cc, loss.cc, cumsum.cc): element load/store in a wide compute type, float-only
// dtype dispatch, the [outer, reduce, inner] view of one axis, and the registration hooks that
// reduction.cc calls. Internal to src/interp/kernels.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "interp/kernels/common.h"
#include "interp/registry.h"
#include "support/float16.h"

namespace tierjit::interp {

/// Work (elements touched) above which a kernel parallelizes its outer loop with OpenMP (the
/// same trade-off as ew::kParallelThreshold).
inline constexpr int64_t kParallelWork = int64_t{1} << 17;

template <class T>
inline constexpr bool kIsHalfLike = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
template <class T>
inline constexpr bool kIsFloatLike = kIsHalfLike<T> || std::is_floating_point_v<T>;

/// Compute type for float kernels: double for double, float for float/float16/bfloat16.
template <class T>
using ComputeOf = std::conditional_t<std::is_same_v<T, double>, double, float>;

/// Element -> compute type C (float16/bfloat16 widen exactly to float).
template <class C, class T>
inline C load_as(T v) {
  if constexpr (kIsHalfLike<T>)
    return static_cast<C>(to_float(v));
  else
    return static_cast<C>(v);
}

/// Compute value -> element; float16/bfloat16 round to nearest even.
template <class T, class C>
inline T store_as(C v) {
  if constexpr (std::is_same_v<T, Half>)
    return Half{support::float_to_half(static_cast<float>(v))};
  else if constexpr (std::is_same_v<T, BFloat16>)
    return BFloat16{support::float_to_bfloat16(static_cast<float>(v))};
  else
    return static_cast<T>(v);
}

/// Calls f(T{}) for the float dtypes (float32, float64, float16, bfloat16); error otherwise.
template <class F>
Status dispatch_float(const KernelContext& ctx, DType dt, const char* what, F&& f) {
  switch (dt) {
    case DType::kFloat32:
      return f(float{});
    case DType::kFloat64:
      return f(double{});
    case DType::kFloat16:
      return f(Half{});
    case DType::kBFloat16:
      return f(BFloat16{});
    default:
      return ctx.fail("{} must be a float tensor (float32, float64, float16, bfloat16), got {}",
                      what, dtype_name(dt));
  }
}

/// A tensor viewed as [outer, reduce, inner] around one axis (or the axis range [a, b)).
struct OriView {
  int64_t outer = 1, reduce = 1, inner = 1;
};
/// dims [0, begin) -> outer, [begin, end) -> reduce, [end, rank) -> inner.
inline OriView ori_view(const Shape& shape, int64_t begin, int64_t end) {
  OriView v;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    int64_t n = shape[static_cast<size_t>(d)];
    if (d < begin)
      v.outer *= n;
    else if (d < end)
      v.reduce *= n;
    else
      v.inner *= n;
  }
  return v;
}

/// Columns per task of the blocked [outer, reduce, inner] drivers (a stack array of this many
/// accumulators per task keeps the inner j loop contiguous and vectorizable).
inline constexpr int64_t kColumnBlock = 64;

/// Runs body(o, j0, jn) for every outer index o in [0, O) and every block of inner columns
/// [j0, j0 + jn) of at most kColumnBlock, in parallel over the O * ceil(I / kColumnBlock) tasks
/// when the work O * R * I exceeds kParallelWork. Used by reduce.cc, argminmax.cc, softmax.cc
/// and cumsum.cc.
template <class F>
inline void for_each_column_block(int64_t O, int64_t R, int64_t I, int threads, const F& body) {
  const int64_t blocks = (I + kColumnBlock - 1) / kColumnBlock;
  kernels::parallel_for_if(O * R * I > kParallelWork, threads, O * blocks, [&](int64_t task) {
    const int64_t o = task / blocks;
    const int64_t j0 = (task % blocks) * kColumnBlock;
    body(o, j0, std::min(kColumnBlock, I - j0));
  });
}

/// Offsets (in elements) of every index of the sub-shape `dims` (row-major), given their strides.
inline std::vector<int64_t> offsets_of(const std::vector<int64_t>& dims,
                                       const std::vector<int64_t>& strides) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<int64_t> off(static_cast<size_t>(n), 0);
  int64_t period = 1;  // fill from the last dim backward: off[i] += idx_d(i) * stride_d
  for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) {
    for (int64_t i = 0; i < n; ++i) off[i] += ((i / period) % dims[d]) * strides[d];
    period *= dims[d];
  }
  return off;
}

/// True when x sorts after y with NaN as the largest value (ArgMax/ArgMin/Hardmax order).
template <class C>
inline bool nan_greater(C x, C y) {
  if (std::isnan(y)) return false;
  return std::isnan(x) || x > y;
}

// Registration hooks, one per file; reduction.cc calls them all.
void register_reduce_ops(KernelRegistry& r);               // reduce.cc
void register_argminmax_ops(KernelRegistry& r);            // argminmax.cc
void register_softmax_ops(KernelRegistry& r);              // softmax.cc
void register_normalization_ops(KernelRegistry& r);        // normalization.cc
void register_local_normalization_ops(KernelRegistry& r);  // normalization_local.cc
void register_loss_ops(KernelRegistry& r);                 // loss.cc
void register_cumsum_ops(KernelRegistry& r);               // cumsum.cc

}  // namespace tierjit::interp
