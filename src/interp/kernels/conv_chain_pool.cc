// MaxPool on the channels-last layout for tier 0's conv chains (conv_chain.h): the same window
// taps (in-bounds coordinates per axis, as pool.cc's make_taps) folded in the same row-major
// order with the same fold (a NaN tap anywhere gives NaN; no tap at all gives the lowest float),
// all channels of a position at once, so results equal tier 0's MaxPool kernel. Window rows are
// found once per output row, window columns once per call; AVX-512F (16 lanes) where the CPU
// has it, else AVX2 (8 lanes); the channel tail is one masked vector.
#include <immintrin.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "interp/kernels/conv_chain_pool.h"
#include "kernels/cpu_features.h"
#include "interp/kernels/nn_common.h"
#include "kernels/parallel_for.h"

namespace tierjit::interp {
namespace {

// Window taps of one output row on the stack up to this many (rows + 2 * taps offsets).
constexpr int64_t kMaxStackTaps = 256;
// Per-axis tables (2 values per output position of each axis) on the stack up to this many.
constexpr int64_t kMaxStackAxes = 512;

// What pool_row needs besides the window rows: channels, the window's width, dilation and
// stride along W, per output column the first in-bounds input column and the in-bounds tap
// count, and the output columns [lo_w, hi_w) whose windows lie wholly inside the image.
struct RowPlan {
  int64_t c = 0, kw = 1, dw = 1, sw = 1, out_w = 1, lo_w = 0, hi_w = 0;
  const int64_t* first_w = nullptr;
  const int64_t* count_w = nullptr;
};

namespace avx2 {

// fold(v, a) is pool.cc's fold_max on 8 lanes: _mm256_max_ps(v, a) is `v > a ? v : a`, and a
// NaN v is taken by the blend (pool.cc's Lanes8::max).
struct V {
  using R = __m256;
  using Mask = __m256i;
  static constexpr int64_t kLanes = 8;
  static R load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, R v) { _mm256_storeu_ps(p, v); }
  static R fold(R v, R a) {
    return _mm256_blendv_ps(_mm256_max_ps(v, a), v, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  }
  static Mask tail_mask(int64_t n) {  // lanes [0, n) on, 0 < n < 8
    alignas(32) static constexpr int32_t kOnes[16] = {-1, -1, -1, -1, -1, -1, -1, -1};
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kOnes + 8 - n));
  }
  static R load_tail(const float* p, Mask m) { return _mm256_maskload_ps(p, m); }
  static void store_tail(float* p, Mask m, R v) { _mm256_maskstore_ps(p, m, v); }
};

#include "interp/kernels/conv_chain_pool_row.inc"

}  // namespace avx2

#pragma GCC push_options
#pragma GCC target("avx512f")
namespace avx512 {

// The same fold on 16 lanes: max where v is not NaN, v where it is.
struct V {
  using R = __m512;
  using Mask = __mmask16;
  static constexpr int64_t kLanes = 16;
  static R load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, R v) { _mm512_storeu_ps(p, v); }
  static R fold(R v, R a) {
    return _mm512_mask_max_ps(v, _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v, a);
  }
  static Mask tail_mask(int64_t n) { return static_cast<Mask>((1u << n) - 1u); }
  static R load_tail(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static void store_tail(float* p, Mask m, R v) { _mm512_mask_storeu_ps(p, m, v); }
};

#include "interp/kernels/conv_chain_pool_row.inc"

}  // namespace avx512
#pragma GCC pop_options

const bool kHasAvx512 = kernels::cpu_has_avx512f();

// In-bounds taps of each output position's window along one axis: coordinates
// first[o] + k * dilation for k < count[o] (the in-bounds part of an arithmetic progression is
// one run); missing leading axes are size 1 with a 1-tap window. first and count point into
// the caller's buffer (2 * out values).
struct Axis {
  int64_t in = 1, out = 1, dilation = 1;
  int64_t* first = nullptr;
  int64_t* count = nullptr;
};

Axis make_axis(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t dilation,
               int64_t pad_begin, int64_t* buffer) {
  Axis a{in, out, dilation, buffer, buffer + out};
  std::fill_n(buffer, 2 * out, 0);
  for (int64_t o = 0; o < out; ++o) {
    const int64_t start = o * stride - pad_begin;
    for (int64_t k = 0; k < kernel; ++k) {
      const int64_t x = start + k * dilation;
      if (x < 0 || x >= in) continue;
      if (a.count[o]++ == 0) a.first[o] = x;
    }
  }
  return a;
}

}  // namespace

bool max_pool_channels_last_isa(bool use_avx512, const nn::Window& w, const Shape& x_shape,
                                const float* x, float* y, int threads) {
  use_avx512 = use_avx512 && kHasAvx512;
  const size_t sr = x_shape.size() - 2;
  const int64_t c = x_shape[1];
  // Per-call tables on the stack unless the output is large (one allocation then).
  int64_t stack[kMaxStackAxes];
  std::vector<int64_t> heap;
  int64_t* buffer = stack;
  int64_t need = 2 * 3;
  for (int64_t o : w.out) need += 2 * o;
  if (need > kMaxStackAxes) {
    heap.resize(static_cast<size_t>(need));
    buffer = heap.data();
  }
  Axis ax[3];  // D, H, W
  int64_t kw = 1, sw = 1;
  for (size_t d = 0; d < 3; ++d) {
    if (d + sr < 3) {
      ax[d] = make_axis(1, 1, 1, 1, 1, 0, buffer);
    } else {
      const size_t a = d + sr - 3;
      ax[d] = make_axis(x_shape[a + 2], w.out[a], w.kernel[a], w.strides[a], w.dilations[a],
                        w.pad_begin[a], buffer);
      if (d == 2) {
        kw = w.kernel[a];
        sw = w.strides[a];
      }
    }
    buffer += 2 * ax[d].out;
  }
  const Axis &ad = ax[0], &ah = ax[1], &aw = ax[2];
  RowPlan plan{c, kw, aw.dilation, sw, aw.out, 0, 0, aw.first, aw.count};
  while (plan.lo_w < aw.out && aw.count[plan.lo_w] != kw) ++plan.lo_w;
  plan.hi_w = plan.lo_w;  // whole windows are one run of columns (starts in [0, in - extent])
  while (plan.hi_w < aw.out && aw.count[plan.hi_w] == kw) ++plan.hi_w;
  const auto pool_row = use_avx512 ? avx512::pool_row : avx2::pool_row;
  const int64_t in_image = ad.in * ah.in * aw.in * c, out_rows = ad.out * ah.out;
  const int64_t rows = x_shape[0] * out_rows;
  const int64_t work = rows * aw.out * shape_numel(w.kernel) * c;
  // Threads from 2^15 tap-channels (~1 us on one thread): 8x32x14x14 2x2 at 2 threads
  // 1.9 -> 1.55 us; 1x16x28x28 (12544) is faster on one (0.53 vs 0.82 us at 2^12).
  kernels::parallel_for_if(work > (1 << 15), threads, rows, [&](int64_t r) {
    const int64_t n = r / out_rows, od = (r % out_rows) / ah.out, oh = r % ah.out;
    const int64_t nd = ad.count[od], nh = ah.count[oh], nrows = nd * nh;
    int64_t row_stack[kMaxStackTaps];
    std::vector<int64_t> row_heap;
    int64_t* offsets = row_stack;
    if (nrows * (1 + 2 * kw) > kMaxStackTaps) {
      row_heap.resize(static_cast<size_t>(nrows * (1 + 2 * kw)));
      offsets = row_heap.data();
    }
    // The window's input rows in row-major order, as element offsets from the image start.
    int64_t i = 0;
    for (int64_t kd = 0; kd < nd; ++kd)
      for (int64_t kh = 0; kh < nh; ++kh)
        offsets[i++] = ((ad.first[od] + kd * ad.dilation) * ah.in + ah.first[oh] +
                        kh * ah.dilation) * aw.in * c;
    pool_row(plan, x + n * in_image, offsets, nrows, offsets + nrows, y + r * aw.out * c);
  });
  return use_avx512;
}

void max_pool_channels_last(const nn::Window& w, const Shape& x_shape, const float* x, float* y,
                            int threads) {
  max_pool_channels_last_isa(true, w, x_shape, x, y, threads);
}

}  // namespace tierjit::interp
