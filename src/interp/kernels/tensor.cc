// Tier-0 kernels, tensor family: registration of the shape, layout, indexing, sorting and
// generator kernels (bodies in shape_ops.cc, layout.cc, slice_pad.cc, indexing.cc, scatter.cc,
// sorting.cc, generators.cc) and the helpers they share (tensor_internal.h).
#include "interp/kernels/common.h"
#include "interp/kernels/tensor_internal.h"
#include "interp/registry.h"

namespace tierjit::interp {

namespace {

// Up to this rank the strides of copy_strided / transpose_into live on the stack.
constexpr size_t kStackRank = 12;

// copy_strided_from with src_strides as dst.rank() values; `scratch` holds rank values.
Status copy_strided(const KernelContext& ctx, const Tensor& src, int64_t src_offset,
                    const int64_t* src_strides, Tensor& dst, int64_t* scratch) {
  if (dst.numel() == 0) return Status();
  const Shape& shape = dst.shape();
  const size_t rank = shape.size();
  int64_t* dst_strides = scratch;  // row-major
  int64_t step = 1;
  for (size_t d = rank; d-- > 0;) {
    dst_strides[d] = step;
    step *= shape[d];
  }
  return dispatch_mover(ctx, src.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_trivially_copyable_v<T>) {
      strided_copy_plain(dst.data<T>(), dst_strides, src.data<T>() + src_offset, src_strides,
                         shape.data(), rank, sizeof(T), ctx.options().intra_op_threads);
    } else {
      strided_copy<T>(dst.data<T>(), std::vector<int64_t>(dst_strides, dst_strides + rank),
                      src.data<T>() + src_offset, std::vector<int64_t>(src_strides, src_strides + rank),
                      shape, ctx.options().intra_op_threads);
    }
    return Status();
  });
}

}  // namespace

Status copy_strided_from(const KernelContext& ctx, const Tensor& src, int64_t src_offset,
                         const std::vector<int64_t>& src_strides, Tensor& dst) {
  int64_t stack[kStackRank];
  std::vector<int64_t> heap(src_strides.size() > kStackRank ? src_strides.size() : 0);
  return copy_strided(ctx, src, src_offset, src_strides.data(), dst, heap.empty() ? stack : heap.data());
}

Status transpose_into(const KernelContext& ctx, const Tensor& in, const std::vector<int64_t>& perm,
                      Tensor& out) {
  const size_t rank = perm.size();
  int64_t stack[2 * kStackRank];
  std::vector<int64_t> heap(rank > kStackRank ? 2 * rank : 0);
  int64_t* buf = heap.empty() ? stack : heap.data();
  int64_t* in_strides = buf;  // row-major strides of `in`, then src strides per output dim
  int64_t step = 1;
  for (size_t d = rank; d-- > 0;) {
    in_strides[d] = step;
    step *= in.dim(static_cast<int64_t>(d));
  }
  int64_t* src_strides = buf + rank;
  for (size_t i = 0; i < rank; ++i) src_strides[i] = in_strides[static_cast<size_t>(perm[i])];
  return copy_strided(ctx, in, 0, src_strides, out, in_strides);  // in_strides no longer needed
}

Expected<IntList> int_list_attr_or_input(const KernelContext& ctx, const char* name, size_t idx,
                                         int since_opset) {
  IntList r;
  if (ctx.node().opset() < since_opset) {
    if (ctx.node().has_attr(name)) {
      r.has_value = true;
      r.values = ctx.node().attr_ints(name);
    }
    return r;
  }
  if (const Tensor* t = ctx.input(idx)) {
    std::string what = fmt::format("input {} '{}'", idx, name);
    TJ_ASSIGN_OR_RETURN(r.values, read_int64s(ctx, *t, what.c_str()));
    r.has_value = true;
  }
  return r;
}

void register_tensor_kernels(KernelRegistry& r) {
  using ir::OpKind;
  r.add(OpKind::Constant, constant_kernel);
  r.add(OpKind::ConstantOfShape, constant_of_shape_kernel);
  r.add(OpKind::Range, range_kernel);
  r.add(OpKind::EyeLike, eye_like_kernel);
  r.add(OpKind::Trilu, trilu_kernel);
  r.add(OpKind::Shape, shape_kernel);
  r.add(OpKind::Size, size_kernel);
  r.add(OpKind::Reshape, reshape_kernel);
  r.add(OpKind::Flatten, flatten_kernel);
  r.add(OpKind::Squeeze, squeeze_kernel);
  r.add(OpKind::Unsqueeze, unsqueeze_kernel);
  r.add(OpKind::Dropout, dropout_kernel);
  r.add(OpKind::Transpose, transpose_kernel);
  r.add(OpKind::DepthToSpace, depth_to_space_kernel);
  r.add(OpKind::SpaceToDepth, space_to_depth_kernel);
  r.add(OpKind::Concat, concat_kernel);
  r.add(OpKind::Split, split_kernel);
  r.add(OpKind::Slice, slice_kernel);
  r.add(OpKind::Pad, pad_kernel);
  r.add(OpKind::Tile, tile_kernel);
  r.add(OpKind::Expand, expand_kernel);
  r.add(OpKind::Gather, gather_kernel);
  r.add(OpKind::GatherElements, gather_elements_kernel);
  r.add(OpKind::GatherND, gather_nd_kernel);
  r.add(OpKind::Compress, compress_kernel);
  r.add(OpKind::NonZero, nonzero_kernel);
  r.add(OpKind::OneHot, one_hot_kernel);
  r.add(OpKind::ReverseSequence, reverse_sequence_kernel);
  r.add(OpKind::Scatter, scatter_elements_kernel);
  r.add(OpKind::ScatterElements, scatter_elements_kernel);
  r.add(OpKind::ScatterND, scatter_nd_kernel);
  r.add(OpKind::TopK, top_k_kernel);
  r.add(OpKind::Unique, unique_kernel);
}

}  // namespace tierjit::interp
