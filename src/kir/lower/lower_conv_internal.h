// Pieces shared by the convolution lowerings (lower_conv.cc: geometry,
// epilogue, the generated GEMM of tier-3 candidates; lower_conv_tiles.cc: the
// microkernel paths).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "kir/lower/gemm_kernel.h"
#include "kir/lower/lower.h"

namespace tierjit::kir::lowering {

class LetScope;  // lower_ops.h

/// A 2-D Conv's sizes, all constants of the code (the batch excepted).
struct ConvGeometry {
  int64_t c = 0, h = 0, w = 0, m = 0, group = 1, kh = 0, kw = 0;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0, oh = 0, ow = 0;
};

/// A pool fused after the Conv (Region::pool): window, strides and pads over the conv's output
/// map (in_h x in_w), and the pooled map (oh x ow). ONNX MaxPool-12 / AveragePool-11.
struct PoolGeometry {
  bool max = true;  ///< MaxPool; else AveragePool
  bool count_include_pad = false;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, pt = 0, pl = 0, pb = 0, pr = 0;
  int64_t in_h = 0, in_w = 0, oh = 0, ow = 0;
};

/// The pool's geometry over a conv output map of in_h x in_w. Errors: kUnsupported (naming the
/// node) for what rule 4b of partition.h does not fuse, a window wholly in the padding, or a
/// window larger than the padded map.
Expected<PoolGeometry> pool_geometry(const ir::Node& pool, int64_t in_h, int64_t in_w);

/// Where pool_rows reads and writes: one channel's conv rows from src_row0 on at src[src_base]
/// (row pitch in_w), pooled rows written at dst[dst_base + row * ow + col].
struct PoolRowsIo {
  std::string src, dst;
  Expr src_base, src_row0, dst_base;
  int lanes = 16;
  std::string prefix;  ///< makes loop names unique in the function
  /// When set, each tap's loaded value `raw` (lanes contiguous columns from conv output row r,
  /// column c of the map) goes through it first: the conv's bias and epilogue, bound in `lets`.
  std::function<Expr(const Expr& raw, const Expr& r, const Expr& c, int lanes, LetScope* lets)> tap;
};

/// Floats pool_rows may read past the last conv row it pools (strided vectors load whole spans).
inline constexpr int64_t kPoolSlack = 16;

/// Pooled rows [pr0, pr1) of one channel; src must hold conv rows pool_source_rows(p, pr0, pr1)
/// and kPoolSlack floats of room after them. Strides above kPoolSlack + 1 are not taken.
Stmt pool_rows(const PoolGeometry& p, const PoolRowsIo& io, const Expr& pr0, const Expr& pr1);

/// The conv rows [r0, r1) that pooled rows [pr0, pr1) read.
std::pair<Expr, Expr> pool_source_rows(const PoolGeometry& p, const Expr& pr0, const Expr& pr1);

/// What the microkernel paths need besides the geometry: buffer names, the
/// batch and the store of one output value (bias and epilogue; row = n * M +
/// output channel, col = output pixel).
struct ConvIo {
  std::string x, w;  ///< "in<i>" of X [N, C, H, W] and W [M, C / group, KH, KW]
  Expr batch;
  gemm::StoreFn store;      ///< row/col in the [N * M, OH * OW] view of the output
  std::string accumulator;  ///< an output buffer with the Conv's shape, or empty
  /// "in<i>" of W packed as kGemmPanelsTransposed, set only where pointwise_by_columns(g): the
  /// 1x1 product then takes the panel-columns tile. Empty otherwise.
  std::string w_panels;
  int lanes = 16;
  int threads = 1;
  /// With a fused pool: the pool, and the pool's input (bias and epilogue applied to the conv's
  /// value v at conv output row `row` (n * M + channel), pixel col .. col + lanes).
  const PoolGeometry* pool = nullptr;
  std::function<Expr(const Expr& v, const Expr& row, const Expr& col, int lanes, LetScope* lets)>
      pool_input;
};

/// True when conv_tiles takes the direct convolution (direct_conv_rows_f32) for `g`: its vectors
/// well filled (stride 1 with an output as wide as the input, or most lanes of each row's
/// vectors), not depthwise, not a 1x1 product on X in place.
bool direct_conv_fits(const ConvGeometry& g);

/// True when a 1x1 stride-1 convolution of one group should run vectors over its output
/// channels (gemm_panel_cols_f32, W packed transposed) instead of over its pixels: the pixel
/// panels would leave over 10% of the lanes idle (49 pixels on a 7 x 7 map fill 49 of 64).
bool pointwise_by_columns(const ConvGeometry& g);

/// The direct convolution with its pool (io.pool): items of pooled rows x channels, each
/// computing the conv rows its pooled rows read into a tile, the epilogue in place, then the pool
/// into the output. Caller checked direct_conv_fits(g).
Expected<Stmt> direct_pooled(const ConvGeometry& g, const ConvIo& io, std::string* note);

/// The convolution through the kernel layer's tiles: depthwise (group = C = M)
/// through depthwise_conv_rows_f32, others through conv_pack_panel_f32 +
/// gemm_panel_rows_f32 with the weights as the GEMM's rows. `workspace_floats`
/// receives the floats of workspace it uses. kUnsupported when the shape needs
/// K blocks and the region has no accumulator output.
Expected<Stmt> conv_tiles(const ConvGeometry& g, const ConvIo& io, int64_t* workspace_floats,
                          std::string* note);

}  // namespace tierjit::kir::lowering
