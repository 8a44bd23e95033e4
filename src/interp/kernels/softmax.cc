// Tier-0 kernels: Softmax, LogSoftmax, Hardmax (ONNX opsets 1, 11, 13). Before opset 13 the
// input is coerced to 2-D [prod(dims[:axis]), prod(dims[axis:])] (axis default 1) and each row
// is normalized; from opset 13 one axis is normalized (default -1). The max is subtracted first
// (no overflow on large inputs); sums accumulate in double; NaN propagates through the row.
// float32 Softmax over the last axis runs on kernels::softmax_rows_f32 (SLEEF's exp inlined, 1 ulp;
// 16 lanes on AVX-512F CPUs, bit for bit the 8-lane steps it replaced).
#include <algorithm>
#include <cmath>
#include <limits>

#include "interp/kernels/reduce_util.h"
#include "kernels/vec_math.h"

namespace tierjit::interp {
namespace {

enum class SoftKind { kSoftmax, kLogSoftmax, kHardmax };

/// Elements per task of the float32 Softmax rows (kernels::softmax_rows_f32), and one thread's time
/// per element: 33.5 us for 64x512 on AVX2 (tierjit_micro_bench
/// --benchmark_filter=reduction.softmax_64x512/tier0, Zen 3).
constexpr int64_t kSoftmaxChunk = 2048;
constexpr double kSoftmaxNsPerElement = 1.0;

/// y = f(x) over each contiguous row of length R (the common last-axis case).
template <SoftKind K, class T>
void soft_rows(const T* x, T* y, int64_t O, int64_t R, int threads) {
  using C = ComputeOf<T>;
  constexpr bool kInPlace = std::is_same_v<T, C>;  // y can hold exp(x - m) between passes
  if constexpr (std::is_same_v<T, float> && K == SoftKind::kSoftmax) {  // vectorized
    // Chunks of rows, so that each task makes one call (dispatch, loop setup) for many short rows.
    const int64_t rows_per_task = std::max<int64_t>(1, kSoftmaxChunk / R);
    const int64_t tasks = (O + rows_per_task - 1) / rows_per_task;
    const int team = kernels::worth_parallel(threads, O * R, kSoftmaxNsPerElement) ? threads : 1;
    kernels::parallel_for_stealing(team, tasks, [&](int64_t t) {
      const int64_t o0 = t * rows_per_task, rows = std::min(rows_per_task, O - o0);
      kernels::softmax_rows_f32(x + o0 * R, y + o0 * R, rows, R);
    });
    return;
  }
  kernels::parallel_for_if(O * R > kParallelWork, threads, O, [&](int64_t o) {
    const T* xr = x + o * R;
    T* yr = y + o * R;
    if constexpr (K == SoftKind::kHardmax) {
      C m = load_as<C>(xr[0]);
      int64_t arg = 0;
      for (int64_t r = 1; r < R; ++r) {
        C v = load_as<C>(xr[r]);
        if (nan_greater(v, m)) {
          m = v;
          arg = r;
        }
      }
      for (int64_t r = 0; r < R; ++r) yr[r] = store_as<T>(C(r == arg ? 1 : 0));
      return;
    }
    C m = load_as<C>(xr[0]);
    bool nan = false;
    for (int64_t r = 0; r < R; ++r) {
      C v = load_as<C>(xr[r]);
      m = v > m ? v : m;
      nan |= v != v;
    }
    if (nan) m = std::numeric_limits<C>::quiet_NaN();
    double s = 0;
    for (int64_t r = 0; r < R; ++r) {
      C e = std::exp(load_as<C>(xr[r]) - m);
      s += e;
      if constexpr (kInPlace && K == SoftKind::kSoftmax) yr[r] = e;
    }
    if constexpr (K == SoftKind::kSoftmax) {
      const C inv = static_cast<C>(1.0 / s);
      if constexpr (kInPlace) {
        for (int64_t r = 0; r < R; ++r) yr[r] *= inv;
      } else {
        for (int64_t r = 0; r < R; ++r) yr[r] = store_as<T>(std::exp(load_as<C>(xr[r]) - m) * inv);
      }
    } else {
      const C log_s = static_cast<C>(std::log(s));
      for (int64_t r = 0; r < R; ++r) yr[r] = store_as<T>((load_as<C>(xr[r]) - m) - log_s);
    }
  });
}

/// y = f(x) along the middle axis of [O, R, I]; T the element type, C the compute type.
template <SoftKind K, class T>
void soft_ori(const T* x, T* y, int64_t O, int64_t R, int64_t I, int threads) {
  using C = ComputeOf<T>;
  constexpr bool kInPlace = std::is_same_v<T, C>;  // y can hold exp(x - m) between passes
  if (I == 1) return soft_rows<K, T>(x, y, O, R, threads);
  for_each_column_block(O, R, I, threads, [&](int64_t o, int64_t j0, int64_t jn) {
    const T* xb = x + o * R * I + j0;
    T* yb = y + o * R * I + j0;
    C m[kColumnBlock];
    int64_t arg[kColumnBlock];
    for (int64_t j = 0; j < jn; ++j) {
      m[j] = load_as<C>(xb[j]);
      arg[j] = 0;
    }
    for (int64_t r = 1; r < R; ++r) {
      for (int64_t j = 0; j < jn; ++j) {
        C v = load_as<C>(xb[r * I + j]);
        if (nan_greater(v, m[j])) {
          m[j] = v;
          arg[j] = r;
        }
      }
    }
    if constexpr (K == SoftKind::kHardmax) {
      for (int64_t r = 0; r < R; ++r)
        for (int64_t j = 0; j < jn; ++j) yb[r * I + j] = store_as<T>(C(arg[j] == r ? 1 : 0));
      return;
    }
    double s[kColumnBlock];
    for (int64_t j = 0; j < jn; ++j) s[j] = 0;
    for (int64_t r = 0; r < R; ++r) {
      for (int64_t j = 0; j < jn; ++j) {
        C e = std::exp(load_as<C>(xb[r * I + j]) - m[j]);
        s[j] += e;
        if constexpr (kInPlace && K == SoftKind::kSoftmax) yb[r * I + j] = e;
      }
    }
    if constexpr (K == SoftKind::kSoftmax) {
      C inv[kColumnBlock];
      for (int64_t j = 0; j < jn; ++j) inv[j] = static_cast<C>(1.0 / s[j]);
      for (int64_t r = 0; r < R; ++r) {
        for (int64_t j = 0; j < jn; ++j) {
          C e;
          if constexpr (kInPlace)
            e = yb[r * I + j];
          else
            e = std::exp(load_as<C>(xb[r * I + j]) - m[j]);
          yb[r * I + j] = store_as<T>(e * inv[j]);
        }
      }
    } else {  // LogSoftmax: (x - m) - log(sum); m + log(sum) first would round at large |m|
      C log_s[kColumnBlock];
      for (int64_t j = 0; j < jn; ++j) log_s[j] = static_cast<C>(std::log(s[j]));
      for (int64_t r = 0; r < R; ++r)
        for (int64_t j = 0; j < jn; ++j)
          yb[r * I + j] = store_as<T>((load_as<C>(xb[r * I + j]) - m[j]) - log_s[j]);
    }
  });
}

/// Softmax / LogSoftmax / Hardmax: input 0 float (32, 64, 16, bf16); attribute axis (default 1
/// before opset 13, -1 from 13). Output: same dtype and shape. Errors: axis out of range.
template <SoftKind K>
Status soft_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  const ir::Node& node = ctx.node();
  const bool coerce_2d = node.opset() < 13;
  const int64_t rank = x->rank();
  OriView v;  // rank 0: a single element, [1, 1, 1]
  if (rank > 0) {
    int64_t a = node.attr_int("axis", coerce_2d ? 1 : -1);
    if (coerce_2d && a == rank) {
      v = ori_view(x->shape(), rank, rank);  // [N, 1]: rows of one element
      v.outer = x->numel();
    } else {
      TJ_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, a, rank));
      v = coerce_2d ? ori_view(x->shape(), axis, rank) : ori_view(x->shape(), axis, axis + 1);
    }
  }
  return dispatch_float(ctx, x->dtype(), "input 0 'input'", [&](auto tag) -> Status {
    using T = decltype(tag);
    TJ_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x->dtype(), x->shape()));
    if (y->numel() == 0) return Status();
    soft_ori<K, T>(x->data<T>(), y->data<T>(), v.outer, v.reduce, v.inner,
                   ctx.options().intra_op_threads);
    return Status();
  });
}

}  // namespace

void register_softmax_ops(KernelRegistry& r) {
  r.add(ir::OpKind::Softmax, soft_kernel<SoftKind::kSoftmax>);
  r.add(ir::OpKind::LogSoftmax, soft_kernel<SoftKind::kLogSoftmax>);
  r.add(ir::OpKind::Hardmax, soft_kernel<SoftKind::kHardmax>);
}

}  // namespace tierjit::interp
