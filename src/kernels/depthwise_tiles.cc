// depthwise_conv_rows_f32 (conv_tiles.h): the input rows an item needs are copied once,
// zero-padded and split by the stride into phases (so every tap reads a contiguous run), then
// each output row is summed 1-4 vectors of columns at a time in registers over every tap. One
// template over the vector's lanes, instantiated for AVX-512 (16) and AVX2 (8) (vec_lanes.h).
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/conv_tiles.h"
#include "kernels/cpu_features.h"
#include "kernels/vec_lanes.h"

namespace tierjit::kernels {

namespace {

// The input rows [iy0, iy0 + rows) of one channel, zero-padded and split into `sw` phases:
// phase q, column t holds x[iy, t * sw + q - pw] (0 outside the image), so that tap kx of output
// column ox reads phase (kx dw) % sw at column ox + (kx dw) / sw: contiguous in ox whatever the
// stride. `cols` columns per phase (the output columns rounded up to whole steps, plus the taps).
struct PhaseRows {
  std::vector<float> data;
  int64_t cols = 0, sw = 1;
  const float* row(int64_t r, int64_t q) const { return data.data() + (r * sw + q) * cols; }
};

template <int L>
inline __attribute__((always_inline)) void fill_phases(PhaseRows& p, const float* x, int64_t h,
                                                       int64_t w, int64_t iy0, int64_t rows,
                                                       int64_t sw, int64_t pw, int64_t cols) {
  p.sw = sw;
  p.cols = cols;
  p.data.resize(static_cast<size_t>(rows * sw * cols));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t iy = iy0 + r;
    for (int64_t q = 0; q < sw; ++q) {
      float* dst = p.data.data() + (r * sw + q) * cols;
      if (iy < 0 || iy >= h) {
        zero_run<L>(dst, cols);
        continue;
      }
      // t * sw + q - pw in [0, w)
      const int64_t t0 = std::clamp<int64_t>(ceil_div(pw - q, sw), 0, cols);
      const int64_t t1 = std::clamp<int64_t>(floor_div(w - 1 + pw - q, sw) + 1, t0, cols);
      zero_run<L>(dst, t0);
      const float* src = x + iy * w + q - pw;  // column t reads src[t * sw]
      if (sw == 1) {
        copy_run<L>(dst + t0, src + t0, t1 - t0);
      } else if (sw == 2) {
        copy_run_stride2<L>(dst + t0, src + 2 * t0, t1 - t0, w - (2 * t0 + q - pw));
      } else {
        for (int64_t t = t0; t < t1; ++t) dst[t] = src[t * sw];
      }
      zero_run<L>(dst + t1, cols - t1);
    }
  }
}

// Output rows [oh0, oh1) of one channel from its phase rows (row 0 = input row oh0 sh - ph), NV
// vectors of L columns at a time (independent sums: one vector alone was latency-bound).
template <int L, int NV>
inline __attribute__((always_inline)) void depthwise_rows(const PhaseRows& p, const float* wt,
                                                          float* y, int64_t h, int64_t kh,
                                                          int64_t kw, int64_t sh, int64_t ph,
                                                          int64_t dh, int64_t dw, int64_t ow,
                                                          int64_t oh0, int64_t oh1, int64_t ldy) {
  constexpr int64_t kStep = L * NV;
  const int64_t sw = p.sw;
  for (int64_t oy = oh0; oy < oh1; ++oy) {
    float* yr = y + (oy - oh0) * ldy;
    for (int64_t ox = 0; ox < ow; ox += kStep) {
      typename VecF<L>::type acc[NV] = {};
      for (int64_t ky = 0; ky < kh; ++ky) {
        const int64_t iy = oy * sh - ph + ky * dh;
        if (iy < 0 || iy >= h) continue;  // a row of zeros: nothing to add
        const int64_t r = iy - (oh0 * sh - ph);
        for (int64_t kx = 0; kx < kw; ++kx) {
          const float* src = p.row(r, (kx * dw) % sw) + ox + (kx * dw) / sw;
          const float wv = wt[ky * kw + kx];
#pragma GCC unroll 4
          for (int v = 0; v < NV; ++v) acc[v] += wv * loadu<L>(src + L * v);
        }
      }
      if (ox + kStep <= ow) {
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) storeu<L>(yr + ox + L * v, acc[v]);
      } else {
        alignas(64) float tail[kStep];
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) storeu<L>(tail + L * v, acc[v]);
        std::memcpy(yr + ox, tail, static_cast<size_t>(ow - ox) * sizeof(float));
      }
    }
  }
}

struct DwArgs {
  const float* x;
  const float* wt;
  float* y;
  int64_t h, w, kh, kw, sh, sw, ph, pw, dh, dw, ow, oh0, oh1, ldy;
};

template <int L>
inline __attribute__((always_inline)) void depthwise_call(const DwArgs& a) {
  thread_local PhaseRows phases;
  const int nv = static_cast<int>(std::clamp<int64_t>((a.ow + L - 1) / L, 1, 4));
  const int64_t iy0 = a.oh0 * a.sh - a.ph,
                rows = (a.oh1 - 1 - a.oh0) * a.sh + (a.kh - 1) * a.dh + 1;
  const int64_t step = L * nv;
  const int64_t cols = (a.ow + step - 1) / step * step + ((a.kw - 1) * a.dw) / a.sw + 1;
  fill_phases<L>(phases, a.x, a.h, a.w, iy0, rows, a.sw, a.pw, cols);
#define TJ_DW_ROWS(NV)                                                                           \
  depthwise_rows<L, NV>(phases, a.wt, a.y, a.h, a.kh, a.kw, a.sh, a.ph, a.dh, a.dw, a.ow, a.oh0, \
                        a.oh1, a.ldy)
  switch (nv) {
    case 1:
      TJ_DW_ROWS(1);
      break;
    case 2:
      TJ_DW_ROWS(2);
      break;
    case 3:
      TJ_DW_ROWS(3);
      break;
    default:
      TJ_DW_ROWS(4);
      break;
  }
#undef TJ_DW_ROWS
}

__attribute__((target("avx512f,fma"))) void depthwise_avx512(const DwArgs& a) {
  depthwise_call<16>(a);
}
__attribute__((target("avx2,fma"))) void depthwise_avx2(const DwArgs& a) { depthwise_call<8>(a); }

const bool kHasAvx512 = cpu_has_avx512f();

}  // namespace

void depthwise_conv_rows_f32(const float* x, const float* wt, float* y, int64_t h, int64_t w,
                             int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                             int64_t dh, int64_t dw, int64_t ow, int64_t oh0, int64_t oh1,
                             int64_t ldy) {
  if (oh1 <= oh0 || ow <= 0) return;
  const DwArgs a{x, wt, y, h, w, kh, kw, sh, sw, ph, pw, dh, dw, ow, oh0, oh1, ldy};
  if (kHasAvx512)
    depthwise_avx512(a);
  else
    depthwise_avx2(a);
}

}  // namespace tierjit::kernels
