// Internal declarations of the tensor kernel family (shape, layout, indexing, sorting, generators;
// tensor.cc registers them all). Also the "element mover": data-movement kernels are templated on a
// carrier type of the element's byte size (uint8/16/32/64_t) or std::string, so one instantiation
// serves every dtype of that size and strings are copied as objects, never as bytes.
#pragma once

#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "interp/kernel.h"

namespace tierjit::interp {

// ---- element mover -------------------------------------------------------------------------

/// Calls f(std::type_identity<T>{}) with T = uint8_t/uint16_t/uint32_t/uint64_t for dtypes of
/// 1/2/4/8 bytes and T = std::string for kString. Error (kUnsupported) for kUndefined.
template <class F>
Status dispatch_mover(const KernelContext& ctx, DType dt, F&& f) {
  if (dt == DType::kString) return f(std::type_identity<std::string>{});
  switch (dtype_size(dt)) {
    case 1: return f(std::type_identity<uint8_t>{});
    case 2: return f(std::type_identity<uint16_t>{});
    case 4: return f(std::type_identity<uint32_t>{});
    case 8: return f(std::type_identity<uint64_t>{});
    default: return ctx.unsupported_here("dtype {} not supported", dtype_name(dt));
  }
}

/// Copies n contiguous elements (memcpy for carriers, assignment for strings). Ranges must not
/// overlap.
template <class T>
inline void copy_run(T* dst, const T* src, int64_t n) {
  if constexpr (std::is_trivially_copyable_v<T>) {
    if (n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(T));
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
  }
}

/// Copies the box `shape` from src (element strides src_strides, may be 0 or negative) to dst
/// (strides dst_strides). Adjacent dims are merged where both layouts allow; contiguous inner
/// runs use copy_run; other inner 2-D blocks are tiled for cache reuse (transposes).
/// `threads` > 1 splits the outer loop with OpenMP when the box is large. Carrier types
/// (uint8/16/32/64_t) go through strided_copy_plain.
template <class T>
void strided_copy(T* dst, std::vector<int64_t> dst_strides, const T* src,
                  std::vector<int64_t> src_strides, Shape shape, int threads);

/// strided_copy for trivially copyable elements of elem_size = 1, 2, 4 or 8 bytes (others: no-op),
/// strides in elements, `rank` entries each, any sign; dst must not overlap src. Size-1 dims are
/// dropped and dims adjacent in both layouts merged; an axis contiguous in both moves as memcpy
/// runs, a dst-contiguous axis crossed with a src-contiguous one as a 2-D transpose of AVX2
/// register tiles; otherwise element by element. Split over `threads` OpenMP threads from 2^15
/// elements. No allocation up to rank 16. Defined in strided_copy.cc.
void strided_copy_plain(void* dst, const int64_t* dst_strides, const void* src,
                        const int64_t* src_strides, const int64_t* shape, size_t rank,
                        size_t elem_size, int threads);

/// Type-erased strided_copy: dst (contiguous, shape `shape`) gets the elements of `src` read at
/// flat element offset `src_offset` with `src_strides`. Caller guarantees every read is in bounds.
Status copy_strided_from(const KernelContext& ctx, const Tensor& src, int64_t src_offset,
                         const std::vector<int64_t>& src_strides, Tensor& dst);

/// A copy of `in` permuted by `perm` (out dim i = in dim perm[i]); perm already validated.
Status transpose_into(const KernelContext& ctx, const Tensor& in, const std::vector<int64_t>& perm,
                      Tensor& out);

/// Reads the optional int list either from attribute `name` (opset < since) or from input `idx`.
/// has_value is false when neither is given.
struct IntList {
  bool has_value = false;
  std::vector<int64_t> values;
};
Expected<IntList> int_list_attr_or_input(const KernelContext& ctx, const char* name, size_t idx,
                                         int since_opset);

/// GatherElements / ScatterElements (opsets 11+, Scatter 9-10): checks that input 1 'indices'
/// has the rank of `data` (callers check rank >= 1) and no dim larger than data's other than on
/// the axis; returns attribute `axis` (default 0) normalized to [0, rank). Errors name the shapes
/// and the axis. Defined in indexing.cc.
Expected<int64_t> elements_indices_axis(const KernelContext& ctx, const Tensor& data, const Tensor& indices);

// ---- kernels (ONNX default domain, opsets 1..17) ---------------------------------------------
// generators.cc
Status constant_kernel(KernelContext& ctx);
Status constant_of_shape_kernel(KernelContext& ctx);
Status range_kernel(KernelContext& ctx);
Status eye_like_kernel(KernelContext& ctx);
Status trilu_kernel(KernelContext& ctx);
// shape_ops.cc
Status shape_kernel(KernelContext& ctx);
Status size_kernel(KernelContext& ctx);
Status reshape_kernel(KernelContext& ctx);
Status flatten_kernel(KernelContext& ctx);
Status squeeze_kernel(KernelContext& ctx);
Status unsqueeze_kernel(KernelContext& ctx);
Status dropout_kernel(KernelContext& ctx);
// layout.cc
Status transpose_kernel(KernelContext& ctx);
Status depth_to_space_kernel(KernelContext& ctx);
Status space_to_depth_kernel(KernelContext& ctx);
Status concat_kernel(KernelContext& ctx);
Status split_kernel(KernelContext& ctx);
// slice_pad.cc
Status slice_kernel(KernelContext& ctx);
Status pad_kernel(KernelContext& ctx);
Status tile_kernel(KernelContext& ctx);
Status expand_kernel(KernelContext& ctx);
// indexing.cc
Status gather_kernel(KernelContext& ctx);
Status gather_elements_kernel(KernelContext& ctx);
Status gather_nd_kernel(KernelContext& ctx);
Status compress_kernel(KernelContext& ctx);
Status nonzero_kernel(KernelContext& ctx);
Status one_hot_kernel(KernelContext& ctx);
Status reverse_sequence_kernel(KernelContext& ctx);
// scatter.cc
Status scatter_elements_kernel(KernelContext& ctx);  // also Scatter (opset 9-10)
Status scatter_nd_kernel(KernelContext& ctx);
// sorting.cc
Status top_k_kernel(KernelContext& ctx);
Status unique_kernel(KernelContext& ctx);

}  // namespace tierjit::interp

#include "interp/kernels/tensor_internal_inl.h"
