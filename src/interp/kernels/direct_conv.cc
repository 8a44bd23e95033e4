// Direct convolution for few channels on the blocked layout (direct_conv.h). Weights are packed
// per group of 16 output channels (two blocks of 8; a last group of 8 is one block) as
// [group][input block][KH][KW][channel in block][16 (or 8)]: a tile's loop over the input
// reads them as one sequential stream. The input is copied per call into a zero-padded image
// ([block][H + pads][W + pads][channels in block]), so no tap needs a bounds check.
#include "interp/kernels/direct_conv.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>
#include <tuple>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/line_buffer.h"
#include "kernels/parallel_for.h"
#include "kernels/weight_pack_cache.h"

namespace tierjit::interp::nn {
namespace {

std::atomic<bool> g_enabled{true};
std::atomic<uint64_t> g_runs{0};
std::atomic<uint64_t> g_pool_runs{0};
const bool kHasAvx512 = kernels::cpu_has_avx512f();

constexpr int kTile = 6;         // output pixels per tile (x 2 blocks: 12 accumulators)
constexpr int64_t kGroupOc = 16;  // output channels per group
// Tiles per work item when a call is shared over threads (~100 pixels: a few us of work).
constexpr int64_t kTilesPerItem = 16;
// Input channels x taps per chunk: a tile's sums run over the input channels a chunk at a time,
// the partial sums kept in a per-thread buffer between chunks, so that the group's weights for a
// chunk (kChunkTaps x 16 floats, 16 KiB) can stay in L1 while every tile of the item reads them
// (without chunks a tile of resnet18's 3x3 layers streamed 37-295 KiB of weights from L2).
// Measured, chunks of 72-512 channel-taps ran within noise of each other on resnet18's layers
// (tierjit_micro_bench conv.direct_r18_*): the wide layers' inputs, not the weights, come from L2.
constexpr int64_t kChunkTaps = 256;
// Small images (at most kPrefetchMaxPixels output positions) prefetch the weights
// kPrefetchFloats ahead: there each weight serves only a few tiles, and the first tile's reads
// from memory stalled (resnet18's 512-channel 7x7 layer: 2.3 -> 2.0 ms on 2 threads; larger
// images lost up to 40% with it, tierjit_micro_bench conv.direct_r18_*).
constexpr int64_t kPrefetchFloats = 1024;
constexpr int64_t kPrefetchMaxPixels = 64;
// One thread's time per multiply-add (ns) from which a call is split over threads
// (kernels::worth_parallel): convnet_small's 16 -> 32 layer, 903K multiply-adds per image, took 20-24 us on
// one core (tierjit_micro_bench conv.direct_conv2_16to32_14_1_t1).
constexpr double kNsPerMac = 0.024;
// Padded floats from which the padding of the images of a call is shared over threads.
constexpr int64_t kParallelPadFloats = int64_t{1} << 16;
// With a max pool after the convolution: convolution positions per block of pooled rows, at most
// (the block's values, 16 channels each, stay in L1: 256 x 64 bytes = 16 KiB).
constexpr int64_t kPoolBlockPixels = 256;

// The packed weights of one convolution.
struct PackedConv {
  kernels::LineBuffer data;
  Tensor keep;  // the constant weight tensor (its address stays ours while cached)
  size_t bytes() const { return data.size() * sizeof(float); }
  bool orphaned() const { return keep.storage_holders() == 1; }
};

// ONNX's [O][C][KH][KW] -> per group of 16 output channels [nb][KH][KW][cb][width] (width 16, or 8
// for a last group of one block); nb = C / cb input blocks of cb channels.
void pack_weights(const float* w, int64_t O, int64_t C, int64_t KH, int64_t KW, int64_t cb,
                  float* out) {
  const int64_t nb = C / cb;
  for (int64_t o0 = 0; o0 < O; o0 += kGroupOc) {
    const int64_t width = std::min(kGroupOc, O - o0);
    for (int64_t b = 0; b < nb; ++b)
      for (int64_t kh = 0; kh < KH; ++kh)
        for (int64_t kw = 0; kw < KW; ++kw)
          for (int64_t ic = 0; ic < cb; ++ic)
            for (int64_t j = 0; j < width; ++j)
              *out++ = w[(((o0 + j) * C + b * cb + ic) * KH + kh) * KW + kw];
  }
}

size_t packed_floats(int64_t O, int64_t C, int64_t KH, int64_t KW) {
  return static_cast<size_t>(O * C * KH * KW);
}

// Packed weights of constant tensors by address and geometry (weight_pack_cache.h); past the
// budget the caller packs per call.
using PackCache = kernels::WeightPackCache<std::tuple<const float*, int64_t, int64_t, int64_t, int64_t, int64_t>, PackedConv>;

// (The budget of oneDNN's reordered weights, dnnl_common.cc: resnet18's are 45 MiB.)
PackCache& pack_cache() {
  static PackCache cache(size_t{256} << 20);
  return cache;
}

// The geometry one call's tiles share.
struct Geo {
  // Offsets (floats) in the padded image of the taps, per (input block, kh, kw) in the packed
  // weights' order, for the blocks of one chunk (a chunk's taps are a prefix): one flat loop
  // (nested loops over blocks, KH, KW kept reloading their bounds and recomputing the offset, as
  // much work as the 1x16 layer's 12 multiply-adds per tap).
  const int64_t* tap = nullptr;
  int64_t rstride = 0, bstride = 0;  // padded image: floats per row, per input block
  int64_t sh = 1, sw = 1;            // strides
  int64_t OW = 0, pixels = 0;        // output width, output positions computed per image
  int64_t ystride = 0;               // pixels between y's blocks of 8 channels (image or buffer)
  bool clip = false, sum = false;
  float lo = 0, hi = 0;
};

// The part of a tile's sums one chunk adds: taps [0, taps) of g.tap from x (the chunk's first
// block in the padded image) and w (the chunk's packed weights); `first`: the sums start at the
// bias (else at `part`), `last`: they are finished into y (else stored to `part`).
struct Chunk {
  const float* x;
  const float* w;
  int64_t taps;
  bool first, last;
};

// T consecutive output pixels (row-major, from (oh, ow)) x OB blocks of 8 output channels: y at
// the group's first block, the tile's first pixel (blocks g.ystride * 8 floats apart); bias: the
// group's first channel or null; part: the tile's partial sums ([T][OB][8]) between chunks.
// NT > 0: the chunk has exactly NT taps (k.taps == NT), so the tap loop unrolls whole.
template <int T, int OB, int CB, bool PF, int NT = 0>
void conv_tile(const Geo& g, const Chunk& k, const float* bias, float* part, int64_t oh,
               int64_t ow, float* y) {
  const float* px[T];
#pragma GCC unroll 6
  for (int t = 0; t < T; ++t) {  // no division: an idiv per pixel cost more than the 1x16 layer's taps
    px[t] = k.x + oh * g.sh * g.rstride + ow * g.sw * CB;
    if (++ow == g.OW) {
      ow = 0;
      ++oh;
    }
  }
  __m256 acc[T][OB];
  if (k.first) {
#pragma GCC unroll 2
    for (int ob = 0; ob < OB; ++ob) {
      const __m256 b0 = bias ? _mm256_loadu_ps(bias + 8 * ob) : _mm256_setzero_ps();
#pragma GCC unroll 6
      for (int t = 0; t < T; ++t) acc[t][ob] = b0;
    }
  } else {
#pragma GCC unroll 6
    for (int t = 0; t < T; ++t)
#pragma GCC unroll 2
      for (int ob = 0; ob < OB; ++ob) acc[t][ob] = _mm256_loadu_ps(part + (t * OB + ob) * 8);
  }
  const float* wp = k.w;
  // One tap: CB input channels x T pixels x OB blocks of multiply-adds.
  auto tap = [&](int64_t i) __attribute__((always_inline)) {
    const int64_t off = g.tap[i];
#pragma GCC unroll 8
    for (int ic = 0; ic < CB; ++ic) {
      if constexpr (PF) _mm_prefetch(reinterpret_cast<const char*>(wp + kPrefetchFloats), _MM_HINT_T0);
      __m256 wv[OB];
#pragma GCC unroll 2
      for (int ob = 0; ob < OB; ++ob) wv[ob] = _mm256_load_ps(wp + 8 * ob);
#pragma GCC unroll 6
      for (int t = 0; t < T; ++t) {
        const __m256 xv = _mm256_broadcast_ss(px[t] + off + ic);
#pragma GCC unroll 2
        for (int ob = 0; ob < OB; ++ob) acc[t][ob] = _mm256_fmadd_ps(xv, wv[ob], acc[t][ob]);
      }
      wp += 8 * OB;
    }
  };
  if constexpr (NT > 0) {  // (an unroll pragma on the runtime loop slowed the 8-channel tile 1.5x)
#pragma GCC unroll 9
    for (int64_t i = 0; i < NT; ++i) tap(i);
  } else {
    for (int64_t i = 0; i < k.taps; ++i) tap(i);
  }
  if (!k.last) {
#pragma GCC unroll 6
    for (int t = 0; t < T; ++t)
#pragma GCC unroll 2
      for (int ob = 0; ob < OB; ++ob) _mm256_storeu_ps(part + (t * OB + ob) * 8, acc[t][ob]);
    return;
  }
  if (g.sum) {  // the residual y holds: one float32 addition to the finished sum (tier 0's Add)
#pragma GCC unroll 2
    for (int ob = 0; ob < OB; ++ob)
#pragma GCC unroll 6
      for (int t = 0; t < T; ++t)
        acc[t][ob] = _mm256_add_ps(acc[t][ob], _mm256_loadu_ps(y + (ob * g.ystride + t) * 8));
  }
  if (g.clip) {  // min(max(y, lo), hi): NaN -> lo (max_ps returns its second operand), -0 -> +0 at lo = 0
    const __m256 lo = _mm256_set1_ps(g.lo), hi = _mm256_set1_ps(g.hi);
#pragma GCC unroll 6
    for (int t = 0; t < T; ++t)
#pragma GCC unroll 2
      for (int ob = 0; ob < OB; ++ob) acc[t][ob] = _mm256_min_ps(_mm256_max_ps(acc[t][ob], lo), hi);
  }
#pragma GCC unroll 2
  for (int ob = 0; ob < OB; ++ob)
#pragma GCC unroll 6
    for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + (ob * g.ystride + t) * 8, acc[t][ob]);
}

// Pixels [p0, p1) of one image for one group of OB blocks and one chunk, kTile at a time, into
// y (at pixel p0; see conv_tile); part: the partial sums of pixel p0 (T * OB * 8 floats per tile).
template <int OB, int CB, bool PF, int NT = 0>
void conv_pixels(const Geo& g, const Chunk& k, const float* bias, float* part, int64_t p0,
                 int64_t p1, float* y) {
  int64_t p = p0, oh = p0 / g.OW, ow = p0 % g.OW;
  for (; p + kTile <= p1; p += kTile, part += kTile * OB * 8, y += kTile * 8) {
    conv_tile<kTile, OB, CB, PF, NT>(g, k, bias, part, oh, ow, y);
    for (ow += kTile; ow >= g.OW;) {  // OW may be below kTile
      ow -= g.OW;
      ++oh;
    }
  }
  switch (p1 - p) {
    case 5: conv_tile<5, OB, CB, PF>(g, k, bias, part, oh, ow, y); break;
    case 4: conv_tile<4, OB, CB, PF>(g, k, bias, part, oh, ow, y); break;
    case 3: conv_tile<3, OB, CB, PF>(g, k, bias, part, oh, ow, y); break;
    case 2: conv_tile<2, OB, CB, PF>(g, k, bias, part, oh, ow, y); break;
    case 1: conv_tile<1, OB, CB, PF>(g, k, bias, part, oh, ow, y); break;
    default: break;
  }
}

// conv_pixels for ob_count (1 or 2) blocks of CB input channels, y at pixel p0.
template <int CB>
void conv_range(const Geo& g, int64_t ob_count, const Chunk& k, const float* bias, float* part,
                int64_t p0, int64_t p1, float* y) {
  const bool pf = CB == 8 && g.pixels <= kPrefetchMaxPixels;
  if constexpr (CB == 1) {  // one input channel, nine taps (a 3x3 kernel): 12 multiply-adds each
    if (k.taps == 9 && ob_count == 2) return conv_pixels<2, 1, false, 9>(g, k, bias, part, p0, p1, y);
  }
  if (ob_count == 2) {
    if (pf) conv_pixels<2, CB, true>(g, k, bias, part, p0, p1, y);
    else conv_pixels<2, CB, false>(g, k, bias, part, p0, p1, y);
  } else {
    if (pf) conv_pixels<1, CB, true>(g, k, bias, part, p0, p1, y);
    else conv_pixels<1, CB, false>(g, k, bias, part, p0, p1, y);
  }
}

// tier 0's MaxPool fold on 8 lanes (conv_chain_pool.cc): `v > a ? v : a`, a NaN v taken. With
// kNoNaN (the values went through a Clip with ordered bounds: never NaN) it is that max alone.
template <bool kNoNaN>
__m256 fold_max(__m256 v, __m256 a) {
  if constexpr (kNoNaN) return _mm256_max_ps(v, a);
  return _mm256_blendv_ps(_mm256_max_ps(v, a), v, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
}

// The max pool after a convolution (direct_conv_f32's `pool`): `rows` pooled rows from the
// convolution's rows in buf ([ob_count][bstride pixels][8], row-major, OW wide, from the
// block's first window row), windows of PH x PW (kPH / kPW when known at compile time, else 0)
// at strides PH x PW folded in row-major order as tier 0's MaxPool does, into y (the group's
// first block at the block's first pooled row; blocks ystride pixels apart, rows PWo wide).
template <bool kNoNaN, int kPH, int kPW>
void pool_block(const float* buf, int64_t bstride, int64_t ob_count, int64_t rows, int64_t OW,
                int64_t PH, int64_t PW, int64_t PWo, int64_t ystride, float* y) {
  if constexpr (kPH > 0) PH = kPH;
  if constexpr (kPW > 0) PW = kPW;
  for (int64_t ob = 0; ob < ob_count; ++ob)
    for (int64_t r = 0; r < rows; ++r) {
      const float* src = buf + (ob * bstride + r * PH * OW) * 8;
      float* dst = y + (ob * ystride + r * PWo) * 8;
      for (int64_t j = 0; j < PWo; ++j, src += PW * 8, dst += 8) {
        __m256 acc = _mm256_loadu_ps(src);
#pragma GCC unroll 4
        for (int64_t kh = 0; kh < PH; ++kh)
#pragma GCC unroll 4
          for (int64_t kw = kh == 0 ? 1 : 0; kw < PW; ++kw)
            acc = fold_max<kNoNaN>(_mm256_loadu_ps(src + (kh * OW + kw) * 8), acc);
        _mm256_storeu_ps(dst, acc);
      }
    }
}

template <bool kNoNaN>
void pool_block_any(const float* buf, int64_t bstride, int64_t ob_count, int64_t rows, int64_t OW,
                    int64_t PH, int64_t PW, int64_t PWo, int64_t ystride, float* y) {
  if (PH == 2 && PW == 2)
    pool_block<kNoNaN, 2, 2>(buf, bstride, ob_count, rows, OW, PH, PW, PWo, ystride, y);
  else
    pool_block<kNoNaN, 0, 0>(buf, bstride, ob_count, rows, OW, PH, PW, PWo, ystride, y);
}

// Pooled rows per block (direct_conv_f32 with a pool): the count, at most kPoolBlockPixels
// convolution positions (at least one pooled row), whose blocks need the fewest tiles over the
// image (a block's last tile may be partial), the smallest such count (more items to share).
int64_t pool_rows_per_block(int64_t pooled_rows, int64_t pixels_per_row) {
  const int64_t most = std::clamp<int64_t>(kPoolBlockPixels / pixels_per_row, 1, pooled_rows);
  int64_t best = 1, best_tiles = INT64_MAX;
  for (int64_t r = 1; r <= most; ++r) {
    const int64_t full = pooled_rows / r, rest = pooled_rows % r;
    const int64_t tiles = full * ((r * pixels_per_row + kTile - 1) / kTile) +
                          (rest * pixels_per_row + kTile - 1) / kTile;
    if (tiles < best_tiles) {
      best = r;
      best_tiles = tiles;
    }
  }
  return best;
}

// Block b of one image x ([nb][H][W][cb]) into out ([nb][H + pt + pb][W + pl + pr][cb]), zeros
// around.
void pad_block(const float* x, int64_t b, int64_t H, int64_t W, int64_t cb, int64_t pt, int64_t pb,
               int64_t pl, int64_t pr, float* out) {
  const int64_t Wp = W + pl + pr, Hp = H + pt + pb;
  for (int64_t r = 0; r < Hp; ++r) {
    float* o = out + (b * Hp + r) * Wp * cb;
    const int64_t ih = r - pt;
    if (ih < 0 || ih >= H) {
      std::fill(o, o + Wp * cb, 0.f);
      continue;
    }
    std::fill(o, o + pl * cb, 0.f);
    const float* src = x + (b * H + ih) * W * cb;
    std::copy(src, src + W * cb, o + pl * cb);
    std::fill(o + (pl + W) * cb, o + Wp * cb, 0.f);
  }
}

}  // namespace

void set_direct_conv_enabled(bool enabled) { g_enabled.store(enabled); }
bool direct_conv_enabled() { return g_enabled.load(std::memory_order_relaxed); }
uint64_t direct_conv_runs() { return g_runs.load(std::memory_order_relaxed); }
uint64_t direct_conv_pool_runs() { return g_pool_runs.load(std::memory_order_relaxed); }

bool direct_conv_supports(const ConvGeometry& g, ActLayout x_layout, ActLayout y_layout,
                          const ConvPostOp& post) {
  if (!direct_conv_enabled() || kHasAvx512 || y_layout != ActLayout::kBlocked8) return false;
  if (g.in_spatial.size() != 2 || g.kernel.size() != 2 || g.out_spatial.size() != 2 ||
      g.pad_begin.size() != 2 || g.pad_end.size() != 2 || g.group != 1)
    return false;
  for (size_t i = 0; i < 2; ++i) {
    const int64_t s = g.strides.size() > i ? g.strides[i] : 1;
    const int64_t d = g.dilations.size() > i ? g.dilations[i] : 1;
    if (s < 1 || d < 1 || g.kernel[i] < 1) return false;
    if (g.pad_begin[i] < 0 || g.pad_end[i] < 0 || g.in_spatial[i] < 1 || g.out_spatial[i] < 1)
      return false;
    // Every tap of every output position inside the padded image (ONNX's floor rounding).
    const int64_t span = g.in_spatial[i] + g.pad_begin[i] + g.pad_end[i] - d * (g.kernel[i] - 1);
    if (span < 1 || g.out_spatial[i] != (span - 1) / s + 1) return false;
  }
  if (g.out_channels % 8 != 0 || g.out_channels < 8 || g.in_channels < 1) return false;
  if (x_layout == ActLayout::kBlocked8 ? g.in_channels % 8 != 0 : x_layout != ActLayout::kPlain)
    return false;
  // Where oneDNN was as fast or faster (tierjit_micro_bench conv.direct_*): 1x1 kernels of many
  // channels (its 1x1 kernel; the packed panels' territory), and plain inputs other than few
  // channels at stride and dilation 1 (resnet18's 7x7 stride-2 stem of 3 channels: 49 against
  // 66 GFLOP/s on one core).
  const bool few = g.in_channels <= kDirectConvMaxFewChannels;
  if (g.kernel[0] * g.kernel[1] == 1 && !few) return false;
  if (x_layout == ActLayout::kPlain) {
    if (!few) return false;
    for (size_t i = 0; i < 2; ++i)
      if ((g.strides.size() > i && g.strides[i] != 1) || (g.dilations.size() > i && g.dilations[i] != 1))
        return false;
  }
  return post.kind == ConvPostOp::Kind::kNone || post.kind == ConvPostOp::Kind::kClip;
}

void direct_conv_f32(const ConvGeometry& cg, const float* x, ActLayout x_layout, const float* w,
                     const Tensor* constant_w, const float* bias, float* y, int threads,
                     const ConvPostOp& post, const MaxPoolAfter* pool) {
  g_runs.fetch_add(1, std::memory_order_relaxed);
  if (pool) g_pool_runs.fetch_add(1, std::memory_order_relaxed);
  const int64_t N = cg.batch, C = cg.in_channels, O = cg.out_channels;
  if (N <= 0) return;
  const int64_t H = cg.in_spatial[0], W = cg.in_spatial[1], KH = cg.kernel[0], KW = cg.kernel[1];
  const int64_t pt = cg.pad_begin[0], pl = cg.pad_begin[1], pb = cg.pad_end[0], pr = cg.pad_end[1];
  const int64_t dh = cg.dilations.empty() ? 1 : cg.dilations[0];
  const int64_t dw = cg.dilations.size() < 2 ? 1 : cg.dilations[1];
  const int64_t cb = x_layout == ActLayout::kBlocked8 ? 8 : 1;
  // Weights.
  std::shared_ptr<const PackedConv> keep;
  const float* wp = nullptr;
  if (constant_w)
    keep = pack_cache().get({w, O, C, KH, KW, cb}, packed_floats(O, C, KH, KW) * sizeof(float), [&] {
      auto p = std::make_shared<PackedConv>();
      p->data.resize(packed_floats(O, C, KH, KW));
      pack_weights(w, O, C, KH, KW, cb, p->data.data());
      p->keep = *constant_w;
      return p;
    });
  if (keep) {
    wp = keep->data.data();
  } else {
    thread_local kernels::LineBuffer scratch_w;
    scratch_w.resize(packed_floats(O, C, KH, KW));
    pack_weights(w, O, C, KH, KW, cb, scratch_w.data());
    wp = scratch_w.data();
  }
  Geo g;
  const int64_t nb = C / cb;
  // Blocks per chunk: kChunkTaps channel-taps, whole blocks, at least one block.
  const int64_t chunk_blocks = std::clamp<int64_t>(kChunkTaps / (KH * KW * cb), 1, nb);
  const int64_t chunks = (nb + chunk_blocks - 1) / chunk_blocks;
  const bool padded = pt + pb + pl + pr > 0;  // else the taps read x itself
  g.rstride = (W + pl + pr) * cb;
  g.bstride = (H + pt + pb) * g.rstride;
  g.sh = cg.strides.empty() ? 1 : cg.strides[0];
  g.sw = cg.strides.size() < 2 ? 1 : cg.strides[1];
  std::vector<int64_t> taps;
  taps.reserve(static_cast<size_t>(chunk_blocks * KH * KW));
  for (int64_t b = 0; b < chunk_blocks; ++b)
    for (int64_t kh = 0; kh < KH; ++kh)
      for (int64_t kw = 0; kw < KW; ++kw)
        taps.push_back(b * g.bstride + kh * dh * g.rstride + kw * dw * cb);
  g.tap = taps.data();
  g.OW = cg.out_spatial[1];
  // With a pool: only the rows its windows read; pooled rows of PWo columns, in blocks of
  // pool_rows_per_block rows (each block's positions through the running thread's buffer).
  const int64_t PHo = pool ? cg.out_spatial[0] / pool->kh : 0, PWo = pool ? g.OW / pool->kw : 0;
  if (pool && (PHo < 1 || PWo < 1)) return;  // no whole window: an empty output
  g.pixels = (pool ? PHo * pool->kh : cg.out_spatial[0]) * g.OW;
  g.clip = post.kind == ConvPostOp::Kind::kClip;
  g.sum = post.sum;
  g.lo = post.alpha;
  g.hi = post.beta;
  const int64_t image_in = C * H * W, image_pad = nb * g.bstride;
  const int64_t groups = (O + kGroupOc - 1) / kGroupOc;
  const int64_t group_w = C * KH * KW * kGroupOc, image_out = O * g.pixels;
  const int64_t image_pooled = O * PHo * PWo;
  const int64_t macs = N * image_out * C * KH * KW;
  const int team = kernels::worth_parallel(threads, macs, kNsPerMac) ? threads : 1;
  // Pixel chunks: of about kTilesPerItem tiles, as even as whole tiles allow; with a pool, blocks
  // of whole pooled rows.
  int64_t pchunks = (g.pixels + kTile * kTilesPerItem - 1) / (kTile * kTilesPerItem);
  int64_t pchunk = ((g.pixels + pchunks - 1) / pchunks + kTile - 1) / kTile * kTile;
  if (pool) {
    const int64_t rows = pool_rows_per_block(PHo, pool->kh * g.OW);
    pchunk = rows * pool->kh * g.OW;
    pchunks = (PHo + rows - 1) / rows;
  }
  g.ystride = pool ? pchunk : g.pixels;
  // Clip with ordered bounds: no NaN reaches the pool (its fold is then a plain max).
  const bool no_nan = g.clip && !std::isnan(g.lo) && !std::isnan(g.hi);
  // Pixels [p0, p1) (at most pchunk) of group grp of image n, its padded copy at xi: every
  // chunk of input channels over every tile, partial sums in the running thread's buffer; with
  // a pool, into the thread's block buffer, then pooled into y.
  auto run = [&](const float* xi, int64_t n, int64_t grp, int64_t p0, int64_t p1) {
    const int64_t ob_count = std::min<int64_t>(2, (O - grp * kGroupOc) / 8);
    const float* wg = wp + grp * group_w;
    const float* bg = bias ? bias + grp * kGroupOc : nullptr;
    thread_local kernels::LineBuffer part, block;
    float* yg;
    if (pool) {
      block.resize(static_cast<size_t>(pchunk * kGroupOc));
      yg = block.data();
    } else {
      yg = y + n * image_out + grp * 2 * g.pixels * 8 + p0 * 8;
    }
    if (chunks > 1) part.resize(static_cast<size_t>(pchunk * kGroupOc));
    for (int64_t k = 0; k < chunks; ++k) {
      const int64_t b0 = k * chunk_blocks, blocks = std::min(chunk_blocks, nb - b0);
      const Chunk ck{xi + b0 * g.bstride, wg + b0 * KH * KW * cb * ob_count * 8, blocks * KH * KW,
                     k == 0, k == chunks - 1};
      if (cb == 8) conv_range<8>(g, ob_count, ck, bg, part.data(), p0, p1, yg);
      else conv_range<1>(g, ob_count, ck, bg, part.data(), p0, p1, yg);
    }
    if (!pool) return;
    const int64_t r0 = p0 / (pool->kh * g.OW), rows = (p1 - p0) / (pool->kh * g.OW);
    float* out = y + n * image_pooled + (grp * 2 * PHo + r0) * PWo * 8;
    if (no_nan) pool_block_any<true>(yg, pchunk, ob_count, rows, g.OW, pool->kh, pool->kw, PWo, PHo * PWo, out);
    else pool_block_any<false>(yg, pchunk, ob_count, rows, g.OW, pool->kh, pool->kw, PWo, PHo * PWo, out);
  };
  // Items of whole images when they share evenly (or are many), each padded by its thread.
  if (N >= team && (N % team == 0 || N >= 4 * team)) {
    kernels::parallel_for_stealing(team, N, [&](int64_t n) {
      const float* xi = x + n * image_in;
      if (padded) {
        thread_local kernels::LineBuffer pad;
        pad.resize(static_cast<size_t>(image_pad));
        for (int64_t b = 0; b < nb; ++b) pad_block(xi, b, H, W, cb, pt, pb, pl, pr, pad.data());
        xi = pad.data();
      }
      for (int64_t grp = 0; grp < groups; ++grp)
        for (int64_t p0 = 0; p0 < g.pixels; p0 += pchunk) run(xi, n, grp, p0, std::min(g.pixels, p0 + pchunk));
    });
    return;
  }
  // Else padded first (the caller's buffer; the team reads it; rows over the team when large),
  // then items of (image, group, pixel chunk). (Padding inside the items' region cost more on
  // small layers: the team's wake-up after the serial copy is what the items pay.)
  const float* xpad = x;
  if (padded) {
    thread_local kernels::LineBuffer padded_all;
    padded_all.resize(static_cast<size_t>(N * image_pad));
    float* out = padded_all.data();  // (the team's own thread_local buffers are others)
    kernels::parallel_for_if(team > 1 && N * image_pad >= kParallelPadFloats, team, N * nb, [&](int64_t nbk) {
      const int64_t n = nbk / nb;
      pad_block(x + n * image_in, nbk % nb, H, W, cb, pt, pb, pl, pr, out + n * image_pad);
    });
    xpad = out;
  }
  kernels::parallel_for_stealing(team, N * groups * pchunks, [&](int64_t item) {
    const int64_t n = item / (groups * pchunks), rest = item % (groups * pchunks);
    const int64_t grp = rest / pchunks, p0 = (rest % pchunks) * pchunk;
    run(xpad + n * image_pad, n, grp, p0, std::min(g.pixels, p0 + pchunk));
  });
}

}  // namespace tierjit::interp::nn
