// direct_conv_rows_f32 (conv_tiles.h): the rows an item needs are copied once per channel into
// zero-padded phase rows (phase_rows.h), then register tiles of MR output channels x P vectors
// of output columns sum every (channel, tap) product: per product step P vector loads and MR
// weight broadcasts feed MR x P fused multiply-adds, with no im2col panel in between. One
// template over the vector's lanes, instantiated for AVX-512 (16 lanes, 6 x 4 tile) and AVX2
// (8 lanes, 6 x 2 tile: 12 accumulators of the 16 registers, room for the masks) (vec_lanes.h).
#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "kernels/conv_tiles.h"
#include "kernels/cpu_features.h"
#include "kernels/phase_rows.h"
#include "kernels/vec_lanes.h"

namespace tierjit::kernels {

namespace {

struct DirectArgs {
  const float* x;
  const float* wt;
  float* y;
  int64_t c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, ow, oh0, oh1, m, ldy, x_avail;
};

// What every register tile of one call reads: the packed rows `x`, per vector of output
// columns where it reads (voff) and is stored (yoff), per product step its offset (koff); the
// weights (rows of k floats) and the tile y (channel j at y + j * ldy).
// Flat (stride 1, output as wide as the input): the vectors run over the rows' pixels back to
// back, the steps are (channel, ky) with the column taps kx outermost: tap kx adds kxoff[kx] and
// zeroes the lanes whose column lies in the padding (masks: kw x L ints per vector).
struct TileArgs {
  const float* x;
  const int64_t *voff, *yoff, *koff, *kxoff;
  const int32_t* masks;
  int64_t nvec, nsteps, kw, k, ldy;
  const float* wt;
  float* y;
};

// One register tile: output channels [j0, j0 + MR) x vectors [v0, v0 + P). Stores go channel
// by channel, vectors ascending: a vector's lanes past its row (or past the rows) land where a
// later vector (or the slack) is written afterwards.
// Product steps [s0, s1) (flat: per column tap); with `accumulate` the tile adds to what y holds.
template <int L, int MR, int P, bool kFlat>
inline __attribute__((always_inline)) void direct_tile(const TileArgs& a, int64_t j0, int64_t v0,
                                                       int64_t s0, int64_t s1, bool accumulate) {
  using V = typename VecF<L>::type;
  using VI = typename VecI<L>::type;
  V acc[MR][P] = {};
  float* y = a.y + j0 * a.ldy;
  if (accumulate)
#pragma GCC unroll 8
    for (int j = 0; j < MR; ++j)
#pragma GCC unroll 4
      for (int p = 0; p < P; ++p) acc[j][p] = loadu<L>(y + j * a.ldy + a.yoff[v0 + p]);
  const float* xs[P];
#pragma GCC unroll 4
  for (int p = 0; p < P; ++p) xs[p] = a.x + a.voff[v0 + p];
  const float* w0 = a.wt + j0 * a.k;
  if constexpr (kFlat) {
    for (int64_t kx = 0; kx < a.kw; ++kx) {
      VI m[P];
#pragma GCC unroll 4
      for (int p = 0; p < P; ++p) std::memcpy(&m[p], a.masks + ((v0 + p) * a.kw + kx) * L, sizeof m[p]);
      const float* ws[MR];
#pragma GCC unroll 8
      for (int j = 0; j < MR; ++j) ws[j] = w0 + j * a.k + kx;
      const int64_t kxo = a.kxoff[kx], kw = a.kw;
      for (int64_t s = s0; s < s1; ++s) {
        const int64_t o = a.koff[s] + kxo;
        V xv[P];
#pragma GCC unroll 4
        for (int p = 0; p < P; ++p) xv[p] = (V)((VI)loadu<L>(xs[p] + o) & m[p]);
#pragma GCC unroll 8
        for (int j = 0; j < MR; ++j) {
          const float wv = ws[j][s * kw];
#pragma GCC unroll 4
          for (int p = 0; p < P; ++p) acc[j][p] += wv * xv[p];
        }
      }
    }
  } else {
    const float* ws[MR];
#pragma GCC unroll 8
    for (int j = 0; j < MR; ++j) ws[j] = w0 + j * a.k;
    for (int64_t s = s0; s < s1; ++s) {
      const int64_t o = a.koff[s];
      V xv[P];
#pragma GCC unroll 4
      for (int p = 0; p < P; ++p) xv[p] = loadu<L>(xs[p] + o);
#pragma GCC unroll 8
      for (int j = 0; j < MR; ++j) {
        const float wv = ws[j][s];
#pragma GCC unroll 4
        for (int p = 0; p < P; ++p) acc[j][p] += wv * xv[p];
      }
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < MR; ++j)
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) storeu<L>(y + j * a.ldy + a.yoff[v0 + p], acc[j][p]);
}

// Tiles of up to MR channels x P vectors over all m channels and every vector, the input
// channels in chunks of `chunk` (their packed rows stay in L1 while every tile reads them; the
// tiles of later chunks add to y).
template <int L, int MR, int P, bool kFlat>
inline __attribute__((always_inline)) void direct_tiles(const TileArgs& a, int64_t m, int64_t c,
                                                        int64_t chunk) {
  const int64_t steps = kFlat ? a.nsteps : a.k, per_channel = steps / c;
  for (int64_t c0 = 0; c0 < c; c0 += chunk) {
   const int64_t s0 = c0 * per_channel, s1 = std::min(c, c0 + chunk) * per_channel;
   const bool accumulate = c0 > 0;
   for (int64_t j0 = 0; j0 < m; j0 += MR) {
    const int64_t mr = std::min<int64_t>(MR, m - j0);
    for (int64_t v0 = 0; v0 < a.nvec; v0 += P) {
      const int64_t pv = std::min<int64_t>(P, a.nvec - v0);
      // Full tiles first; the channel and vector remainders take smaller instantiations.
#define TJ_DIRECT_P(R, Q) direct_tile<L, R, Q, kFlat>(a, j0, v0, s0, s1, accumulate)
#define TJ_DIRECT_ROWS(R)                      \
  switch (pv) {                                \
    case 1:                                    \
      TJ_DIRECT_P(R, 1);                       \
      break;                                   \
    case 2:                                    \
      if constexpr (P >= 2) TJ_DIRECT_P(R, 2); \
      break;                                   \
    case 3:                                    \
      if constexpr (P >= 3) TJ_DIRECT_P(R, 3); \
      break;                                   \
    default:                                   \
      if constexpr (P >= 4) TJ_DIRECT_P(R, 4); \
      break;                                   \
  }
      switch (mr) {
        case 1:
          TJ_DIRECT_ROWS(1);
          break;
        case 2:
          if constexpr (MR >= 2) TJ_DIRECT_ROWS(2);
          break;
        case 3:
          if constexpr (MR >= 3) TJ_DIRECT_ROWS(3);
          break;
        case 4:
          if constexpr (MR >= 4) TJ_DIRECT_ROWS(4);
          break;
        case 5:
          if constexpr (MR >= 5) TJ_DIRECT_ROWS(5);
          break;
        default:
          if constexpr (MR >= 6) TJ_DIRECT_ROWS(6);
          break;
      }
#undef TJ_DIRECT_ROWS
#undef TJ_DIRECT_P
    }
   }
  }
}

// Input channels per chunk: their packed rows (`channel_floats` each) within 16 KiB.
inline int64_t channel_chunk(int64_t channel_floats) {
  return std::max<int64_t>(1, 4096 / std::max<int64_t>(1, channel_floats));
}

// Per-thread scratch of a call: the packed rows and the tables. The tables depend on the
// geometry and the item's row count only: kept for the next call with the same (`key`).
struct Scratch {
  std::vector<float> rows;
  std::vector<int64_t> koff, kxoff, voff, yoff;
  std::vector<int32_t> masks;
  std::vector<float> ytile;  // the padded tile of direct_rows (several chunks, ragged rows)
  std::array<int64_t, 14> key{};
  bool same_tables(const DirectArgs& a, int64_t mode) {
    const std::array<int64_t, 14> k = {a.c,  a.h,  a.w,  a.kh, a.kw, a.sh, a.sw,
                                       a.ph, a.pw, a.dh, a.dw, a.ow, a.oh1 - a.oh0, mode};
    if (k == key) return true;
    key = k;
    return false;
  }
};

template <int L>
void flat_tables(const DirectArgs& a, Scratch& sc, int64_t nvec, int64_t cstride) {
  const int64_t nsteps = a.c * a.kh, w = a.w;
  sc.koff.resize(static_cast<size_t>(nsteps));
  for (int64_t ic = 0; ic < a.c; ++ic)
    for (int64_t ky = 0; ky < a.kh; ++ky) sc.koff[ic * a.kh + ky] = ic * cstride + ky * a.dh * w;
  sc.kxoff.resize(static_cast<size_t>(a.kw));
  for (int64_t kx = 0; kx < a.kw; ++kx) sc.kxoff[kx] = kx * a.dw - a.pw;
  sc.voff.resize(static_cast<size_t>(nvec));
  sc.yoff.resize(static_cast<size_t>(nvec));
  sc.masks.resize(static_cast<size_t>(nvec * a.kw * L));
  for (int64_t v = 0, ox = 0; v < nvec; ++v) {
    sc.voff[v] = sc.yoff[v] = v * L;
    for (int64_t i = 0; i < L; ++i, ox = ox + 1 == a.ow ? 0 : ox + 1)  // ox: pixel v L + i's column
      for (int64_t kx = 0; kx < a.kw; ++kx) {
        const int64_t ix = ox + kx * a.dw - a.pw;
        sc.masks[(v * a.kw + kx) * L + i] = ix >= 0 && ix < w ? -1 : 0;
      }
  }
}

// Stride 1 and an output as wide as the input: the rows are copied as they are (zero rows in
// the vertical padding), one channel's rows back to back after `front` floats of zeros, and the
// vectors run over the item's pixels back to back: every lane but the last vector's tail holds
// an output pixel, whatever the map's width.
template <int L, int MR, int P>
inline __attribute__((always_inline)) void direct_flat(const DirectArgs& a, Scratch& sc) {
  const int64_t rows_out = a.oh1 - a.oh0, w = a.w;
  const int64_t iy0 = a.oh0 - a.ph, rows_in = rows_out + (a.kh - 1) * a.dh;
  const int64_t npix = rows_out * a.ow, nvec = (npix + L - 1) / L;
  const int64_t cstride = rows_in * w;
  // Zeros before the first channel (column taps reach pw floats before a row) and after the last
  // (the last vector's tail and the taps reach past the last row).
  const int64_t front = (a.pw + L) / L * L, back = nvec * L - npix + (a.kw - 1) * a.dw + 2 * L;
  sc.rows.resize(static_cast<size_t>(front + a.c * cstride + back));
  float* rows = sc.rows.data();
  zero_run<L>(rows, front);
  const float* x_end = a.x + a.x_avail;
  for (int64_t ic = 0; ic < a.c; ++ic)
    fill_phase_rows<L>(rows + front + ic * cstride, a.x + ic * a.h * w, x_end, a.h, w, iy0,
                       rows_in, 1, 0, w);
  zero_run<L>(rows + front + a.c * cstride, back);
  const int64_t nsteps = a.c * a.kh;
  if (!sc.same_tables(a, 1)) flat_tables<L>(a, sc, nvec, cstride);
  const TileArgs t{rows + front, sc.voff.data(), sc.yoff.data(), sc.koff.data(), sc.kxoff.data(),
                   sc.masks.data(), nvec, nsteps, a.kw, a.c * a.kh * a.kw, a.ldy, a.wt, a.y};
  direct_tiles<L, MR, P, true>(t, a.m, a.c, channel_chunk(cstride));
}

// The tables of direct_rows.
inline void row_tables(const DirectArgs& a, Scratch& sc, int64_t cols, int64_t cstride,
                       int64_t nvr, int64_t lanes, int64_t ypitch) {
  const int64_t rows_out = a.oh1 - a.oh0;
  // Product step s = (channel, ky, kx), W's order: its offset in the phase rows from the output
  // row's first input row.
  const int64_t taps = a.kh * a.kw, k = a.c * taps;
  sc.koff.resize(static_cast<size_t>(k));
  for (int64_t kx = 0, phase = 0, col = 0; kx < a.kw; ++kx) {
    const int64_t x_off = phase * cols + col;
    for (int64_t ky = 0; ky < a.kh; ++ky) sc.koff[ky * a.kw + kx] = ky * a.dh * a.sw * cols + x_off;
    phase += a.dw;  // (kx dw) % sw and (kx dw) / sw for the next kx
    while (phase >= a.sw) {
      phase -= a.sw;
      ++col;
    }
  }
  for (int64_t ic = 1; ic < a.c; ++ic)
    for (int64_t t = 0; t < taps; ++t) sc.koff[ic * taps + t] = ic * cstride + sc.koff[t];
  const int64_t nvec = rows_out * nvr;
  sc.voff.resize(static_cast<size_t>(nvec));
  sc.yoff.resize(static_cast<size_t>(nvec));
  for (int64_t r = 0; r < rows_out; ++r)
    for (int64_t v = 0; v < nvr; ++v) {
      sc.voff[r * nvr + v] = r * a.sh * a.sw * cols + v * lanes;
      sc.yoff[r * nvr + v] = r * ypitch + v * lanes;
    }
}

// Any stride: each output row's columns in whole vectors from zero-padded phase rows
// (phase_rows.h); a row narrower than its vectors leaves their last lanes unused.
template <int L, int MR, int P>
inline __attribute__((always_inline)) void direct_rows(const DirectArgs& a, Scratch& sc) {
  const int64_t rows_out = a.oh1 - a.oh0;
  const int64_t iy0 = a.oh0 * a.sh - a.ph, rows_in = (rows_out - 1) * a.sh + (a.kh - 1) * a.dh + 1;
  const int64_t nvr = (a.ow + L - 1) / L;  // vectors per output row
  const int64_t cols = nvr * L + ((a.kw - 1) * a.dw) / a.sw + 1;
  const int64_t cstride = rows_in * a.sw * cols;  // floats of one channel's phase rows
  sc.rows.resize(static_cast<size_t>(a.c * cstride + L));
  const float* x_end = a.x + a.x_avail;
  for (int64_t ic = 0; ic < a.c; ++ic)
    fill_phase_rows<L>(sc.rows.data() + ic * cstride, a.x + ic * a.h * a.w, x_end, a.h, a.w, iy0,
                       rows_in, a.sw, a.pw, cols);
  const int64_t taps = a.kh * a.kw, k = a.c * taps, nvec = rows_out * nvr;
  const int64_t chunk = channel_chunk(cstride);
  // A row's last vector writes past the row into the next one, which a later vector writes
  // afterwards. With several chunks of input channels a later chunk would first add to those
  // lanes and then the next row's vector would read them: the tile then goes to a scratch whose
  // rows are whole vectors apart, copied to y at the end.
  const bool padded = chunk < a.c && a.ow % L != 0;
  const int64_t ypitch = padded ? nvr * L : a.ow;
  if (!sc.same_tables(a, padded ? 2 : 0)) row_tables(a, sc, cols, cstride, nvr, L, ypitch);
  float* y = a.y;
  int64_t ldy = a.ldy;
  if (padded) {
    ldy = rows_out * ypitch;
    sc.ytile.resize(static_cast<size_t>(a.m * ldy));
    y = sc.ytile.data();
  }
  const TileArgs t{sc.rows.data(), sc.voff.data(), sc.yoff.data(), sc.koff.data(), nullptr,
                   nullptr, nvec, k, a.kw, k, ldy, a.wt, y};
  direct_tiles<L, MR, P, false>(t, a.m, a.c, chunk);
  if (padded)
    for (int64_t j = 0; j < a.m; ++j)
      for (int64_t r = 0; r < rows_out; ++r)
        copy_run<L>(a.y + j * a.ldy + r * a.ow, y + j * ldy + r * ypitch, a.ow);
}

template <int L, int MR, int P>
inline __attribute__((always_inline)) void direct_call(const DirectArgs& a) {
  static_assert(MR <= 6 && P <= 4, "direct_tiles instantiates up to 6 x 4");
  thread_local Scratch scratch;
  if (direct_conv_flat(a.sh, a.sw, a.w, a.ow))
    direct_flat<L, MR, P>(a, scratch);
  else
    direct_rows<L, MR, P>(a, scratch);
}

__attribute__((target("avx512f,fma"))) void direct_avx512(const DirectArgs& a) {
  direct_call<16, 6, 4>(a);
}
__attribute__((target("avx2,fma"))) void direct_avx2(const DirectArgs& a) {
  direct_call<8, 6, 2>(a);
}

const bool kHasAvx512 = cpu_has_avx512f();

}  // namespace

int64_t direct_conv_lanes() { return kHasAvx512 ? 16 : 8; }

bool direct_conv_flat(int64_t sh, int64_t sw, int64_t w, int64_t ow) {
  return sh == 1 && sw == 1 && ow == w;
}

void direct_conv_rows_f32(const float* x, const float* wt, float* y, int64_t c, int64_t h,
                          int64_t w, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                          int64_t pw, int64_t dh, int64_t dw, int64_t ow, int64_t oh0, int64_t oh1,
                          int64_t m, int64_t ldy, int64_t x_avail) {
  if (oh1 <= oh0 || ow <= 0 || m <= 0) return;
  const DirectArgs a{x,  wt, y,  c,   h,   w,   kh, kw,  sh, sw, ph,
                     pw, dh, dw, ow, oh0, oh1, m,  ldy, std::max(x_avail, c * h * w)};
  if (kHasAvx512)
    direct_avx512(a);
  else
    direct_avx2(a);
}

}  // namespace tierjit::kernels
