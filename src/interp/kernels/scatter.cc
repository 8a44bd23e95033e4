// Tier-0 kernels that write elements at computed positions: Scatter (opsets 9-10, the old name
// of ScatterElements), ScatterElements (11, 13, 16) and ScatterND (11, 13, 16). The output is a
// copy of data with updates written in index order (later duplicates win for reduction "none")
// or combined by the `reduction` attribute (add, mul; max, min of opset 18). Indices are checked
// before any write.
#include <algorithm>

#include "interp/kernels/common.h"
#include "interp/kernels/tensor_internal.h"

namespace tierjit::interp {

namespace {

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

Expected<Reduction> read_reduction(const KernelContext& ctx) {
  std::string s = ctx.node().attr_string("reduction", "none");
  if (s == "none") return Reduction::kNone;
  if (s == "add") return Reduction::kAdd;
  if (s == "mul") return Reduction::kMul;
  if (s == "max") return Reduction::kMax;
  if (s == "min") return Reduction::kMin;
  return ctx.fail("attribute 'reduction' must be none, add, mul, max or min, got '{}'", s);
}

template <class T>
T combine(T a, T b, Reduction red) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    float x = to_float(a), y = to_float(b), z = 0;
    switch (red) {
      case Reduction::kAdd: z = x + y; break;
      case Reduction::kMul: z = x * y; break;
      case Reduction::kMax: z = std::max(x, y); break;
      case Reduction::kMin: z = std::min(x, y); break;
      case Reduction::kNone: z = y; break;
    }
    if constexpr (std::is_same_v<T, Half>) return T{support::float_to_half(z)};
    else return T{support::float_to_bfloat16(z)};
  } else if constexpr (std::is_same_v<T, bool>) {
    switch (red) {
      case Reduction::kAdd: case Reduction::kMax: return a || b;
      case Reduction::kMul: case Reduction::kMin: return a && b;
      case Reduction::kNone: return b;
    }
    return b;
  } else {
    switch (red) {
      case Reduction::kAdd: return static_cast<T>(a + b);
      case Reduction::kMul: return static_cast<T>(a * b);
      case Reduction::kMax: return std::max(a, b);
      case Reduction::kMin: return std::min(a, b);
      case Reduction::kNone: return b;
    }
    return b;
  }
}

// out = copy of data; then out[target[i] + j] (op)= upd[i * run + j] for j < run.
Status apply_updates(KernelContext& ctx, const Tensor& data, const Tensor& updates,
                     const std::vector<int64_t>& target, int64_t run, Reduction red) {
  TJ_ASSIGN_OR_RETURN(Tensor* out, ctx.output(0, data.dtype(), data.shape()));
  if (red == Reduction::kNone || data.dtype() == DType::kString) {
    if (red != Reduction::kNone) return ctx.fail("reduction on string tensors is not supported");
    return dispatch_mover(ctx, data.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      T* dst = out->data<T>();
      const T* upd = updates.data<T>();
      copy_run(dst, data.data<T>(), data.numel());
      for (size_t i = 0; i < target.size(); ++i)
        copy_run(dst + target[i], upd + static_cast<int64_t>(i) * run, run);
      return Status();
    });
  }
  return dispatch_all(ctx, data.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    T* dst = out->data<T>();
    const T* upd = updates.data<T>();
    if (data.nbytes() > 0) std::memcpy(dst, data.raw_data(), data.nbytes());
    for (size_t i = 0; i < target.size(); ++i) {
      const T* u = upd + static_cast<int64_t>(i) * run;
      T* d = dst + target[i];
      for (int64_t j = 0; j < run; ++j) d[j] = combine<T>(d[j], u[j], red);
    }
    return Status();
  });
}

}  // namespace

// ScatterElements (opsets 11, 13, 16; Scatter 9-10): indices and updates share one shape of
// data's rank (each dim other than axis <= data's); out[i.. with i_axis = indices[i..]] =
// updates[i..]. Attribute axis (default 0); reduction from opset 16.
Status scatter_elements_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* data, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* it, ctx.required_input(1));
  TJ_ASSIGN_OR_RETURN(const Tensor* upd, ctx.required_input(2));
  TJ_ASSIGN_OR_RETURN(Reduction red, read_reduction(ctx));
  const int64_t r = data->rank();
  if (r == 0) return ctx.fail("input 0 'data' is a scalar; needs rank >= 1");
  if (it->dtype() != DType::kInt32 && it->dtype() != DType::kInt64)
    return ctx.fail("input 1 'indices' must be int32 or int64, got {}", dtype_name(it->dtype()));
  if (upd->dtype() != data->dtype())
    return ctx.fail("input 2 'updates' has dtype {}, data has {}", dtype_name(upd->dtype()), dtype_name(data->dtype()));
  if (it->shape() != upd->shape())
    return ctx.fail("input 1 'indices' shape {} differs from input 2 'updates' shape {}",
                    shape_to_string(it->shape()), shape_to_string(upd->shape()));
  TJ_ASSIGN_OR_RETURN(int64_t axis, elements_indices_axis(ctx, *data, *it));
  const std::vector<int64_t> ds = row_major_strides(data->shape());
  const int64_t n = data->dim(axis);
  std::vector<int64_t> target(static_cast<size_t>(it->numel()));
  std::vector<int64_t> pos(static_cast<size_t>(r), 0);
  for (int64_t e = 0; e < it->numel(); ++e) {
    int64_t x = it->value_as_int64(e);
    if (x < -n || x >= n) return ctx.fail("input 1 'indices': index {} out of range [{}, {})", x, -n, n);
    int64_t off = 0;
    for (int64_t d = 0; d < r; ++d) off += (d == axis ? (x < 0 ? x + n : x) : pos[d]) * ds[d];
    target[e] = off;
    for (int64_t d = r - 1; d >= 0; --d) {
      if (++pos[d] < it->dim(d)) break;
      pos[d] = 0;
    }
  }
  return apply_updates(ctx, *data, *upd, target, 1, red);
}

// ScatterND (opsets 11, 13, 16): indices [..., k] (int64, k <= rank(data)) address slices of
// data; updates shape = indices.shape[:-1] + data.shape[k:]; reduction from opset 16.
Status scatter_nd_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* data, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* it, ctx.required_input(1));
  TJ_ASSIGN_OR_RETURN(const Tensor* upd, ctx.required_input(2));
  TJ_ASSIGN_OR_RETURN(Reduction red, read_reduction(ctx));
  if (it->dtype() != DType::kInt64 && it->dtype() != DType::kInt32)
    return ctx.fail("input 1 'indices' must be int64, got {}", dtype_name(it->dtype()));
  if (upd->dtype() != data->dtype())
    return ctx.fail("input 2 'updates' has dtype {}, data has {}", dtype_name(upd->dtype()), dtype_name(data->dtype()));
  const int64_t r = data->rank(), q = it->rank();
  if (r < 1 || q < 1) return ctx.fail("data and indices need rank >= 1");
  const int64_t k = it->dim(q - 1);
  if (k > r) return ctx.fail("input 1 'indices' last dim {} exceeds rank(data) {}", k, r);
  Shape want(it->shape().begin(), it->shape().end() - 1);
  want.insert(want.end(), data->shape().begin() + k, data->shape().end());
  if (upd->shape() != want)
    return ctx.fail("input 2 'updates' shape {} must be {}", shape_to_string(upd->shape()), shape_to_string(want));
  const std::vector<int64_t> ds = row_major_strides(data->shape());
  int64_t inner = 1;
  for (int64_t d = k; d < r; ++d) inner *= data->dim(d);
  const int64_t tuples = k == 0 ? shape_numel(Shape(it->shape().begin(), it->shape().end() - 1))
                                : it->numel() / k;
  std::vector<int64_t> target(static_cast<size_t>(tuples));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = 0;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t n = data->dim(j);
      int64_t x = it->value_as_int64(t * k + j);
      if (x < -n || x >= n)
        return ctx.fail("input 1 'indices': index {} out of range [{}, {}) for data axis {}", x, -n, n, j);
      off += (x < 0 ? x + n : x) * ds[j];
    }
    target[t] = off;
  }
  return apply_updates(ctx, *data, *upd, target, inner, red);
}

}  // namespace tierjit::interp
