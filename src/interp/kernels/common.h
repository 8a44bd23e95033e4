// Helpers shared by the tier-0 kernel families: axis normalization, numpy broadcasting,
// row-major strides, reading int64 lists from tensors, and dtype dispatch.
// Inputs are read-only: they may alias initializers, feeds or other values; never write to them.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "interp/kernel.h"
#include "kernels/parallel_for.h"
#include "support/float16.h"

namespace tierjit::interp {

/// Bit-pattern types for the 16-bit floats (distinct from uint16_t for dispatch).
struct Half { uint16_t bits; };
struct BFloat16 { uint16_t bits; };
inline float to_float(Half h) { return support::half_to_float(h.bits); }
inline float to_float(BFloat16 h) { return support::bfloat16_to_float(h.bits); }

/// Maps axis in [-rank, rank) to [0, rank); error naming the node otherwise.
Expected<int64_t> normalize_axis(const KernelContext& ctx, int64_t axis, int64_t rank);

/// Numpy broadcast of two shapes; nullopt if incompatible.
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b);
/// Broadcast of several shapes; error naming the node and both shapes when incompatible.
Expected<Shape> broadcast_all(const KernelContext& ctx, const std::vector<const Tensor*>& ins);

/// Row-major strides in elements.
std::vector<int64_t> row_major_strides(const Shape& shape);
/// Strides of `in` broadcast to `out` (0 on broadcast axes); in is right-aligned with out.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

/// Reads an int32/int64 (or any integer) tensor as int64 values (shape inputs, axes, pads).
Expected<std::vector<int64_t>> read_int64s(const KernelContext& ctx, const Tensor& t,
                                           const char* what);
/// Reads any numeric tensor as doubles (scales, scalars).
std::vector<double> read_doubles(const Tensor& t);

/// Calls f(T{}) with T the C++ type of `dt` for every numeric dtype and bool
/// (Half/BFloat16 for the 16-bit floats). Returns the Status of f, or an unsupported-dtype error.
template <class F>
Status dispatch_all(const KernelContext& ctx, DType dt, F&& f) {
  switch (dt) {
    case DType::kFloat32: return f(float{});
    case DType::kFloat64: return f(double{});
    case DType::kFloat16: return f(Half{});
    case DType::kBFloat16: return f(BFloat16{});
    case DType::kInt8: return f(int8_t{});
    case DType::kInt16: return f(int16_t{});
    case DType::kInt32: return f(int32_t{});
    case DType::kInt64: return f(int64_t{});
    case DType::kUInt8: return f(uint8_t{});
    case DType::kUInt16: return f(uint16_t{});
    case DType::kUInt32: return f(uint32_t{});
    case DType::kUInt64: return f(uint64_t{});
    case DType::kBool: return f(bool{});
    default: return ctx.unsupported_here("dtype {} not supported", dtype_name(dt));
  }
}

/// Iterates every index of `out_shape` in row-major order, calling f(out_flat, in_offsets...)
/// with the matching flat offset of each broadcast input (strides from broadcast_strides).
/// Inner dimension is a tight loop so compilers vectorize contiguous cases.
template <size_t N, class F>
void for_each_broadcast(const Shape& out_shape, const std::array<std::vector<int64_t>, N>& strides, F&& f);

}  // namespace tierjit::interp

#include "interp/kernels/common_inl.h"
