// Shared machinery of the tier-0 elementwise family (unary.cc, activation.cc, binary.cc,
// pow_mod.cc, variadic.cc, cast.cc): element type traits (float16/bfloat16 computed in float32,
// rounded to nearest even on store), a collapsed broadcasting plan whose innermost loop is
// contiguous, and flat/broadcast apply loops parallelized with OpenMP above kParallelThreshold.
// Semantics shared by these ops (broadcasting, NaN, integer wrap) are those of ir/graph.h.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include <immintrin.h>

#include "interp/kernels/common.h"
#include "interp/registry.h"

namespace tierjit::interp {

// Registration entry points of the family's files (called by register_elementwise_kernels).
void register_unary_kernels(KernelRegistry& r);       // kernels/unary.cc
void register_activation_kernels(KernelRegistry& r);  // kernels/activation.cc
void register_binary_kernels(KernelRegistry& r);      // kernels/binary.cc
void register_pow_mod_kernels(KernelRegistry& r);     // kernels/pow_mod.cc
void register_variadic_kernels(KernelRegistry& r);    // kernels/variadic.cc
void register_cast_kernels(KernelRegistry& r);        // kernels/cast.cc

namespace ew {

/// Elements below which a kernel runs on one thread: waking and joining an OpenMP team costs
/// more than it saves there, and the team's idle threads spin afterwards (on a shared machine
/// they take cycles from other work; measured on the mlp trace, see docs/performance.md).
inline constexpr int64_t kParallelThreshold = int64_t{1} << 17;

// ---- element type traits ---------------------------------------------------------------------

template <class T>
inline constexpr bool kIsHalfLike = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
template <class T>
inline constexpr bool kIsFloat = std::is_floating_point_v<T> || kIsHalfLike<T>;
template <class T>
inline constexpr bool kIsBool = std::is_same_v<T, bool>;
template <class T>
inline constexpr bool kIsInt = std::is_integral_v<T> && !kIsBool<T>;
template <class T>
inline constexpr bool kIsSignedInt = kIsInt<T> && std::is_signed_v<T>;
template <class T>
inline constexpr bool kIsNumeric = kIsFloat<T> || kIsInt<T>;

/// The type arithmetic on T happens in: float for Half/BFloat16, T otherwise.
template <class T> struct ComputeOf { using type = T; };
template <> struct ComputeOf<Half> { using type = float; };
template <> struct ComputeOf<BFloat16> { using type = float; };
template <class T> using compute_t = typename ComputeOf<T>::type;

/// Stored element -> compute value.
template <class T>
inline compute_t<T> load(T v) {
  if constexpr (kIsHalfLike<T>) return to_float(v);
  else return v;
}

/// Compute value -> stored element (float16/bfloat16 round to nearest even; integers wrap).
template <class T, class C>
inline T store(C c) {
  if constexpr (std::is_same_v<T, Half>) return Half{support::float_to_half(static_cast<float>(c))};
  else if constexpr (std::is_same_v<T, BFloat16>)
    return BFloat16{support::float_to_bfloat16(static_cast<float>(c))};
  else return static_cast<T>(c);
}

/// DType of a C++ element type (Half/BFloat16 included).
template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, Half>) return DType::kFloat16;
  else if constexpr (std::is_same_v<T, BFloat16>) return DType::kBFloat16;
  else return DTypeOf<T>::value;
}

// Integer arithmetic that wraps (two's complement) instead of overflowing into UB.
template <class T>
using wrap_unsigned_t = std::make_unsigned_t<decltype(T{} + T{})>;
template <class T> inline T wrap_add(T a, T b) {
  return static_cast<T>(static_cast<wrap_unsigned_t<T>>(a) + static_cast<wrap_unsigned_t<T>>(b));
}
template <class T> inline T wrap_sub(T a, T b) {
  return static_cast<T>(static_cast<wrap_unsigned_t<T>>(a) - static_cast<wrap_unsigned_t<T>>(b));
}
template <class T> inline T wrap_mul(T a, T b) {
  return static_cast<T>(static_cast<wrap_unsigned_t<T>>(a) * static_cast<wrap_unsigned_t<T>>(b));
}
/// Integer Div and Mod raise on a zero divisor, as ONNX Runtime does: kInvalidArgument naming the
/// node and the first zero's flat index in input 1, checked before any element is computed (no
/// output when it fails). Float divisors keep IEEE results (x / 0 = +-inf, 0 / 0 = NaN). Nothing
/// is checked when the dividend is empty (no division happens).
inline Status check_integer_divisor(const KernelContext& ctx) {
  const Tensor* a = ctx.input(0);
  const Tensor* d = ctx.input(1);
  if (!a || !d || !dtype_is_integer(d->dtype()) || a->numel() == 0) return Status();
  const auto* p = static_cast<const uint8_t*>(d->raw_data());
  const size_t es = dtype_size(d->dtype());
  const int64_t n = d->numel();
  for (int64_t i = 0; i < n; ++i) {
    bool zero = true;
    for (size_t k = 0; k < es; ++k) zero = zero && p[static_cast<size_t>(i) * es + k] == 0;
    if (zero)
      return ctx.fail("integer division by zero: divisor (input 1, {}{}) is 0 at flat index {}",
                      dtype_name(d->dtype()), shape_to_string(d->shape()), i);
  }
  return Status();
}

/// Truncating integer division; MIN / -1 = MIN (wraps) instead of trapping. A zero divisor is
/// refused before (check_integer_divisor); 0 here keeps the loop total.
template <class T> inline T safe_div(T a, T b) {
  if (b == 0) return T{0};
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return wrap_sub(T{0}, a);
  }
  return static_cast<T>(a / b);
}
/// Truncating integer remainder (sign of the dividend); MIN % -1 = 0 (x % 0 is refused before).
template <class T> inline T safe_rem(T a, T b) {
  if (b == 0) return T{0};
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return T{0};
  }
  return static_cast<T>(a % b);
}

// ---- parallel loops --------------------------------------------------------------------------

/// Calls f(begin, end) over [0, n) split into one chunk per thread when n is large.
template <class F>
void parallel_ranges(int64_t n, int threads, F&& f) {
  if (threads <= 1 || n < kParallelThreshold) {
    f(int64_t{0}, n);
    return;
  }
  const int64_t chunks = threads;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) f(n * c / chunks, n * (c + 1) / chunks);
}

// ---- 16-bit float staging -----------------------------------------------------------------------
// Loops over float16/bfloat16 convert tiles of kStage elements to float32 (F16C for float16),
// compute in float32 and round back, so the arithmetic loop itself stays vectorizable.

inline constexpr int64_t kStage = 256;

/// buf[i] = load(x[i * stride]) for i < n; stride is 0 (broadcast) or 1.
template <class T>
inline void load_block(const T* x, int64_t stride, compute_t<T>* buf, int64_t n) {
  if (stride == 0) {
    const compute_t<T> v = load(x[0]);
    for (int64_t i = 0; i < n; ++i) buf[i] = v;
    return;
  }
  int64_t i = 0;
#ifdef __F16C__
  if constexpr (std::is_same_v<T, Half>) {
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(buf + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  }
#endif
  for (; i < n; ++i) buf[i] = load(x[i]);
}

/// z[i] = store<O>(buf[i]) for i < n.
template <class O, class R>
inline void store_block(const R* buf, O* z, int64_t n) {
  int64_t i = 0;
#ifdef __F16C__
  if constexpr (std::is_same_v<O, Half> && std::is_same_v<R, float>) {
    for (; i + 8 <= n; i += 8)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(z + i),
                       _mm256_cvtps_ph(_mm256_loadu_ps(buf + i), _MM_FROUND_TO_NEAREST_INT));
  }
#endif
  for (; i < n; ++i) z[i] = store<O>(buf[i]);
}

/// y[i] = store(f(load(x[i]))) for i in [0, n).
template <class TIn, class TOut, class F>
void unary_apply(const TIn* x, TOut* y, int64_t n, int threads, const F& f) {
  if constexpr (kIsHalfLike<TIn> || kIsHalfLike<TOut>) {
    using R = decltype(f(load(x[0])));
    parallel_ranges(n, threads, [&](int64_t b, int64_t e) {
      compute_t<TIn> in[kStage];
      R out[kStage];
      for (int64_t s = b; s < e; s += kStage) {
        const int64_t len = std::min(kStage, e - s);
        load_block(x + s, 1, in, len);
        for (int64_t i = 0; i < len; ++i) out[i] = f(in[i]);
        store_block(out, y + s, len);
      }
    });
  } else {
    parallel_ranges(n, threads, [&](int64_t b, int64_t e) {
#pragma omp simd
      for (int64_t i = b; i < e; ++i) y[i] = store<TOut>(f(load(x[i])));
    });
  }
}

// ---- broadcasting ----------------------------------------------------------------------------

/// Iteration plan for N inputs broadcast to one output: size-1 dims dropped, adjacent dims that
/// every input walks the same way merged, so the innermost dim is as long as possible and each
/// input's innermost stride is 0 (broadcast) or 1 (contiguous).
template <size_t N>
struct BroadcastPlan {
  Shape outer;                                     ///< merged dims outside the innermost
  std::array<std::vector<int64_t>, N> outer_strides;
  int64_t inner = 1;                               ///< length of the innermost merged dim
  std::array<int64_t, N> inner_stride{};           ///< 0 or 1 per input
  int64_t rows = 1;                                ///< product of outer
};

/// Builds the plan; every input shape must broadcast to `out` (checked by the caller).
template <size_t N>
BroadcastPlan<N> make_plan(const Shape& out, const std::array<const Shape*, N>& ins) {
  std::array<std::vector<int64_t>, N> full;
  for (size_t k = 0; k < N; ++k) full[k] = broadcast_strides(*ins[k], out);
  std::vector<int64_t> dims;
  std::array<std::vector<int64_t>, N> st;
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    bool merge = !dims.empty();
    for (size_t k = 0; k < N && merge; ++k) merge = st[k].back() == full[k][d] * out[d];
    if (merge) {
      dims.back() *= out[d];
      for (size_t k = 0; k < N; ++k) st[k].back() = full[k][d];
    } else {
      dims.push_back(out[d]);
      for (size_t k = 0; k < N; ++k) st[k].push_back(full[k][d]);
    }
  }
  BroadcastPlan<N> p;
  if (dims.empty()) return p;  // every dim is 1: one element
  p.inner = dims.back();
  dims.pop_back();
  for (size_t k = 0; k < N; ++k) {
    p.inner_stride[k] = st[k].back();
    st[k].pop_back();
    p.outer_strides[k] = std::move(st[k]);
  }
  p.outer = std::move(dims);
  for (int64_t d : p.outer) p.rows *= d;
  return p;
}

/// Calls f(out_offset, in_offsets, len) for runs of `len` contiguous output elements covering
/// the plan; along a run input k advances by plan.inner_stride[k]. Parallel above the threshold.
template <size_t N, class F>
void for_each_run(const BroadcastPlan<N>& p, int threads, F&& f) {
  const int64_t total = p.rows * p.inner;
  if (total == 0) return;
  const bool parallel = threads > 1 && total >= kParallelThreshold;
  if (p.rows == 1) {  // one run: split it
    parallel_ranges(p.inner, parallel ? threads : 1, [&](int64_t b, int64_t e) {
      std::array<int64_t, N> off;
      for (size_t k = 0; k < N; ++k) off[k] = b * p.inner_stride[k];
      f(b, off, e - b);
    });
    return;
  }
  const int64_t chunks = parallel ? std::min<int64_t>(threads, p.rows) : 1;
  const int64_t rank = static_cast<int64_t>(p.outer.size());
  auto rows = [&](int64_t r0, int64_t r1) {
    std::array<int64_t, N> off{};
    if (rank == 1) {  // one outer dim (e.g. a bias over rows): no odometer
      for (int64_t r = r0; r < r1; ++r) {
        for (size_t k = 0; k < N; ++k) off[k] = r * p.outer_strides[k][0];
        f(r * p.inner, off, p.inner);
      }
      return;
    }
    std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
    int64_t rem = r0;
    for (int64_t d = rank - 1; d >= 0; --d) {
      idx[d] = rem % p.outer[d];
      rem /= p.outer[d];
      for (size_t k = 0; k < N; ++k) off[k] += idx[d] * p.outer_strides[k][d];
    }
    for (int64_t r = r0; r < r1; ++r) {
      f(r * p.inner, off, p.inner);
      for (int64_t d = rank - 1; d >= 0; --d) {  // odometer step
        for (size_t k = 0; k < N; ++k) off[k] += p.outer_strides[k][d];
        if (++idx[d] < p.outer[d]) break;
        for (size_t k = 0; k < N; ++k) off[k] -= p.outer_strides[k][d] * p.outer[d];
        idx[d] = 0;
      }
    }
  };
  if (chunks == 1) {  // no OpenMP region: entering one costs ~0.3 us even on one thread
    rows(0, p.rows);
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) rows(p.rows * c / chunks, p.rows * (c + 1) / chunks);
}

/// o = store(f(load(a), load(b))) with a, b broadcast to the plan's output. The inner loop is
/// specialized on which operand is contiguous (no per-element dispatch). `o` may alias an input
/// of the output's full shape (in-place accumulation: same index read before written).
template <class A, class B, class O, class F>
void binary_apply(const A* a, const B* b, O* o, const BroadcastPlan<2>& p, int threads,
                  const F& f) {
  const int64_t sa = p.inner_stride[0], sb = p.inner_stride[1];
  if constexpr (kIsHalfLike<A> || kIsHalfLike<B> || kIsHalfLike<O>) {
    using R = decltype(f(load(a[0]), load(b[0])));
    for_each_run(p, threads, [&](int64_t oo, const std::array<int64_t, 2>& io, int64_t len) {
      compute_t<A> xa[kStage];
      compute_t<B> yb[kStage];
      R zr[kStage];
      for (int64_t s = 0; s < len; s += kStage) {
        const int64_t n = std::min(kStage, len - s);
        load_block(a + io[0] + s * sa, sa, xa, n);
        load_block(b + io[1] + s * sb, sb, yb, n);
        for (int64_t i = 0; i < n; ++i) zr[i] = f(xa[i], yb[i]);
        store_block(zr, o + oo + s, n);
      }
    });
  } else {
    for_each_run(p, threads, [&](int64_t oo, const std::array<int64_t, 2>& io, int64_t len) {
      const A* x = a + io[0];
      const B* y = b + io[1];
      O* z = o + oo;
      if (sa == 1 && sb == 1) {
#pragma omp simd
        for (int64_t i = 0; i < len; ++i) z[i] = store<O>(f(load(x[i]), load(y[i])));
      } else if (sa == 0 && sb == 1) {
        const auto xv = load(x[0]);
#pragma omp simd
        for (int64_t i = 0; i < len; ++i) z[i] = store<O>(f(xv, load(y[i])));
      } else if (sa == 1 && sb == 0) {
        const auto yv = load(y[0]);
#pragma omp simd
        for (int64_t i = 0; i < len; ++i) z[i] = store<O>(f(load(x[i]), yv));
      } else {
        const O v = store<O>(f(load(x[0]), load(y[0])));
        for (int64_t i = 0; i < len; ++i) z[i] = v;
      }
    });
  }
}

/// True when `small` (leading 1s dropped) equals the trailing dims of `big`, rank(small) <=
/// rank(big) and small has elements: `small` broadcasts to `big` as rows of numel(small).
inline bool is_trailing_block(const Shape& small, const Shape& big) {
  if (small.size() > big.size()) return false;
  size_t s = 0;
  while (s < small.size() && small[s] == 1) ++s;
  const size_t n = small.size() - s;
  return std::equal(small.begin() + static_cast<std::ptrdiff_t>(s), small.end(),
                    big.end() - static_cast<std::ptrdiff_t>(n)) &&
         shape_numel(small) > 0;
}

/// Broadcast plan of two shapes to their numpy broadcast; false if incompatible.
inline bool plan_binary(const Shape& a, const Shape& b, Shape* out, BroadcastPlan<2>* plan) {
  // Fast paths without make_plan's temporaries, for the common cases: equal shapes, one operand
  // a single element (a scalar constant), one operand a trailing block of the other (a bias
  // row). Each plan walks the same elements as make_plan's (values do not depend on the plan).
  const bool same = a == b;
  const bool a_big = same || is_trailing_block(b, a);
  if (a_big || is_trailing_block(a, b)) {
    const Shape& big = a_big ? a : b;
    const int64_t n = shape_numel(big), block = same ? n : shape_numel(a_big ? b : a);
    *out = big;
    *plan = BroadcastPlan<2>();
    if (n == 1) return true;  // one element: a run of 1 with both strides 0, as make_plan
    if (block == 1 || block == n) {  // one run over every element
      plan->inner = n;
      plan->inner_stride = {a_big || block == n ? 1 : 0, !a_big || block == n ? 1 : 0};
      return true;
    }
    plan->inner = block;  // rows of `block` elements; the small operand restarts every row
    plan->inner_stride = {1, 1};
    plan->rows = n / block;
    plan->outer = {plan->rows};
    plan->outer_strides[0] = {a_big ? block : 0};
    plan->outer_strides[1] = {a_big ? 0 : block};
    return true;
  }
  auto s = broadcast_shapes(a, b);
  if (!s) return false;
  *out = *s;
  *plan = make_plan<2>(*out, {&a, &b});
  return true;
}

// ---- kernel drivers ----------------------------------------------------------------------------

/// Output dtype of a binary or unary op: the input's, or bool for predicates and comparisons.
enum class OutKind { kSame, kBool };

/// Unary kernel driver: input 0 -> output 0 of the same shape; y = op(x) on every dtype that
/// Op::accepts<T> (others: kUnsupported naming the dtype).
template <class Op, OutKind kOut = OutKind::kSame>
Status unary_kernel(KernelContext& ctx, const Op& op) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  const DType dt = x->dtype();
  const DType out_dt = kOut == OutKind::kBool ? DType::kBool : dt;
  TJ_ASSIGN_OR_RETURN(Tensor* y, ctx.output(0, out_dt, x->shape()));
  return dispatch_all(ctx, dt, [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (!Op::template accepts<T>) {
      return ctx.unsupported_here("input 0: dtype {} is not supported", dtype_name(dt));
    } else {
      using TOut = std::conditional_t<kOut == OutKind::kBool, bool, T>;
      unary_apply(x->data<T>(), y->data<TOut>(), x->numel(), ctx.options().intra_op_threads, op);
      return Status();
    }
  });
}

/// Binary kernel driver: inputs a and b of one dtype, numpy-broadcast to output 0;
/// z = op(a, b) on every dtype Op::accepts<T>. Errors: dtypes differ, shapes do not broadcast.
template <class Op, OutKind kOut = OutKind::kSame>
Status binary_kernel_on(KernelContext& ctx, const Tensor* a, const Tensor* b, const Op& op) {
  const DType dt = a->dtype();
  if (b->dtype() != dt)
    return ctx.fail("input 1 has dtype {} but input 0 has dtype {}", dtype_name(b->dtype()),
                    dtype_name(dt));
  Shape out_shape;
  BroadcastPlan<2> plan;
  if (!plan_binary(a->shape(), b->shape(), &out_shape, &plan))
    return ctx.fail("input shapes {} and {} do not broadcast", shape_to_string(a->shape()),
                    shape_to_string(b->shape()));
  const DType out_dt = kOut == OutKind::kBool ? DType::kBool : dt;
  TJ_ASSIGN_OR_RETURN(Tensor* z, ctx.output(0, out_dt, out_shape));
  return dispatch_all(ctx, dt, [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (!Op::template accepts<T>) {
      return ctx.unsupported_here("input 0: dtype {} is not supported", dtype_name(dt));
    } else {
      using TOut = std::conditional_t<kOut == OutKind::kBool, bool, T>;
      binary_apply(a->data<T>(), b->data<T>(), z->data<TOut>(), plan,
                   ctx.options().intra_op_threads, op);
      return Status();
    }
  });
}

/// binary_kernel_on with the node's inputs 0 and 1.
template <class Op, OutKind kOut = OutKind::kSame>
Status binary_kernel(KernelContext& ctx, const Op& op) {
  TJ_ASSIGN_OR_RETURN(const Tensor* a, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* b, ctx.required_input(1));
  return binary_kernel_on<Op, kOut>(ctx, a, b, op);
}

}  // namespace ew
}  // namespace tierjit::interp
