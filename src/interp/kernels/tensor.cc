// Tier-0 kernels, tensor family: registration of the shape, layout, indexing, sorting and
// generator kernels (bodies in shape_ops.cc, layout.cc, slice_pad.cc, indexing.cc, scatter.cc,
// sorting.cc, generators.cc) and the helpers they share (tensor_internal.h).
#include "interp/kernels/common.h"
#include "interp/kernels/tensor_internal.h"
#include "interp/registry.h"

namespace tierjit::interp {

Status copy_strided_from(const KernelContext& ctx, const Tensor& src, int64_t src_offset,
                         const std::vector<int64_t>& src_strides, Tensor& dst) {
  return dispatch_mover(ctx, src.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if (dst.numel() == 0) return Status();
    strided_copy<T>(dst.data<T>(), row_major_strides(dst.shape()), src.data<T>() + src_offset,
                    src_strides, dst.shape(), ctx.options().intra_op_threads);
    return Status();
  });
}

Status transpose_into(const KernelContext& ctx, const Tensor& in, const std::vector<int64_t>& perm,
                      Tensor& out) {
  std::vector<int64_t> in_strides = row_major_strides(in.shape());
  std::vector<int64_t> src_strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) src_strides[i] = in_strides[static_cast<size_t>(perm[i])];
  return copy_strided_from(ctx, in, 0, src_strides, out);
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
