// Tier-0 kernels that order elements: TopK (opsets 1, 10, 11) and Unique (opset 11). Ties are
// broken by the lower index, so results are deterministic; NaN sorts as the largest value.
// 16-bit floats are compared as float32; strings (Unique) compare bytewise.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "interp/kernels/common.h"
#include "interp/kernels/tensor_internal.h"

namespace tierjit::interp {

namespace {

template <class T>
auto key_of(const T& v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return to_float(v);
  else if constexpr (std::is_same_v<T, bool>) return static_cast<int>(v);
  else return v;
}

// Strict "a is greater than b" with NaN greatest.
template <class K>
bool greater_key(const K& a, const K& b) {
  if constexpr (std::is_floating_point_v<K>) {
    if (std::isnan(a)) return !std::isnan(b);
    if (std::isnan(b)) return false;
  }
  return a > b;
}

template <class T>
Status top_k_typed(KernelContext& ctx, const Tensor& in, int64_t axis, int64_t k, bool largest) {
  Shape os = in.shape();
  os[axis] = k;
  TJ_ASSIGN_OR_RETURN(Tensor* values, ctx.output(0, in.dtype(), os));
  Tensor* indices = nullptr;
  if (ctx.wants_output(1)) { TJ_ASSIGN_OR_RETURN(indices, ctx.output(1, DType::kInt64, os)); }
  const int64_t n = in.dim(axis);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= in.dim(d);
  for (int64_t d = axis + 1; d < in.rank(); ++d) inner *= in.dim(d);
  const T* src = static_cast<const T*>(in.raw_data());
  T* vdst = static_cast<T*>(values->raw_data());
  using K = decltype(key_of(src[0]));
  std::vector<std::pair<K, int64_t>> buf(static_cast<size_t>(n));
  auto before = [largest](const std::pair<K, int64_t>& a, const std::pair<K, int64_t>& b) {
    bool gt = largest ? greater_key(a.first, b.first) : greater_key(b.first, a.first);
    bool lt = largest ? greater_key(b.first, a.first) : greater_key(a.first, b.first);
    return gt || (!lt && a.second < b.second);
  };
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * n * inner + i;
      for (int64_t j = 0; j < n; ++j) buf[j] = {key_of(src[base + j * inner]), j};
      std::partial_sort(buf.begin(), buf.begin() + k, buf.end(), before);
      const int64_t obase = o * k * inner + i;
      for (int64_t j = 0; j < k; ++j) {
        vdst[obase + j * inner] = src[base + buf[j].second * inner];
        if (indices) indices->data<int64_t>()[obase + j * inner] = buf[j].second;
      }
    }
  return Status();
}

template <class T>
bool less_elem(const T& a, const T& b) {
  if constexpr (std::is_same_v<T, std::string>) return a < b;
  else return greater_key(key_of(b), key_of(a));
}

template <class T>
Status unique_typed(KernelContext& ctx, const Tensor& in, bool has_axis, int64_t axis, bool sorted) {
  Tensor src_t = has_axis ? in : in.reshaped({in.numel()});
  if (!has_axis) axis = 0;
  const int64_t n = src_t.dim(axis);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= src_t.dim(d);
  for (int64_t d = axis + 1; d < src_t.rank(); ++d) inner *= src_t.dim(d);
  const int64_t len = outer * inner;
  const T* src = static_cast<const T*>(src_t.raw_data());
  // Slice i gathered contiguously: buf[i * len + o * inner + j] = src[(o * n + i) * inner + j].
  std::vector<T> buf(static_cast<size_t>(n * len));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < inner; ++j) buf[i * len + o * inner + j] = src[(o * n + i) * inner + j];
  auto slice_less = [&](int64_t a, int64_t b) {
    return std::lexicographical_compare(buf.begin() + a * len, buf.begin() + (a + 1) * len,
                                        buf.begin() + b * len, buf.begin() + (b + 1) * len, less_elem<T>);
  };
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), slice_less);
  // Groups of equal slices: first occurrence (stable sort puts it first) and count.
  std::vector<int64_t> first, count, group_of(static_cast<size_t>(n));
  for (int64_t p = 0; p < n; ++p) {
    if (p == 0 || slice_less(order[p - 1], order[p])) {
      first.push_back(order[p]);
      count.push_back(0);
    }
    ++count.back();
    group_of[order[p]] = static_cast<int64_t>(first.size()) - 1;
  }
  const int64_t g = static_cast<int64_t>(first.size());
  std::vector<int64_t> rank_of(static_cast<size_t>(g));  // output position of each group
  std::iota(rank_of.begin(), rank_of.end(), 0);
  if (!sorted) {
    std::vector<int64_t> by_first(static_cast<size_t>(g));
    std::iota(by_first.begin(), by_first.end(), 0);
    std::sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) { return first[a] < first[b]; });
    for (int64_t p = 0; p < g; ++p) rank_of[by_first[p]] = p;
  }
  Shape ys = src_t.shape();
  ys[axis] = g;
  TJ_ASSIGN_OR_RETURN(Tensor* y, ctx.output(0, in.dtype(), ys));
  T* yd = static_cast<T*>(y->raw_data());
  std::vector<int64_t> out_first(static_cast<size_t>(g)), out_count(static_cast<size_t>(g));
  for (int64_t gi = 0; gi < g; ++gi) {
    const int64_t p = rank_of[gi];
    out_first[p] = first[gi];
    out_count[p] = count[gi];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < inner; ++j) yd[(o * g + p) * inner + j] = buf[first[gi] * len + o * inner + j];
  }
  if (ctx.wants_output(1)) ctx.set_output(1, Tensor::from_vector<int64_t>({g}, out_first));
  if (ctx.wants_output(2)) {
    std::vector<int64_t> inv(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) inv[i] = rank_of[group_of[i]];
    ctx.set_output(2, Tensor::from_vector<int64_t>({n}, inv));
  }
  if (ctx.wants_output(3)) ctx.set_output(3, Tensor::from_vector<int64_t>({g}, out_count));
  return Status();
}

}  // namespace

// TopK (opsets 1, 10, 11): the k largest (or smallest, attribute largest=0 from opset 11)
// elements along axis (default -1) and their int64 indices, in order (sorted=0 is also served
// sorted). k from attribute (opset 1) or input 1 (1-D, one int64). Error: k < 0 or k > dim.
Status top_k_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* in, ctx.required_input(0));
  if (in->rank() == 0) return ctx.fail("input 0 is a scalar; TopK needs rank >= 1");
  TJ_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, ctx.node().attr_int("axis", -1), in->rank()));
  int64_t k;
  if (ctx.node().opset() < 10) {
    if (!ctx.node().has_attr("k")) return ctx.fail("attribute 'k' is required");
    k = ctx.node().attr_int("k", 0);
  } else {
    TJ_ASSIGN_OR_RETURN(const Tensor* kt, ctx.required_input(1));
    TJ_ASSIGN_OR_RETURN(std::vector<int64_t> kv, read_int64s(ctx, *kt, "input 1 'K'"));
    if (kv.size() != 1) return ctx.fail("input 1 'K' must hold one value, got {}", kv.size());
    k = kv[0];
  }
  if (k < 0 || k > in->dim(axis))
    return ctx.fail("k = {} is out of range [0, {}] for axis {} of shape {}", k, in->dim(axis), axis,
                    shape_to_string(in->shape()));
  const bool largest = ctx.node().opset() < 11 || ctx.node().attr_int("largest", 1) != 0;
  return dispatch_all(ctx, in->dtype(), [&](auto tag) -> Status {
    return top_k_typed<decltype(tag)>(ctx, *in, axis, k, largest);
  });
}

// Unique (opset 11): unique elements (no axis: of the flattened input) or unique slices along
// axis; sorted (default 1) ascending, else in order of first occurrence. Outputs Y, indices (first
// occurrence), inverse_indices (per input element/slice) and counts, all int64 but Y.
Status unique_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* in, ctx.required_input(0));
  const bool has_axis = ctx.node().has_attr("axis");
  int64_t axis = 0;
  if (has_axis) {
    if (in->rank() == 0) return ctx.fail("input 0 is a scalar; Unique with an axis needs rank >= 1");
    TJ_ASSIGN_OR_RETURN(axis, normalize_axis(ctx, ctx.node().attr_int("axis", 0), in->rank()));
  }
  const bool sorted = ctx.node().attr_int("sorted", 1) != 0;
  if (in->dtype() == DType::kString) return unique_typed<std::string>(ctx, *in, has_axis, axis, sorted);
  return dispatch_all(ctx, in->dtype(), [&](auto tag) -> Status {
    return unique_typed<decltype(tag)>(ctx, *in, has_axis, axis, sorted);
  });
}

}  // namespace tierjit::interp
