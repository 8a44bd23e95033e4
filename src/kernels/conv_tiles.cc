// conv_pack_panel_f32 (conv_tiles.h): im2col rows of 64 output pixels written straight into a
// GEMM panel a vector at a time (vec_lanes.h: 16 lanes with AVX-512, 8 without); the padding is
// resolved per run of pixels, not per element. Depthwise tiles: depthwise_tiles.cc.
#include "kernels/conv_tiles.h"

#include <algorithm>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/packed_gemm.h"
#include "kernels/vec_lanes.h"

namespace tierjit::kernels {

namespace {

constexpr int64_t kPanel = 64;

// A run of the panel's pixels within one output row: panel columns [j, j + n)
// are output row oy, columns ox0 .. ox0 + n - 1.
struct Run {
  int64_t j, n, oy, ox0;
};

struct PackArgs {
  const float* x;
  float* panel;
  int64_t h, w, kh, kw, sh, sw, ph, pw, dh, dw, ow, pix0, npix, k0, kc, width;
};

// The body of conv_pack_panel_f32, inlined into a wrapper per instruction set
// (vec_lanes.h, L lanes). Each row of the panel is built from the panel's runs (64 pixels
// span a few output rows), each run one zeroed head, one contiguous (or
// stride-2, or strided) copy and one zeroed tail, written in whole vectors in
// order: a vector running past its part is overwritten by the next part (the
// row buffer has room past its 64 columns, the source is read past a run only
// inside x).
template <int L>
inline __attribute__((always_inline)) void pack(const PackArgs& a, bool sliced) {
  Run runs[kPanel];
  int nruns = 0;
  for (int64_t j = 0, pix = a.pix0; j < a.npix;) {
    const int64_t oy = pix / a.ow, ox0 = pix % a.ow, n = std::min(a.npix - j, a.ow - ox0);
    runs[nruns++] = {j, n, oy, ox0};
    j += n;
    pix += n;
  }
  const int64_t plane = a.h * a.w, taps = a.kh * a.kw;
  const int64_t channels = (a.k0 + a.kc + taps - 1) / taps;  // planes x holds
  const float* const x_end = a.x + channels * plane;
  // Each tap's pieces, the same for every channel: per run, the columns [lo, hi) it copies
  // (src: their first element's offset in the channel's plane) and the zeros around them; a run
  // whose input row lies in the padding is all zeros (src = -1).
  struct Piece {
    int64_t j, n, lo, hi, src;
  };
  thread_local std::vector<Piece> pieces;
  pieces.resize(static_cast<size_t>(taps * nruns));
  for (int64_t t = 0; t < taps; ++t) {
    const int64_t ky = t / a.kw, kx = t % a.kw;
    const int64_t off = kx * a.dw - a.pw;  // input column of output column ox: ox * sw + off
    // Output columns ox with 0 <= ox * sw + off < w.
    const int64_t ox_lo = a.sw == 1 ? -off : ceil_div(-off, a.sw);
    const int64_t ox_hi = a.sw == 1 ? a.w - off : floor_div(a.w - 1 - off, a.sw) + 1;
    for (int r = 0; r < nruns; ++r) {
      const Run& run = runs[r];
      Piece& pc = pieces[static_cast<size_t>(t * nruns + r)];
      pc.j = run.j;
      pc.n = run.n;
      const int64_t iy = run.oy * a.sh - a.ph + ky * a.dh;
      if (iy < 0 || iy >= a.h) {
        pc.lo = pc.hi = 0;
        pc.src = -1;
        continue;
      }
      pc.lo = std::clamp<int64_t>(ox_lo - run.ox0, 0, run.n);
      pc.hi = std::clamp<int64_t>(ox_hi - run.ox0, pc.lo, run.n);
      pc.src = iy * a.w + (run.ox0 + pc.lo) * a.sw + off;
    }
  }
  alignas(64) float row[kPanel + 16];
  int64_t ci = a.k0 / taps, tap = a.k0 % taps;  // of row k0, then stepped
  for (int64_t q = 0; q < a.kc; ++q) {
    const float* xc = a.x + ci * plane;
    float* out = sliced ? row : a.panel + q * a.width;
    const Piece* pc = &pieces[static_cast<size_t>(tap * nruns)];
    for (int r = 0; r < nruns; ++r, ++pc) {
      float* dst = out + pc->j;
      if (pc->src < 0) {
        zero_run_over<L>(dst, pc->n);
        continue;
      }
      if (pc->lo > 0) zero_run_over<L>(dst, pc->lo);
      const float* src = xc + pc->src;
      const int64_t n = pc->hi - pc->lo;
      if (a.sw == 1) {
        if (src + (n + L - 1) / L * L <= x_end)
          copy_run_over<L>(dst + pc->lo, src, n);
        else
          copy_run<L>(dst + pc->lo, src, n);
      } else if (a.sw == 2) {
        copy_run_stride2<L>(dst + pc->lo, src, n, x_end - src);
      } else {
        for (int64_t t = 0; t < n; ++t) dst[pc->lo + t] = src[t * a.sw];
      }
      if (pc->hi < pc->n) zero_run_over<L>(dst + pc->hi, pc->n - pc->hi);
    }
    zero_run_over<L>(out + a.npix, a.width - a.npix);
    if (sliced)
      for (int64_t s = 0; s < a.width / 16; ++s)  // 16-column slices
        copy_run_over<L>(a.panel + s * 16 * a.kc + q * 16, row + 16 * s, 16);
    if (++tap == taps) {
      tap = 0;
      ++ci;
    }
  }
}

__attribute__((target("avx512f"))) void pack_avx512(const PackArgs& a) { pack<16>(a, false); }
__attribute__((target("avx2"))) void pack_avx2(const PackArgs& a, bool sliced) {
  pack<8>(a, sliced);
}

const bool kHasAvx512 = cpu_has_avx512f();

}  // namespace

void conv_pack_panel_f32(const float* x, float* panel, int64_t c, int64_t h, int64_t w, int64_t kh,
                         int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh,
                         int64_t dw, int64_t ow, int64_t pix0, int64_t npix, int64_t k0, int64_t kc,
                         int64_t width) {
  (void)c;  // the channels the rows [k0, k0 + kc) name are all read from x
  const PackArgs a{x, panel, h, w, kh, kw, sh, sw, ph, pw, dh, dw, ow, pix0, npix, k0, kc, width};
  const bool sliced = gemm_panels_sliced();
  if (kHasAvx512 && !sliced)
    pack_avx512(a);
  else
    pack_avx2(a, sliced);
}

}  // namespace tierjit::kernels
