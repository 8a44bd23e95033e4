// Pieces shared by the convolution lowerings (lower_conv.cc: geometry,
// epilogue, the generated GEMM of tier-3 candidates; lower_conv_tiles.cc: the
// microkernel paths).
#pragma once

#include <cstdint>
#include <string>

#include "kir/lower/gemm_kernel.h"
#include "kir/lower/lower.h"

namespace tierjit::kir::lowering {

/// A 2-D Conv's sizes, all constants of the code (the batch excepted).
struct ConvGeometry {
  int64_t c = 0, h = 0, w = 0, m = 0, group = 1, kh = 0, kw = 0;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0, oh = 0, ow = 0;
};

/// What the microkernel paths need besides the geometry: buffer names, the
/// batch and the store of one output value (bias and epilogue; row = n * M +
/// output channel, col = output pixel).
struct ConvIo {
  std::string x, w;  ///< "in<i>" of X [N, C, H, W] and W [M, C / group, KH, KW]
  Expr batch;
  gemm::StoreFn store;      ///< row/col in the [N * M, OH * OW] view of the output
  std::string accumulator;  ///< an output buffer with the Conv's shape, or empty
  int lanes = 16;
  int threads = 1;
};

/// True when conv_tiles takes the direct convolution (direct_conv_rows_f32) for `g`: its vectors
/// well filled (stride 1 with an output as wide as the input, or most lanes of each row's
/// vectors), not depthwise, not a 1x1 product on X in place.
bool direct_conv_fits(const ConvGeometry& g);

/// The convolution through the kernel layer's tiles: depthwise (group = C = M)
/// through depthwise_conv_rows_f32, others through conv_pack_panel_f32 +
/// gemm_panel_rows_f32 with the weights as the GEMM's rows. `workspace_floats`
/// receives the floats of workspace it uses. kUnsupported when the shape needs
/// K blocks and the region has no accumulator output.
Expected<Stmt> conv_tiles(const ConvGeometry& g, const ConvIo& io, int64_t* workspace_floats,
                          std::string* note);

}  // namespace tierjit::kir::lowering
