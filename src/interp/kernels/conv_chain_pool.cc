// MaxPool on the channels-last layout for tier 0's conv chains (conv_chain.h): the same window
// taps (in-bounds coordinates per axis, as pool.cc's make_taps) folded in the same row-major
// order with the same fold (a NaN tap anywhere gives NaN; no tap at all gives the lowest float),
// all channels of a position at once, so results equal tier 0's MaxPool kernel.
#include <immintrin.h>

#include <algorithm>
#include <limits>

#include "interp/kernels/conv_chain.h"
#include "interp/kernels/nn_common.h"
#include "interp/kernels/parallel_for.h"

namespace tierjit::interp {
namespace {

// In-bounds input coordinates of each output position's window along one axis.
struct Taps {
  std::vector<int64_t> begin, coords;
};

Taps axis_taps(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t dilation,
               int64_t pad_begin) {
  Taps t;
  t.begin.reserve(static_cast<size_t>(out + 1));
  t.begin.push_back(0);
  for (int64_t o = 0; o < out; ++o) {
    const int64_t start = o * stride - pad_begin;
    for (int64_t k = 0; k < kernel; ++k) {
      const int64_t c = start + k * dilation;
      if (c >= 0 && c < in) t.coords.push_back(c);
    }
    t.begin.push_back(static_cast<int64_t>(t.coords.size()));
  }
  return t;
}

// Spatial axes as [D, H, W]; missing leading axes are size 1 with a 1-tap window.
struct Geometry {
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  Taps taps[3];
};

// fold_max(v, a) on 8 lanes: _mm256_max_ps(v, a) is `v > a ? v : a`, and a NaN v is taken by
// the blend (pool.cc's Lanes8::max).
inline __m256 fold8(__m256 v, __m256 a) {
  return _mm256_blendv_ps(_mm256_max_ps(v, a), v, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
}

// Channels [c0, c0 + lanes) of one output position: taps at row-major offsets `taps[0..n)` (in
// elements, from the image start) folded in order into y.
template <bool kVector>
void fold_taps(const float* x, const int64_t* taps, int64_t n, int64_t c0, int64_t lanes, float* y) {
  if (n == 0) {
    std::fill(y + c0, y + c0 + lanes, std::numeric_limits<float>::lowest());
    return;
  }
  if constexpr (kVector) {
    __m256 acc = _mm256_loadu_ps(x + taps[0] + c0);
    for (int64_t t = 1; t < n; ++t) acc = fold8(_mm256_loadu_ps(x + taps[t] + c0), acc);
    _mm256_storeu_ps(y + c0, acc);
  } else {
    for (int64_t l = c0; l < c0 + lanes; ++l) {
      float a = x[taps[0] + l];
      for (int64_t t = 1; t < n; ++t) {
        const float v = x[taps[t] + l];
        a = (v > a || v != v) ? v : a;
      }
      y[l] = a;
    }
  }
}

}  // namespace

void max_pool_channels_last(const nn::Window& w, const Shape& x_shape, const float* x, float* y,
                            int threads) {
  const size_t sr = x_shape.size() - 2;
  const int64_t c = x_shape[1];
  Geometry g;
  for (size_t d = 0; d < 3; ++d) {
    if (d + sr < 3) {
      g.taps[d] = axis_taps(1, 1, 1, 1, 1, 0);
      continue;
    }
    const size_t a = d + sr - 3;
    g.in[d] = x_shape[a + 2];
    g.out[d] = w.out[a];
    g.taps[d] = axis_taps(g.in[d], g.out[d], w.kernel[a], w.strides[a], w.dilations[a], w.pad_begin[a]);
  }
  const int64_t in_image = g.in[0] * g.in[1] * g.in[2] * c, out_rows = g.out[0] * g.out[1];
  const int64_t rows = x_shape[0] * out_rows;
  const int64_t work = rows * g.out[2] * shape_numel(w.kernel) * c;
  parallel_for_if(work > (1 << 16), threads, rows, [&](int64_t r) {
    const int64_t n = r / out_rows, od = (r % out_rows) / g.out[1], oh = r % g.out[1];
    const float* xn = x + n * in_image;
    float* yr = y + r * g.out[2] * c;
    int64_t taps[64];
    std::vector<int64_t> many;
    for (int64_t ow = 0; ow < g.out[2]; ++ow) {
      // The window's taps in row-major order, as element offsets into the image.
      const int64_t count = (g.taps[0].begin[od + 1] - g.taps[0].begin[od]) *
                            (g.taps[1].begin[oh + 1] - g.taps[1].begin[oh]) *
                            (g.taps[2].begin[ow + 1] - g.taps[2].begin[ow]);
      int64_t* t = taps;
      if (count > 64) {
        many.resize(static_cast<size_t>(count));
        t = many.data();
      }
      int64_t k = 0;
      for (int64_t td = g.taps[0].begin[od]; td < g.taps[0].begin[od + 1]; ++td)
        for (int64_t th = g.taps[1].begin[oh]; th < g.taps[1].begin[oh + 1]; ++th)
          for (int64_t tw = g.taps[2].begin[ow]; tw < g.taps[2].begin[ow + 1]; ++tw)
            t[k++] = ((g.taps[0].coords[td] * g.in[1] + g.taps[1].coords[th]) * g.in[2] +
                      g.taps[2].coords[tw]) * c;
      float* yo = yr + ow * c;
      int64_t c0 = 0;
      for (; c0 + 8 <= c; c0 += 8) fold_taps<true>(xn, t, count, c0, 8, yo);
      if (c0 < c) fold_taps<false>(xn, t, count, c0, c - c0, yo);
    }
  });
}

}  // namespace tierjit::interp
