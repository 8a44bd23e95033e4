// Convolutions around the kernel layer's tiles (lower_conv_internal.h). Items
// (image, group, 64-pixel panel, block of output channels) or (image, channel,
// block of output rows) run in parallel when the work is large; each thread's
// packed panel lives in its own slice of the workspace (the items are taken in
// `threads` contiguous chunks, one slice per chunk).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "kir/builder.h"
#include "kir/lower/lower_conv_internal.h"
#include "kir/lower/lower_ops.h"
#include "kir/lower/matmul_common.h"
#include "kernels/conv_tiles.h"
#include "kernels/packed_gemm.h"

namespace tierjit::kir::lowering {

namespace {

using kernels::Microkernel;

constexpr int64_t kPanel = 64;            // output pixels per GEMM panel
constexpr int64_t kRowBlock = 24;         // output channels per microkernel call
constexpr int64_t kMaxKc = 512;           // im2col rows per packed panel (a multiple of 256)
constexpr int64_t kDepthwiseTile = 2048;  // floats of one depthwise item's output rows
constexpr int64_t kDirectTile = 16384;    // floats of a direct or flat depthwise item's tile (L2)
// Multiply-adds from which items run on the OpenMP team (tier 0's
// kPrimitiveMinMacs).
constexpr int64_t kParallelMinMacs = int64_t{1} << 16;

// A 1x1 convolution with stride 1 and no padding: a product on the image's [C, H * W] rows in
// place.
bool pointwise_in_place(const ConvGeometry& g) {
  return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0 &&
         g.oh == g.h && g.ow == g.w;
}

Expr cdiv(const Expr& a, const Expr& b) { return div(add(a, sub(b, imm(1))), b); }

// First pixel of panel p: `wide` panels of 64 pixels, then panels of 16.
Expr panel_start(const Expr& p, int64_t wide) {
  if (wide == 0) return mul(p, imm(16));
  return select(lt(p, imm(wide)), mul(p, imm(kPanel)),
                add(imm(wide * kPanel), mul(sub(p, imm(wide)), imm(16))));
}

// The loop over `items` (an int64 expr) with body(item, chunk): serial, or
// `chunks` contiguous ranges of items in parallel (chunk = the slice index a
// body may use for scratch).
Stmt chunked(const std::string& pre, const Expr& items, int chunks, const Expr& macs,
             const std::function<Stmt(const Expr&, const Expr&)>& body) {
  const Expr item = var(pre + "item"), chunk = var(pre + "chunk");
  Stmt serial = for_loop(pre + "item", imm(0), items, body(item, imm(0)));
  if (chunks <= 1) return serial;
  const Expr lo = div(mul(chunk, items), imm(chunks));
  const Expr hi = div(mul(add(chunk, imm(1)), items), imm(chunks));
  Stmt par =
      for_loop(pre + "chunk", imm(0), imm(chunks),
               for_loop(pre + "item", lo, sub(hi, lo), body(item, chunk)), ForKind::kParallel);
  int64_t m = 0;
  if (const_value(macs, &m)) return m >= kParallelMinMacs ? par : serial;
  return if_then_else(compare(CmpOp::kGe, macs, imm(kParallelMinMacs)), par, serial);
}

// Stores rows [0, rows) x columns [0, cols) of `src` (row stride ld, element
// offset base) through io.store at output (row0 + r, col0 + c): vectors of
// io.lanes, then a scalar tail.
Stmt store_rows(const std::string& pre, const ConvIo& io, const std::string& src, const Expr& base,
                int64_t ld, const Expr& rows, const Expr& cols, const Expr& row0,
                const Expr& col0) {
  const int l = io.lanes;
  const Expr r = var(pre + "r"), v = var(pre + "v"), c = var(pre + "c");
  const Expr vec_cols = mul(div(cols, imm(l)), imm(l));
  auto at = [&](const Expr& col) { return add(base, add(mul(r, imm(ld)), col)); };
  Stmt vec = io.store(load(f32(l), src, ramp(at(mul(v, imm(l))), imm(1), l)), add(row0, r),
                      add(col0, mul(v, imm(l))), l);
  Stmt tail = io.store(load(f32(), src, at(c)), add(row0, r), add(col0, c), 1);
  return for_loop(pre + "r", imm(0), rows,
                  block({for_loop(pre + "v", imm(0), div(cols, imm(l)), vec),
                         for_loop(pre + "c", vec_cols, sub(cols, vec_cols), tail)}));
}

// Stores a tile's run of `n` floats from `tile` + `tile0` to output row `plane`,
// pixels pixel0 .. pixel0 + n - 1 (an item's rows back to back, as in Y's plane): whole vectors,
// then with 16 lanes one vector of 8, then single columns (no tail per row: a map narrower than
// a vector paid a scalar epilogue per pixel).
Stmt store_run(const ConvIo& io, const std::string& tile, const std::string& pre,
               const Expr& tile0, const Expr& n, const Expr& plane, const Expr& pixel0) {
  const Expr v = var(pre + "v"), c = var(pre + "c");
  const int l = io.lanes;
  const Expr vec_end = mul(div(n, imm(l)), imm(l));
  Stmt vec = io.store(load(f32(l), tile, ramp(add(tile0, mul(v, imm(l))), imm(1), l)), plane,
                      add(pixel0, mul(v, imm(l))), l);
  auto scalar_tail = [&](const Expr& from) {
    return for_loop(pre + "c", from, sub(n, from),
                    io.store(load(f32(), tile, add(tile0, c)), plane, add(pixel0, c), 1));
  };
  Stmt vectors = for_loop(pre + "v", imm(0), div(n, imm(l)), vec);
  if (l != 16) return block({vectors, scalar_tail(vec_end)});
  Stmt half_vec = io.store(load(f32(8), tile, ramp(add(tile0, vec_end), imm(1), 8)), plane,
                           add(pixel0, vec_end), 8);
  return block({vectors, if_then_else(compare(CmpOp::kGe, sub(n, vec_end), imm(8)),
                                      block({half_vec, scalar_tail(add(vec_end, imm(8)))}),
                                      scalar_tail(vec_end))});
}

// Output maps at most this many columns wide take the channel-block tile
// (depthwise_conv_cblock_f32: one channel per lane) instead of one channel's rows per call.
// Measured with AVX-512 (conv + SiLU, tier 2, one thread): the block wins on 7 x 7 (1152 ch 5x5:
// 267 -> ~130 us), 14 x 14 (672 ch 5x5: 266 -> 245) and 28 x 28 outputs (144 ch 5x5 s2: 302 ->
// 247), and loses 5-15% on 56 x 56 and 112 x 112 stride-1 maps, whose rows fill the vectors.
int64_t channel_block_max_ow(int lanes) { return 2 * lanes; }

// Stride-1 depthwise maps as wide as their input up to this width take the flat tile
// (depthwise_conv_flat_f32: vectors over the pixels back to back). Kernel alone, one thread, AMD
// EPYC Zen 4, AVX-512, against the channel-block / per-row tiles (us): 1152 ch 5x5 on 7 x 7 93 /
// 122, 512 ch 5x5 on 8 x 8 37 / 55, 672 ch 5x5 on 14 x 14 168 / 212, 480 ch 3x3 on 14 x 14 59 /
// 87, 144 ch 3x3 on 56 x 56 238 / 309; on 112 x 112 (7 whole vectors per row) the per-row tile
// is faster, 223 against 242.
constexpr int64_t kDepthwiseFlatMaxOw = 64;
// Floats of one flat item's tile: it stays in L1 between the kernel's stores and the epilogue's
// loads (a 64 KiB tile made a 96-channel 56 x 56 layer 1.3x slower).
constexpr int64_t kDepthwiseFlatTile = 6144;

Expected<Stmt> depthwise(const ConvGeometry& g, const ConvIo& io, std::string* note) {
  const int64_t os = g.oh * g.ow;
  const int64_t rows = std::clamp<int64_t>(kDepthwiseTile / g.ow, 1, g.oh);
  const int64_t blocks = (g.oh + rows - 1) / rows;
  const Expr macs = mul(io.batch, imm(g.c * os * g.kh * g.kw));
  const std::vector<Expr> geometry = {imm(g.h),  imm(g.w),  imm(g.kh), imm(g.kw), imm(g.sh),
                                      imm(g.sw), imm(g.ph), imm(g.pw), imm(g.dh), imm(g.dw),
                                      imm(g.ow)};
  if (kernels::direct_conv_flat(g.sh, g.sw, g.w, g.ow) && g.ow <= kDepthwiseFlatMaxOw) {
    // Items (image, block of nb channels, block of rows): one depthwise_conv_flat_f32 call per
    // item (its tables shared by the block), the tile holding each channel's rows at a pitch of
    // rows * OW plus the kernel's slack.
    const int64_t ld = rows * g.ow + kernels::kDepthwiseFlatSlack;
    const int64_t nb = std::clamp<int64_t>(kDepthwiseFlatTile / ld, 1, g.c);
    const int64_t cblocks = (g.c + nb - 1) / nb;
    const Expr items = mul(io.batch, imm(cblocks * blocks));
    *note = fmt::format(
        "depthwise conv {}x{} through depthwise_conv_flat_f32, {} channels x {} rows per item",
        g.kh, g.kw, nb, rows);
    return chunked("dw_", items, io.threads, macs, [&](const Expr& item, const Expr&) {
      const Expr img = var("dw_img"), c0 = var("dw_c0"), nc = var("dw_nc");
      const Expr oh0 = var("dw_oh0"), nrows = var("dw_rows"), ch = var("dw_ch");
      const Expr plane0 = add(mul(img, imm(g.c)), c0);
      const Expr x_off = mul(plane0, imm(g.h * g.w));
      Stmt kernel = call_kernel(
          Microkernel::kDepthwiseConvFlatF32,
          {{io.x, x_off}, {io.w, mul(c0, imm(g.kh * g.kw))}, {"dw_tile", imm(0)}},
          {nc, imm(g.h), imm(g.w), imm(g.kh), imm(g.kw), imm(g.ph), imm(g.pw), imm(g.dh),
           imm(g.dw), oh0, add(oh0, nrows), imm(ld),
           sub(mul(io.batch, imm(g.c * g.h * g.w)), x_off)});
      Stmt stores = for_loop("dw_ch", imm(0), nc,
                             store_run(io, "dw_tile", "dw_", mul(ch, imm(ld)),
                                       mul(nrows, imm(g.ow)), add(plane0, ch),
                                       mul(oh0, imm(g.ow))));
      Stmt work = allocate("dw_tile", DType::kFloat32, nb * ld, block({kernel, stores}));
      const Expr rest = mod(item, imm(cblocks * blocks));
      return let("dw_img", div(item, imm(cblocks * blocks)),
                 let("dw_c0", mul(div(rest, imm(blocks)), imm(nb)),
                     let("dw_nc", min(imm(nb), sub(imm(g.c), c0)),
                         let("dw_oh0", mul(mod(rest, imm(blocks)), imm(rows)),
                             let("dw_rows", min(imm(rows), sub(imm(g.oh), oh0)), work)))));
    });
  }
  const int64_t cb = kernels::depthwise_channel_block();
  if (g.ow <= channel_block_max_ow(io.lanes) && g.c >= 2) {
    // Items (image, block of cb channels, block of rows); the tile holds each channel's rows at
    // a pitch of rows * OW.
    const int64_t cblocks = (g.c + cb - 1) / cb, ld = rows * g.ow;
    const Expr items = mul(io.batch, imm(cblocks * blocks));
    *note = fmt::format(
        "depthwise conv {}x{} through depthwise_conv_cblock_f32, {} channels x {} rows per item",
        g.kh, g.kw, cb, rows);
    return chunked("dw_", items, io.threads, macs, [&](const Expr& item, const Expr&) {
      const Expr img = var("dw_img"), c0 = var("dw_c0"), nc = var("dw_nc");
      const Expr oh0 = var("dw_oh0"), nrows = var("dw_rows"), ch = var("dw_ch");
      std::vector<Expr> ints = {nc};
      ints.insert(ints.end(), geometry.begin(), geometry.end());
      ints.insert(ints.end(), {oh0, add(oh0, nrows), imm(ld)});
      const Expr plane0 = add(mul(img, imm(g.c)), c0);
      Stmt kernel = call_kernel(Microkernel::kDepthwiseConvCblockF32,
                                {{io.x, mul(plane0, imm(g.h * g.w))},
                                 {io.w, mul(c0, imm(g.kh * g.kw))},
                                 {"dw_tile", imm(0)}},
                                ints);
      Stmt stores = for_loop("dw_ch", imm(0), nc,
                             store_run(io, "dw_tile", "dw_", mul(ch, imm(ld)), mul(nrows, imm(g.ow)),
                                       add(plane0, ch), mul(oh0, imm(g.ow))));
      Stmt work = allocate("dw_tile", DType::kFloat32, cb * ld, block({kernel, stores}));
      const Expr rest = mod(item, imm(cblocks * blocks));
      return let("dw_img", div(item, imm(cblocks * blocks)),
                 let("dw_c0", mul(div(rest, imm(blocks)), imm(cb)),
                     let("dw_nc", min(imm(cb), sub(imm(g.c), c0)),
                         let("dw_oh0", mul(mod(rest, imm(blocks)), imm(rows)),
                             let("dw_rows", min(imm(rows), sub(imm(g.oh), oh0)), work)))));
    });
  }
  const Expr items = mul(io.batch, imm(g.c * blocks));
  *note = fmt::format("depthwise conv {}x{} through depthwise_conv_rows_f32, {} rows per item",
                      g.kh, g.kw, rows);
  return chunked("dw_", items, io.threads, macs, [&](const Expr& item, const Expr&) {
    const Expr plane = var("dw_plane"), oh0 = var("dw_oh0"), nrows = var("dw_rows");
    std::vector<Expr> ints = geometry;
    ints.insert(ints.end(), {oh0, add(oh0, nrows), imm(g.ow),
                             // floats readable from the plane: to the tensor's end
                             mul(sub(mul(io.batch, imm(g.c)), plane), imm(g.h * g.w))});
    Stmt kernel = call_kernel(Microkernel::kDepthwiseConvRowsF32,
                              {{io.x, mul(plane, imm(g.h * g.w))},
                               {io.w, mul(mod(plane, imm(g.c)), imm(g.kh * g.kw))},
                               {"dw_tile", imm(0)}},
                              ints);
    Stmt stores = store_run(io, "dw_tile", "dw_", imm(0), mul(nrows, imm(g.ow)), plane,
                            mul(oh0, imm(g.ow)));
    Stmt work = allocate("dw_tile", DType::kFloat32, rows * g.ow + kernels::kDepthwiseRowSlack,
                         block({kernel, stores}));
    return let("dw_plane", div(item, imm(blocks)),
               let("dw_oh0", mul(mod(item, imm(blocks)), imm(rows)),
                   let("dw_rows", min(imm(rows), sub(imm(g.oh), oh0)), work)));
  });
}

// The direct convolution (direct_conv_rows_f32) is chosen when its vectors are well filled: always
// with stride 1 and an output as wide as the input (vectors over the pixels back to back);
// otherwise at least this share of the lanes of each output row's vectors must hold output
// columns (14 of 16 on a 14 x 14 map; a 7 x 7 map, 7 of 16, takes the im2col panels).
constexpr double kDirectMinLaneUse = 0.75;
constexpr int64_t kDirectTileVectors = 4;  // vectors of output columns per register tile

// Vectors of direct_conv_rows_f32 per output row (flat: a share of one).
double direct_vectors_per_row(const ConvGeometry& g) {
  const int64_t l = kernels::direct_conv_lanes();
  return kernels::direct_conv_flat(g.sh, g.sw, g.w, g.ow)
             ? static_cast<double>(g.ow) / static_cast<double>(l)
             : static_cast<double>((g.ow + l - 1) / l);
}

// The parts the output channels of a direct item are split into: `fit` (the tile's budget), more
// when the other items are too few to give every thread two (each part packs the rows again), at
// most `most`.
Expr direct_parts(int chunks, const Expr& base_items, int64_t fit, int64_t most) {
  if (chunks <= 1) return imm(fit);
  return min(imm(most), max(imm(fit), cdiv(imm(2 * chunks), max(base_items, imm(1)))));
}

// Binds the parts of a direct item (image, group, block of rows, part of the output channels)
// around `body`: <pre>n, <pre>g, <pre>blk and the part's channels [<pre>j0, <pre>j1) of the
// group's mg.
Stmt bind_direct_item(const std::string& pre, const Expr& item, const Expr& parts, int64_t group,
                      int64_t blocks, int64_t mg, Stmt body) {
  const Expr unit = var(pre + "unit"), part = var(pre + "part");
  const Expr rest = mod(unit, imm(group * blocks));
  return let(
      pre + "unit", div(item, parts),
      let(pre + "part", mod(item, parts),
          let(pre + "n", div(unit, imm(group * blocks)),
              let(pre + "g", div(rest, imm(blocks)),
                  let(pre + "blk", mod(rest, imm(blocks)),
                      let(pre + "j0", div(mul(part, imm(mg)), parts),
                          let(pre + "j1", div(mul(add(part, imm(1)), imm(mg)), parts),
                              std::move(body))))))));
}

// direct_conv_rows_f32 for output rows [oh0, oh1) of the group's channels [j0, j1) of image img
// into `tile` (row pitch ld).
Stmt direct_kernel(const ConvGeometry& g, const ConvIo& io, const std::string& tile, const Expr& img,
                   const Expr& grp, const Expr& j0, const Expr& j1, const Expr& oh0,
                   const Expr& oh1, int64_t ld) {
  const int64_t cg = g.c / g.group, mg = g.m / g.group, kg = cg * g.kh * g.kw;
  const Expr x_off = add(mul(img, imm(g.c * g.h * g.w)), mul(grp, imm(cg * g.h * g.w)));
  const Expr x_total = mul(io.batch, imm(g.c * g.h * g.w));
  return call_kernel(
      Microkernel::kDirectConvRowsF32,
      {{io.x, x_off}, {io.w, mul(add(mul(grp, imm(mg)), j0), imm(kg))}, {tile, imm(0)}},
      {imm(cg), imm(g.h), imm(g.w), imm(g.kh), imm(g.kw), imm(g.sh), imm(g.sw), imm(g.ph),
       imm(g.pw), imm(g.dh), imm(g.dw), imm(g.ow), oh0, oh1, sub(j1, j0), imm(ld),
       sub(x_total, x_off)});
}


// Items (image, group, block of output rows, part of the output channels); each computes its
// channels' rows into a tile, then stores them through the epilogue channel by channel.
Expected<Stmt> direct(const ConvGeometry& g, const ConvIo& io, std::string* note) {
  const int64_t cg = g.c / g.group, mg = g.m / g.group, kg = cg * g.kh * g.kw;
  const auto min_rows = static_cast<int64_t>(std::ceil(kDirectTileVectors / direct_vectors_per_row(g)));
  const int64_t rows = std::clamp<int64_t>(std::max(min_rows, kDirectTile / (mg * g.ow)), 1, g.oh);
  const int64_t blocks = (g.oh + rows - 1) / rows;
  const int64_t ld = rows * g.ow + kernels::kDirectConvSlack;
  const int chunks = std::max(1, io.threads);
  const Expr base_items = mul(io.batch, imm(g.group * blocks));
  const Expr parts = direct_parts(chunks, base_items, 1, std::max<int64_t>(1, mg / 8));
  const Expr items = mul(base_items, parts);
  const Expr macs = mul(io.batch, imm(g.m * g.oh * g.ow * kg));
  *note = fmt::format(
      "conv {}x{} through direct_conv_rows_f32: {} output rows x {} channels per item, K = {}",
      g.kh, g.kw, rows, mg, kg);
  return chunked("cd_", items, chunks, macs, [&](const Expr& item, const Expr&) {
    const Expr img = var("cd_n"), grp = var("cd_g"), oh0 = var("cd_oh0"), nrows = var("cd_rows"),
               j0 = var("cd_j0"), j1 = var("cd_j1"), ch = var("cd_ch");
    const Expr row0 = add(add(mul(img, imm(g.m)), mul(grp, imm(mg))), j0);  // n * M + g * Mg + j0
    Stmt kernel = direct_kernel(g, io, "cd_tile", img, grp, j0, j1, oh0, add(oh0, nrows), ld);
    Stmt stores = for_loop("cd_ch", imm(0), sub(j1, j0),
                           store_run(io, "cd_tile", "cd_", mul(ch, imm(ld)), mul(nrows, imm(g.ow)),
                                     add(row0, ch), mul(oh0, imm(g.ow))));
    // Channels [j0, j1) of the part; the tile holds the most a part can have (all mg).
    Stmt work = allocate("cd_tile", DType::kFloat32, mg * ld, block({kernel, stores}));
    return bind_direct_item(
        "cd_", item, parts, g.group, blocks, mg,
        let("cd_oh0", mul(var("cd_blk"), imm(rows)),
            let("cd_rows", min(imm(rows), sub(imm(g.oh), oh0)), work)));
  });
}

}  // namespace

// Items (image, group, block of pooled rows, part of the output channels): the kernel writes the
// raw conv rows to the tile, the pool reads them through the bias and epilogue. A block of pooled
// rows reads conv rows that overlap the next block's when the window is taller than its stride: those
// few rows are computed twice.
Expected<Stmt> direct_pooled(const ConvGeometry& g, const ConvIo& io, std::string* note) {
  const PoolGeometry& p = *io.pool;
  const int64_t mg = g.m / g.group, cg = g.c / g.group, kg = cg * g.kh * g.kw;
  const double nvr = direct_vectors_per_row(g);
  // Conv rows of a block of q pooled rows: at most (q - 1) * sh + kh.
  auto conv_rows = [&](int64_t q) { return std::min(g.oh, (q - 1) * p.sh + p.kh); };
  const bool overlapping = p.kh > p.sh || p.kw > p.sw;  // a conv value in several windows
  // Overlapping windows recompute kh - sh conv rows per block: blocks of at least 8 (kh - sh) / sh
  // pooled rows keep that under 1/8 of the work (a ResNet stem's 3x3/2 pool in blocks of one
  // pooled row made its conv 1.5x the work: 0.7x of tier 0).
  int64_t prows = overlapping ? std::clamp<int64_t>((8 * (p.kh - p.sh) + p.sh - 1) / p.sh, 1, p.oh) : 1;
  while (prows < p.oh && (conv_rows(prows) * nvr < kDirectTileVectors ||
                          mg * conv_rows(prows + 1) * g.ow <= kDirectTile))
    ++prows;
  const int64_t blocks = (p.oh + prows - 1) / prows;
  const int64_t ld = conv_rows(prows) * g.ow + std::max(kernels::kDirectConvSlack, kPoolSlack);
  // Output channels in parts whose tile fits kDirectTile (at least 6 channels, the kernel's
  // register tile, per part), more parts when the items are too few to give every thread two.
  const int64_t fit_parts =
      std::clamp<int64_t>((mg * ld + kDirectTile - 1) / kDirectTile, 1, std::max<int64_t>(1, mg / 6));
  const int chunks = std::max(1, io.threads);
  const Expr base_items = mul(io.batch, imm(g.group * blocks));
  const Expr parts = direct_parts(chunks, base_items, fit_parts, std::max<int64_t>(fit_parts, mg / 8));
  const int64_t part_max = (mg + fit_parts - 1) / fit_parts;  // channels of the largest part
  const Expr items = mul(base_items, parts);
  const Expr macs = mul(io.batch, imm(g.m * g.oh * g.ow * kg));
  *note = fmt::format(
      "conv {}x{} through direct_conv_rows_f32 with its {} {}x{}/{} pooled from the tile "
      "(epilogue {}): {} pooled rows x {} channels per item, K = {}",
      g.kh, g.kw, p.max ? "MaxPool" : "AveragePool", p.kh, p.kw, p.sh,
      overlapping ? "on the tile first" : "on the taps", prows, part_max, kg);
  return chunked("cp_", items, chunks, macs, [&](const Expr& item, const Expr&) {
    const Expr img = var("cp_n"), grp = var("cp_g"), pr0 = var("cp_pr0"), pr1 = var("cp_pr1"),
               r0 = var("cp_r0"), r1 = var("cp_r1"), j0 = var("cp_j0"), j1 = var("cp_j1"),
               ch = var("cp_ch");
    const Expr row0 = add(add(mul(img, imm(g.m)), mul(grp, imm(mg))), j0);  // n * M + g * Mg + j0
    Stmt kernel = direct_kernel(g, io, "cp_tile", img, grp, j0, j1, r0, r1, ld);
    const Expr t0 = mul(ch, imm(ld));
    PoolRowsIo pio;
    pio.src = "cp_tile";
    pio.dst = "out0";
    pio.src_base = t0;
    pio.src_row0 = r0;
    pio.dst_base = mul(add(row0, ch), imm(p.oh * p.ow));
    pio.lanes = io.lanes;
    pio.prefix = "cp_";
    // Bias and epilogue: applied to each tap as the pool loads it (conv output row r, column c)
    // when every conv value is in one window; else once over the tile in place first.
    Stmt epilogue = block({});
    if (overlapping) {
      const Expr n = mul(sub(r1, r0), imm(g.ow));
      auto in_place = [&](const Expr& at, int lanes) {
        LetScope lets("cp_e");
        const Expr idx = add(t0, at), vidx = lanes > 1 ? ramp(idx, imm(1), lanes) : idx;
        const Expr y = io.pool_input(load(lanes > 1 ? f32(lanes) : f32(), "cp_tile", vidx),
                                     add(row0, ch), add(mul(r0, imm(g.ow)), at), lanes, &lets);
        return lets.wrap(store("cp_tile", vidx, y));
      };
      const int lv = io.lanes;
      const Expr vec_end = mul(div(n, imm(lv)), imm(lv));
      epilogue = block({for_loop("cp_v", imm(0), div(n, imm(lv)), in_place(mul(var("cp_v"), imm(lv)), lv)),
                        for_loop("cp_i", vec_end, sub(n, vec_end), in_place(var("cp_i"), 1))});
    } else {
      pio.tap = [&io, row0, ch, ow = g.ow](const Expr& raw, const Expr& r, const Expr& c, int lanes,
                                           LetScope* lets) {
        return io.pool_input(raw, add(row0, ch), add(mul(r, imm(ow)), c), lanes, lets);
      };
    }
    Stmt per_channel =
        for_loop("cp_ch", imm(0), sub(j1, j0), block({epilogue, pool_rows(p, pio, pr0, pr1)}));
    Stmt work = allocate("cp_tile", DType::kFloat32, part_max * ld, block({kernel, per_channel}));
    const auto [src0, src1] = pool_source_rows(p, pr0, pr1);
    return bind_direct_item(
        "cp_", item, parts, g.group, blocks, mg,
        let("cp_pr0", mul(var("cp_blk"), imm(prows)),
            let("cp_pr1", min(imm(p.oh), add(pr0, imm(prows))),
                let("cp_r0", src0, let("cp_r1", src1, work)))));
  });
}

bool direct_conv_fits(const ConvGeometry& g) {
  const int64_t cg = g.c / g.group, mg = g.m / g.group;
  if (cg == 1 && mg == 1) return false;  // depthwise
  if (pointwise_in_place(g)) return false;
  if (kernels::direct_conv_flat(g.sh, g.sw, g.w, g.ow)) return true;
  const int64_t l = kernels::direct_conv_lanes();
  const int64_t nvr = (g.ow + l - 1) / l;
  return static_cast<double>(g.ow) >= kDirectMinLaneUse * static_cast<double>(nvr * l);
}

namespace {

// Lane use of the pixel panels of a 1x1 product on X in place (conv_tiles below): 64-pixel
// panels, the last few pixels (up to 32) in panels of 16.
double pixel_panel_lane_use(int64_t os) {
  const int64_t rest = os % kPanel;
  const int64_t wide = os / kPanel + (rest > 32 ? 1 : 0);
  const int64_t narrow = rest > 32 ? 0 : (rest + 15) / 16;
  return static_cast<double>(os) / static_cast<double>(wide * kPanel + narrow * 16);
}

// Pixels per item of the panel-columns tile: its tile (panel width x this) stays in L1.
constexpr int64_t kColsTilePixels = 64;

// A 1x1 product with vectors over the output channels: items (image, panel of W's packed
// transpose, part of the pixels), each one gemm_panel_cols_f32 call into an L1 tile [channel]
// [pixel] and the epilogue from it (store_run per channel). io.w_panels holds W as
// kGemmPanelsTransposed.
Stmt pointwise_cols(const ConvGeometry& g, const ConvIo& io, std::string* note) {
  const int64_t os = g.oh * g.ow, k = g.c;
  const int64_t width = kernels::gemm_panel_width(g.m), panels = (g.m + width - 1) / width;
  const int chunks = std::max(1, io.threads);
  const Expr base_items = mul(io.batch, imm(panels));
  // At least enough parts to keep the tile in L1; more when the other items are too few to
  // give every thread two (a 7 x 7 map at batch 1 with 320 channels: 5 panels).
  const int64_t min_parts = (os + kColsTilePixels - 1) / kColsTilePixels;
  const Expr parts =
      chunks <= 1 ? imm(min_parts)
                  : max(imm(min_parts), min(imm(std::max<int64_t>(1, os / 8)),
                                            cdiv(imm(2 * chunks), max(base_items, imm(1)))));
  const Expr items = mul(base_items, parts);
  const Expr macs = mul(io.batch, imm(g.m * os * k));
  *note = fmt::format(
      "conv 1x1 through gemm_panel_cols_f32 (vectors over the {} output channels, W packed "
      "transposed into panels of {}): {} pixels",
      g.m, width, os);
  return chunked("pc_", items, chunks, macs, [&](const Expr& item, const Expr&) {
    const Expr img = var("pc_n"), pi = var("pc_p"), part = var("pc_part"), px0 = var("pc_px0"),
               npix = var("pc_npix"), c0 = var("pc_c0"), nc = var("pc_nc"), ch = var("pc_ch"),
               unit = var("pc_unit");
    Stmt kernel = call_kernel(Microkernel::kGemmPanelColsF32,
                              {{io.x, add(mul(img, imm(g.c * os)), px0)},
                               {io.w_panels, mul(pi, imm(k * width))},
                               {"pc_tile", imm(0)}},
                              {npix, imm(k), imm(os), imm(width), nc, imm(kColsTilePixels)});
    Stmt stores = for_loop("pc_ch", imm(0), nc,
                           store_run(io, "pc_tile", "pc_", mul(ch, imm(kColsTilePixels)), npix,
                                     add(mul(img, imm(g.m)), add(c0, ch)), px0));
    Stmt work = allocate("pc_tile", DType::kFloat32, width * kColsTilePixels, block({kernel, stores}));
    const Expr first = div(mul(part, imm(os)), parts);
    return let("pc_unit", div(item, parts),
               let("pc_part", mod(item, parts),
                   let("pc_n", div(unit, imm(panels)),
                       let("pc_p", mod(unit, imm(panels)),
                           let("pc_c0", mul(pi, imm(width)),
                               let("pc_nc", min(imm(width), sub(imm(g.m), c0)),
                                   let("pc_px0", first,
                                       let("pc_npix",
                                           sub(div(mul(add(part, imm(1)), imm(os)), parts), px0),
                                           work))))))));
  });
}

}  // namespace

bool pointwise_by_columns(const ConvGeometry& g) {
  return pointwise_in_place(g) && g.group == 1 && pixel_panel_lane_use(g.oh * g.ow) < 0.9;
}

Expected<Stmt> conv_tiles(const ConvGeometry& g, const ConvIo& io, int64_t* workspace_floats,
                          std::string* note) {
  *workspace_floats = 0;
  const int64_t cg = g.c / g.group, mg = g.m / g.group;
  if (cg == 1 && mg == 1) return depthwise(g, io, note);
  const int64_t os = g.oh * g.ow, kg = cg * g.kh * g.kw;
  if (direct_conv_fits(g)) return direct(g, io, note);
  if (!io.w_panels.empty()) return pointwise_cols(g, io, note);  // pointwise_by_columns(g)
  // A 1x1 convolution with stride 1 and no padding multiplies the image's [C, H * W] rows in
  // place (gemm_rows_in_place_f32): nothing to pack, K in one block.
  const bool in_place = pointwise_in_place(g);
  const int64_t kc = in_place ? kg : std::min(kg, kMaxKc), kblocks = (kg + kc - 1) / kc;
  // Panels of 64 pixels, the last few pixels (up to 32) in panels of 16: a
  // 64-wide panel costs its full width whatever it holds (14 x 14 = 3 x 64 + 4:
  // 77% of the work useful, 94% so).
  const int64_t rest = os % kPanel;
  const int64_t wide = os / kPanel + (rest > 32 ? 1 : 0);
  const int64_t narrow = rest > 32 ? 0 : (rest + 15) / 16;
  const int64_t panels = wide + narrow, row_blocks = (mg + kRowBlock - 1) / kRowBlock;
  if (kblocks > 1 && io.accumulator.empty())
    return unsupported(
        "conv: K = {} needs K blocks and the region has no "
        "output of the Conv's shape",
        kg);
  const int chunks = std::max(1, io.threads);
  // One packed panel per chunk, with the 16 floats of room conv_pack_panel_f32
  // may write past it.
  const int64_t slice = in_place ? 0 : kc * kPanel + 16;
  *workspace_floats = static_cast<int64_t>(chunks) * slice;
  // Items (image, group, panel, channel split): the output channels are split
  // `split` ways when the other items are too few to give every thread several
  // (a 7 x 7 map at batch 1).
  const Expr per_image = imm(g.group * panels);
  const Expr base_items = mul(io.batch, per_image);
  // (Each part packs the panel again: only worth it when threads would
  // otherwise idle.)
  const Expr split = chunks <= 1 ? imm(1)
                                 : min(imm(row_blocks),
                                       max(imm(1), cdiv(imm(2 * chunks), max(base_items, imm(1)))));
  const Expr items = mul(base_items, split);
  const Expr macs = mul(io.batch, imm(g.m * os * kg));
  Stmt out = chunked("cv_", items, chunks, macs, [&](const Expr& item, const Expr& chunk) {
    const Expr unit = var("cv_unit"), part = var("cv_part"), img = var("cv_n"), grp = var("cv_g"),
               px0 = var("cv_px0"), npix = var("cv_npix"), width = var("cv_width"),
               b0 = var("cv_b0"), b1 = var("cv_b1"), blk = var("cv_blk"), ob = var("cv_ob"),
               mb = var("cv_mb"), k0 = var("cv_k0"), kcur = var("cv_kc"), kb = var("cv_kb");
    const Expr ws_off = mul(chunk, imm(slice));
    const Expr x_off = add(mul(img, imm(g.c * g.h * g.w)), mul(grp, imm(cg * g.h * g.w)));
    const Expr row_base = add(mul(img, imm(g.m)), mul(grp, imm(mg)));  // n * M + g * Mg
    auto pack = [&](const Expr& kfirst, const Expr& kcount) {
      return call_kernel(
          Microkernel::kConvPackPanelF32, {{io.x, x_off}, {"workspace", ws_off}},
          {imm(cg), imm(g.h), imm(g.w), imm(g.kh), imm(g.kw), imm(g.sh), imm(g.sw), imm(g.ph),
           imm(g.pw), imm(g.dh), imm(g.dw), imm(g.ow), px0, npix, kfirst, kcount, width});
    };
    auto w_off = [&](const Expr& kfirst) {
      return add(mul(add(mul(grp, imm(mg)), ob), imm(kg)), kfirst);
    };
    Stmt work;
    if (kblocks == 1) {
      Stmt product =
          in_place
              ? call_kernel(Microkernel::kGemmRowsInPlaceF32,
                            {{io.w, w_off(imm(0))}, {io.x, add(x_off, px0)}, {"cv_tile", imm(0)}},
                            {mb, imm(kg), imm(kg), imm(os), width, npix, imm(kPanel), imm(0)})
              : call_kernel(Microkernel::kGemmPanelRowsF32,
                            {{io.w, w_off(imm(0))}, {"workspace", ws_off}, {"cv_tile", imm(0)}},
                            {mb, imm(kg), imm(kg), width, npix, imm(kPanel), imm(0)});
      Stmt per_block = allocate("cv_tile", DType::kFloat32, kRowBlock * kPanel,
                                block({product, store_rows("cv_", io, "cv_tile", imm(0), kPanel, mb,
                                                           npix, add(row_base, ob), px0)}));
      work = block({in_place ? block({}) : pack(imm(0), imm(kg)),
                    for_loop("cv_blk", b0, sub(b1, b0),
                             let("cv_ob", mul(blk, imm(kRowBlock)),
                                 let("cv_mb", min(imm(kRowBlock), sub(imm(mg), ob)), per_block)))});
    } else {
      // Partial sums in the accumulator output (rows n * M + channel, OH *
      // OW pixels), then the epilogue over the same rows while they are in
      // cache.
      const Expr y_off = add(mul(add(row_base, ob), imm(os)), px0);
      Stmt kloop = for_loop(
          "cv_kb", imm(0), imm(kblocks),
          let("cv_k0", mul(kb, imm(kc)),
              let("cv_kc", min(imm(kc), sub(imm(kg), k0)),
                  block({pack(k0, kcur),
                         for_loop("cv_blk", b0, sub(b1, b0),
                                  let("cv_ob", mul(blk, imm(kRowBlock)),
                                      let("cv_mb", min(imm(kRowBlock), sub(imm(mg), ob)),
                                          call_kernel(Microkernel::kGemmPanelRowsF32,
                                                      {{io.w, w_off(k0)},
                                                       {"workspace", ws_off},
                                                       {io.accumulator, y_off}},
                                                      {mb, kcur, imm(kg), width, npix, imm(os),
                                                       select(compare(CmpOp::kGt, kb, imm(0)),
                                                              imm(1), imm(0))}))))}))));
      const Expr rows0 = mul(b0, imm(kRowBlock));
      const Expr nrows = sub(min(imm(mg), mul(b1, imm(kRowBlock))), rows0);
      work = block({kloop, store_rows("cv_", io, io.accumulator,
                                      add(mul(add(row_base, rows0), imm(os)), px0), os, nrows, npix,
                                      add(row_base, rows0), px0)});
    }
    return let(
        "cv_unit", div(item, split),
        let("cv_part", mod(item, split),
            let("cv_n", div(unit, per_image),
                let("cv_g", div(mod(unit, per_image), imm(panels)),
                    let("cv_p", mod(unit, imm(panels)),
                        let("cv_px0", panel_start(var("cv_p"), wide),
                            let("cv_width",
                                select(lt(var("cv_p"), imm(wide)), imm(kPanel), imm(16)),
                                let("cv_npix", min(width, sub(imm(os), px0)),
                                    let("cv_b0", div(mul(part, imm(row_blocks)), split),
                                        let("cv_b1",
                                            div(mul(add(part, imm(1)), imm(row_blocks)), split),
                                            work))))))))));
  });
  *note = fmt::format(
      "conv {}x{} through conv_pack_panel_f32 + "
      "gemm_panel_rows_f32: panels of {} pixels, {} "
      "channels per call, K = {} in {} block(s){}",
      g.kh, g.kw, kPanel, kRowBlock, kg, kblocks,
      kblocks > 1 ? ", partial sums in the output" : ", epilogue on the L1 tile");
  return out;
}

}  // namespace tierjit::kir::lowering
