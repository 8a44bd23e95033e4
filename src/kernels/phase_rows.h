// Phase rows (private to src/kernels): the input rows a convolution tile reads, copied once,
// zero-padded and split by the stride into phases so that every tap reads a contiguous run of
// columns whatever the stride. Shared by the depthwise tiles and the direct convolution.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/vec_lanes.h"

namespace tierjit::kernels {

// The input rows [iy0, iy0 + rows) of one channel, zero-padded and split into `sw` phases:
// phase q, column t holds x[iy, t * sw + q - pw] (0 outside the image), so that tap kx of output
// column ox reads phase (kx dw) % sw at column ox + (kx dw) / sw: contiguous in ox whatever the
// stride. `cols` columns per phase (the output columns rounded up to whole steps, plus the taps).
struct PhaseRows {
  std::vector<float> data;  // rows x sw x cols, plus one vector of slack (whole-vector copies)
  int64_t cols = 0, sw = 1;
  const float* row(int64_t r, int64_t q) const { return data.data() + (r * sw + q) * cols; }
};

/// Fills `data` (rows x sw x cols floats, plus L - 1 floats of room its whole-vector writes may
/// use past the end) with the phase rows of one channel `x` ([h, w]; `x_end`: the end of what
/// may be read) as PhaseRows describes.
template <int L>
inline __attribute__((always_inline)) void fill_phase_rows(float* data, const float* x,
                                                           const float* x_end, int64_t h, int64_t w,
                                                           int64_t iy0, int64_t rows, int64_t sw,
                                                           int64_t pw, int64_t cols) {
  // Per phase q, the columns t with t * sw + q - pw in [0, w): [t0[q], t1[q]) (the same for every
  // row: two divisions per row and phase were a third of a 14x14 map's time).
  thread_local std::vector<int64_t> t0s, t1s;
  t0s.resize(static_cast<size_t>(sw));
  t1s.resize(static_cast<size_t>(sw));
  for (int64_t q = 0; q < sw; ++q) {
    t0s[q] = std::clamp<int64_t>(ceil_div(pw - q, sw), 0, cols);
    t1s[q] = std::clamp<int64_t>(floor_div(w - 1 + pw - q, sw) + 1, t0s[q], cols);
  }
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t iy = iy0 + r;
    for (int64_t q = 0; q < sw; ++q) {
      float* dst = data + (r * sw + q) * cols;
      if (iy < 0 || iy >= h) {
        zero_run_over<L>(dst, cols);
        continue;
      }
      const int64_t t0 = t0s[q], t1 = t1s[q];
      zero_run_over<L>(dst, t0);  // up to L - 1 past t0: the copy below comes next
      const float* src = x + iy * w + q - pw;  // column t reads src[t * sw]
      // The whole-vector copies may write past t1: the zeros after the run come next, and a
      // write past the row lands in a later row (filled after this one) or the slack.
      if (sw == 1) {
        if (x_end - (src + t0) >= (t1 - t0 + L - 1) / L * L) copy_run_over<L>(dst + t0, src + t0, t1 - t0);
        else copy_run<L>(dst + t0, src + t0, t1 - t0);
      } else if (sw == 2) {
        copy_run_stride2_over<L>(dst + t0, src + 2 * t0, t1 - t0, x_end - (src + 2 * t0));
      } else {
        for (int64_t t = t0; t < t1; ++t) dst[t] = src[t * sw];
      }
      zero_run_over<L>(dst + t1, cols - t1);  // past the row: a later row or the slack
    }
  }
}

template <int L>
inline __attribute__((always_inline)) void fill_phases(PhaseRows& p, const float* x,
                                                       const float* x_end, int64_t h, int64_t w,
                                                       int64_t iy0, int64_t rows, int64_t sw,
                                                       int64_t pw, int64_t cols) {
  p.sw = sw;
  p.cols = cols;
  p.data.resize(static_cast<size_t>(rows * sw * cols + L));
  fill_phase_rows<L>(p.data.data(), x, x_end, h, w, iy0, rows, sw, pw, cols);
}

}  // namespace tierjit::kernels
