// Tier-0 kernels: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (ONNX opsets 12, 13).
// Both view the scores as [N, C, D] (D = product of the trailing dims) and the targets as [N, D];
// the per-element loss is -weight[t] * logp[n, t, d], 0 where t == ignore_index. Reductions:
// "none" (target shape), "sum", "mean" = sum(loss) / sum(weights of non-ignored elements)
// (0/0 = NaN when every element is ignored, as the ONNX reference). Sums accumulate in double.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "interp/kernels/reduce_util.h"

namespace tierjit::interp {
namespace {

enum class Reduction { kNone, kSum, kMean };

/// Attributes and checked operands shared by both losses.
struct LossSetup {
  int64_t n = 0, c = 0, d = 1;
  Shape target_shape;
  std::vector<int64_t> target;
  std::vector<double> weight;  // empty: all 1
  bool has_ignore = false;
  int64_t ignore_index = 0;
  Reduction reduction = Reduction::kMean;
};

/// Checks scores [N, C, d1..dk] (rank >= 2), target [N, d1..dk] integer, weight [C] (optional,
/// input 2), reads `reduction` and `ignore_index`, and validates every target value.
Expected<LossSetup> setup_loss(const KernelContext& ctx, const Tensor& scores,
                               const char* scores_name, const char* target_name) {
  LossSetup s;
  if (scores.rank() < 2)
    return ctx.fail("input 0 '{}' must have rank >= 2 ([N, C, ...]), got shape {}", scores_name,
                    shape_to_string(scores.shape()));
  TJ_ASSIGN_OR_RETURN(const Tensor* target, ctx.required_input(1));
  s.n = scores.dim(0);
  s.c = scores.dim(1);
  Shape expect{s.n};
  for (int64_t k = 2; k < scores.rank(); ++k) {
    expect.push_back(scores.dim(k));
    s.d *= scores.dim(k);
  }
  if (target->shape() != expect)
    return ctx.fail("input 1 '{}' must have shape {} to match input 0 {}, got {}", target_name,
                    shape_to_string(expect), shape_to_string(scores.shape()),
                    shape_to_string(target->shape()));
  s.target_shape = expect;
  TJ_ASSIGN_OR_RETURN(s.target, read_int64s(ctx, *target, "input 1"));
  if (const Tensor* w = ctx.input(2)) {
    if (w->rank() != 1 || w->dim(0) != s.c)
      return ctx.fail("input 2 'weight' must have shape [{}] (C), got {}", s.c,
                      shape_to_string(w->shape()));
    if (!dtype_is_float(w->dtype()))
      return ctx.fail("input 2 'weight' must be float, got {}", dtype_name(w->dtype()));
    s.weight = read_doubles(*w);
  }
  const std::string red = ctx.node().attr_string("reduction", "mean");
  if (red == "none")
    s.reduction = Reduction::kNone;
  else if (red == "sum")
    s.reduction = Reduction::kSum;
  else if (red == "mean")
    s.reduction = Reduction::kMean;
  else
    return ctx.fail("attribute reduction must be none, sum or mean, got '{}'", red);
  s.has_ignore = ctx.node().has_attr("ignore_index");
  s.ignore_index = ctx.node().attr_int("ignore_index", 0);
  for (size_t i = 0; i < s.target.size(); ++i) {
    int64_t t = s.target[i];
    if (s.has_ignore && t == s.ignore_index) continue;
    if (t < 0 || t >= s.c)
      return ctx.fail("input 1 '{}': element {} is {}, out of range [0, {})", target_name, i, t,
                      s.c);
  }
  return s;
}

/// Writes output 0 from log-probabilities logp viewed as [N, C, D].
template <class T, class C>
Status write_loss(KernelContext& ctx, const LossSetup& s, const C* logp) {
  const int64_t nd = s.n * s.d;
  Shape out_shape = s.reduction == Reduction::kNone ? s.target_shape : Shape{};
  TJ_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, ctx.input(0)->dtype(), out_shape));
  T* yp = y->data<T>();
  double loss_sum = 0, weight_sum = 0;
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t n = i / s.d, d = i % s.d, t = s.target[i];
    double l = 0, w = 0;
    if (!(s.has_ignore && t == s.ignore_index)) {
      w = s.weight.empty() ? 1.0 : s.weight[t];
      l = -static_cast<double>(logp[(n * s.c + t) * s.d + d]) * w;
    }
    if (s.reduction == Reduction::kNone) yp[i] = store_as<T>(static_cast<C>(l));
    loss_sum += l;
    weight_sum += w;
  }
  if (s.reduction == Reduction::kSum)
    yp[0] = store_as<T>(loss_sum);
  else if (s.reduction == Reduction::kMean)
    yp[0] = store_as<T>(loss_sum / weight_sum);
  return Status();
}

/// NegativeLogLikelihoodLoss: input 0 'input' float [N, C, d1..dk] (log-probabilities),
/// input 1 'target' int32/int64 [N, d1..dk], input 2 'weight' [C] optional; attributes
/// reduction (default "mean"), ignore_index (optional). Output: loss, input's dtype.
/// Errors: shapes that do not match, a target outside [0, C) that is not ignore_index.
Status nll_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  return dispatch_float(ctx, x->dtype(), "input 0 'input'", [&](auto tag) -> Status {
    using T = decltype(tag);
    using C = ComputeOf<T>;
    TJ_ASSIGN_OR_RETURN(LossSetup s, setup_loss(ctx, *x, "input", "target"));
    if constexpr (std::is_same_v<T, C>) {
      return write_loss<T, C>(ctx, s, x->data<T>());
    } else {
      std::vector<C> logp(static_cast<size_t>(x->numel()));
      for (int64_t i = 0; i < x->numel(); ++i) logp[i] = load_as<C>(x->data<T>()[i]);
      return write_loss<T, C>(ctx, s, logp.data());
    }
  });
}

/// SoftmaxCrossEntropyLoss: input 0 'scores' float [N, C, d1..dk], input 1 'labels' int32/int64
/// [N, d1..dk], input 2 'weights' [C] optional; attributes reduction (default "mean"),
/// ignore_index (optional). Outputs: loss; optional log_prob = LogSoftmax(scores, axis 1).
Status sce_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  return dispatch_float(ctx, x->dtype(), "input 0 'scores'", [&](auto tag) -> Status {
    using T = decltype(tag);
    using C = ComputeOf<T>;
    TJ_ASSIGN_OR_RETURN(LossSetup s, setup_loss(ctx, *x, "scores", "labels"));
    std::vector<C> logp(static_cast<size_t>(x->numel()));
    const T* xp = x->data<T>();
    for (int64_t n = 0; n < s.n; ++n) {
      for (int64_t d = 0; d < s.d; ++d) {
        const int64_t base = n * s.c * s.d + d;
        C m = -std::numeric_limits<C>::infinity();
        for (int64_t c = 0; c < s.c; ++c) {
          C v = load_as<C>(xp[base + c * s.d]);
          if (v > m || std::isnan(v)) m = v;
        }
        double sum = 0;
        for (int64_t c = 0; c < s.c; ++c) sum += std::exp(load_as<C>(xp[base + c * s.d]) - m);
        const C log_sum =
            static_cast<C>(std::log(sum));  // (x - m) - log_sum keeps precision at large m
        for (int64_t c = 0; c < s.c; ++c)
          logp[base + c * s.d] = (load_as<C>(xp[base + c * s.d]) - m) - log_sum;
      }
    }
    if (ctx.num_outputs() > 1 && ctx.wants_output(1)) {
      TJ_ASSIGN_OR_RETURN(Tensor * lp, ctx.output(1, x->dtype(), x->shape()));
      T* lpp = lp->data<T>();
      for (size_t i = 0; i < logp.size(); ++i) lpp[i] = store_as<T>(logp[i]);
    }
    return write_loss<T, C>(ctx, s, logp.data());
  });
}

}  // namespace

void register_loss_ops(KernelRegistry& r) {
  r.add(ir::OpKind::NegativeLogLikelihoodLoss, nll_kernel);
  r.add(ir::OpKind::SoftmaxCrossEntropyLoss, sce_kernel);
}

}  // namespace tierjit::interp
