// Tier-0 kernels: random generators. RandomNormal/RandomUniform (opset 1) and their *Like forms,
// Bernoulli (opset 15), Multinomial (opset 7). A `seed` attribute makes the output repeatable
// (std::mt19937_64 seeded with it); without one each call draws from std::random_device. Values
// cannot match other runtimes bit for bit; they follow the spec's distributions, shapes, dtypes.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "interp/kernels/common.h"
#include "interp/kernels/misc_internal.h"

namespace tierjit::interp {

namespace {

std::mt19937_64 make_engine(const KernelContext& ctx) {
  if (ctx.node().has_attr("seed")) {
    const float s = ctx.node().attr_float("seed", 0.0f);
    uint32_t bits;
    std::memcpy(&bits, &s, sizeof bits);
    return std::mt19937_64(bits);
  }
  std::random_device rd;
  return std::mt19937_64((static_cast<uint64_t>(rd()) << 32) ^ rd());
}

// Stores generated doubles into a numeric tensor (float types rounded, others cast).
Status store(const KernelContext& ctx, const std::vector<double>& v, Tensor& out) {
  return dispatch_all(ctx, out.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    T* o = out.data<T>();
    for (size_t i = 0; i < v.size(); ++i) {
      if constexpr (std::is_same_v<T, Half>)
        o[i] = Half{support::float_to_half(static_cast<float>(v[i]))};
      else if constexpr (std::is_same_v<T, BFloat16>)
        o[i] = BFloat16{support::float_to_bfloat16(static_cast<float>(v[i]))};
      else if constexpr (std::is_same_v<T, bool>)
        o[i] = v[i] != 0.0;
      else
        o[i] = static_cast<T>(v[i]);
    }
    return Status();
  });
}

Expected<DType> float_dtype_attr(const KernelContext& ctx, DType dflt) {
  const int64_t code = ctx.node().attr_int("dtype", static_cast<int64_t>(dflt));
  if (!dtype_is_valid(static_cast<int32_t>(code)) || !dtype_is_float(static_cast<DType>(code)))
    return ctx.fail("attribute 'dtype' {} must be a float type", code);
  return static_cast<DType>(code);
}

// kNormal: attributes mean (0), scale (1); otherwise low (0), high (1). kLike: shape and default
// dtype from input 0, else attribute `shape` (required) and dtype (default float).
template <bool kNormal, bool kLike>
Status random_kernel(KernelContext& ctx) {
  Shape shape;
  DType dflt = DType::kFloat32;
  if constexpr (kLike) {
    TJ_ASSIGN_OR_RETURN(const Tensor* in, ctx.required_input(0));
    shape = in->shape();
    dflt = dtype_is_float(in->dtype()) ? in->dtype() : DType::kFloat32;
  } else {
    if (!ctx.node().has_attr("shape")) return ctx.fail("attribute 'shape' is required");
    shape = ctx.node().attr_ints("shape");
    for (int64_t d : shape)
      if (d < 0) return ctx.fail("attribute 'shape' {} has a negative dim", shape_to_string(shape));
  }
  TJ_ASSIGN_OR_RETURN(DType dt, float_dtype_attr(ctx, dflt));
  TJ_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, dt, shape));
  std::mt19937_64 eng = make_engine(ctx);
  std::vector<double> v(static_cast<size_t>(out->numel()));
  if constexpr (kNormal) {
    std::normal_distribution<double> dist(ctx.node().attr_float("mean", 0.0f),
                                          ctx.node().attr_float("scale", 1.0f));
    for (double& x : v) x = dist(eng);
  } else {
    const double lo = ctx.node().attr_float("low", 0.0f), hi = ctx.node().attr_float("high", 1.0f);
    if (!(lo <= hi)) return ctx.fail("attribute 'low' {} exceeds 'high' {}", lo, hi);
    std::uniform_real_distribution<double> dist(lo, hi);
    for (double& x : v) x = dist(eng);
  }
  return store(ctx, v, *out);
}

// Bernoulli: input float probabilities in [0, 1]; output (attribute dtype, default the input's)
// 1 with probability p, else 0.
Status bernoulli_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* p, ctx.required_input(0));
  if (!dtype_is_float(p->dtype()))
    return ctx.fail("input 0 must be a float tensor, got {}", dtype_name(p->dtype()));
  const int64_t code = ctx.node().attr_int("dtype", static_cast<int64_t>(p->dtype()));
  if (!dtype_is_valid(static_cast<int32_t>(code)) || code == static_cast<int64_t>(DType::kString))
    return ctx.fail("attribute 'dtype' {} is not a numeric type", code);
  TJ_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, static_cast<DType>(code), p->shape()));
  std::mt19937_64 eng = make_engine(ctx);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> v(static_cast<size_t>(p->numel()));
  for (int64_t i = 0; i < p->numel(); ++i) {
    const double pi = p->value_as_double(i);
    if (!(pi >= 0.0 && pi <= 1.0))
      return ctx.fail("input 0: probability {} at {} is outside [0, 1]", pi, i);
    v[i] = u(eng) < pi ? 1.0 : 0.0;
  }
  return store(ctx, v, *out);
}

// Multinomial: input [batch, classes] unnormalized log-probabilities; attributes sample_size (1),
// dtype (int32 or int64, default int32). Output [batch, sample_size] class indices.
Status multinomial_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  if (!dtype_is_float(x->dtype()) || x->rank() != 2)
    return ctx.fail("input 0 must be a 2-D float tensor [batch, classes], got {} {}",
                    dtype_name(x->dtype()), shape_to_string(x->shape()));
  const int64_t samples = ctx.node().attr_int("sample_size", 1);
  if (samples < 0) return ctx.fail("attribute 'sample_size' {} is negative", samples);
  const int64_t code = ctx.node().attr_int("dtype", static_cast<int64_t>(DType::kInt32));
  if (code != static_cast<int64_t>(DType::kInt32) && code != static_cast<int64_t>(DType::kInt64))
    return ctx.fail("attribute 'dtype' {} must be int32 or int64", code);
  const int64_t batch = x->dim(0), classes = x->dim(1);
  if (classes == 0 && samples > 0) return ctx.fail("input 0 has no classes to sample from");
  TJ_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, static_cast<DType>(code), {batch, samples}));
  std::mt19937_64 eng = make_engine(ctx);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> cdf(static_cast<size_t>(classes)), v(static_cast<size_t>(batch * samples));
  for (int64_t b = 0; b < batch; ++b) {
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t c = 0; c < classes; ++c) mx = std::max(mx, x->value_as_double(b * classes + c));
    double acc = 0;
    for (int64_t c = 0; c < classes; ++c) {
      acc += std::exp(x->value_as_double(b * classes + c) - mx);
      cdf[c] = acc;
    }
    for (int64_t s = 0; s < samples; ++s) {
      const double r = u(eng) * acc;
      int64_t c = static_cast<int64_t>(std::upper_bound(cdf.begin(), cdf.end(), r) - cdf.begin());
      v[b * samples + s] = static_cast<double>(std::min(c, classes - 1));
    }
  }
  return store(ctx, v, *out);
}

}  // namespace

void register_random_kernels(KernelRegistry& r) {
  r.add(ir::OpKind::RandomNormal, random_kernel<true, false>);
  r.add(ir::OpKind::RandomNormalLike, random_kernel<true, true>);
  r.add(ir::OpKind::RandomUniform, random_kernel<false, false>);
  r.add(ir::OpKind::RandomUniformLike, random_kernel<false, true>);
  r.add(ir::OpKind::Bernoulli, bernoulli_kernel);
  r.add(ir::OpKind::Multinomial, multinomial_kernel);
}

}  // namespace tierjit::interp
