// Direct convolution for few channels on the blocked layout (direct_conv.h). Weights are packed
// per group of 16 output channels (two blocks of 8; a last group of 8 is one block) as
// [group][input block][KH][KW][channel in block][16 (or 8)]: a tile's loop over the input
// reads them as one sequential stream. The input is copied per call into a zero-padded image
// ([block][H + pads][W + pads][channels in block]), so no tap needs a bounds check.
#include "interp/kernels/direct_conv.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <tuple>
#include <vector>

#include "interp/kernels/cpu_features.h"
#include "interp/kernels/line_buffer.h"
#include "interp/kernels/parallel_for.h"
#include "interp/kernels/weight_pack_cache.h"

namespace tierjit::interp::nn {
namespace {

std::atomic<bool> g_enabled{true};
std::atomic<uint64_t> g_runs{0};
const bool kHasAvx512 = cpu_has_avx512f();

constexpr int kTile = 6;         // output pixels per tile (x 2 blocks: 12 accumulators)
constexpr int64_t kGroupOc = 16;  // output channels per group
// Tiles per work item when a call is shared over threads (~100 pixels: a few us of work).
constexpr int64_t kTilesPerItem = 16;
// One thread's time per multiply-add (ns) from which a call is split over threads
// (worth_parallel): convnet_small's 16 -> 32 layer, 903K multiply-adds per image, took 20-24 us on
// one core (tierjit_micro_bench conv.direct_conv2_16to32_14_1_t1).
constexpr double kNsPerMac = 0.024;

// The packed weights of one convolution.
struct PackedConv {
  LineBuffer data;
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
using PackCache = WeightPackCache<std::tuple<const float*, int64_t, int64_t, int64_t, int64_t, int64_t>, PackedConv>;

PackCache& pack_cache() {
  static PackCache cache(size_t{64} << 20);
  return cache;
}

// The geometry one call's tiles share.
struct Geo {
  // Offsets (floats) in the padded image of the taps, per (input block, kh, kw) in the packed
  // weights' order: one flat loop (nested loops over nb, KH, KW kept reloading their bounds and
  // recomputing the offset, as much work as the 1x16 layer's 12 multiply-adds per tap).
  const int64_t* tap = nullptr;
  int64_t taps = 0;
  int64_t rstride = 0, bstride = 0;  // padded image: floats per row, per input block
  int64_t OW = 0, pixels = 0;        // output width, OH * OW
  bool clip = false;
  float lo = 0, hi = 0;
};

// T consecutive output pixels (row-major, from p0 = (oh, ow)) x OB blocks of 8 output
// channels: y at the group's first block, pixel p0 (blocks pixels * 8 floats apart); x: the
// padded image; w: the group's packed weights; bias: the group's first channel or null.
template <int T, int OB, int CB>
void conv_tile(const Geo& g, const float* x, const float* w, const float* bias, int64_t p0,
               int64_t oh, int64_t ow, float* y) {
  const float* px[T];
#pragma GCC unroll 6
  for (int t = 0; t < T; ++t) {  // no division: an idiv per pixel cost more than the 1x16 layer's taps
    px[t] = x + oh * g.rstride + ow * CB;
    if (++ow == g.OW) {
      ow = 0;
      ++oh;
    }
  }
  __m256 acc[T][OB];
#pragma GCC unroll 2
  for (int ob = 0; ob < OB; ++ob) {
    const __m256 b0 = bias ? _mm256_loadu_ps(bias + 8 * ob) : _mm256_setzero_ps();
#pragma GCC unroll 6
    for (int t = 0; t < T; ++t) acc[t][ob] = b0;
  }
  const float* wp = w;
  for (int64_t i = 0; i < g.taps; ++i) {
    const int64_t off = g.tap[i];
#pragma GCC unroll 8
    for (int ic = 0; ic < CB; ++ic) {
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
    for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + ob * g.pixels * 8 + (p0 + t) * 8, acc[t][ob]);
}

// Pixels [p0, p1) of one image for one group of OB blocks, kTile at a time.
template <int OB, int CB>
void conv_pixels(const Geo& g, const float* x, const float* w, const float* bias, int64_t p0,
                 int64_t p1, float* y) {
  int64_t p = p0, oh = p0 / g.OW, ow = p0 % g.OW;
  for (; p + kTile <= p1; p += kTile) {
    conv_tile<kTile, OB, CB>(g, x, w, bias, p, oh, ow, y);
    for (ow += kTile; ow >= g.OW;) {  // OW may be below kTile
      ow -= g.OW;
      ++oh;
    }
  }
  switch (p1 - p) {
    case 5: conv_tile<5, OB, CB>(g, x, w, bias, p, oh, ow, y); break;
    case 4: conv_tile<4, OB, CB>(g, x, w, bias, p, oh, ow, y); break;
    case 3: conv_tile<3, OB, CB>(g, x, w, bias, p, oh, ow, y); break;
    case 2: conv_tile<2, OB, CB>(g, x, w, bias, p, oh, ow, y); break;
    case 1: conv_tile<1, OB, CB>(g, x, w, bias, p, oh, ow, y); break;
    default: break;
  }
}

template <int CB>
void conv_range(const Geo& g, int64_t ob_count, const float* x, const float* w, const float* bias,
                int64_t p0, int64_t p1, float* y) {
  if (ob_count == 2) conv_pixels<2, CB>(g, x, w, bias, p0, p1, y);
  else conv_pixels<1, CB>(g, x, w, bias, p0, p1, y);
}

// Image n of x ([nb][H][W][cb] per image) into out as [nb][H + pt + pb][W + pl + pr][cb], zeros
// around.
void pad_image(const float* x, int64_t nb, int64_t H, int64_t W, int64_t cb, int64_t pt,
               int64_t pb, int64_t pl, int64_t pr, float* out) {
  const int64_t Wp = W + pl + pr, Hp = H + pt + pb;
  for (int64_t b = 0; b < nb; ++b)
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

bool direct_conv_supports(const ConvGeometry& g, ActLayout x_layout, ActLayout y_layout,
                          const ConvPostOp& post) {
  if (!direct_conv_enabled() || kHasAvx512 || y_layout != ActLayout::kBlocked8) return false;
  if (g.in_spatial.size() != 2 || g.kernel.size() != 2 || g.out_spatial.size() != 2 ||
      g.pad_begin.size() != 2 || g.pad_end.size() != 2 || g.group != 1)
    return false;
  for (size_t i = 0; i < 2; ++i) {
    if (g.strides.size() > i && g.strides[i] != 1) return false;
    if (g.dilations.size() > i && g.dilations[i] != 1) return false;
    if (g.pad_begin[i] < 0 || g.pad_end[i] < 0 || g.in_spatial[i] < 1 || g.out_spatial[i] < 1)
      return false;
    if (g.out_spatial[i] != g.in_spatial[i] + g.pad_begin[i] + g.pad_end[i] - g.kernel[i] + 1)
      return false;
  }
  if (g.out_channels % 8 != 0 || g.out_channels > kDirectConvMaxOutChannels) return false;
  if (g.in_channels < 1 || g.in_channels > kDirectConvMaxInChannels) return false;
  if (x_layout == ActLayout::kBlocked8 ? g.in_channels % 8 != 0 : x_layout != ActLayout::kPlain)
    return false;
  return !post.sum && (post.kind == ConvPostOp::Kind::kNone || post.kind == ConvPostOp::Kind::kClip);
}

void direct_conv_f32(const ConvGeometry& cg, const float* x, ActLayout x_layout, const float* w,
                     const Tensor* constant_w, const float* bias, float* y, int threads,
                     const ConvPostOp& post) {
  g_runs.fetch_add(1, std::memory_order_relaxed);
  const int64_t N = cg.batch, C = cg.in_channels, O = cg.out_channels;
  if (N <= 0) return;
  const int64_t H = cg.in_spatial[0], W = cg.in_spatial[1], KH = cg.kernel[0], KW = cg.kernel[1];
  const int64_t pt = cg.pad_begin[0], pl = cg.pad_begin[1], pb = cg.pad_end[0], pr = cg.pad_end[1];
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
    thread_local LineBuffer scratch_w;
    scratch_w.resize(packed_floats(O, C, KH, KW));
    pack_weights(w, O, C, KH, KW, cb, scratch_w.data());
    wp = scratch_w.data();
  }
  Geo g;
  const int64_t nb = C / cb;
  g.rstride = (W + pl + pr) * cb;
  g.bstride = (H + pt + pb) * g.rstride;
  std::vector<int64_t> taps;
  taps.reserve(static_cast<size_t>(nb * KH * KW));
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t kh = 0; kh < KH; ++kh)
      for (int64_t kw = 0; kw < KW; ++kw) taps.push_back(b * g.bstride + kh * g.rstride + kw * cb);
  g.tap = taps.data();
  g.taps = static_cast<int64_t>(taps.size());
  g.OW = cg.out_spatial[1];
  g.pixels = cg.out_spatial[0] * g.OW;
  g.clip = post.kind == ConvPostOp::Kind::kClip;
  g.lo = post.alpha;
  g.hi = post.beta;
  const int64_t image_in = C * H * W, image_pad = nb * g.bstride;
  const int64_t groups = (O + kGroupOc - 1) / kGroupOc;
  const int64_t group_w = C * KH * KW * kGroupOc, image_out = O * g.pixels;
  const int64_t macs = N * image_out * C * KH * KW;
  const int team = worth_parallel(threads, macs, kNsPerMac) ? threads : 1;
  // Pixels [p0, p1) of group grp of image n, its padded copy at xi.
  auto run = [&](const float* xi, int64_t n, int64_t grp, int64_t p0, int64_t p1) {
    const int64_t ob_count = std::min<int64_t>(2, (O - grp * kGroupOc) / 8);
    const float* wg = wp + grp * group_w;
    const float* bg = bias ? bias + grp * kGroupOc : nullptr;
    float* yg = y + n * image_out + grp * 2 * g.pixels * 8;
    if (cb == 8) conv_range<8>(g, ob_count, xi, wg, bg, p0, p1, yg);
    else conv_range<1>(g, ob_count, xi, wg, bg, p0, p1, yg);
  };
  if (N >= team) {  // whole images per item, each padded by the thread that runs it
    parallel_for_stealing(team, N, [&](int64_t n) {
      thread_local LineBuffer padded;
      padded.resize(static_cast<size_t>(image_pad));
      pad_image(x + n * image_in, nb, H, W, cb, pt, pb, pl, pr, padded.data());
      for (int64_t grp = 0; grp < groups; ++grp) run(padded.data(), n, grp, 0, g.pixels);
    });
    return;
  }
  // Fewer images than threads: padded first (the caller's buffer; the team reads it), then
  // items of (image, group, kTilesPerItem tiles). (Padding inside a parallel region, or per
  // item, cost more: the team's wake-up after the serial copy is what the items pay.)
  thread_local LineBuffer padded_all;
  padded_all.resize(static_cast<size_t>(N * image_pad));
  for (int64_t n = 0; n < N; ++n)
    pad_image(x + n * image_in, nb, H, W, cb, pt, pb, pl, pr, padded_all.data() + n * image_pad);
  const float* xpad = padded_all.data();  // (the team's own thread_local buffers are others)
  // Pixel chunks of about kTilesPerItem tiles, as even as whole tiles allow.
  const int64_t chunks = (g.pixels + kTile * kTilesPerItem - 1) / (kTile * kTilesPerItem);
  const int64_t chunk = ((g.pixels + chunks - 1) / chunks + kTile - 1) / kTile * kTile;
  parallel_for_stealing(team, N * groups * chunks, [&](int64_t item) {
    const int64_t n = item / (groups * chunks), rest = item % (groups * chunks);
    const int64_t grp = rest / chunks, p0 = (rest % chunks) * chunk;
    run(xpad + n * image_pad, n, grp, p0, std::min(g.pixels, p0 + chunk));
  });
}

}  // namespace tierjit::interp::nn
