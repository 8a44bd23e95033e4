// Generated GEMM in kernel IR: C[M, N] = A[M, K] * B[K, N] (float32) for lower_matmul.cc. Tier 2
// emits the Goto/BLIS blocking (loops nc -> kc -> mc -> nr -> mr) with A and B packed into the
// workspace and a register-blocked microkernel of explicit vector ops (Ramp vector loads of the B
// panel, Broadcast of packed A elements, Call(kFma) into mr x nr/lanes accumulators that LLVM
// promotes to registers). Edges are handled by packing clamped rows/columns and storing only the
// valid part of a tile. Tier 1 emits a plain i-k-j loop nest with a vectorize hint.
// Source: Goto & van de Geijn, "Anatomy of high-performance matrix multiplication" (TOMS 2008);
// Van Zee & van de Geijn, "BLIS" (TOMS 2015).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "kir/kir.h"
#include "support/status.h"

namespace tierjit::kir::gemm {

/// Tile sizes (elements). mr x nr is the register tile (nr a multiple of the vector lanes), kc the
/// K block (the kc x nr B micro-panel should stay in L1), mc the M block (mc x kc packed A in L2),
/// nc the N block (kc x nc packed B in L2/L3). The knobs of LowerOptions::tuning.
struct Tiles {
  int64_t mr = 6;
  int64_t nr = 32;
  int64_t kc = 256;
  int64_t mc = 144;
  int64_t nc = 1024;
  /// When M is a constant below mr: mr = M and nr widened to up to 8 vectors (off when the
  /// tuning map sets mr or nr).
  bool small_m_shape = true;
};

/// Defaults for `lanes` (16: AVX-512, 8: AVX2) overridden by the "mr", "nr", "kc", "mc", "nc"
/// entries of `tuning`. Errors: kInvalidArgument for an unknown knob or a value out of range
/// (mr in [1, 16], nr a positive multiple of lanes <= 8 * lanes, kc/mc/nc >= 1).
Expected<Tiles> tiles_from_tuning(const std::map<std::string, int64_t>& tuning, int lanes);

/// A strided float32 matrix: element (r, c) is buffer[offset + r * row_stride + c * col_stride].
struct MatrixRef {
  std::string buffer;
  Expr offset;
  Expr row_stride;
  Expr col_stride;
};

/// Final store of C values: `value` (float32, `lanes` lanes: 1 or the vector width) holds
/// C[row, col .. col + lanes) (scalar int64 row and col inside this GEMM); returns the statement
/// that stores it (with the epilogue applied) into every output.
using StoreFn = std::function<Stmt(const Expr& value, const Expr& row, const Expr& col, int lanes)>;

struct GemmSpec {
  Expr m, n, k;  ///< int64; IntImm when the size is a constant of the code
  MatrixRef a;   ///< M x K
  MatrixRef b;   ///< K x N
  /// M x N row-major (row stride n): the destination of partial sums when K spans several kc
  /// blocks, and of the result when `store` is null.
  std::string c;
  Expr c_offset;
  StoreFn store;           ///< null: plain store into c
  std::string workspace;   ///< float32 buffer of at least workspace_floats() elements
  Expr workspace_offset;   ///< in elements
  std::string prefix;      ///< makes loop and buffer names unique inside one Function
  Tiles tiles;
  int lanes = 16;
  int threads = 1;  ///< > 1: the loop over N panels runs in parallel when the work is large
  /// B's columns up to round_up(N, effective nr) may be read (rows padded, e.g. Conv's im2col
  /// buffer): the in-place B path needs no packed edge panel.
  bool b_padded = false;
};

/// Tiles after clamping to the constant sizes of `spec` (e.g. kc = K when K < kc) and rounding
/// mc up to a multiple of mr and nc to a multiple of nr.
Tiles effective_tiles(const GemmSpec& spec);

/// float32 elements of workspace gemm_packed() uses: packed A (mc x kc) and B (kc x nc).
int64_t workspace_floats(const GemmSpec& spec);

/// The blocked, packed GEMM (tier 2). M, N, K may be 0.
Stmt gemm_packed(const GemmSpec& spec);

/// A plain loop nest (tier 1): per row, C row = 0, then for each k a row update whose j loop is
/// marked vectorized; then the store pass. Uses no workspace.
Stmt gemm_loops(const GemmSpec& spec);

/// One line for LoweredRegion::notes, e.g. "gemm mr=6 nr=32 kc=256 mc=144 nc=1024 lanes=16".
std::string describe(const Tiles& t, int lanes);

}  // namespace tierjit::kir::gemm
