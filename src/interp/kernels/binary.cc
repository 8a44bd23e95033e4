// Tier-0 kernels: binary arithmetic, logic and comparisons with numpy broadcasting (ONNX opsets
// 1..17): Add Sub Mul Div, And Or Xor, Equal Greater GreaterOrEqual Less LessOrEqual.
// Both inputs share one dtype; comparisons and logic produce bool. Integers wrap on overflow;
// integer division truncates toward zero, INT_MIN / -1 = INT_MIN (no trap) and a zero integer
// divisor is an error (see ir/graph.h). Comparisons involving NaN are false (Equal(NaN, NaN) = false).
#include "interp/kernels/elementwise_util.h"

namespace tierjit::interp {
namespace {

using namespace ew;

struct AddOp {
  template <class T> static constexpr bool accepts = kIsNumeric<T>;
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) return wrap_add(a, b);
    else return a + b;
  }
};
struct SubOp {
  template <class T> static constexpr bool accepts = kIsNumeric<T>;
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) return wrap_sub(a, b);
    else return a - b;
  }
};
struct MulOp {
  template <class T> static constexpr bool accepts = kIsNumeric<T>;
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) return wrap_mul(a, b);
    else return a * b;
  }
};
struct DivOp {
  template <class T> static constexpr bool accepts = kIsNumeric<T>;
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) return safe_div(a, b);
    else return a / b;
  }
};

struct AndOp {
  template <class T> static constexpr bool accepts = kIsBool<T>;
  bool operator()(bool a, bool b) const { return a && b; }
};
struct OrOp {
  template <class T> static constexpr bool accepts = kIsBool<T>;
  bool operator()(bool a, bool b) const { return a || b; }
};
struct XorOp {
  template <class T> static constexpr bool accepts = kIsBool<T>;
  bool operator()(bool a, bool b) const { return a != b; }
};

struct EqualOp {
  template <class T> static constexpr bool accepts = kIsNumeric<T> || kIsBool<T>;
  template <class C> bool operator()(C a, C b) const { return a == b; }
};
struct GreaterOp {
  template <class T> static constexpr bool accepts = kIsNumeric<T>;
  template <class C> bool operator()(C a, C b) const { return a > b; }
};
struct GreaterOrEqualOp {
  template <class T> static constexpr bool accepts = kIsNumeric<T>;
  template <class C> bool operator()(C a, C b) const { return a >= b; }
};
struct LessOp {
  template <class T> static constexpr bool accepts = kIsNumeric<T>;
  template <class C> bool operator()(C a, C b) const { return a < b; }
};
struct LessOrEqualOp {
  template <class T> static constexpr bool accepts = kIsNumeric<T>;
  template <class C> bool operator()(C a, C b) const { return a <= b; }
};

template <class Op>
Status arith(KernelContext& ctx) {
  return binary_kernel(ctx, Op{});
}
Status div_kernel(KernelContext& ctx) {
  TJ_RETURN_IF_ERROR(check_integer_divisor(ctx));
  return binary_kernel(ctx, DivOp{});
}
template <class Op>
Status to_bool(KernelContext& ctx) {
  return binary_kernel<Op, OutKind::kBool>(ctx, Op{});
}

}  // namespace

void register_binary_kernels(KernelRegistry& r) {
  using ir::OpKind;
  r.add(OpKind::Add, arith<AddOp>);
  r.add(OpKind::Sub, arith<SubOp>);
  r.add(OpKind::Mul, arith<MulOp>);
  r.add(OpKind::Div, div_kernel);
  r.add(OpKind::And, arith<AndOp>);
  r.add(OpKind::Or, arith<OrOp>);
  r.add(OpKind::Xor, arith<XorOp>);
  r.add(OpKind::Equal, to_bool<EqualOp>);
  r.add(OpKind::Greater, to_bool<GreaterOp>);
  r.add(OpKind::GreaterOrEqual, to_bool<GreaterOrEqualOp>);
  r.add(OpKind::Less, to_bool<LessOp>);
  r.add(OpKind::LessOrEqual, to_bool<LessOrEqualOp>);
}

}  // namespace tierjit::interp
