// Tier-0 kernel: CumSum (ONNX opsets 11, 14): running sum along the axis given by input 1,
// optionally exclusive (each output excludes its own element) and/or reverse (sums from the
// end). Floats accumulate in double, integers in 64 bits (wrapping to the element type).
// Runs as [outer, axis, inner] with the inner dim contiguous.
#include <algorithm>

#include "interp/kernels/reduce_util.h"

namespace tierjit::interp {
namespace {

template <class T>
void cumsum_ori(const T* x, T* y, int64_t O, int64_t R, int64_t I, bool exclusive, bool reverse,
                int threads) {
  using A = std::conditional_t<kIsFloatLike<T>, double,
                               std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;
  auto add = [](A a, A b) {
    if constexpr (std::is_floating_point_v<A>)
      return a + b;
    else
      return static_cast<A>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  };
  auto store = [](A a) {
    if constexpr (kIsFloatLike<T>)
      return store_as<T>(a);
    else
      return static_cast<T>(a);
  };
  for_each_column_block(O, R, I, threads, [&](int64_t o, int64_t j0, int64_t jn) {
    A acc[kColumnBlock];
    for (int64_t j = 0; j < jn; ++j) acc[j] = A{0};
    for (int64_t step = 0; step < R; ++step) {
      const int64_t r = reverse ? R - 1 - step : step;
      const int64_t off = (o * R + r) * I + j0;
      for (int64_t j = 0; j < jn; ++j) {
        A v = load_as<A>(x[off + j]);
        if (exclusive) {
          y[off + j] = store(acc[j]);
          acc[j] = add(acc[j], v);
        } else {
          acc[j] = add(acc[j], v);
          y[off + j] = store(acc[j]);
        }
      }
    }
  });
}

/// CumSum: input 0 'x' numeric (not bool), input 1 'axis' an int32/int64 scalar (or 1-element
/// tensor) in [-rank, rank); attributes exclusive, reverse (default 0). Output: x's dtype and
/// shape. Errors: missing/ill-formed axis, axis out of range, rank-0 x.
Status cumsum_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* axis_t, ctx.required_input(1));
  TJ_ASSIGN_OR_RETURN(auto axis_v, read_int64s(ctx, *axis_t, "input 1 'axis'"));
  if (axis_v.size() != 1)
    return ctx.fail("input 1 'axis' must be a scalar, got shape {}",
                    shape_to_string(axis_t->shape()));
  if (x->rank() == 0) return ctx.fail("input 0 'x' must have rank >= 1");
  TJ_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, axis_v[0], x->rank()));
  const bool exclusive = ctx.node().attr_int("exclusive", 0) != 0;
  const bool reverse = ctx.node().attr_int("reverse", 0) != 0;
  const OriView v = ori_view(x->shape(), axis, axis + 1);
  return dispatch_all(ctx, x->dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      return ctx.fail("input 0 'x': bool is not supported");
    } else {
      TJ_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x->dtype(), x->shape()));
      if (y->numel() == 0) return Status();
      cumsum_ori<T>(x->data<T>(), y->data<T>(), v.outer, v.reduce, v.inner, exclusive, reverse,
                    ctx.options().intra_op_threads);
      return Status();
    }
  });
}

}  // namespace

void register_cumsum_ops(KernelRegistry& r) { r.add(ir::OpKind::CumSum, cumsum_kernel); }

}  // namespace tierjit::interp
