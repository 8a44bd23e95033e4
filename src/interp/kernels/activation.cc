// Tier-0 kernels: activations (ONNX opsets 1..17): Relu LeakyRelu Elu Selu Celu HardSigmoid
// HardSwish Softplus Softsign ThresholdedRelu Shrink, and PRelu (slope broadcast
// unidirectionally to X). Attributes and defaults as in the spec; float16/bfloat16 compute in
// float32. Softplus uses an overflow-free form for large |x|. Sigmoid: unary.cc (vec_math.h).
#include "interp/kernels/elementwise_util.h"

namespace tierjit::interp {
namespace {

using namespace ew;

/// Relu-14 also takes signed integers.
struct ReluOp {
  template <class T> static constexpr bool accepts = kIsFloat<T> || kIsSignedInt<T>;
  template <class C> C operator()(C x) const { return x > C(0) ? x : C(0); }
};

/// Float activation with up to two float attributes (alpha, beta) read from the node.
struct LeakyReluOp {
  template <class T> static constexpr bool accepts = kIsFloat<T>;
  float alpha;
  explicit LeakyReluOp(const ir::Node& n) : alpha(n.attr_float("alpha", 0.01f)) {}
  template <class C> C operator()(C x) const { return x < C(0) ? C(alpha) * x : x; }
};

struct EluOp {
  template <class T> static constexpr bool accepts = kIsFloat<T>;
  float alpha;
  explicit EluOp(const ir::Node& n) : alpha(n.attr_float("alpha", 1.0f)) {}
  template <class C> C operator()(C x) const { return x < C(0) ? C(alpha) * std::expm1(x) : x; }
};

struct SeluOp {
  template <class T> static constexpr bool accepts = kIsFloat<T>;
  float alpha, gamma;
  explicit SeluOp(const ir::Node& n)
      : alpha(n.attr_float("alpha", 1.67326319217681884765625f)),
        gamma(n.attr_float("gamma", 1.05070102214813232421875f)) {}
  template <class C> C operator()(C x) const {
    return C(gamma) * (x > C(0) ? x : C(alpha) * std::expm1(x));
  }
};

/// Celu-12: max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).
struct CeluOp {
  template <class T> static constexpr bool accepts = kIsFloat<T>;
  float alpha;
  explicit CeluOp(const ir::Node& n) : alpha(n.attr_float("alpha", 1.0f)) {}
  template <class C> C operator()(C x) const {
    return x > C(0) ? x : C(alpha) * std::expm1(x / C(alpha));
  }
};

struct HardSigmoidOp {
  template <class T> static constexpr bool accepts = kIsFloat<T>;
  float alpha, beta;
  explicit HardSigmoidOp(const ir::Node& n)
      : alpha(n.attr_float("alpha", 0.2f)), beta(n.attr_float("beta", 0.5f)) {}
  template <class C> C operator()(C x) const {
    C v = C(alpha) * x + C(beta);
    return v < C(0) ? C(0) : (v > C(1) ? C(1) : v);
  }
};

/// HardSwish-14: x * max(0, min(1, x / 6 + 1 / 2)).
struct HardSwishOp {
  template <class T> static constexpr bool accepts = kIsFloat<T>;
  template <class C> C operator()(C x) const {
    C v = x / C(6) + C(0.5);
    v = v < C(0) ? C(0) : (v > C(1) ? C(1) : v);
    return x * v;
  }
};

/// Softplus: log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)).
struct SoftplusOp {
  template <class T> static constexpr bool accepts = kIsFloat<T>;
  template <class C> C operator()(C x) const {
    return (x > C(0) ? x : C(0)) + std::log1p(std::exp(-std::fabs(x)));
  }
};

struct SoftsignOp {
  template <class T> static constexpr bool accepts = kIsFloat<T>;
  template <class C> C operator()(C x) const { return x / (C(1) + std::fabs(x)); }
};

struct ThresholdedReluOp {
  template <class T> static constexpr bool accepts = kIsFloat<T>;
  float alpha;
  explicit ThresholdedReluOp(const ir::Node& n) : alpha(n.attr_float("alpha", 1.0f)) {}
  template <class C> C operator()(C x) const { return x > C(alpha) ? x : C(0); }
};

/// Shrink-9 (all numeric types): x < -lambd ? x + bias : (x > lambd ? x - bias : 0).
/// Computed in double for integers so lambd/bias keep their fraction, then converted back.
struct ShrinkOp {
  template <class T> static constexpr bool accepts = kIsNumeric<T>;
  float lambd, bias;
  explicit ShrinkOp(const ir::Node& n)
      : lambd(n.attr_float("lambd", 0.5f)), bias(n.attr_float("bias", 0.0f)) {}
  template <class C> C operator()(C x) const {
    using D = std::conditional_t<std::is_floating_point_v<C>, C, double>;
    D v = static_cast<D>(x);
    if (v < -D(lambd)) return static_cast<C>(v + D(bias));
    if (v > D(lambd)) return static_cast<C>(v - D(bias));
    return C(0);
  }
};

template <class Op>
Status activation(KernelContext& ctx) {
  if constexpr (std::is_constructible_v<Op, const ir::Node&>) return unary_kernel(ctx, Op(ctx.node()));
  else return unary_kernel(ctx, Op{});
}

/// PRelu-16 also takes integers: y = x < 0 ? slope * x : x.
struct PReluOp {
  template <class T> static constexpr bool accepts = kIsNumeric<T>;
  template <class C> C operator()(C x, C slope) const {
    if constexpr (std::is_integral_v<C>) return x < C(0) ? wrap_mul(slope, x) : x;
    else return x < C(0) ? slope * x : x;
  }
};

/// PRelu-7+: slope broadcasts (numpy, unidirectionally) to X. PRelu-1/6: a slope of C values
/// applies per channel (axis 1), so a rank-1 slope is viewed as [C, 1, ..., 1].
Status prelu(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* slope_in, ctx.required_input(1));
  Tensor channel_view;
  const Tensor* slope = slope_in;
  if (ctx.node().opset() < 7 && slope->rank() == 1 && slope->numel() != 1 && x->rank() >= 2 &&
      slope->numel() == x->dim(1)) {
    Shape s(static_cast<size_t>(x->rank() - 1), 1);
    s[0] = slope->numel();
    channel_view = slope->reshaped(s);
    slope = &channel_view;
  }
  auto out = broadcast_shapes(x->shape(), slope->shape());
  if (!out || *out != x->shape())
    return ctx.fail("input 1 'slope' shape {} does not broadcast to X shape {}",
                    shape_to_string(slope->shape()), shape_to_string(x->shape()));
  return binary_kernel_on(ctx, x, slope, PReluOp{});
}

}  // namespace

void register_activation_kernels(KernelRegistry& r) {
  using ir::OpKind;
  r.add(OpKind::Relu, activation<ReluOp>);
  r.add(OpKind::LeakyRelu, activation<LeakyReluOp>);
  r.add(OpKind::Elu, activation<EluOp>);
  r.add(OpKind::Selu, activation<SeluOp>);
  r.add(OpKind::Celu, activation<CeluOp>);
  r.add(OpKind::HardSigmoid, activation<HardSigmoidOp>);
  r.add(OpKind::HardSwish, activation<HardSwishOp>);
  r.add(OpKind::Softplus, activation<SoftplusOp>);
  r.add(OpKind::Softsign, activation<SoftsignOp>);
  r.add(OpKind::ThresholdedRelu, activation<ThresholdedReluOp>);
  r.add(OpKind::Shrink, activation<ShrinkOp>);
  r.add(OpKind::PRelu, prelu);
}

}  // namespace tierjit::interp
