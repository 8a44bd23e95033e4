// Tier-0 kernels: unary math and predicates (ONNX opsets 1..17): Abs Acos Acosh Asin Asinh Atan
// Atanh Ceil Cos Cosh Erf Exp Floor Log Neg Reciprocal Round Sigmoid Sign Sin Sinh Sqrt Tan Tanh
// Not IsNaN IsInf. One functor per op, applied by ew::unary_kernel over a flat contiguous loop;
// float16 and bfloat16 compute in float32. Output shape = input shape. float32 Erf, Exp, Sigmoid
// and Tanh run on vec_math.h (vector code, error bounds there) instead of libm's scalar functions.
#include <cmath>

#include "interp/kernels/elementwise_util.h"
#include "kernels/vec_math.h"

namespace tierjit::interp {
namespace {

using namespace ew;

/// A functor for a float-only math function (std::sin etc. overloads pick float or double).
#define TJ_FLOAT_UNARY(Name, expr)                            \
  struct Name {                                               \
    template <class T> static constexpr bool accepts = kIsFloat<T>; \
    template <class C> C operator()(C x) const { return expr; }     \
  };
TJ_FLOAT_UNARY(AcosOp, std::acos(x))
TJ_FLOAT_UNARY(AcoshOp, std::acosh(x))
TJ_FLOAT_UNARY(AsinOp, std::asin(x))
TJ_FLOAT_UNARY(AsinhOp, std::asinh(x))
TJ_FLOAT_UNARY(AtanOp, std::atan(x))
TJ_FLOAT_UNARY(AtanhOp, std::atanh(x))
TJ_FLOAT_UNARY(CeilOp, std::ceil(x))
TJ_FLOAT_UNARY(CosOp, std::cos(x))
TJ_FLOAT_UNARY(CoshOp, std::cosh(x))
TJ_FLOAT_UNARY(ErfOp, std::erf(x))
TJ_FLOAT_UNARY(ExpOp, std::exp(x))
TJ_FLOAT_UNARY(FloorOp, std::floor(x))
TJ_FLOAT_UNARY(LogOp, std::log(x))
TJ_FLOAT_UNARY(ReciprocalOp, C(1) / x)
TJ_FLOAT_UNARY(RoundOp, std::nearbyint(x))  // default rounding mode: half to even
TJ_FLOAT_UNARY(SinOp, std::sin(x))
// Sigmoid in the overflow-free form: 1 / (1 + exp(-x)) for x >= 0, exp(x) / (1 + exp(x)) below.
TJ_FLOAT_UNARY(SigmoidOp, x >= C(0) ? C(1) / (C(1) + std::exp(-x))
                                     : std::exp(x) / (C(1) + std::exp(x)))
TJ_FLOAT_UNARY(SinhOp, std::sinh(x))
TJ_FLOAT_UNARY(SqrtOp, std::sqrt(x))
TJ_FLOAT_UNARY(TanOp, std::tan(x))
TJ_FLOAT_UNARY(TanhOp, std::tanh(x))
#undef TJ_FLOAT_UNARY

/// |x|; unsigned integers unchanged; |INT_MIN| wraps to INT_MIN.
struct AbsOp {
  template <class T> static constexpr bool accepts = kIsNumeric<T>;
  template <class C> C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>) return std::fabs(x);
    else if constexpr (std::is_unsigned_v<C>) return x;
    else return x < 0 ? wrap_sub(C{0}, x) : x;
  }
};

/// -x for floats and signed integers (-INT_MIN wraps to INT_MIN).
struct NegOp {
  template <class T> static constexpr bool accepts = kIsFloat<T> || kIsSignedInt<T>;
  template <class C> C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>) return -x;
    else return wrap_sub(C{0}, x);
  }
};

/// -1, 0 or 1; NaN stays NaN (Sign-9/13).
struct SignOp {
  template <class T> static constexpr bool accepts = kIsNumeric<T>;
  template <class C> C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(x)) return x;
      return x > 0 ? C(1) : (x < 0 ? C(-1) : C(0));
    } else if constexpr (std::is_unsigned_v<C>) {
      return x > 0 ? C(1) : C(0);
    } else {
      return x > 0 ? C(1) : (x < 0 ? C(-1) : C(0));
    }
  }
};

struct NotOp {
  template <class T> static constexpr bool accepts = kIsBool<T>;
  bool operator()(bool x) const { return !x; }
};

struct IsNaNOp {
  template <class T> static constexpr bool accepts = kIsFloat<T>;
  template <class C> bool operator()(C x) const { return std::isnan(x); }
};

/// IsInf-10: attributes detect_negative, detect_positive (both default 1).
struct IsInfOp {
  template <class T> static constexpr bool accepts = kIsFloat<T>;
  bool neg = true, pos = true;
  template <class C> bool operator()(C x) const {
    return std::isinf(x) && ((x > 0 && pos) || (x < 0 && neg));
  }
};

template <class Op>
Status unary(KernelContext& ctx) {
  return unary_kernel(ctx, Op{});
}
template <class Op>
Status predicate(KernelContext& ctx) {
  return unary_kernel<Op, OutKind::kBool>(ctx, Op{});
}

/// Op on float32 through an array function of vec_math.h (SLEEF, 1 ulp), other dtypes through
/// Op's scalar functor.
template <class Op, void (*kArray)(const float*, float*, int64_t)>
Status unary_vec(KernelContext& ctx) {
  const Tensor* x = ctx.input(0);
  if (x == nullptr || x->dtype() != DType::kFloat32) return unary_kernel(ctx, Op{});
  TJ_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, DType::kFloat32, x->shape()));
  const float* xp = x->data<float>();
  float* yp = y->data<float>();
  parallel_ranges(x->numel(), ctx.options().intra_op_threads,
                  [&](int64_t b, int64_t e) { kArray(xp + b, yp + b, e - b); });
  return Status();
}

Status is_inf(KernelContext& ctx) {
  IsInfOp op;
  op.neg = ctx.node().attr_int("detect_negative", 1) != 0;
  op.pos = ctx.node().attr_int("detect_positive", 1) != 0;
  return unary_kernel<IsInfOp, OutKind::kBool>(ctx, op);
}

}  // namespace

void register_unary_kernels(KernelRegistry& r) {
  using ir::OpKind;
  r.add(OpKind::Abs, unary<AbsOp>);
  r.add(OpKind::Acos, unary<AcosOp>);
  r.add(OpKind::Acosh, unary<AcoshOp>);
  r.add(OpKind::Asin, unary<AsinOp>);
  r.add(OpKind::Asinh, unary<AsinhOp>);
  r.add(OpKind::Atan, unary<AtanOp>);
  r.add(OpKind::Atanh, unary<AtanhOp>);
  r.add(OpKind::Ceil, unary<CeilOp>);
  r.add(OpKind::Cos, unary<CosOp>);
  r.add(OpKind::Cosh, unary<CoshOp>);
  r.add(OpKind::Erf, unary_vec<ErfOp, kernels::erf_f32>);
  r.add(OpKind::Exp, unary_vec<ExpOp, kernels::exp_f32>);
  r.add(OpKind::Floor, unary<FloorOp>);
  r.add(OpKind::Log, unary<LogOp>);
  r.add(OpKind::Neg, unary<NegOp>);
  r.add(OpKind::Reciprocal, unary<ReciprocalOp>);
  r.add(OpKind::Round, unary<RoundOp>);
  r.add(OpKind::Sigmoid, unary_vec<SigmoidOp, kernels::sigmoid_f32>);
  r.add(OpKind::Sign, unary<SignOp>);
  r.add(OpKind::Sin, unary<SinOp>);
  r.add(OpKind::Sinh, unary<SinhOp>);
  r.add(OpKind::Sqrt, unary<SqrtOp>);
  r.add(OpKind::Tan, unary<TanOp>);
  r.add(OpKind::Tanh, unary_vec<TanhOp, kernels::tanh_f32>);
  r.add(OpKind::Not, predicate<NotOp>);
  r.add(OpKind::IsNaN, predicate<IsNaNOp>);
  r.add(OpKind::IsInf, is_inf);
}

}  // namespace tierjit::interp
