// Tier-0 kernels: ArgMax and ArgMin (ONNX opsets 1, 11, 12, 13): int64 index of the largest /
// smallest element along `axis`, first occurrence unless select_last_index = 1. NaN counts as
// the largest value (graph.h), so ArgMax finds the first NaN and ArgMin skips NaNs.
// Runs as [outer, reduce, inner] with the inner dim contiguous.
#include <algorithm>
#include <vector>

#include "interp/kernels/reduce_util.h"

namespace tierjit::interp {
namespace {

/// Index along the reduced axis of each (o, j) for x viewed as [O, R, I] (R >= 1).
/// kMax: largest; else smallest. kLast: ties resolve to the last index.
template <bool kMax, bool kLast, class T>
void arg_reduce(const T* x, int64_t* y, int64_t O, int64_t R, int64_t I, int threads) {
  using C = std::conditional_t<kIsHalfLike<T>, float, T>;
  // better(v, best): v replaces the current best.
  auto better = [](C v, C best) {
    if constexpr (kMax)
      return kLast ? !nan_greater(best, v) : nan_greater(v, best);
    else
      return kLast ? !nan_greater(v, best) : nan_greater(best, v);
  };
  for_each_column_block(O, R, I, threads, [&](int64_t o, int64_t j0, int64_t jn) {
    const T* base = x + o * R * I + j0;
    C best[kColumnBlock];
    int64_t idx[kColumnBlock];
    for (int64_t j = 0; j < jn; ++j) {
      best[j] = load_as<C>(base[j]);
      idx[j] = 0;
    }
    for (int64_t r = 1; r < R; ++r) {
      const T* row = base + r * I;
      for (int64_t j = 0; j < jn; ++j) {
        C v = load_as<C>(row[j]);
        if (better(v, best[j])) {
          best[j] = v;
          idx[j] = r;
        }
      }
    }
    std::copy(idx, idx + jn, y + o * I + j0);
  });
}

/// ArgMax/ArgMin: input 0 'data' any numeric dtype; attributes axis (default 0), keepdims
/// (default 1), select_last_index (default 0, opset >= 12). Output int64 with the axis kept as 1
/// or removed. Errors: axis out of range; an empty reduced axis.
template <bool kMax>
Status arg_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  const ir::Node& node = ctx.node();
  const int64_t rank = x->rank();
  const int64_t axis_attr = node.attr_int("axis", 0);
  int64_t axis = 0;  // a scalar (axis 0 or -1) has index 0
  if (rank > 0 || (axis_attr != 0 && axis_attr != -1)) {
    TJ_ASSIGN_OR_RETURN(axis, normalize_axis(ctx, axis_attr, rank));
  }
  const bool keepdims = node.attr_int("keepdims", 1) != 0;
  const bool last = node.attr_int("select_last_index", 0) != 0;
  Shape out;
  OriView v;
  if (rank > 0) {
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis)
        out.push_back(x->dim(d));
      else if (keepdims)
        out.push_back(1);
    }
    v = ori_view(x->shape(), axis, axis + 1);
  }
  if (v.reduce == 0 && shape_numel(out) > 0)
    return ctx.fail("input 0 'data': cannot take {} over axis {} of size 0 (shape {})",
                    kMax ? "ArgMax" : "ArgMin", axis, shape_to_string(x->shape()));
  return dispatch_all(ctx, x->dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      return ctx.fail("input 0 'data': bool is not supported");
    } else {
      TJ_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, DType::kInt64, out));
      if (y->numel() == 0) return Status();
      const int threads = ctx.options().intra_op_threads;
      if (last)
        arg_reduce<kMax, true>(x->data<T>(), y->data<int64_t>(), v.outer, v.reduce, v.inner,
                               threads);
      else
        arg_reduce<kMax, false>(x->data<T>(), y->data<int64_t>(), v.outer, v.reduce, v.inner,
                                threads);
      return Status();
    }
  });
}

}  // namespace

void register_argminmax_ops(KernelRegistry& r) {
  r.add(ir::OpKind::ArgMax, arg_kernel<true>);
  r.add(ir::OpKind::ArgMin, arg_kernel<false>);
}

}  // namespace tierjit::interp
