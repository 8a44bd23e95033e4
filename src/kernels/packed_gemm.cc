// Products by constant weights (see packed_gemm.h): weights packed once into column panels of
// 64 (or 16 for narrow N), each panel's outputs for 4 (or 8) rows held in AVX-512 accumulators
// (rows x vectors independent sums, so the fused multiply-adds over k never wait on each other);
// without AVX-512F, 6 rows x 16 columns in AVX2 accumulators, with the same bits, each panel
// stored as 16-column slices (SliceLayout).
#include "kernels/packed_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <tuple>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/line_buffer.h"
#include "kernels/parallel_for.h"
#include "kernels/weight_pack_cache.h"

namespace tierjit::kernels {
namespace {

// Panels are 64 columns (4 vectors of 16 lanes; 4 rows per step) when that wastes at most a
// quarter of the columns computed on padding, else 16 (1 vector; 8 rows per step): N = 10 in
// 64-wide panels took 3.4x oneDNN's time at 128x1568x10.
constexpr int64_t kWide = 64, kNarrow = 16;

int64_t panel_width(int64_t n) {
  const int64_t padded = (n + kWide - 1) / kWide * kWide;
  return 4 * padded <= 5 * n ? kWide : kNarrow;
}

// Floats of b's panels: [ceil(N / width)][K][width].
size_t panel_floats(int64_t n, int64_t k) {
  const int64_t width = panel_width(n);
  return static_cast<size_t>((n + width - 1) / width * k * width);
}

std::atomic<bool> g_enabled{true};
std::atomic<bool> g_force_avx2{false};
std::atomic<uint64_t> g_runs{0};

const bool kHasAvx512 = cpu_has_avx512f();

// Where a panel's 16-column slices lie: slice j's row kk starts `j * slice_stride + kk *
// row_stride` floats into the panel. The AVX-512 code reads whole rows of a panel
// ([K][width], slices side by side: row_stride width, slice_stride 16). The AVX2 code reads 16
// columns at a time, and on a CPU without AVX-512 the panels are stored as their slices one
// after another ([width / 16][K][16]: row_stride 16, slice_stride 16 K), so that each slice is
// one sequential stream: where the weights come from L3 (few rows) that read 1.3-1.5x faster
// (single thread, 4 rows: 4x512x512 32.8 -> 22.4 us, 4x1024x1024 142 -> 98 us; 6 rows x 512
// x 128 from L2 ~2%; a throwaway harness alternating both layouts 15x). Same sums either way.
struct SliceLayout {
  int64_t row_stride, slice_stride;
};
SliceLayout slice_layout(bool sliced, int64_t width, int64_t k) {
  return sliced ? SliceLayout{16, 16 * k} : SliceLayout{width, 16};
}
// Whether weights are packed as slices: on CPUs whose packed products run the AVX2 code (an
// AVX-512 CPU keeps whole rows even when a test forces the AVX2 code: it reads either layout).
bool sliced_packing() { return !kHasAvx512; }

// b's panels: [panels][K][width] floats (or, `sliced`, [panels][width / 16][K][16]) starting on
// a cache line, zeros past N.
struct Panels {
  LineBuffer storage;
  int64_t width = kWide;
  bool sliced = false;
  Tensor keep;  // the constant weight tensor: its storage (and b's address) stays ours
  const float* data() const { return storage.data(); }
  size_t bytes() const { return storage.size() * sizeof(float); }
  bool orphaned() const { return keep.storage_holders() == 1; }
};

// Writes b's panels (panel_floats(n, k) floats, laid out as slice_layout(sliced, ...) says) to
// `out`, zeros past N.
void pack_into(float* out, int64_t n, int64_t k, bool trans_b, const float* b, bool sliced) {
  const int64_t width = panel_width(n), panels = (n + width - 1) / width;
  const SliceLayout lay = slice_layout(sliced, width, k);
  for (int64_t pi = 0; pi < panels; ++pi)
    for (int64_t s0 = 0; s0 < width; s0 += 16)
      for (int64_t kk = 0; kk < k; ++kk) {
        float* o = out + pi * k * width + s0 / 16 * lay.slice_stride + kk * lay.row_stride;
        const int64_t c0 = pi * width + s0, cols = std::clamp<int64_t>(n - c0, 0, 16);
        if (!trans_b) {
          std::copy(b + kk * n + c0, b + kk * n + c0 + cols, o);
        } else {
          for (int64_t j = 0; j < cols; ++j) o[j] = b[(c0 + j) * k + kk];
        }
        std::fill(o + cols, o + 16, 0.f);
      }
}

std::shared_ptr<const Panels> pack(int64_t n, int64_t k, bool trans_b, const float* b,
                                   const Tensor& keep) {
  auto p = std::make_shared<Panels>();
  p->width = panel_width(n);
  p->sliced = sliced_packing();
  p->storage.resize(panel_floats(n, k));
  pack_into(p->storage.data(), n, k, trans_b, b, p->sliced);
  p->keep = keep;
  return p;
}

// Packed panels of constant weights by address and geometry, within kPackedPanelBudget (a
// weight that does not fit is not packed: get returns null and oneDNN runs it, so a model
// larger than the budget never repacks per call); weight_pack_cache.h.
using PanelCache = WeightPackCache<std::tuple<const float*, int64_t, int64_t, bool>, Panels>;

PanelCache& panel_cache() {
  static PanelCache cache(kPackedPanelBudget);
  return cache;
}

// Lanes of vector v of a panel with `cols` valid columns.
inline __mmask16 lanes(int64_t cols, int v) {
  const int64_t valid = std::clamp<int64_t>(cols - 16 * v, 0, 16);
  return static_cast<__mmask16>((uint32_t{1} << valid) - 1);
}

// Columns of k summed in registers before the partial sums go to y: the error of a float32
// sum grows with its length, and one chain over K = 1568 was up to 5.8x ONNX Runtime's error
// against float64 (which also sums in blocks).
constexpr int64_t kKBlock = 256;

// R rows of y for one panel of V vectors (width 16 V): y[r, 0..cols) = (sum_k a[r, k] *
// w[k, 0..cols)) + bias. R x V independent accumulators (16 or 8 of them) per block of kKBlock
// k's; the blocks' sums are added in y, then the bias.
// kInPlace: w is not a packed panel but rows of a matrix ldw floats apart, read unaligned and
// only their first `cols` columns (gemm_rows_in_place_f32).
template <int R, int V, bool kInPlace = false>
__attribute__((target("avx512f,fma"))) void panel_rows(int64_t k, const float* a, int64_t lda,
                                                       const float* w, const float* bias,
                                                       int64_t cols, float* y, int64_t ldy,
                                                       bool accumulate = false, int64_t ldw = 0) {
  constexpr int64_t width = 16 * V;
  const int64_t w_stride = kInPlace ? ldw : width;
  __mmask16 mask[V];
#pragma GCC unroll 4
  for (int v = 0; v < V; ++v) mask[v] = cols >= width ? __mmask16(0xffff) : lanes(cols, v);
  int64_t k0 = 0;
  do {
    const int64_t k1 = std::min(k, k0 + kKBlock);
    __m512 acc[R][V];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_ps();
    for (int64_t kk = k0; kk < k1; ++kk) {
      const float* wk = w + kk * w_stride;
      __m512 wv[V];
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v)
        wv[v] = kInPlace ? _mm512_maskz_loadu_ps(mask[v], wk + 16 * v) : _mm512_load_ps(wk + 16 * v);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m512 av = _mm512_set1_ps(a[r * lda + kk]);
#pragma GCC unroll 4
        for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(av, wv[v], acc[r][v]);
      }
    }
    if (k0 > 0 || accumulate)  // the earlier blocks' (or calls') sum, then this block's
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < V; ++v)
          acc[r][v] = _mm512_add_ps(_mm512_maskz_loadu_ps(mask[v], y + r * ldy + 16 * v), acc[r][v]);
    // The bias after the whole sum, as a MatMul followed by an Add rounds (fused or not, bit for
    // bit).
    if (k1 == k && bias)
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) {
        const __m512 b0 = _mm512_maskz_loadu_ps(mask[v], bias + 16 * v);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[r][v] = _mm512_add_ps(acc[r][v], b0);
      }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) _mm512_mask_storeu_ps(y + r * ldy + 16 * v, mask[v], acc[r][v]);
    k0 = k1;
  } while (k0 < k);
}

// Rows [0, m) of one panel, kRows rows at a time (the accumulators: kRows x V); a's rows lda
// floats apart, y's ldy.
template <int V, bool kInPlace = false>
__attribute__((target("avx512f,fma"))) void panel_block(int64_t m, int64_t k, const float* a,
                                                        int64_t lda, const float* w,
                                                        const float* bp, int64_t cols, float* y,
                                                        int64_t ldy, bool acc = false,
                                                        int64_t ldw = 0) {
  constexpr int64_t kRows = V == 4 ? 4 : 8;
  for (int64_t r = 0; r < m; r += kRows) {
    const float* ar = a + r * lda;
    float* yr = y + r * ldy;
    switch (std::min<int64_t>(kRows, m - r)) {
      case 1: panel_rows<1, V, kInPlace>(k, ar, lda, w, bp, cols, yr, ldy, acc, ldw); break;
      case 2: panel_rows<2, V, kInPlace>(k, ar, lda, w, bp, cols, yr, ldy, acc, ldw); break;
      case 3: panel_rows<3, V, kInPlace>(k, ar, lda, w, bp, cols, yr, ldy, acc, ldw); break;
      case 4: panel_rows<4, V, kInPlace>(k, ar, lda, w, bp, cols, yr, ldy, acc, ldw); break;
      default:
        if constexpr (kRows == 8) {
          switch (m - r) {
            case 5: panel_rows<5, V, kInPlace>(k, ar, lda, w, bp, cols, yr, ldy, acc, ldw); break;
            case 6: panel_rows<6, V, kInPlace>(k, ar, lda, w, bp, cols, yr, ldy, acc, ldw); break;
            case 7: panel_rows<7, V, kInPlace>(k, ar, lda, w, bp, cols, yr, ldy, acc, ldw); break;
            default: panel_rows<8, V, kInPlace>(k, ar, lda, w, bp, cols, yr, ldy, acc, ldw); break;
          }
        }
        break;
    }
  }
}

// Rows [r0, r1) of panels [p0, p1).
template <int V>
__attribute__((target("avx512f,fma"))) void run_panels(int64_t p0, int64_t p1, int64_t r0,
                                                       int64_t r1, int64_t n, int64_t k,
                                                       const float* a, const float* packed,
                                                       const float* bias, float* y) {
  constexpr int64_t width = 16 * V;
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t c0 = p * width, cols = std::min(width, n - c0);
    panel_block<V>(r1 - r0, k, a + r0 * k, k, packed + p * k * width, bias ? bias + c0 : nullptr,
                   cols, y + r0 * n + c0, n);
  }
}

// ---- AVX2 + FMA (the build's baseline): the same panels, 16 columns (two 8-lane vectors) at a
// time for up to 6 rows (12 accumulators of the 16 registers, as BLIS's Haswell kernel). Every output element sees the
// same operations in the same order as in panel_rows (a k-block's fused multiply-adds, then
// the earlier blocks' sum, then the bias): the results are the AVX-512 version's bits.

// Lanes [0, valid) of an 8-lane mask (valid clamped to [0, 8]).
inline __m256i lanes8(int64_t valid) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::clamp<int64_t>(valid, 0, 8))), idx);
}

// R rows of y for the 8 G columns of the G / 2 slices at w (lay: where each slice's rows are),
// `cols` (1..8 G) of them valid: R x G accumulators (at most 12 of the 16 registers). Row r's
// a[kk] is at a + r * lda + kk * AK: AK = 1 for a's own rows, R for rows packed k-major
// (pack_row_groups).
template <int R, int G, int AK = 1, bool kInPlace = false>
void group_rows_avx2(int64_t k, const float* a, int64_t lda, const float* w, SliceLayout lay,
                     const float* bias, int64_t cols, float* y, int64_t ldy,
                     bool accumulate = false) {
  const bool full = cols >= 8 * G;
  __m256i mask[G];
#pragma GCC unroll 8
  for (int h = 0; h < G; ++h) mask[h] = lanes8(cols - 8 * h);
  int64_t k0 = 0;
  do {
    const int64_t k1 = std::min(k, k0 + kKBlock);
    __m256 acc[R][G];
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int h = 0; h < G; ++h) acc[r][h] = _mm256_setzero_ps();
    // Four k's per loop trip: one counter update and branch per 48 fused multiply-adds instead
    // of per 12 (single-thread 252x512x128, 6 x 16 blocks: 93 -> 97 GFLOP/s, 15 alternations).
#pragma GCC unroll 4
    for (int64_t kk = k0; kk < k1; ++kk) {
      const float* wk = w + kk * lay.row_stride;
      __m256 wv[G];
#pragma GCC unroll 8
      for (int h = 0; h < G; ++h)
        wv[h] = kInPlace ? _mm256_maskload_ps(wk + 8 * h, mask[h])
                         : _mm256_load_ps(wk + h / 2 * lay.slice_stride + 8 * (h % 2));
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) {
        const __m256 av = _mm256_broadcast_ss(a + r * lda + kk * AK);
#pragma GCC unroll 8
        for (int h = 0; h < G; ++h) acc[r][h] = _mm256_fmadd_ps(av, wv[h], acc[r][h]);
      }
    }
    auto load = [&](const float* p, int h) {
      return full ? _mm256_loadu_ps(p + 8 * h) : _mm256_maskload_ps(p + 8 * h, mask[h]);
    };
    if (k0 > 0 || accumulate)
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int h = 0; h < G; ++h) acc[r][h] = _mm256_add_ps(load(y + r * ldy, h), acc[r][h]);
    if (k1 == k && bias)
#pragma GCC unroll 8
      for (int h = 0; h < G; ++h) {
        const __m256 b0 = load(bias, h);
#pragma GCC unroll 6
        for (int r = 0; r < R; ++r) acc[r][h] = _mm256_add_ps(acc[r][h], b0);
      }
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int h = 0; h < G; ++h) {
        if (full) _mm256_storeu_ps(y + r * ldy + 8 * h, acc[r][h]);
        else _mm256_maskstore_ps(y + r * ldy + 8 * h, mask[h], acc[r][h]);
      }
    k0 = k1;
  } while (k0 < k);
}

// Rows [r0, r1) of panels [p0, p1) of `width` columns: 6 rows x 16 columns at a time (12
// accumulators); fewer rows take more columns at once, so that each k still has at least 8
// independent fused multiply-adds (one row: 64 columns; two: 32).
constexpr int64_t kRowsAvx2 = 6;
// Bytes of a's rows one block of rows holds (see packed_matmul_f32): a quarter of a Zen 3 / Skylake
// core's L2, the panels passing over it take most of the rest.
constexpr int64_t kRowBlockBytes = 128 << 10;

// R (< 6) rows of one panel (`w`, laid out as `lay`) of `width` columns, `cols` of them valid;
// a's rows lda floats apart, y's ldy; the bias (or null) of the panel's first column.
template <int R, bool kInPlace = false>
void tail_rows_avx2(int64_t width, SliceLayout lay, int64_t k, const float* ar, int64_t lda,
                    const float* w, const float* bias, int64_t cols, float* yr, int64_t ldy,
                    bool acc = false) {
  constexpr int kCols = R == 1 ? 64 : R == 2 ? 32 : 16;
  const int64_t step = std::min<int64_t>(kCols, width);
  for (int64_t g = 0; g < width; g += step) {
    const int64_t c = std::min<int64_t>(step, cols - g);
    if (c <= 0) break;  // padding only
    const float* wg = w + g / 16 * lay.slice_stride;
    const float* bp = bias ? bias + g : nullptr;
    if (step == kCols)
      group_rows_avx2<R, kCols / 8, 1, kInPlace>(k, ar, lda, wg, lay, bp, c, yr + g, ldy, acc);
    else
      group_rows_avx2<R, 2, 1, kInPlace>(k, ar, lda, wg, lay, bp, c, yr + g, ldy, acc);
  }
}

template <int R>
void rows_avx2(int64_t width, SliceLayout lay, int64_t p, int64_t k, int64_t n, const float* ar,
               const float* packed, const float* bias, float* yr) {
  const int64_t c0 = p * width;
  tail_rows_avx2<R>(width, lay, k, ar, k, packed + p * k * width, bias ? bias + c0 : nullptr,
                    n - c0, yr + c0, n);
}

// One group of kRowsAvx2 (6) rows of a, `lda` apart, written k-major to out[K][6]: eight k's
// at a time as an 8 x 8 transpose (rows 6 and 7 zero), each k's 8 lanes stored at out + 6 kk,
// the 2 lanes past its six overwritten by the next k's store (the last k's spill 2 floats
// past the group: out needs 2 floats of room after 6 K). Scalar for K % 8.
void pack_row_group(const float* a, int64_t lda, int64_t k, float* out) {
  static_assert(kRowsAvx2 == 6);
  int64_t kk = 0;
  const __m256 zero = _mm256_setzero_ps();
  for (; kk + 8 <= k; kk += 8) {
    __m256 r[8];
#pragma GCC unroll 6
    for (int i = 0; i < 6; ++i) r[i] = _mm256_loadu_ps(a + i * lda + kk);
    r[6] = zero;
    r[7] = zero;
    // 8 x 8 transpose: t[j] holds a[0..7][kk + j].
    const __m256 u0 = _mm256_unpacklo_ps(r[0], r[1]), u1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 u2 = _mm256_unpacklo_ps(r[2], r[3]), u3 = _mm256_unpackhi_ps(r[2], r[3]);
    const __m256 u4 = _mm256_unpacklo_ps(r[4], r[5]), u5 = _mm256_unpackhi_ps(r[4], r[5]);
    const __m256 u6 = _mm256_unpacklo_ps(r[6], r[7]), u7 = _mm256_unpackhi_ps(r[6], r[7]);
    const __m256 s0 = _mm256_shuffle_ps(u0, u2, 0x44), s1 = _mm256_shuffle_ps(u0, u2, 0xEE);
    const __m256 s2 = _mm256_shuffle_ps(u1, u3, 0x44), s3 = _mm256_shuffle_ps(u1, u3, 0xEE);
    const __m256 s4 = _mm256_shuffle_ps(u4, u6, 0x44), s5 = _mm256_shuffle_ps(u4, u6, 0xEE);
    const __m256 s6 = _mm256_shuffle_ps(u5, u7, 0x44), s7 = _mm256_shuffle_ps(u5, u7, 0xEE);
    const __m256 t[8] = {_mm256_permute2f128_ps(s0, s4, 0x20), _mm256_permute2f128_ps(s1, s5, 0x20),
                         _mm256_permute2f128_ps(s2, s6, 0x20), _mm256_permute2f128_ps(s3, s7, 0x20),
                         _mm256_permute2f128_ps(s0, s4, 0x31), _mm256_permute2f128_ps(s1, s5, 0x31),
                         _mm256_permute2f128_ps(s2, s6, 0x31), _mm256_permute2f128_ps(s3, s7, 0x31)};
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) _mm256_storeu_ps(out + (kk + j) * 6, t[j]);
  }
  for (; kk < k; ++kk)
    for (int i = 0; i < 6; ++i) out[kk * 6 + i] = a[i * lda + kk];
}

// a's rows [r0, r1) (a multiple of kRowsAvx2 of them) packed k-major per group of kRowsAvx2
// rows, [group][K][kRowsAvx2], into the calling thread's buffer: a group's six a[., kk] are then
// one 24-byte run instead of six rows K floats apart. Kept per thread for the rest of the
// product `call` (items of one row block that follow on the same thread reuse it); a new call
// always packs again (a's address may hold other values by then).
const float* pack_row_groups(uint64_t call, const float* a, int64_t k, int64_t r0, int64_t r1) {
  thread_local LineBuffer buf;
  thread_local std::tuple<uint64_t, const float*, int64_t, int64_t, int64_t> held{};
  const auto key = std::make_tuple(call, a, k, r0, r1);
  if (held == key) return buf.data();
  buf.resize(static_cast<size_t>((r1 - r0) * k + 8));  // + the last group's 2-float spill
  float* out = buf.data();
  for (int64_t g = r0; g < r1; g += kRowsAvx2) pack_row_group(a + g * k, k, k, out + (g - r0) * k);
  held = key;
  return out;
}

// `pack_call` > 0: pack the full row groups first (pack_row_groups; a product whose rows go in
// blocks, see packed_matmul_f32), 0: read a's rows in place.
void run_panels_avx2(int64_t width, SliceLayout lay, int64_t p0, int64_t p1, int64_t r0,
                     int64_t r1, int64_t n, int64_t k, const float* a, const float* packed,
                     const float* bias, float* y, uint64_t pack_call = 0) {
  // Full 6-row groups take each 16 columns of the panel over all of them in turn, so that those
  // columns' k x 16 block stays in L1 across the groups (it was read from L2 again for every
  // group, the 4 column groups of a 64-wide panel alternating; 512x128x512 at 2 threads:
  // 584-620 -> 499-596 us, tierjit_micro_bench matmul.packed_*, 3 alternations); the last
  // rows, fewer than 6, as before. Same operations per output element.
  const int64_t full_end = r0 + (r1 - r0) / kRowsAvx2 * kRowsAvx2;
  const int64_t step = std::min<int64_t>(16, width);
  const float* ap = pack_call > 0 && full_end > r0 ? pack_row_groups(pack_call, a, k, r0, full_end)
                                                   : nullptr;
  for (int64_t p = p0; p < p1; ++p) {
    for (int64_t g = 0; g < width; g += step) {
      const int64_t c0 = p * width + g, cols = std::min<int64_t>(step, n - c0);
      if (cols <= 0) break;
      const float* w = packed + p * k * width + g / 16 * lay.slice_stride;
      const float* bp = bias ? bias + c0 : nullptr;
      if (ap) {
        for (int64_t r = r0; r < full_end; r += kRowsAvx2)
          group_rows_avx2<kRowsAvx2, 2, kRowsAvx2>(k, ap + (r - r0) * k, 1, w, lay, bp, cols,
                                                   y + r * n + c0, n);
      } else {
        for (int64_t r = r0; r < full_end; r += kRowsAvx2)
          group_rows_avx2<kRowsAvx2, 2>(k, a + r * k, k, w, lay, bp, cols, y + r * n + c0, n);
      }
    }
    for (int64_t r = full_end; r < r1; r += kRowsAvx2) {
      const float* ar = a + r * k;
      float* yr = y + r * n;
      switch (std::min<int64_t>(kRowsAvx2, r1 - r)) {
        case 1: rows_avx2<1>(width, lay, p, k, n, ar, packed, bias, yr); break;
        case 2: rows_avx2<2>(width, lay, p, k, n, ar, packed, bias, yr); break;
        case 3: rows_avx2<3>(width, lay, p, k, n, ar, packed, bias, yr); break;
        case 4: rows_avx2<4>(width, lay, p, k, n, ar, packed, bias, yr); break;
        case 5: rows_avx2<5>(width, lay, p, k, n, ar, packed, bias, yr); break;
        default: rows_avx2<6>(width, lay, p, k, n, ar, packed, bias, yr); break;
      }
    }
  }
}

// Panels [p0, p1) x rows [r0, r1) of y = a * b + bias, b's panels `packed` of `width` columns
// (`sliced`: as pack_into lays them out with sliced).
void run_range(int64_t width, bool sliced, const float* packed, int64_t p0, int64_t p1, int64_t r0,
               int64_t r1, int64_t n, int64_t k, const float* a, const float* bias, float* y,
               uint64_t pack_call = 0) {
  if (sliced || !kHasAvx512 || g_force_avx2.load(std::memory_order_relaxed))
    run_panels_avx2(width, slice_layout(sliced, width, k), p0, p1, r0, r1, n, k, a, packed, bias,
                    y, pack_call);
  else if (width == kWide)
    run_panels<4>(p0, p1, r0, r1, n, k, a, packed, bias, y);
  else
    run_panels<1>(p0, p1, r0, r1, n, k, a, packed, bias, y);
}

}  // namespace

bool packed_matmul_available() { return g_enabled.load(std::memory_order_relaxed); }
void set_packed_matmul_enabled(bool enabled) { g_enabled.store(enabled); }
void set_packed_matmul_force_avx2(bool force) { g_force_avx2.store(force); }
uint64_t packed_matmul_runs() { return g_runs.load(std::memory_order_relaxed); }
size_t packed_panel_bytes() { return panel_cache().bytes(); }

bool packed_matmul_f32(int64_t m, int64_t n, int64_t k, bool trans_b, const float* a,
                       const float* b, const Tensor& constant_b, const float* bias, float* y,
                       int threads) {
  if (!packed_matmul_available()) return false;
  // Any row count: the AVX2 code once declined past 1,024 rows, where oneDNN's blocked kernels
  // were faster (4096x128x512: 5.8 against 3.6 ms at 2 threads); with rows in blocks of
  // kRowBlockBytes and the panels in slices it is 9-15% faster than oneDNN there
  // (`tierjit_micro_bench --benchmark_filter='matmul\.packed_(2048|4096)'`, 5 alternations,
  // median: 2048x128x128 479 vs 610 us, 2048x512x128 1736 vs 1982, 4096x128x512 3746 vs 4415).
  const std::shared_ptr<const Panels> panels =
      panel_cache().get({b, n, k, trans_b}, panel_floats(n, k) * sizeof(float),
                        [&] { return pack(n, k, trans_b, b, constant_b); });
  if (!panels) return false;
  g_runs.fetch_add(1, std::memory_order_relaxed);
  const Panels& pk = *panels;
  const bool avx2 = !kHasAvx512 || g_force_avx2.load(std::memory_order_relaxed);
  const int64_t count = (n + pk.width - 1) / pk.width;
  // Rows per kernel step: 6 with AVX2; with AVX-512, 4 (64-wide panels) or 8 (16-wide).
  const int64_t step = avx2 ? kRowsAvx2 : pk.width == kWide ? 4 : 8;
  const int64_t row_steps = (m + step - 1) / step;
  threads = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, count * row_steps)));
  // Items: a group of rows x one panel, at least 4 per thread where the rows allow, so that a
  // late thread's share can be taken over (see parallel_for_stealing); each thread's own share
  // is the same every call. Where a's rows exceed kRowBlockBytes, groups are at most that size
  // and run in order with every panel inside (a is read from memory once, not once per panel);
  // else panel-major (each thread's panels stay in its core's L2).
  const int64_t block_steps =
      std::max<int64_t>(1, kRowBlockBytes / (std::max<int64_t>(k, 1) * sizeof(float) * step));
  const bool blocked = row_steps > block_steps;
  const int64_t min_groups = (4 * threads + count - 1) / count;
  const int64_t groups =
      std::min(row_steps, std::max((row_steps + block_steps - 1) / block_steps, min_groups));
  // Blocked, with at least kPackRowsMinPanels panels: the AVX2 code packs each block's full row
  // groups once per thread (pack_row_groups; the items that follow on that thread are the
  // block's other panels, which read the packed copy). Measured at 2 threads, 5 alternations
  // with each order (`tierjit_micro_bench --benchmark_filter='matmul\.packed_(512|4096)x'`):
  // 4096x128x512 0.86-0.90x of the time reading a's rows in place, 512x128x512 0.90-0.95x; with
  // 2 panels (N = 128) the packing cost what it saved (1.03-1.07x), so those read in place.
  constexpr int64_t kPackRowsMinPanels = 4;
  static std::atomic<uint64_t> calls{0};
  const uint64_t pack_call = blocked && avx2 && count >= kPackRowsMinPanels
                                 ? calls.fetch_add(1, std::memory_order_relaxed) + 1
                                 : 0;
  parallel_for_stealing(threads, count * groups, [&](int64_t item) {
    const int64_t p = blocked ? item % count : item / groups;
    const int64_t g = blocked ? item / count : item % groups;
    const int64_t r0 = step * (row_steps * g / groups);
    const int64_t r1 = std::min(m, step * (row_steps * (g + 1) / groups));
    run_range(pk.width, pk.sliced, pk.data(), p, p + 1, r0, r1, n, k, a, bias, y, pack_call);
  });
  return true;
}

bool packed_batched_matmul_f32(int64_t batch, int64_t m, int64_t n, int64_t k, const float* a,
                               const float* b, float* y, int threads) {
  if (!packed_matmul_available()) return false;
  g_runs.fetch_add(1, std::memory_order_relaxed);
  const int64_t width = panel_width(n), count = (n + width - 1) / width;
  const size_t floats = panel_floats(n, k);
  // Whole products per item: each packs its b into the thread's scratch (it stays in that core's
  // cache for the product) and runs every panel over every row. A b of one full panel (N = 64:
  // attention's V) is its own packing (whole rows, not slices) when aligned for the kernels'
  // vector loads.
  const bool sliced = sliced_packing();
  parallel_for_stealing(threads, batch, [&](int64_t t) {
    const float* bt = b + t * k * n;
    if (n == width && reinterpret_cast<uintptr_t>(bt) % 64 == 0) {
      run_range(width, false, bt, 0, 1, 0, m, n, k, a + t * m * k, nullptr, y + t * m * n);
      return;
    }
    thread_local LineBuffer scratch;
    scratch.resize(floats);
    pack_into(scratch.data(), n, k, false, bt, sliced);
    run_range(width, sliced, scratch.data(), 0, count, 0, m, n, k, a + t * m * k, nullptr,
              y + t * m * n);
  });
  return true;
}

int64_t gemm_panel_width(int64_t n) { return panel_width(n); }
bool gemm_panels_sliced() { return sliced_packing(); }
int64_t gemm_packed_floats(int64_t n, int64_t k) { return static_cast<int64_t>(panel_floats(n, k)); }

void gemm_pack_b_f32(const float* b, float* out, int64_t n, int64_t k, int64_t trans_b) {
  pack_into(out, n, k, trans_b != 0, b, sliced_packing());
}

namespace {

// gemm_panel_rows_f32 (packed panel, kInPlace false) and gemm_rows_in_place_f32 (rows of B ldw
// floats apart, kInPlace true): the same tiles, the same sums.
template <bool kInPlace>
void panel_rows_any(const float* a, const float* w, float* y, int64_t m, int64_t k, int64_t lda,
                    int64_t width, int64_t cols, int64_t ldy, bool acc, int64_t ldw) {
  if (m <= 0 || cols <= 0) return;
  const bool sliced = !kInPlace && sliced_packing();
  if (sliced || !kHasAvx512 || g_force_avx2.load(std::memory_order_relaxed)) {
    const SliceLayout lay = kInPlace ? SliceLayout{ldw, 16} : slice_layout(sliced, width, k);
    const int64_t full_end = m / kRowsAvx2 * kRowsAvx2;
    const int64_t step = std::min<int64_t>(16, width);
    for (int64_t g = 0; g < width && g < cols; g += step) {  // as run_panels_avx2
      const float* wg = w + g / 16 * lay.slice_stride;
      for (int64_t r = 0; r < full_end; r += kRowsAvx2)
        group_rows_avx2<kRowsAvx2, 2, 1, kInPlace>(k, a + r * lda, lda, wg, lay, nullptr,
                                                   std::min<int64_t>(step, cols - g),
                                                   y + r * ldy + g, ldy, acc);
    }
    if (full_end < m) {
      const float* ar = a + full_end * lda;
      float* yr = y + full_end * ldy;
      switch (m - full_end) {
        case 1: tail_rows_avx2<1, kInPlace>(width, lay, k, ar, lda, w, nullptr, cols, yr, ldy, acc); break;
        case 2: tail_rows_avx2<2, kInPlace>(width, lay, k, ar, lda, w, nullptr, cols, yr, ldy, acc); break;
        case 3: tail_rows_avx2<3, kInPlace>(width, lay, k, ar, lda, w, nullptr, cols, yr, ldy, acc); break;
        case 4: tail_rows_avx2<4, kInPlace>(width, lay, k, ar, lda, w, nullptr, cols, yr, ldy, acc); break;
        default: tail_rows_avx2<5, kInPlace>(width, lay, k, ar, lda, w, nullptr, cols, yr, ldy, acc); break;
      }
    }
  } else if (width == kWide) {
    panel_block<4, kInPlace>(m, k, a, lda, w, nullptr, cols, y, ldy, acc, ldw);
  } else {
    panel_block<1, kInPlace>(m, k, a, lda, w, nullptr, cols, y, ldy, acc, ldw);
  }
}

}  // namespace

void gemm_panel_rows_f32(const float* a, const float* panel, float* y, int64_t m, int64_t k,
                         int64_t lda, int64_t width, int64_t cols, int64_t ldy,
                         int64_t accumulate) {
  panel_rows_any<false>(a, panel, y, m, k, lda, width, cols, ldy, accumulate != 0, 0);
}

void gemm_rows_in_place_f32(const float* a, const float* b, float* y, int64_t m, int64_t k,
                            int64_t lda, int64_t ldb, int64_t width, int64_t cols, int64_t ldy,
                            int64_t accumulate) {
  panel_rows_any<true>(a, b, y, m, k, lda, width, cols, ldy, accumulate != 0, ldb);
}

}  // namespace tierjit::kernels
