// Tier-0 kernels: variadic Max Min Sum Mean (1..N inputs, numpy broadcasting of all of them;
// opsets 1..13), Where (condition, X, Y broadcast three ways; Where-9/16) and Clip (min/max
// attributes before opset 11, optional scalar inputs from opset 11; integers from opset 12).
// Max/Min/Clip propagate NaN. Variadic ops fold pairwise into the output (in place).
#include <string>

#include "interp/kernels/elementwise_util.h"

namespace tierjit::interp {
namespace {

using namespace ew;

struct MaxOp {
  template <class T> static constexpr bool accepts = kIsNumeric<T>;
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(a)) return a;
      if (std::isnan(b)) return b;
    }
    return a < b ? b : a;
  }
};
struct MinOp {
  template <class T> static constexpr bool accepts = kIsNumeric<T>;
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(a)) return a;
      if (std::isnan(b)) return b;
    }
    return b < a ? b : a;
  }
};
struct SumOp {
  template <class T> static constexpr bool accepts = kIsNumeric<T>;
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) return wrap_add(a, b);
    else return a + b;
  }
};
/// Mean = Sum, then divided by the input count (float types only, as in the spec).
struct MeanOp : SumOp {
  template <class T> static constexpr bool accepts = kIsFloat<T>;
};

/// out = broadcast(in) — copies `in` into the larger `out` shape.
template <class T>
void broadcast_copy(const Tensor& in, Tensor& out, int threads) {
  BroadcastPlan<2> plan = make_plan<2>(out.shape(), {&in.shape(), &in.shape()});
  const T* x = in.data<T>();
  T* y = out.data<T>();
  for_each_run(plan, threads, [&](int64_t oo, const std::array<int64_t, 2>& io, int64_t len) {
    if (plan.inner_stride[0] == 1) {
      for (int64_t i = 0; i < len; ++i) y[oo + i] = x[io[0] + i];
    } else {
      for (int64_t i = 0; i < len; ++i) y[oo + i] = x[io[0]];
    }
  });
}

template <class Op, bool kMean = false>
Status variadic(KernelContext& ctx) {
  std::vector<const Tensor*> ins;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    TJ_ASSIGN_OR_RETURN(const Tensor* t, ctx.required_input(i));
    if (!ins.empty() && t->dtype() != ins[0]->dtype())
      return ctx.fail("input {} has dtype {} but input 0 has dtype {}", i, dtype_name(t->dtype()),
                      dtype_name(ins[0]->dtype()));
    ins.push_back(t);
  }
  if (ins.empty()) return ctx.fail("needs at least one input");
  const DType dt = ins[0]->dtype();
  TJ_ASSIGN_OR_RETURN(Shape out_shape, broadcast_all(ctx, ins));
  return dispatch_all(ctx, dt, [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (!Op::template accepts<T>) {
      return ctx.unsupported_here("input 0: dtype {} is not supported", dtype_name(dt));
    } else {
      if (ins.size() == 1) {  // the input itself (inputs are read-only everywhere: no copy)
        ctx.set_output(0, *ins[0]);
        return Status();
      }
      TJ_ASSIGN_OR_RETURN(Tensor* out, ctx.output(0, dt, out_shape));
      const int threads = ctx.options().intra_op_threads;
      broadcast_copy<T>(*ins[0], *out, threads);
      for (size_t i = 1; i < ins.size(); ++i) {
        BroadcastPlan<2> plan = make_plan<2>(out_shape, {&out_shape, &ins[i]->shape()});
        binary_apply(out->data<T>(), ins[i]->data<T>(), out->data<T>(), plan, threads, Op{});
      }
      if constexpr (kMean) {
        using C = compute_t<T>;
        const C n = static_cast<C>(ins.size());
        unary_apply(out->data<T>(), out->data<T>(), out->numel(), threads,
                    [n](C v) { return v / n; });
      }
      return Status();
    }
  });
}

template <class T>
void where_typed(const Tensor& c, const Tensor& x, const Tensor& y, Tensor& out, int threads) {
  BroadcastPlan<3> plan = make_plan<3>(out.shape(), {&c.shape(), &x.shape(), &y.shape()});
  const bool* cp = c.data<bool>();
  const T* xp = x.data<T>();
  const T* yp = y.data<T>();
  T* op = out.data<T>();
  const int64_t sc = plan.inner_stride[0], sx = plan.inner_stride[1], sy = plan.inner_stride[2];
  for_each_run(plan, threads, [&](int64_t oo, const std::array<int64_t, 3>& io, int64_t len) {
    const bool* cc = cp + io[0];
    const T* xx = xp + io[1];
    const T* yy = yp + io[2];
    T* z = op + oo;
    if (sc == 1 && sx == 1 && sy == 1) {
      for (int64_t i = 0; i < len; ++i) z[i] = cc[i] ? xx[i] : yy[i];
    } else {
      for (int64_t i = 0; i < len; ++i) z[i] = cc[i * sc] ? xx[i * sx] : yy[i * sy];
    }
  });
}

Status where_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* c, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(1));
  TJ_ASSIGN_OR_RETURN(const Tensor* y, ctx.required_input(2));
  if (c->dtype() != DType::kBool)
    return ctx.fail("input 0 'condition' must be bool, got {}", dtype_name(c->dtype()));
  if (x->dtype() != y->dtype())
    return ctx.fail("input 2 'Y' has dtype {} but input 1 'X' has dtype {}",
                    dtype_name(y->dtype()), dtype_name(x->dtype()));
  TJ_ASSIGN_OR_RETURN(Shape out_shape, broadcast_all(ctx, {c, x, y}));
  TJ_ASSIGN_OR_RETURN(Tensor* out, ctx.output(0, x->dtype(), out_shape));
  const int threads = ctx.options().intra_op_threads;
  if (x->dtype() == DType::kString) {
    where_typed<std::string>(*c, *x, *y, *out, 1);
    return Status();
  }
  return dispatch_all(ctx, x->dtype(), [&](auto tag) -> Status {
    where_typed<decltype(tag)>(*c, *x, *y, *out, threads);
    return Status();
  });
}

/// y = min(max(x, lo), hi) with NaN kept; lo > hi gives hi everywhere (Clip-13 doc).
template <class C>
struct ClipOp {
  C lo, hi;
  C operator()(C x) const {
    if (x < lo) x = lo;
    if (x > hi) x = hi;
    return x;
  }
};

Status clip_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  const DType dt = x->dtype();
  const bool bounds_as_inputs = ctx.node().opset() >= 11;
  const Tensor* bounds[2] = {ctx.input(1), ctx.input(2)};
  const char* names[2] = {"min", "max"};
  if (bounds_as_inputs) {
    for (int k = 0; k < 2; ++k) {
      if (!bounds[k]) continue;
      if (bounds[k]->dtype() != dt)
        return ctx.fail("input {} '{}' has dtype {} but input 0 has dtype {}", k + 1, names[k],
                        dtype_name(bounds[k]->dtype()), dtype_name(dt));
      if (bounds[k]->numel() != 1)
        return ctx.fail("input {} '{}' must be a scalar, got shape {}", k + 1, names[k],
                        shape_to_string(bounds[k]->shape()));
    }
  }
  TJ_ASSIGN_OR_RETURN(Tensor* y, ctx.output(0, dt, x->shape()));
  return dispatch_all(ctx, dt, [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (!kIsNumeric<T>) {
      return ctx.unsupported_here("input 0: dtype {} is not supported", dtype_name(dt));
    } else {
      using C = compute_t<T>;
      ClipOp<C> op;
      if constexpr (std::is_floating_point_v<C>) {
        op.lo = -std::numeric_limits<C>::infinity();
        op.hi = std::numeric_limits<C>::infinity();
      } else {
        op.lo = std::numeric_limits<C>::lowest();
        op.hi = std::numeric_limits<C>::max();
      }
      if (bounds_as_inputs) {
        if (bounds[0]) op.lo = load(bounds[0]->data<T>()[0]);
        if (bounds[1]) op.hi = load(bounds[1]->data<T>()[0]);
      } else {
        if (ctx.node().has_attr("min")) op.lo = static_cast<C>(ctx.node().attr_float("min", 0));
        if (ctx.node().has_attr("max")) op.hi = static_cast<C>(ctx.node().attr_float("max", 0));
      }
      unary_apply(x->data<T>(), y->data<T>(), x->numel(), ctx.options().intra_op_threads, op);
      return Status();
    }
  });
}

}  // namespace

void register_variadic_kernels(KernelRegistry& r) {
  using ir::OpKind;
  r.add(OpKind::Max, variadic<MaxOp>);
  r.add(OpKind::Min, variadic<MinOp>);
  r.add(OpKind::Sum, variadic<SumOp>);
  r.add(OpKind::Mean, variadic<MeanOp, true>);
  r.add(OpKind::Where, where_kernel);
  r.add(OpKind::Clip, clip_kernel);
}

}  // namespace tierjit::interp
