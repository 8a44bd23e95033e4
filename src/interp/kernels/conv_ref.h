// Plain-loop convolution building blocks for the dtypes and ranks oneDNN does not cover:
// N-D im2col / col2im over a ConvGeometry and conv_ref = im2col + GEMM per (batch, group).
// col2im also serves ConvTranspose (its output is the geometry's "input" side).
#pragma once

#include <vector>

#include "interp/kernels/dnnl_util.h"
#include "interp/kernels/nn_common.h"

namespace tierjit::interp::nn {

/// For each spatial dim d: table[d][k * out[d] + o] = input coordinate of output o, kernel tap k,
/// or -1 where it falls in the padding.
inline std::vector<std::vector<int64_t>> window_tables(const ConvGeometry& g) {
  const size_t r = g.in_spatial.size();
  std::vector<std::vector<int64_t>> tab(r);
  for (size_t d = 0; d < r; ++d) {
    tab[d].resize(static_cast<size_t>(g.out_spatial[d] * g.kernel[d]));
    for (int64_t k = 0; k < g.kernel[d]; ++k)
      for (int64_t o = 0; o < g.out_spatial[d]; ++o) {
        const int64_t c = o * g.strides[d] - g.pad_begin[d] + k * g.dilations[d];
        tab[d][k * g.out_spatial[d] + o] = c >= 0 && c < g.in_spatial[d] ? c : -1;
      }
  }
  return tab;
}

/// Walks rows (channel c < channels, kernel tap kf) x output positions of the column matrix
/// [channels * KK, OS], calling f(col_index, image_offset) for every position inside the image
/// (image offset relative to the channel block base, i.e. c * IS + spatial offset).
template <class F>
void for_each_window_tap(const ConvGeometry& g, int64_t channels, F&& f) {
  const size_t r = g.in_spatial.size();
  const auto tab = window_tables(g);
  const std::vector<int64_t> in_strides = row_major_strides(g.in_spatial);
  const int64_t kk = shape_numel(g.kernel), os = shape_numel(g.out_spatial);
  const int64_t is = shape_numel(g.in_spatial);
  if (os == 0 || is == 0) return;  // no window position, or an empty image: no tap inside
  const int64_t last_out = g.out_spatial[r - 1];
  const int64_t outer = last_out ? os / last_out : 0;
  std::vector<int64_t> kidx(r), oidx(r);
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t kf = 0; kf < kk; ++kf) {
      for (int64_t d = static_cast<int64_t>(r) - 1, rem = kf; d >= 0; --d) {
        kidx[d] = rem % g.kernel[d];
        rem /= g.kernel[d];
      }
      const int64_t row = (c * kk + kf) * os;
      const int64_t* tl = &tab[r - 1][kidx[r - 1] * last_out];
      for (int64_t ob = 0; ob < outer; ++ob) {
        int64_t base = c * is;
        bool valid = true;
        for (int64_t d = static_cast<int64_t>(r) - 2, rem = ob; d >= 0; --d) {
          const int64_t o = rem % g.out_spatial[d];
          rem /= g.out_spatial[d];
          const int64_t coord = tab[d][kidx[d] * g.out_spatial[d] + o];
          if (coord < 0) { valid = false; break; }
          base += coord * in_strides[d];
        }
        if (!valid) continue;
        const int64_t col0 = row + ob * last_out;
        for (int64_t ol = 0; ol < last_out; ++ol)
          if (tl[ol] >= 0) f(col0 + ol, base + tl[ol]);
      }
    }
  }
}

/// col [channels*KK, OS] <- image x [channels, in_spatial...] (zeros in the padding).
template <class T>
void im2col(const ConvGeometry& g, const T* x, int64_t channels, T* col) {
  const int64_t n = channels * shape_numel(g.kernel) * shape_numel(g.out_spatial);
  std::fill(col, col + n, T{});
  for_each_window_tap(g, channels, [&](int64_t ci, int64_t xi) { col[ci] = x[xi]; });
}

/// image y [channels, in_spatial...] += col [channels*KK, OS] (the adjoint of im2col).
template <class T>
void col2im_add(const ConvGeometry& g, const T* col, int64_t channels, T* y) {
  for_each_window_tap(g, channels, [&](int64_t ci, int64_t yi) { y[yi] += col[ci]; });
}

/// y = conv(x, w) without bias over plain loops (x, w, y as in ConvGeometry; y overwritten).
template <class T>
void conv_ref(const ConvGeometry& g, const T* x, const T* w, T* y) {
  const int64_t cg = g.in_channels / g.group, mg = g.out_channels / g.group;
  const int64_t kk = shape_numel(g.kernel), os = shape_numel(g.out_spatial);
  const int64_t is = shape_numel(g.in_spatial);
  std::vector<T> col(static_cast<size_t>(cg * kk * os));
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t gi = 0; gi < g.group; ++gi) {
      im2col(g, x + (n * g.in_channels + gi * cg) * is, cg, col.data());
      T* yb = y + (n * g.out_channels + gi * mg) * os;
      if constexpr (std::is_same_v<T, float>) {
        (void)sgemm(false, false, mg, os, cg * kk, 1.f, w + gi * mg * cg * kk, cg * kk, col.data(), os,
                    0.f, yb, os);
      } else {
        ref_gemm<T>(mg, os, cg * kk, w + gi * mg * cg * kk, cg * kk, col.data(), os, yb, os);
      }
    }
}

/// y[n, m, ...] += bias[m].
template <class T>
void add_channel_bias(const ConvGeometry& g, const T* bias, T* y) {
  const int64_t os = shape_numel(g.out_spatial);
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t m = 0; m < g.out_channels; ++m) {
      T* p = y + (n * g.out_channels + m) * os;
      for (int64_t i = 0; i < os; ++i) p[i] += bias[m];
    }
}

}  // namespace tierjit::interp::nn
