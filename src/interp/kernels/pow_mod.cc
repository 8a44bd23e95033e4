// Tier-0 kernels: Pow (mixed base/exponent dtypes, ONNX Pow-1/7/12/13/15), Mod (Mod-10/13) and
// BitShift (BitShift-11), all with numpy broadcasting.
//  * Pow: result dtype = base dtype. Float bases compute std::pow in the base's compute type;
//    integer^integer is exact (square and multiply, wrapping; negative exponents give 0 unless the
//    base is +-1); integer^float computes in double and truncates toward zero (saturating).
//  * Mod: fmod=0 (default) is the floored remainder with the divisor's sign, integers only;
//    fmod=1 is C fmod (dividend's sign), any numeric type. An integer x mod 0 is an error.
//  * BitShift: unsigned integers; shifting by >= the bit width gives 0.
#include "interp/kernels/elementwise_util.h"

namespace tierjit::interp {
namespace {

using namespace ew;

/// a^n for integers, exact with wrap-around.
template <class C>
C int_pow(C a, int64_t n) {
  if (n < 0) {
    if (a == 1) return C(1);
    if constexpr (std::is_signed_v<C>) {
      if (a == -1) return (n & 1) ? C(-1) : C(1);
    }
    return C(0);
  }
  C result = 1, base = a;
  while (n > 0) {
    if (n & 1) result = wrap_mul(result, base);
    n >>= 1;
    if (n > 0) base = wrap_mul(base, base);
  }
  return result;
}

/// double -> integer C, truncating toward zero; NaN -> 0; out of range saturates.
template <class C>
C double_to_int_saturating(double v) {
  if (std::isnan(v)) return C(0);
  if (v <= static_cast<double>(std::numeric_limits<C>::lowest())) return std::numeric_limits<C>::lowest();
  if (v >= static_cast<double>(std::numeric_limits<C>::max())) return std::numeric_limits<C>::max();
  return static_cast<C>(v);
}

struct PowOp {
  template <class C, class E>
  C operator()(C a, E b) const {
    if constexpr (std::is_floating_point_v<C>) {
      return std::pow(a, static_cast<C>(b));
    } else if constexpr (std::is_integral_v<E>) {
      return int_pow(a, static_cast<int64_t>(b));
    } else {
      return double_to_int_saturating<C>(std::pow(static_cast<double>(a), static_cast<double>(b)));
    }
  }
};

/// Runs Pow with exponent elements of type E (the exponent tensor's type or a converted copy).
template <class T, class E>
void run_pow(const KernelContext& ctx, const Tensor& a, const E* b, Tensor& z,
             const BroadcastPlan<2>& plan) {
  binary_apply(a.data<T>(), b, z.data<T>(), plan, ctx.options().intra_op_threads, PowOp{});
}

Status pow_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* a, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* b, ctx.required_input(1));
  if (!dtype_is_float(b->dtype()) && !dtype_is_integer(b->dtype()))
    return ctx.unsupported_here("input 1 'Y': dtype {} is not supported", dtype_name(b->dtype()));
  if (ctx.node().opset() < 12 && a->dtype() != b->dtype())
    return ctx.fail("input 1 has dtype {} but input 0 has dtype {} (Pow before opset 12 needs "
                    "one dtype)", dtype_name(b->dtype()), dtype_name(a->dtype()));
  Shape out_shape;
  BroadcastPlan<2> plan;
  if (!plan_binary(a->shape(), b->shape(), &out_shape, &plan))
    return ctx.fail("input shapes {} and {} do not broadcast", shape_to_string(a->shape()),
                    shape_to_string(b->shape()));
  TJ_ASSIGN_OR_RETURN(Tensor* z, ctx.output(0, a->dtype(), out_shape));
  return dispatch_all(ctx, a->dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (!kIsNumeric<T>) {
      return ctx.unsupported_here("input 0 'X': dtype {} is not supported", dtype_name(a->dtype()));
    } else {
      if (b->dtype() == a->dtype()) {
        run_pow<T>(ctx, *a, b->data<T>(), *z, plan);
      } else if constexpr (kIsFloat<T>) {
        std::vector<compute_t<T>> e(static_cast<size_t>(b->numel()));
        for (int64_t i = 0; i < b->numel(); ++i) e[i] = static_cast<compute_t<T>>(b->value_as_double(i));
        run_pow<T>(ctx, *a, e.data(), *z, plan);
      } else if (dtype_is_integer(b->dtype())) {
        std::vector<int64_t> e(static_cast<size_t>(b->numel()));
        for (int64_t i = 0; i < b->numel(); ++i) e[i] = b->value_as_int64(i);
        run_pow<T>(ctx, *a, e.data(), *z, plan);
      } else {
        std::vector<double> e(static_cast<size_t>(b->numel()));
        for (int64_t i = 0; i < b->numel(); ++i) e[i] = b->value_as_double(i);
        run_pow<T>(ctx, *a, e.data(), *z, plan);
      }
      return Status();
    }
  });
}

/// Mod with fmod=0: floored remainder, result has the divisor's sign (Python's %).
struct FlooredModOp {
  template <class T> static constexpr bool accepts = kIsInt<T>;
  template <class C> C operator()(C a, C b) const {
    C r = safe_rem(a, b);
    if constexpr (std::is_signed_v<C>) {
      if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<C>(r + b);
    }
    return r;
  }
};

/// Mod with fmod=1: truncated remainder, result has the dividend's sign (C fmod).
struct TruncModOp {
  template <class T> static constexpr bool accepts = kIsNumeric<T>;
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) return std::fmod(a, b);
    else return safe_rem(a, b);
  }
};

Status mod_kernel(KernelContext& ctx) {
  const int64_t fmod = ctx.node().attr_int("fmod", 0);
  if (fmod != 0 && fmod != 1) return ctx.fail("attribute fmod must be 0 or 1, got {}", fmod);
  TJ_RETURN_IF_ERROR(check_integer_divisor(ctx));
  if (fmod == 1) return binary_kernel(ctx, TruncModOp{});
  TJ_ASSIGN_OR_RETURN(const Tensor* a, ctx.required_input(0));
  if (dtype_is_float(a->dtype()))
    return ctx.fail("fmod must be 1 for floating-point inputs (got fmod=0, dtype {})",
                    dtype_name(a->dtype()));
  return binary_kernel(ctx, FlooredModOp{});
}

struct ShiftOp {
  template <class T> static constexpr bool accepts = kIsInt<T> && std::is_unsigned_v<T>;
  bool left = true;
  template <class C> C operator()(C a, C b) const {
    if (b >= static_cast<C>(sizeof(C) * 8)) return C(0);
    return left ? static_cast<C>(a << b) : static_cast<C>(a >> b);
  }
};

Status bit_shift_kernel(KernelContext& ctx) {
  const std::string dir = ctx.node().attr_string("direction", "");
  ShiftOp op;
  if (dir == "LEFT") op.left = true;
  else if (dir == "RIGHT") op.left = false;
  else return ctx.fail("attribute direction must be \"LEFT\" or \"RIGHT\", got \"{}\"", dir);
  return binary_kernel(ctx, op);
}

}  // namespace

void register_pow_mod_kernels(KernelRegistry& r) {
  r.add(ir::OpKind::Pow, pow_kernel);
  r.add(ir::OpKind::Mod, mod_kernel);
  r.add(ir::OpKind::BitShift, bit_shift_kernel);
}

}  // namespace tierjit::interp
