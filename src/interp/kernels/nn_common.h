// Helpers shared by the nn kernel files (matmul, conv, pool, rnn, quantize): element conversion
// to the compute type (float32 for float16/bfloat16), a plain blocked GEMM for the dtypes oneDNN
// does not cover, the window geometry of Conv/ConvTranspose/pools (strides, dilations, pads,
// auto_pad, ceil_mode per the ONNX spec, opsets 1-17) and round-half-to-even saturation.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "interp/kernels/common.h"

namespace tierjit::interp::nn {

/// Arithmetic type of an element type: float for the 16-bit floats, the type itself otherwise.
template <class T> struct ComputeOf { using type = T; };
template <> struct ComputeOf<Half> { using type = float; };
template <> struct ComputeOf<BFloat16> { using type = float; };
template <class T> using compute_t = typename ComputeOf<T>::type;

template <class T> inline compute_t<T> load(T v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return to_float(v);
  else return v;
}
template <class T> inline T store(compute_t<T> v) {
  if constexpr (std::is_same_v<T, Half>) return Half{support::float_to_half(v)};
  else if constexpr (std::is_same_v<T, BFloat16>) return BFloat16{support::float_to_bfloat16(v)};
  else return v;
}

/// Accumulator with two's-complement wrap for integers (unsigned arithmetic, no UB).
template <class T> struct WrapOf { using type = T; };
template <class T> requires std::is_integral_v<T> struct WrapOf<T> { using type = std::make_unsigned_t<T>; };

/// Row-major C[m,n] = A[m,k] * B[k,n] (overwrites C); plain loops for non-float32 dtypes.
template <class T>
void ref_gemm(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
              T* c, int64_t ldc) {
  using W = typename WrapOf<T>::type;
  std::vector<W> acc(static_cast<size_t>(n));
  for (int64_t i = 0; i < m; ++i) {
    std::fill(acc.begin(), acc.end(), W{});
    for (int64_t p = 0; p < k; ++p) {
      const W av = static_cast<W>(a[i * lda + p]);
      const T* brow = b + p * ldb;
      for (int64_t j = 0; j < n; ++j) acc[j] += av * static_cast<W>(brow[j]);
    }
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = static_cast<T>(acc[j]);
  }
}

/// Resolved window geometry along each spatial axis.
struct Window {
  std::vector<int64_t> kernel, strides, dilations, pad_begin, pad_end, out;
};

/// Reads strides / dilations / pads / auto_pad of `ctx.node()` for a window `kernel` over
/// `in_spatial` and computes the output size (floor, or ceil when ceil_mode; a window that would
/// start in the end padding is dropped as in ONNX Runtime / PyTorch). `use_dilations` is false
/// for ops without the attribute. Errors: attribute length != spatial rank, non-positive values,
/// negative pads, bad auto_pad, window larger than the padded input (with ceil_mode, only by the
/// stride or more: a shortfall under the stride leaves one window, as in ONNX Runtime).
Expected<Window> resolve_window(const KernelContext& ctx, const std::vector<int64_t>& in_spatial,
                                const std::vector<int64_t>& kernel, bool ceil_mode,
                                bool use_dilations = true);

/// Pooling windows: every pad must be smaller than the kernel on its axis, or some windows lie
/// wholly in the padding and have no value (ONNX Runtime rejects such nodes: "Pad should be
/// smaller than kernel"). Error names the axis, the pads and the kernel.
Status check_pool_pads(const KernelContext& ctx, const Window& w);

/// Round half to even, then clamp to [lo, hi].
inline int32_t round_saturate(float v, int32_t lo, int32_t hi) {
  float r = std::nearbyint(v);  // default rounding mode: to nearest even
  if (!(r >= static_cast<float>(lo))) return std::isnan(r) ? 0 : lo;
  if (r >= static_cast<float>(hi)) return hi;
  return static_cast<int32_t>(r);
}

/// Range of an 8/16/32-bit quantized integer dtype (uint8, int8, uint16, int16, int32).
inline void quant_range(DType t, int32_t& lo, int32_t& hi) {
  switch (t) {
    case DType::kInt8: lo = -128; hi = 127; break;
    case DType::kUInt16: lo = 0; hi = 65535; break;
    case DType::kInt16: lo = -32768; hi = 32767; break;
    case DType::kInt32: lo = std::numeric_limits<int32_t>::min(); hi = std::numeric_limits<int32_t>::max(); break;
    default: lo = 0; hi = 255; break;
  }
}

/// `t` (the node's input `index`) when it is a graph constant (an initializer) still holding the
/// constant's own storage — contents that never change, which oneDNN glue may keep reordered
/// across calls (dnnl_util.h) — else nullptr.
const Tensor* graph_constant(const KernelContext& ctx, size_t index, const Tensor* t);

/// float16 / bfloat16 tensor -> its float32 values (exact widening), for kernels that compute
/// these dtypes in float32 (MatMul, Gemm, Conv, ConvTranspose). t.dtype() is float16 or bfloat16.
std::vector<float> to_f32(const Tensor& t);
/// Stores float32 values into float16 / bfloat16 tensor t (round to nearest even);
/// v.size() == t.numel().
void from_f32(const std::vector<float>& v, Tensor& t);

/// Reads an int8/uint8/int32 quantized tensor as int32 values minus nothing (plain widening).
std::vector<int32_t> read_int32s(const Tensor& t);

/// Reads the zero point of a quantized operand: scalar / 1-element (per tensor) or 1-D of
/// `count` (per axis). Absent -> zeros. Errors name `what`.
Expected<std::vector<int32_t>> read_zero_point(const KernelContext& ctx, const Tensor* zp,
                                               int64_t count, const char* what);
/// Same for float scales (per tensor or 1-D of `count`); required.
Expected<std::vector<float>> read_scale(const KernelContext& ctx, const Tensor* scale, int64_t count,
                                        const char* what);

}  // namespace tierjit::interp::nn
