// Tier-0 kernels that rearrange elements: Transpose, DepthToSpace, SpaceToDepth, Concat, Split
// (ONNX default domain, opsets 1..17). Work for every dtype including strings (element mover);
// permutations go through strided_copy, whole runs through copy_run; views where no data moves.
#include <numeric>

#include "interp/kernels/common.h"
#include "interp/kernels/tensor_internal.h"

namespace tierjit::interp {

namespace {

// Output = `view` (a reshape of the input) permuted by perm, then reshaped to `final_shape`.
Status permute_reshaped(KernelContext& ctx, const Tensor& view, const std::vector<int64_t>& perm,
                        Shape final_shape) {
  Shape tshape(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) tshape[i] = view.dim(perm[i]);
  TJ_ASSIGN_OR_RETURN(Tensor* out, ctx.output(0, view.dtype(), tshape));
  TJ_RETURN_IF_ERROR(transpose_into(ctx, view, perm, *out));
  Tensor t = *out;
  ctx.set_output(0, t.reshaped(std::move(final_shape)));
  return Status();
}

Expected<int64_t> read_blocksize(const KernelContext& ctx, const Tensor& in) {
  if (in.rank() != 4)
    return ctx.fail("input 0 'input' must be 4-D [N, C, H, W], got shape {}", shape_to_string(in.shape()));
  if (!ctx.node().has_attr("blocksize")) return ctx.fail("attribute 'blocksize' is required");
  int64_t b = ctx.node().attr_int("blocksize", 0);
  if (b <= 0 || b > (int64_t{1} << 20))
    return ctx.fail("attribute 'blocksize' must be in [1, 2^20], got {}", b);
  return b;
}

}  // namespace

// Transpose (opsets 1, 13): out dim i = in dim perm[i]; perm defaults to reversed dims and must be
// a permutation of [0, rank). A permutation that only moves size-1 dims returns a view.
Status transpose_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* in, ctx.required_input(0));
  const int64_t r = in->rank();
  std::vector<int64_t> perm(static_cast<size_t>(r));
  if (ctx.node().has_attr("perm")) {
    perm = ctx.node().attr_ints("perm");
    if (static_cast<int64_t>(perm.size()) != r)
      return ctx.fail("attribute 'perm' {} has {} entries for input rank {}", shape_to_string(perm), perm.size(), r);
    std::vector<bool> seen(static_cast<size_t>(r), false);
    for (int64_t p : perm) {
      if (p < 0 || p >= r || seen[p])
        return ctx.fail("attribute 'perm' {} is not a permutation of [0, {})", shape_to_string(perm), r);
      seen[p] = true;
    }
  } else {
    for (int64_t i = 0; i < r; ++i) perm[i] = r - 1 - i;
  }
  Shape out_shape(static_cast<size_t>(r));
  for (int64_t i = 0; i < r; ++i) out_shape[i] = in->dim(perm[i]);
  // Same memory order if the dims larger than 1 keep their relative order.
  int64_t last = -1;
  bool order_kept = true;
  for (int64_t p : perm) {
    if (in->dim(p) == 1) continue;
    if (p < last) { order_kept = false; break; }
    last = p;
  }
  if (order_kept) {
    ctx.set_output(0, in->reshaped(std::move(out_shape)));
    return Status();
  }
  TJ_ASSIGN_OR_RETURN(Tensor* out, ctx.output(0, in->dtype(), out_shape));
  return transpose_into(ctx, *in, perm, *out);
}

// DepthToSpace (opsets 1, 11, 13): [N, C, H, W] -> [N, C/b², H·b, W·b] with b = blocksize; mode
// DCR (default; depth is [b, b, C/b²]) or CRD ([C/b², b, b]). C must be a multiple of b².
Status depth_to_space_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* in, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(int64_t b, read_blocksize(ctx, *in));
  const int64_t n = in->dim(0), c = in->dim(1), h = in->dim(2), w = in->dim(3);
  if (c % (b * b) != 0)
    return ctx.fail("channels {} are not a multiple of blocksize² = {}", c, b * b);
  const int64_t cb = c / (b * b);
  std::string mode = ctx.node().opset() >= 11 ? ctx.node().attr_string("mode", "DCR") : "DCR";
  Shape final_shape{n, cb, h * b, w * b};
  if (mode == "DCR")
    return permute_reshaped(ctx, in->reshaped({n, b, b, cb, h, w}), {0, 3, 4, 1, 5, 2}, final_shape);
  if (mode == "CRD")
    return permute_reshaped(ctx, in->reshaped({n, cb, b, b, h, w}), {0, 1, 4, 2, 5, 3}, final_shape);
  return ctx.fail("attribute 'mode' must be DCR or CRD, got '{}'", mode);
}

// SpaceToDepth (opsets 1, 13): [N, C, H, W] -> [N, C·b², H/b, W/b]; H and W multiples of b.
Status space_to_depth_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* in, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(int64_t b, read_blocksize(ctx, *in));
  const int64_t n = in->dim(0), c = in->dim(1), h = in->dim(2), w = in->dim(3);
  if (h % b != 0 || w % b != 0)
    return ctx.fail("spatial dims {}x{} are not multiples of blocksize {}", h, w, b);
  return permute_reshaped(ctx, in->reshaped({n, c, h / b, b, w / b, b}), {0, 3, 5, 1, 2, 4},
                          {n, c * b * b, h / b, w / b});
}

// Concat (opsets 1, 4, 11, 13): joins the inputs along `axis` (default 1 in opset 1, required
// after; negative from 11). All inputs share dtype, rank and every dim but axis; size 0 allowed.
Status concat_kernel(KernelContext& ctx) {
  std::vector<const Tensor*> ins;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    TJ_ASSIGN_OR_RETURN(const Tensor* t, ctx.required_input(i));
    ins.push_back(t);
  }
  if (ins.empty()) return ctx.fail("needs at least one input");
  const Tensor& first = *ins[0];
  const int64_t r = first.rank();
  if (r == 0) return ctx.fail("input 0 is a scalar; Concat needs rank >= 1");
  if (!ctx.node().has_attr("axis") && ctx.node().opset() >= 4) return ctx.fail("attribute 'axis' is required");
  TJ_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, ctx.node().attr_int("axis", 1), r));
  Shape out_shape = first.shape();
  out_shape[axis] = 0;
  for (size_t i = 0; i < ins.size(); ++i) {
    const Tensor& t = *ins[i];
    if (t.dtype() != first.dtype())
      return ctx.fail("input {} has dtype {}, input 0 has {}", i, dtype_name(t.dtype()), dtype_name(first.dtype()));
    if (t.rank() != r)
      return ctx.fail("input {} has shape {}, rank differs from input 0 {}", i, shape_to_string(t.shape()),
                      shape_to_string(first.shape()));
    for (int64_t d = 0; d < r; ++d)
      if (d != axis && t.dim(d) != first.dim(d))
        return ctx.fail("input {} shape {} does not match input 0 {} outside axis {}", i,
                        shape_to_string(t.shape()), shape_to_string(first.shape()), axis);
    out_shape[axis] += t.dim(axis);
  }
  const int64_t out_numel = shape_numel(out_shape);
  for (const Tensor* t : ins)
    if (t->numel() == out_numel && out_numel > 0) {  // every other input is empty
      ctx.set_output(0, *t);
      return Status();
    }
  TJ_ASSIGN_OR_RETURN(Tensor* out, ctx.output(0, first.dtype(), out_shape));
  if (out_numel == 0) return Status();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= out_shape[d];
  for (int64_t d = axis + 1; d < r; ++d) inner *= out_shape[d];
  return dispatch_mover(ctx, first.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    T* dst = out->data<T>();
    for (int64_t o = 0; o < outer; ++o) {
      for (const Tensor* t : ins) {
        const int64_t block = t->dim(axis) * inner;
        copy_run(dst, t->data<T>() + o * block, block);
        dst += block;
      }
    }
    return Status();
  });
}

// Split (opsets 1, 2, 11, 13): splits input 0 along `axis` (default 0) into the node's outputs.
// Sizes from input 1 (opset 1 and 13+) or attribute `split` (opsets 1-12); without them equal
// parts (the dim must divide evenly before opset 18; from 18 the last part is smaller).
// Outputs are views when every dim before axis is 1.
Status split_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* in, ctx.required_input(0));
  const int64_t r = in->rank();
  if (r == 0) return ctx.fail("input 0 is a scalar; Split needs rank >= 1");
  TJ_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, ctx.node().attr_int("axis", 0), r));
  const int opset = ctx.node().opset();
  const int64_t n = static_cast<int64_t>(ctx.num_outputs());
  const int64_t dim = in->dim(axis);
  std::vector<int64_t> sizes;
  if (const Tensor* st = (opset >= 13 || opset < 2) ? ctx.input(1) : nullptr) {
    TJ_ASSIGN_OR_RETURN(sizes, read_int64s(ctx, *st, "input 1 'split'"));
  } else if (opset < 13 && ctx.node().has_attr("split")) {
    sizes = ctx.node().attr_ints("split");
  }
  if (!sizes.empty()) {
    if (static_cast<int64_t>(sizes.size()) != n)
      return ctx.fail("'split' has {} sizes for {} outputs", sizes.size(), n);
    int64_t sum = 0;
    for (int64_t s : sizes) {
      if (s < 0 || s > dim)
        return ctx.fail("'split' {} has a size outside [0, {}]", shape_to_string(sizes), dim);
      sum += s;
    }
    if (sum != dim)
      return ctx.fail("'split' {} sums to {}, but axis {} has size {}", shape_to_string(sizes), sum, axis, dim);
  } else {
    if (n <= 0) return ctx.fail("has no outputs");
    if (opset < 18 && dim % n != 0)
      return ctx.fail("axis {} of size {} does not split evenly into {} outputs", axis, dim, n);
    const int64_t part = (dim + n - 1) / n;
    for (int64_t i = 0; i < n; ++i) sizes.push_back(std::clamp<int64_t>(dim - i * part, 0, part));
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= in->dim(d);
  for (int64_t d = axis + 1; d < r; ++d) inner *= in->dim(d);
  int64_t begin = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t len = sizes[i];
    Shape os = in->shape();
    os[axis] = len;
    if (ctx.wants_output(static_cast<size_t>(i))) {
      if (outer == 1) {
        ctx.set_output(i, in->reshaped({dim, inner}).slice_rows(begin, begin + len).reshaped(os));
      } else {
        TJ_ASSIGN_OR_RETURN(Tensor* out, ctx.output(i, in->dtype(), os));
        TJ_RETURN_IF_ERROR(dispatch_mover(ctx, in->dtype(), [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          const int64_t block = len * inner;
          for (int64_t o = 0; o < outer; ++o)
            copy_run(out->data<T>() + o * block, in->data<T>() + (o * dim + begin) * inner, block);
          return Status();
        }));
      }
    }
    begin += len;
  }
  return Status();
}

}  // namespace tierjit::interp
