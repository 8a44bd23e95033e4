// Small-batch float32 LSTM (lstm_small.h). Weights are packed per direction with the hidden
// units in blocks of 16, the four gates (ONNX order i, o, f, c) of a block one after the other,
// each gate's rows of K = I or H consecutive: W as [H/16][4][I][16], R as [H/16][4][H][16] (a
// gate's 16 columns are one sequential stream over k: the hardware prefetcher keeps up, where
// rows of all four gates side by side made a 256-byte stride), bias (Wb + Rb) as [H/16][64]; the
// gates of a block are its 64 columns of the projections and gates, [.][H/16][64]. H padded to a
// multiple of 16 with zeros. The input projection of a chunk of time steps is one register-blocked product;
// each step then accumulates h R^T onto it block by block and finishes the block's gate math in
// the same registers. Written once with GCC vector extensions over the vector type (16 lanes for
// AVX-512F, 8 for the baseline AVX2 + FMA: see Lanes), chosen at run time (not target_clones:
// see small_gemm.cc).
#include "interp/kernels/lstm_small.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <tuple>
#include <vector>

#include <immintrin.h>
#include <omp.h>

#include "kernels/cpu_features.h"
#include "interp/kernels/dnnl_util.h"
#include "kernels/line_buffer.h"
#include "kernels/weight_pack_cache.h"

// The 16-lane helpers pass vectors by value; they are always inlined into the two versions.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace tierjit::interp::nn {
namespace {

typedef float V16 __attribute__((vector_size(64)));
typedef int32_t I16 __attribute__((vector_size(64)));
typedef float V8 __attribute__((vector_size(32)));
typedef int32_t I8 __attribute__((vector_size(32)));

// The kernel is written over the vector type V: 16 lanes (AVX-512F, one vector per 16-unit block
// of a gate) or 8 (AVX2, two). GCC lowers 16-lane values for AVX2 through memory (each
// broadcast and accumulator via the stack: lstm_small's 32x8x64 took 21 ms against 0.9 ms on
// oneDNN), so the AVX2 version works on 8-lane vectors it keeps in ymm registers. Every lane sees
// the same operations in both versions: the same bits.
template <class V>
struct Lanes;
template <>
struct Lanes<V16> {
  using I = I16;
  static constexpr int64_t n = 16;
};
template <>
struct Lanes<V8> {
  using I = I8;
  static constexpr int64_t n = 8;
};
template <class V>
using IntOf = typename Lanes<V>::I;
template <class V>
constexpr int64_t kLanes = Lanes<V>::n;

#define TJ_LSTM_INLINE __attribute__((always_inline)) inline

constexpr int64_t kBlock = 16;       // hidden units per block
constexpr int64_t kBlockCols = 64;   // 4 gates x 16 units
// Multiply-adds of one step (N x 4H x H) from which one direction is split over two threads.
constexpr int64_t kTwoThreadStepMacs = int64_t{1} << 15;
// AVX2: rows from which products run slice_product's 4-row tiles (fewer: step_tile / project_tile).
constexpr int64_t kSliceRowsMin = 3;
// Batch from which one direction is split over two threads by batch rows (each half then still
// on slice_product's tiles) instead of by hidden blocks with a wait per step. At 4 rows, 2 + 2 on
// step_tile ran 32x4x64 no faster than the block split (noisy: 384-469 against 317-465 us p50).
constexpr int64_t kRowSplitMinBatch = 2 * kSliceRowsMin;

std::atomic<bool> g_enabled{true};
std::atomic<bool> g_force_avx2{false};
std::atomic<uint64_t> g_runs{0}, g_two_thread_runs{0};

const bool kHasAvx512 = kernels::cpu_has_avx512f();

template <class V>
TJ_LSTM_INLINE V load(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class V>
TJ_LSTM_INLINE void store(float* p, const V& v) {
  std::memcpy(p, &v, sizeof v);
}
template <class V>
TJ_LSTM_INLINE void store_n(float* p, const V& v, int64_t n) {  // the first n < lanes lanes
  float tmp[kLanes<V>];
  std::memcpy(tmp, &v, sizeof v);
  std::memcpy(p, tmp, static_cast<size_t>(n) * sizeof(float));
}
// Keeps an AVX2 vector in a register: GCC otherwise folds its load into each FMA that uses it
// (one load per row instead of one), and the loop becomes bound by loads (Zen 3: two 256-bit
// loads per cycle against two FMAs). No effect on values.
template <class V>
TJ_LSTM_INLINE void in_register(V& v) {
  if constexpr (kLanes<V> == 8) asm("" : "+x"(v));
}
template <class V>
TJ_LSTM_INLINE V splat(float f) {
  return V{} + f;
}
template <class V>
TJ_LSTM_INLINE V from_bits(const IntOf<V>& b) {
  V v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}
template <class V>
TJ_LSTM_INLINE IntOf<V> bits(const V& v) {
  IntOf<V> b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}
template <class V>
TJ_LSTM_INLINE V abs_v(const V& x) {
  return from_bits<V>(bits(x) & 0x7fffffff);
}

// exp(y) = 2^q (1 + p): q = rint(y / ln 2) (the 1.5 * 2^23 rounding trick, valid for
// |y| < 2^21), s = y - q ln 2 in two steps and p = expm1(s) by SLEEF 3.5's expf u10 polynomial
// (the one vec_math.cc's exp16 inlines). p keeps expm1's relative accuracy near 0.
template <class V>
TJ_LSTM_INLINE void exp_parts(const V& y, IntOf<V>& q, V& p) {
  const V big = splat<V>(0x1.8p23f);
  const V qf = (y * 0x1.715476p+0f + big) - big;
  q = __builtin_convertvector(qf, IntOf<V>);
  V s = qf * -0x1.62e4p-1f + y;
  s = qf * -0x1.7f7d1cp-20f + s;
  V u = splat<V>(0x1.a057b4p-13f);
  u = u * s + 0x1.6d2d92p-10f;
  u = u * s + 0x1.11114cp-7f;
  u = u * s + 0x1.5554f4p-5f;
  u = u * s + 0x1.555556p-3f;
  u = u * s + 0.5f;
  p = (s * s) * u + s;
}
template <class V>
TJ_LSTM_INLINE V pow2(const IntOf<V>& q) {  // -126 <= q <= 127
  return from_bits<V>((q + 127) << 23);
}

// 1 / (1 + exp(-x)) as e = exp(-|x|), x >= 0 ? 1 / (1 + e) : e / (1 + e) (no overflow);
// -|x| clamped at -104 (exp rounds to 0 below), scaled by 2^q in two halves so that
// subnormal results stay exact. NaN passes the clamp (the comparison is false) and gives NaN.
template <class V>
TJ_LSTM_INLINE V sigmoid_v(const V& x) {
  V y = -abs_v(x);
  y = y < -104.f ? splat<V>(-104.f) : y;
  IntOf<V> q;
  V p;
  exp_parts(y, q, p);
  const IntOf<V> h = q >> 1;
  const V e = ((p + 1.f) * pow2<V>(h)) * pow2<V>(q - h);
  const V r = 1.f / (e + 1.f);
  return x >= 0.f ? r : e * r;
}

// tanh(x) = sign(x) * -m / (2 + m) with m = expm1(-2|x|) = 2^q p + (2^q - 1): no cancellation
// near 0 (there m = p). |x| clamped at 10 (tanh rounds to 1 from 9.01); NaN passes the clamp.
template <class V>
TJ_LSTM_INLINE V tanh_v(const V& x) {
  V a = abs_v(x);
  a = a > 10.f ? splat<V>(10.f) : a;
  IntOf<V> q;
  V p;
  exp_parts(a * -2.f, q, p);
  const V t = pow2<V>(q);
  const V m = t * p + (t - 1.f);
  const V r = -m / (m + 2.f);
  return from_bits<V>(bits(r) | (bits(x) & static_cast<int32_t>(0x80000000u)));
}

// One direction of one call (or the hidden blocks blk0 .. blk1 - 1 of it).
struct DirJob {
  int64_t steps = 0, batch = 0, input = 0, hidden = 0, hp = 0, blocks = 0;
  bool reverse = false;
  const float* x = nullptr;
  int64_t x_t = 0, x_n = 0;  // strides (floats) of a time step and a batch row of x
  const float *wp = nullptr, *rp = nullptr, *bias = nullptr;  // packed, this direction
  float* y = nullptr;        // this direction's first row of Y, or null
  int64_t y_t = 0, y_n = 0;  // strides of Y
  int64_t chunk = 1;         // time steps projected at once
  float* proj = nullptr;     // [chunk * N][C]
  const float** rows = nullptr;  // [chunk * N]
  float* h[2] = {nullptr, nullptr};  // [N][hp] each, h[0] holds the initial state; h[S % 2]
  float* c = nullptr;                // [N][hp]                                    the last
  int64_t blk0 = 0, blk1 = 0;        // the hidden blocks to compute
};

// AVX2, batches of kSliceRowsMin rows or more: out[r][0 .. 15] = init[r] + rows[r] . w for RT
// rows and one 16-column slice of a packed block (w: its gate's [k_n][16]; init rows ld_init
// apart, 0 for one bias row). 2 x RT accumulators, W's two vectors loaded once per k for all RT
// rows: at RT = 4 a k is 8 FMAs against 6 loads (FMA-bound) and 64 bytes of W, where step_tile's
// 2 rows x 4 gates take 128 bytes of R from L2 per k (L2-bound: lstm_small's 32x8x64 at 41% of
// the FMA peak). Per output element the same operations in the same order as step_tile and
// project_tile (init, then one FMA per k ascending): the same bits.
template <class V, int RT>
TJ_LSTM_INLINE void slice_tile(const float* const* rows, int64_t k_n, const float* w,
                               const float* init, int64_t ld_init, float* out, int64_t ldo) {
  static_assert(kLanes<V> == 8, "the AVX2 version's tile");
  V acc[RT][2];
#pragma GCC unroll 4
  for (int r = 0; r < RT; ++r) {
    acc[r][0] = load<V>(init + r * ld_init);
    acc[r][1] = load<V>(init + r * ld_init + 8);
  }
  for (int64_t k = 0; k < k_n; ++k) {
    V w0 = load<V>(w + k * kBlock), w1 = load<V>(w + k * kBlock + 8);
    in_register(w0);
    in_register(w1);
#pragma GCC unroll 4
    for (int r = 0; r < RT; ++r) {
      const float xv = rows[r][k];
      acc[r][0] += xv * w0;
      acc[r][1] += xv * w1;
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < RT; ++r) {
    store(out + r * ldo, acc[r][0]);
    store(out + r * ldo + 8, acc[r][1]);
  }
}

// m rows (rows[0 .. m - 1]) times the packed blocks blk0 .. blk1 - 1 of w ([blocks][4][k_n][16]),
// plus init, into out (rows C floats apart), 16-column slices in the outer loop (a slice of w,
// k_n x 64 bytes, stays in L1 for every group of 4 rows).
TJ_LSTM_INLINE void slice_product(const float* const* rows, int64_t m, int64_t k_n, const float* w,
                                  int64_t blk0, int64_t blk1, const float* init, int64_t ld_init,
                                  float* out, int64_t C) {
  for (int64_t b = blk0; b < blk1; ++b)
    for (int64_t c = 0; c < kBlockCols; c += 16) {
      const float* wb = w + b * k_n * kBlockCols + c * k_n;  // gate c / 16's [k_n][16]
      const int64_t col = b * kBlockCols + c;
      int64_t i = 0;
      for (; i + 4 <= m; i += 4)
        slice_tile<V8, 4>(rows + i, k_n, wb, init + i * ld_init + col, ld_init, out + i * C + col, C);
      const float* ini = init + i * ld_init + col;
      float* o = out + i * C + col;
      switch (m - i) {
        case 3: slice_tile<V8, 3>(rows + i, k_n, wb, ini, ld_init, o, C); break;
        case 2: slice_tile<V8, 2>(rows + i, k_n, wb, ini, ld_init, o, C); break;
        case 1: slice_tile<V8, 1>(rows + i, k_n, wb, ini, ld_init, o, C); break;
        default: break;
      }
    }
}

// out[i][C] (the L columns of each gate at wb, bias_b, out: one vector per gate) = rows[i] . W +
// bias for RT rows.
template <class V, int RT>
TJ_LSTM_INLINE void project_tile(const float* const* rows, int64_t k_n, const float* wb,
                                 const float* bias_b, float* out, int64_t ldo) {
  V acc[RT][4];
#pragma GCC unroll 8
  for (int r = 0; r < RT; ++r)
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g) acc[r][g] = load<V>(bias_b + g * kBlock);
  for (int64_t k = 0; k < k_n; ++k) {
    const float* wk = wb + k * kBlock;
    V w0 = load<V>(wk), w1 = load<V>(wk + k_n * kBlock), w2 = load<V>(wk + 2 * k_n * kBlock),
      w3 = load<V>(wk + 3 * k_n * kBlock);
    in_register(w0);
    in_register(w1);
    in_register(w2);
    in_register(w3);
#pragma GCC unroll 8
    for (int r = 0; r < RT; ++r) {
      const float xv = rows[r][k];
      acc[r][0] += xv * w0;
      acc[r][1] += xv * w1;
      acc[r][2] += xv * w2;
      acc[r][3] += xv * w3;
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < RT; ++r)
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g) store(out + r * ldo + g * kBlock, acc[r][g]);
}

// Register tiles: AVX-512 (32 registers) 6 rows x 4 gates of 16 lanes; AVX2 (16 registers) 2
// rows x 4 gates of 8 lanes (+ 4 for W's vectors), one half block at a time, for 1-2 rows; from
// kSliceRowsMin rows on, slice_product's 4-row tiles.
template <class V>
TJ_LSTM_INLINE void project(const DirJob& j, int64_t m) {
  constexpr int kRt = kLanes<V> == 16 ? 6 : 2;
  const int64_t C = j.blocks * kBlockCols;
  if constexpr (kLanes<V> == 8) {
    if (m >= kSliceRowsMin) {
      slice_product(j.rows, m, j.input, j.wp, j.blk0, j.blk1, j.bias, 0, j.proj, C);
      return;
    }
  }
  for (int64_t b = j.blk0; b < j.blk1; ++b)
    for (int64_t s = 0; s < kBlock; s += kLanes<V>) {
      const float* wb = j.wp + b * j.input * kBlockCols + s;
      const float* bb = j.bias + b * kBlockCols + s;
      float* ob = j.proj + b * kBlockCols + s;
      int64_t i = 0;
      for (; i + kRt <= m; i += kRt) project_tile<V, kRt>(j.rows + i, j.input, wb, bb, ob + i * C, C);
      for (; i < m; ++i) project_tile<V, 1>(j.rows + i, j.input, wb, bb, ob + i * C, C);
    }
}

// c and h of batch row n, units u0 .. u0 + L - 1, from their four gates' pre-activations
// (i, o, f, c~); h goes to hn (h is still read by other tiles) and to Y's row at yt.
template <class V>
TJ_LSTM_INLINE void finish_units(const DirJob& j, const V& gi, const V& go, const V& gf,
                                 const V& gc, float* hn, float* yt, int64_t n, int64_t u0) {
  const int64_t H = j.hidden, hp = j.hp;
  float* cp = j.c + n * hp + u0;
  const V c = sigmoid_v(gf) * load<V>(cp) + sigmoid_v(gi) * tanh_v(gc);
  store(cp, c);
  const V hv = sigmoid_v(go) * tanh_v(c);
  store(hn + n * hp + u0, hv);
  if (yt && H > u0) {
    float* yr = yt + n * j.y_n + u0;
    if (H - u0 >= kLanes<V>) store(yr, hv);
    else store_n(yr, hv, H - u0);
  }
}

// One step for batch rows n0 .. n0 + R - 1 and the units s .. s + L - 1 of hidden blocks b0 ..
// b0 + B - 1: gates = P rows + h R^T, then c and h of those units, all in registers.
template <class V, int R, int B>
TJ_LSTM_INLINE void step_tile(const DirJob& j, const float* p, const float* h, float* hn,
                              float* yt, int64_t n0, int64_t b0, int64_t s) {
  const int64_t C = j.blocks * kBlockCols, H = j.hidden, hp = j.hp;
  V acc[R][B][4];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int bi = 0; bi < B; ++bi)
#pragma GCC unroll 4
      for (int g = 0; g < 4; ++g)
        acc[r][bi][g] = load<V>(p + (n0 + r) * C + (b0 + bi) * kBlockCols + g * kBlock + s);
  const float* rb = j.rp + b0 * H * kBlockCols + s;
  for (int64_t k = 0; k < H; ++k) {
    float hv[R];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) hv[r] = h[(n0 + r) * hp + k];
#pragma GCC unroll 4
    for (int bi = 0; bi < B; ++bi)
#pragma GCC unroll 4
      for (int g = 0; g < 4; ++g) {
        V w = load<V>(rb + ((bi * 4 + g) * H + k) * kBlock);
        in_register(w);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) acc[r][bi][g] += hv[r] * w;
      }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int bi = 0; bi < B; ++bi)
      finish_units<V>(j, acc[r][bi][0], acc[r][bi][1], acc[r][bi][2], acc[r][bi][3], hn, yt,
                      n0 + r, (b0 + bi) * kBlock + s);
}

// Batch rows n0 .. n0 + R - 1 over all hidden blocks, B at a time, L units of them at once.
template <class V, int R, int B>
TJ_LSTM_INLINE void step_rows(const DirJob& j, const float* p, const float* h, float* hn,
                              float* yt, int64_t n0) {
  int64_t b = j.blk0;
  for (; b + B <= j.blk1; b += B)
    for (int64_t s = 0; s < kBlock; s += kLanes<V>) step_tile<V, R, B>(j, p, h, hn, yt, n0, b, s);
  for (; b < j.blk1; ++b)
    for (int64_t s = 0; s < kBlock; s += kLanes<V>) step_tile<V, R, 1>(j, p, h, hn, yt, n0, b, s);
}

// Register tiles: AVX-512 (32 registers) 8-16 accumulators of 16 lanes; AVX2 (16 registers) 8
// accumulators of 8 lanes (2 rows x 1 block or 1 row x 2 blocks) + the rows' h and W's vector
// for batches of 1-2; for larger batches the gates are accumulated into p in place by
// slice_product, then finished row by row (p is this step's projection, read by no other step).
template <class V>
TJ_LSTM_INLINE void step(const DirJob& j, float* p, const float* h, float* hn, float* yt) {
  int64_t n = 0;
  if constexpr (kLanes<V> == 16) {
    for (; n + 4 <= j.batch; n += 4) step_rows<V, 4, 1>(j, p, h, hn, yt, n);
    switch (j.batch - n) {
      case 3: step_rows<V, 3, 1>(j, p, h, hn, yt, n); break;
      case 2: step_rows<V, 2, 2>(j, p, h, hn, yt, n); break;
      case 1: step_rows<V, 1, 2>(j, p, h, hn, yt, n); break;
      default: break;
    }
  } else if (j.batch >= kSliceRowsMin) {
    const int64_t C = j.blocks * kBlockCols, N = j.batch;
    const float* hrows[kLstmSmallMaxBatch];
    for (int64_t r = 0; r < N; ++r) hrows[r] = h + r * j.hp;
    slice_product(hrows, N, j.hidden, j.rp, j.blk0, j.blk1, p, C, p, C);
    for (int64_t r = 0; r < N; ++r)
      for (int64_t b = j.blk0; b < j.blk1; ++b)
        for (int64_t s = 0; s < kBlock; s += kLanes<V>) {
          const float* g = p + r * C + b * kBlockCols + s;
          finish_units<V>(j, load<V>(g), load<V>(g + kBlock), load<V>(g + 2 * kBlock),
                          load<V>(g + 3 * kBlock), hn, yt, r, b * kBlock + s);
        }
  } else {
    for (; n + 2 <= j.batch; n += 2) step_rows<V, 2, 1>(j, p, h, hn, yt, n);
    if (n < j.batch) step_rows<V, 1, 2>(j, p, h, hn, yt, n);
  }
}

template <class V>
TJ_LSTM_INLINE void run_direction_body(const DirJob& job) {
  // A local copy: through the reference GCC reloaded fields after the stores of row pointers
  // and outputs, and lstm_small's 32x1x64 took 75 instead of 66 us.
  const DirJob j = job;
  const int64_t S = j.steps, N = j.batch, C = j.blocks * kBlockCols;
  int cur = 0;
  for (int64_t t0 = 0; t0 < S; t0 += j.chunk) {
    const int64_t nt = std::min(j.chunk, S - t0);
    auto time = [&](int64_t t) { return j.reverse ? S - 1 - t : t; };
    for (int64_t ti = 0; ti < nt; ++ti)
      for (int64_t n = 0; n < N; ++n) j.rows[ti * N + n] = j.x + time(t0 + ti) * j.x_t + n * j.x_n;
    project<V>(j, nt * N);
    for (int64_t ti = 0; ti < nt; ++ti) {
      float* yt = j.y ? j.y + time(t0 + ti) * j.y_t : nullptr;
      step<V>(j, j.proj + ti * N * C, j.h[cur], j.h[cur ^ 1], yt);
      cur ^= 1;
    }
  }
}

// Two threads on one direction. A step's hidden blocks form tiles of kTileBlocks; each thread
// owns half of the tiles and claims its own from the front, then, once done and after a grace
// period, claims what is left of the other half from the back, and waits until both halves of
// the step are finished (h of the next step needs all of them). Normally each thread computes its own half (R's half stays
// in its core's L2); a partner that is descheduled or late waking only has its tiles taken over,
// not the step stalled. The projections of a chunk's steps for a tile's blocks are computed
// with the tile at the chunk's first step. Every output element sees the same operations as on
// one thread.
constexpr int64_t kTileBlocks = 2;
// Pauses (~20 ns each) a thread waits for the other half before taking tiles of it: stealing at
// once made two threads trade tiles every step (each core's L2 then held all of R) and
// lstm_small's 32x1x64 alternated between 0.038 and 0.115 ms per call at 2 threads. After a
// step in which the other thread did none of its tiles (descheduled, or not yet woken), the next
// step's are taken without waiting.
constexpr int kStealAfterSpins = 200;

struct TileSync {
  struct alignas(64) Set {
    std::atomic<uint64_t> claim{0};  // (step + 1) << 32 | claimed from front << 16 | from back
    std::atomic<int64_t> done{0};    // tiles of this half finished, over all steps
  };
  Set set[2];
  int64_t first[2] = {0, 0}, count[2] = {0, 0};  // each half's tiles
};

// Claims one tile (index in its half, *idx) of half `s` (`count` tiles) at step t from the front
// (its owner) or the back (the other thread); false when none is left at step t.
TJ_LSTM_INLINE bool claim_tile(TileSync::Set& s, int64_t count, int64_t t, bool front,
                               int64_t* idx) {
  const uint64_t tag = static_cast<uint64_t>(t + 1);
  uint64_t w = s.claim.load(std::memory_order_relaxed);
  for (;;) {
    if ((w >> 32) > tag) return false;
    const uint64_t f = (w >> 32) == tag ? (w >> 16) & 0xffff : 0, b = (w >> 32) == tag ? w & 0xffff : 0;
    if (static_cast<int64_t>(f + b) >= count) return false;
    const uint64_t next = (tag << 32) | ((f + (front ? 1 : 0)) << 16) | (b + (front ? 0 : 1));
    if (s.claim.compare_exchange_weak(w, next, std::memory_order_acq_rel, std::memory_order_relaxed)) {
      *idx = front ? static_cast<int64_t>(f) : count - 1 - static_cast<int64_t>(b);
      return true;
    }
  }
}

template <class V>
TJ_LSTM_INLINE void shared_tile(const DirJob& j, int64_t tile, int64_t t, const float** rows) {
  DirJob tj = j;
  tj.blk0 = tile * kTileBlocks;
  tj.blk1 = std::min(j.blocks, tj.blk0 + kTileBlocks);
  const int64_t S = j.steps, N = j.batch, C = j.blocks * kBlockCols, ti = t % j.chunk;
  if (ti == 0) {
    tj.rows = rows;
    project<V>(tj, std::min(j.chunk, S - t) * N);
  }
  const int64_t time = j.reverse ? S - 1 - t : t;
  step<V>(tj, j.proj + ti * N * C, j.h[t & 1], j.h[(t & 1) ^ 1], j.y ? j.y + time * j.y_t : nullptr);
}

TJ_LSTM_INLINE void pause_or_yield(int& spins) {
  if (++spins < 20000) _mm_pause();
  else std::this_thread::yield();
}

template <class V>
TJ_LSTM_INLINE void run_shared_body(const DirJob& job, TileSync& sy, int me, const float** rows) {
  const DirJob j = job;  // as run_direction_body
  const int64_t S = j.steps, N = j.batch;
  const int other = 1 - me;
  bool partner_absent = false;
  for (int64_t t = 0; t < S; ++t) {
    if (t % j.chunk == 0) {
      const int64_t nt = std::min(j.chunk, S - t);
      for (int64_t ti = 0; ti < nt; ++ti) {
        const int64_t time = j.reverse ? S - 1 - (t + ti) : t + ti;
        for (int64_t n = 0; n < N; ++n) rows[ti * N + n] = j.x + time * j.x_t + n * j.x_n;
      }
    }
    int64_t idx;
    while (claim_tile(sy.set[me], sy.count[me], t, true, &idx)) {
      shared_tile<V>(j, sy.first[me] + idx, t, rows);
      sy.set[me].done.fetch_add(1, std::memory_order_release);
    }
    int64_t stolen = 0;
    for (int spins = 0; sy.set[other].done.load(std::memory_order_acquire) < (t + 1) * sy.count[other];) {
      if ((partner_absent || spins >= kStealAfterSpins) &&
          claim_tile(sy.set[other], sy.count[other], t, false, &idx)) {
        shared_tile<V>(j, sy.first[other] + idx, t, rows);
        sy.set[other].done.fetch_add(1, std::memory_order_release);
        ++stolen;
      } else {
        pause_or_yield(spins);
      }
    }
    for (int spins = 0; sy.set[me].done.load(std::memory_order_acquire) < (t + 1) * sy.count[me];)
      pause_or_yield(spins);  // a tile of ours the other thread took
    partner_absent = stolen == sy.count[other];  // it did none of its own: take them at once
  }
}

__attribute__((target("avx512f,fma"))) void run_direction_avx512(const DirJob& j) {
  run_direction_body<V16>(j);
}
void run_direction_avx2(const DirJob& j) { run_direction_body<V8>(j); }
__attribute__((target("avx512f,fma"))) void run_shared_avx512(const DirJob& j, TileSync& sy,
                                                             int me, const float** rows) {
  run_shared_body<V16>(j, sy, me, rows);
}
void run_shared_avx2(const DirJob& j, TileSync& sy, int me, const float** rows) {
  run_shared_body<V8>(j, sy, me, rows);
}

template <class V, bool kSigmoid>
TJ_LSTM_INLINE void activation_body(const float* x, float* y, int64_t n) {
  constexpr int64_t L = kLanes<V>;
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    const V v = load<V>(x + i);
    store(y + i, kSigmoid ? sigmoid_v(v) : tanh_v(v));
  }
  if (i < n) {
    float buf[L] = {};
    std::memcpy(buf, x + i, static_cast<size_t>(n - i) * sizeof(float));
    const V v = load<V>(buf);
    store_n(y + i, kSigmoid ? sigmoid_v(v) : tanh_v(v), n - i);
  }
}
__attribute__((target("avx512f,fma"))) void sigmoid_avx512(const float* x, float* y, int64_t n) {
  activation_body<V16, true>(x, y, n);
}
__attribute__((target("avx512f,fma"))) void tanh_avx512(const float* x, float* y, int64_t n) {
  activation_body<V16, false>(x, y, n);
}
void sigmoid_avx2(const float* x, float* y, int64_t n) { activation_body<V8, true>(x, y, n); }
void tanh_avx2(const float* x, float* y, int64_t n) { activation_body<V8, false>(x, y, n); }

// ---- Packed weights ----

struct Packed {
  int64_t input = 0, hidden = 0, hp = 0, blocks = 0, dirs = 0;
  kernels::LineBuffer wp, rp, bias;  // [D][blocks][4][I][16], [D][blocks][4][H][16], [D][blocks][64]
  Tensor keep_w, keep_r, keep_b;    // constant tensors: their storage stays ours
  size_t bytes() const { return (wp.size() + rp.size() + bias.size()) * sizeof(float); }
  // W or R held by nobody else: its model is gone (kernels::WeightPackCache).
  bool orphaned() const { return keep_w.storage_holders() == 1 || keep_r.storage_holders() == 1; }
};

// Floats pack() writes for `a`: W, R and the bias, as Packed holds them.
size_t packed_floats(const RnnDnnlArgs& a) {
  const int64_t blocks = (a.hidden + kBlock - 1) / kBlock;
  return static_cast<size_t>(a.dirs * blocks * (a.input + a.hidden + 1) * kBlockCols);
}

// ONNX's [D][4H][K] (gates i, o, f, c) -> [D][blocks][4][K][16], zeros past H.
void pack_matrix(const float* src, int64_t D, int64_t H, int64_t K, int64_t blocks, float* dst) {
  for (int64_t d = 0; d < D; ++d)
    for (int64_t b = 0; b < blocks; ++b)
      for (int64_t g = 0; g < 4; ++g)
        for (int64_t k = 0; k < K; ++k) {
          float* o = dst + (((d * blocks + b) * 4 + g) * K + k) * kBlock;
          for (int64_t u = 0; u < kBlock; ++u) {
            const int64_t unit = b * kBlock + u;
            o[u] = unit < H ? src[((d * 4 + g) * H + unit) * K + k] : 0.f;
          }
        }
}

void pack(const RnnDnnlArgs& a, Packed& pk) {
  const int64_t D = a.dirs, H = a.hidden, I = a.input;
  pk.input = I;
  pk.hidden = H;
  pk.blocks = (H + kBlock - 1) / kBlock;
  pk.hp = pk.blocks * kBlock;
  pk.dirs = D;
  pk.wp.resize(static_cast<size_t>(D * pk.blocks * I * kBlockCols));
  pk.rp.resize(static_cast<size_t>(D * pk.blocks * H * kBlockCols));
  pk.bias.resize(static_cast<size_t>(D * pk.blocks * kBlockCols));
  std::fill(pk.bias.data(), pk.bias.data() + D * pk.blocks * kBlockCols, 0.f);
  pack_matrix(a.w, D, H, I, pk.blocks, pk.wp.data());
  pack_matrix(a.r, D, H, H, pk.blocks, pk.rp.data());
  if (a.b)
    for (int64_t d = 0; d < D; ++d)
      for (int64_t g = 0; g < 4; ++g)
        for (int64_t unit = 0; unit < H; ++unit) {
          const float* bd = a.b + d * 8 * H;
          pk.bias.data()[static_cast<size_t>((d * pk.blocks + unit / kBlock) * kBlockCols + g * kBlock +
                                      unit % kBlock)] = bd[g * H + unit] + bd[(4 + g) * H + unit];
        }
}

// Packed weights of constant tensors by their data pointers and sizes (weight_pack_cache.h);
// past the budget the call packs per call (Scratch::packed).
using PackCache = kernels::WeightPackCache<std::tuple<const float*, const float*, const float*, int64_t, int64_t, int64_t>, Packed>;

PackCache& pack_cache() {
  static PackCache cache(size_t{64} << 20);
  return cache;
}

// Per-thread reused buffers (no allocation per call once grown).
struct Scratch {
  kernels::LineBuffer proj, h, c;
  std::vector<const float*> rows;
  Packed packed;  // weights packed per call (not constant)
};

}  // namespace

void set_lstm_small_enabled(bool enabled) { g_enabled.store(enabled); }
bool lstm_small_enabled() { return g_enabled.load(std::memory_order_relaxed); }
uint64_t lstm_small_runs() { return g_runs.load(std::memory_order_relaxed); }
uint64_t lstm_small_two_thread_runs() { return g_two_thread_runs.load(std::memory_order_relaxed); }
void set_lstm_small_force_avx2(bool force) { g_force_avx2.store(force); }

void lstm_small_sigmoid(const float* x, float* y, int64_t n, bool avx2) {
  (kHasAvx512 && !avx2 ? sigmoid_avx512 : sigmoid_avx2)(x, y, n);
}
void lstm_small_tanh(const float* x, float* y, int64_t n, bool avx2) {
  (kHasAvx512 && !avx2 ? tanh_avx512 : tanh_avx2)(x, y, n);
}

bool lstm_small_supports(const RnnDnnlArgs& a) {
  return lstm_small_enabled() && a.cell == RnnCell::kLstm && a.p == nullptr && a.seq >= 1 &&
         a.input >= 1 && a.batch >= 1 && a.batch <= kLstmSmallMaxBatch && a.hidden >= 1 &&
         a.hidden <= kLstmSmallMaxHidden && (a.dirs == 1 || a.dirs == 2);
}

size_t lstm_small_packed_bytes() { return pack_cache().bytes(); }

Status lstm_small_f32(const RnnDnnlArgs& a) {
  PackCache& cache = pack_cache();
  thread_local Scratch scratch;
  const int64_t S = a.seq, N = a.batch, I = a.input, H = a.hidden, D = a.dirs;
  const bool constant = a.constant_w && a.constant_r && (!a.b || a.constant_b);
  std::shared_ptr<const Packed> keep;
  const Packed* pk = &scratch.packed;
  if (constant)
    keep = cache.get({a.w, a.r, a.b, a.input, a.hidden, a.dirs}, packed_floats(a) * sizeof(float), [&] {
      auto p = std::make_shared<Packed>();
      pack(a, *p);
      p->keep_w = *a.constant_w;
      p->keep_r = *a.constant_r;
      if (a.constant_b) p->keep_b = *a.constant_b;
      return p;
    });
  if (keep) pk = keep.get();
  else pack(a, scratch.packed);  // weights fed per call, or past the cache's budget
  const int64_t hp = pk->hp, blocks = pk->blocks, C = blocks * kBlockCols;
  // Time steps projected at once: ~128 KiB of projections (L2-resident until their step).
  const int64_t chunk = std::clamp<int64_t>(32768 / (N * C), 1, S);
  // Buffers per direction: projections, row pointers (per thread: two threads may share a
  // direction), h twice, c.
  scratch.proj.resize(static_cast<size_t>(D * chunk * N * C));
  if (scratch.rows.size() < static_cast<size_t>(2 * chunk * N))
    scratch.rows.resize(static_cast<size_t>(2 * chunk * N));
  scratch.h.resize(static_cast<size_t>(D * 2 * N * hp));
  scratch.c.resize(static_cast<size_t>(D * N * hp));
  DirJob jobs[2];
  for (int64_t d = 0; d < D; ++d) {
    DirJob& j = jobs[d];
    j.steps = S; j.batch = N; j.input = I; j.hidden = H; j.hp = hp; j.blocks = blocks;
    j.reverse = d == 1 || a.reverse;
    j.x = a.x;
    j.x_t = a.layout1 ? I : N * I;
    j.x_n = a.layout1 ? S * I : I;
    j.wp = pk->wp.data() + d * blocks * I * kBlockCols;
    j.rp = pk->rp.data() + d * blocks * H * kBlockCols;
    j.bias = pk->bias.data() + d * C;
    if (a.y) {  // layout 0: Y [S, D, N, H]; layout 1: [N, S, D, H]
      j.y = a.y + (a.layout1 ? d * H : d * N * H);
      j.y_t = a.layout1 ? D * H : D * N * H;
      j.y_n = a.layout1 ? S * D * H : H;
    }
    j.chunk = chunk;
    j.proj = scratch.proj.data() + d * chunk * N * C;
    j.rows = scratch.rows.data() + d * chunk * N;
    j.h[0] = scratch.h.data() + d * 2 * N * hp;
    j.h[1] = j.h[0] + N * hp;
    j.c = scratch.c.data() + d * N * hp;
    j.blk0 = 0;
    j.blk1 = blocks;
    for (int64_t n = 0; n < N; ++n) {  // states [D, N, H] (layout 0) or [N, D, H] (layout 1)
      const int64_t row = (a.layout1 ? n * D + d : d * N + n) * H;
      float* hr = j.h[0] + n * hp;
      float* cr = j.c + n * hp;
      std::fill(hr, hr + hp, 0.f);
      std::fill(cr, cr + hp, 0.f);
      if (a.h0) std::copy(a.h0 + row, a.h0 + row + H, hr);
      if (a.c0) std::copy(a.c0 + row, a.c0 + row + H, cr);
    }
  }
  const bool wide = kHasAvx512 && !g_force_avx2.load(std::memory_order_relaxed);
  const auto run = wide ? run_direction_avx512 : run_direction_avx2;
  // Two threads: one direction each; for one direction of kRowSplitMinBatch rows or more, half
  // of the batch rows each (independent LSTMs: no wait per step); else half of the hidden
  // blocks each with a wait per step (only where a step's product is large enough to pay for
  // it; docs/performance.md).
  const int64_t tiles = (blocks + kTileBlocks - 1) / kTileBlocks;
  const bool split_rows = D == 1 && N >= kRowSplitMinBatch;
  const bool split_blocks = D == 1 && !split_rows && tiles >= 2 && N * 4 * hp * H >= kTwoThreadStepMacs;
  const int threads = (D == 2 || split_rows || split_blocks) && parallel_threads(D * S * N * 4 * hp * (I + H), a.threads) >= 2 ? 2 : 1;
  if (threads == 1) {
    for (int64_t d = 0; d < D; ++d) run(jobs[d]);
  } else {
    DirJob halves[2];
    if (split_rows) {  // rows 0 .. N / 2 - 1 and N / 2 .. N - 1, each with its share of the buffers
      for (int half = 0; half < 2; ++half) {
        const int64_t n0 = half == 0 ? 0 : N / 2;
        DirJob& j = halves[half];
        j = jobs[0];
        j.batch = half == 0 ? N / 2 : N - N / 2;
        j.x += n0 * j.x_n;
        if (j.y) j.y += n0 * j.y_n;
        j.proj += chunk * n0 * C;
        j.rows += chunk * n0;
        j.h[0] += n0 * hp;
        j.h[1] += n0 * hp;
        j.c += n0 * hp;
      }
    }
    TileSync sync;
    sync.count[0] = (tiles + 1) / 2;
    sync.first[1] = sync.count[0];
    sync.count[1] = tiles - sync.count[0];
#pragma omp parallel num_threads(2)
    {
      const int team = omp_get_num_threads(), me = omp_get_thread_num();
      if (me == 0 && team == 2) g_two_thread_runs.fetch_add(1, std::memory_order_relaxed);
      if (team == 1) {  // no second thread (e.g. inside another parallel region)
        for (int64_t d = 0; d < D; ++d) run(jobs[d]);
      } else if (D == 2) {
        run(jobs[me]);
      } else if (split_rows) {
        run(halves[me]);
      } else {
        (wide ? run_shared_avx512 : run_shared_avx2)(jobs[0], sync, me, jobs[0].rows + me * chunk * N);
      }
    }
  }
  for (int64_t d = 0; d < D; ++d)
    for (int64_t n = 0; n < N; ++n) {
      const int64_t row = (a.layout1 ? n * D + d : d * N + n) * H;
      const float* hr = jobs[d].h[S % 2] + n * hp;
      const float* cr = jobs[d].c + n * hp;
      if (a.yh) std::copy(hr, hr + H, a.yh + row);
      if (a.yc) std::copy(cr, cr + H, a.yc + row);
    }
  g_runs.fetch_add(1, std::memory_order_relaxed);
  return Status();
}

}  // namespace tierjit::interp::nn
