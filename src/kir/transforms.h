// Loop transforms on kernel IR: simplify, split, vectorize, unroll, hoist_invariants,
// parallelize. Each is a pure function (IR in, new IR out; the input is never modified and
// unchanged subtrees stay shared) used by the tier-2 lowerings (kir/lower) between building the
// plain loop nest and codegen (docs/codegen.md "Loop transforms"). A transform that cannot apply
// returns a Status and the caller keeps the IR it had: a missing loop or a refusal is
// kUnsupported (the message says why), a bad argument kInvalidArgument. Results pass
// kir::verify() when the input does. New loop variables are named <v>.o, <v>.i, <v>.v, <v>.inv<k>.
#pragma once

#include <cstdint>
#include <string>

#include "kir/kir.h"
#include "support/status.h"

namespace tierjit::kir {

// ---- simplify ----

/// Constant folding and algebraic identities on integer and bool expressions: int arithmetic of
/// constants (wrapping to the dtype's width; no folding of a division by zero or INT_MIN / -1),
/// x + 0, x - 0, x * 1, x * 0 (integers only), x / 1, min/max/compare of constants, constant
/// Select conditions, int-to-int casts of constants, constants moved to the right of + and *,
/// (x + c1) + c2 -> x + (c1 + c2), (x * c1) * c2 -> x * (c1 * c2). Float arithmetic is left as
/// is (folding could change rounding or NaN behaviour). Result has the same type as `e`.
Expr simplify(const Expr& e);
/// simplify() of every expression, then: loops with a constant extent <= 0 are removed, loops
/// with extent 1 become `let var = min`, lets of a constant or a variable are substituted into
/// their body (so exact-shape code gets constant indices), ifs with a constant condition become
/// their branch,
/// nested Blocks are flattened and empty ones dropped (an empty statement is `block({})`).
Stmt simplify(const Stmt& s);
Function simplify(const Function& f);

// ---- split ----

/// How split() handles an extent that is not a multiple of the factor.
enum class TailStrategy : uint8_t {
  kLoop,   ///< a separate tail loop over the remainder: `for (v, min + ext/F*F, ext%F) body`
  kGuard,  ///< ceil(ext/F) outer iterations, the inner body under `if (v.o*F + v.i < ext)`
           ///< (vectorize then refuses the inner loop: the guard is an if on its variable)
};

/// Splits the loop over `loop_var` (the first For binding it, searched pre-order) into
///   for (<v>.o, 0, ext / F) { for (<v>.i, 0, F) { body[v := min + <v>.o * F + <v>.i] } }
/// followed, with kLoop, by the tail loop `for (v, min + (ext / F) * F, ext % F) body` (the
/// original body, unchanged). Bounds are simplified, so constant extents give constant bounds;
/// a tail or main loop of constant extent 0 is dropped. The outer loop keeps the loop's ForKind,
/// the inner and tail loops are serial. Negative extents run nothing, as before.
/// Errors: kInvalidArgument for factor < 1; kUnsupported when no loop binds `loop_var`.
Expected<Stmt> split(const Stmt& s, const std::string& loop_var, int64_t factor,
                     TailStrategy tail = TailStrategy::kLoop);
Expected<Function> split(const Function& f, const std::string& loop_var, int64_t factor,
                         TailStrategy tail = TailStrategy::kLoop);

// ---- vectorize ----

struct VectorizeOptions {
  /// Allow vector loads whose index is not contiguous (strided or computed): gathers. Off, such a
  /// load makes the transform return kUnsupported.
  bool allow_gather = true;
  /// Allow stores with a constant stride other than 1 (scatters).
  bool allow_scatter = true;
};

/// Vectorizes the loop over `loop_var` (the first For binding it) by `lanes` (>= 2):
///   for (<v>.v, 0, ext / L) { let v = min + <v>.v * L; body' }   // v is the first lane
///   for (v, min + (ext / L) * L, ext % L) body                    // scalar tail, unchanged
/// In body' every expression that depends on v becomes an L-lane vector: a Load/Store index
/// affine in v with stride 1 becomes ramp(base, 1, L) (a contiguous vector access), with another
/// constant or loop-invariant stride s ramp(base, s, L) (gather/scatter); a load index affine
/// with stride 0 stays a scalar load that is broadcast; a non-affine index is widened lane-wise
/// (a gather). Loop-invariant operands become Broadcast; Binary/Compare/Select/Cast/Call are
/// widened lane-wise; lets of values that vary become vector lets (affine integer lets stay
/// scalar, holding lane 0). Inner loops are kept (scalar loops inside the vector loop) when their
/// bounds do not depend on v. Constant extents fold; empty loops are dropped.
/// Refused (kUnsupported, message names the reason), so the caller keeps the scalar loop:
///  - no loop binds `loop_var`, or lanes < 2 (kInvalidArgument);
///  - scalar accumulation: a store whose index does not depend on v (same address each
///    iteration), or a store index that is not affine in v with a nonzero constant stride;
///  - a possible loop-carried dependence: a buffer stored in the loop is also accessed at
///    another index, or its index depends on a loop nested inside;
///  - an if whose condition depends on v, an Allocate inside the loop, already-vector nodes,
///    inner loop bounds that depend on v, gathers/scatters when the options forbid them.
/// Float results equal the scalar loop's exactly (the same operations, lane-wise).
Expected<Stmt> vectorize(const Stmt& s, const std::string& loop_var, int lanes,
                         const VectorizeOptions& options = {});
Expected<Function> vectorize(const Function& f, const std::string& loop_var, int lanes,
                             const VectorizeOptions& options = {});

// ---- unroll ----

/// The largest constant extent unroll(..., 0) copies the body for.
inline constexpr int64_t kMaxFullUnroll = 256;

/// factor 0: full unroll of the loop over `loop_var`, whose extent must be a constant (after
/// simplify) of at most kMaxFullUnroll: the body copied once per iteration with the variable
/// replaced by its constant value (each copy simplified). factor F >= 1: split(F) and a full
/// unroll of the inner `<v>.i` loop, so the main loop runs F copies per iteration and the tail
/// loop stays rolled. Errors: kInvalidArgument for factor < 0; kUnsupported when no loop binds
/// `loop_var` or a full unroll has a dynamic or too large extent.
Expected<Stmt> unroll(const Stmt& s, const std::string& loop_var, int64_t factor);
Expected<Function> unroll(const Function& f, const std::string& loop_var, int64_t factor);

// ---- hoist_invariants ----

/// Moves loop-invariant work out of every loop (innermost first): the leading lets of a loop
/// body whose values use no name bound inside the loop and load no buffer the loop stores to,
/// and, in the statements that run every iteration (not under an if or an inner loop), costly
/// invariant subexpressions (loads, calls, broadcasts of non-constants) into new lets named
/// `<v>.inv<k>`. Since hoisted code now runs even when the loop does not, the result is guarded
/// by `if (extent > 0)` unless the extent is a positive constant. Never fails.
Stmt hoist_invariants(const Stmt& s);
Function hoist_invariants(const Function& f);

// ---- parallelize ----

/// Marks the loop over `loop_var` ForKind::kParallel (codegen outlines it to GOMP_parallel, see
/// docs/codegen.md; each thread runs a contiguous chunk of iterations). Refused (kUnsupported):
/// a store whose index does not depend on `loop_var` (an accumulation: a race); a buffer the loop
/// stores to and accesses at several indices (lets resolved) unless they are affine in
/// `loop_var` with one constant stride S and together span fewer than |S| elements per
/// iteration (e.g. an unrolled or vectorized loop); a parallel loop inside. Buffers Allocated
/// inside the loop are per thread and exempt. With a single index per buffer and a symbolic
/// stride (y[r * n + i]) the caller asserts that distinct iterations write distinct elements.
Expected<Stmt> parallelize(const Stmt& s, const std::string& loop_var);
Expected<Function> parallelize(const Function& f, const std::string& loop_var);

}  // namespace tierjit::kir
