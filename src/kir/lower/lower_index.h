// Index helpers shared by the lowerings: the kernel ABI's names (lower.h: buffers "in<i>",
// "out<j>", "workspace"; dims "in<i>_d<k>", "out<j>_d<k>"), each tensor's dims as constants or
// run-time Vars, and numpy broadcasting of region inputs to an output's multi-index — with
// stride 0 on broadcast axes, `dim == 1 ? 0 : stride` where only the run time knows whether an
// input dim is 1 (generic level), and adjacent axes collapsed where every input walks them the
// same way.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kir/lower/lower.h"

namespace tierjit::kir::lowering {

/// "in<i>_d<k>" / "out<j>_d<k>": the Function::dims names of the ABI.
std::string input_dim_name(size_t i, size_t k);
std::string output_dim_name(size_t j, size_t k);
/// "in<i>" / "out<j>": the buffer names of the ABI.
std::string input_buffer_name(size_t i);
std::string output_buffer_name(size_t j);

/// A Function with the ABI's buffers (in<i> with the input specs' dtypes, out<j>, then
/// "workspace" of uint8 when `workspace`) and every dim name, in order; body unset. `name` is
/// sanitized to [A-Za-z0-9_].
Function abi_function(const std::string& name, const LowerOptions& options, bool workspace = false);

/// One dim of a region tensor as the code sees it.
struct DimInfo {
  Expr expr;               ///< IntImm (a constant of the code) or the int64 dim Var of the ABI
  int64_t value = -1;      ///< the constant, or -1 when read at run time
  std::string symbol;      ///< the graph's symbolic name of a run-time dim ("N"), may be empty
  bool may_be_one = true;  ///< false when known not to be 1 (constant != 1, or a shape-class
                           ///< bucket >= 2); generic run-time dims may be 0 or 1
  bool is_const() const { return value >= 0; }
};
using TensorDims = std::vector<DimInfo>;

/// Dims of region input i / output j from its spec (constants where the spec gives them, else
/// the ABI's Var), with the symbols of the region value's graph shape.
TensorDims input_dims(const passes::Region& region, const LowerOptions& options, size_t i);
TensorDims output_dims(const passes::Region& region, const LowerOptions& options, size_t j);

/// dims[begin] * ... * dims[end - 1] (constants folded; 1 when empty).
Expr dims_product(const TensorDims& dims, size_t begin, size_t end);
/// Product of all dims.
Expr numel(const TensorDims& dims);
/// The number of elements when every dim is a constant, else -1.
int64_t const_numel(const TensorDims& dims);
/// True when a and b are the same size at run time (equal constants, or one graph symbol).
bool same_dim(const DimInfo& a, const DimInfo& b);

/// How a broadcast input walks one loop axis of the output.
enum class AxisAccess : uint8_t {
  kSame,       ///< input dim equals the output dim: the input's row-major stride
  kBroadcast,  ///< input dim is 1 (or absent): stride 0
  kUnknown,    ///< only the run time knows (generic): stride `in_dim == 1 ? 0 : stride`
};

/// Loops over one output (row-major) with every region input broadcast to it (numpy, inputs
/// aligned on the right; an input may have extra leading dims of size 1). Output axes of constant
/// size 1 are dropped; adjacent axes merge when every input accesses both kSame or both
/// kBroadcast, so loops are as few and the innermost as long as the shapes allow.
struct BroadcastPlan {
  std::vector<Expr> extents;         ///< per loop axis, outermost first (IntImm or dim Vars)
  std::vector<int64_t> const_extents;  ///< per loop axis: the constant, or -1
  std::vector<Expr> out_strides;     ///< per loop axis: stride in the (contiguous) output
  /// [input][axis]: the input's stride along the loop axis: IntImm, or a Var bound by `lets`
  std::vector<std::vector<Expr>> strides;
  std::vector<std::vector<AxisAccess>> access;  ///< [input][axis]
  /// Stride Vars (and products of run-time dims) to bind, in order, around the loop nest.
  std::vector<std::pair<std::string, Expr>> lets;
  /// With assume_no_runtime_broadcast: the conditions (bool `in_dim == out_dim`) the plan
  /// assumed for the axes only the run time knows; the caller guards the nest with them.
  std::vector<Expr> assumptions;
  /// True when some access is kUnknown (a plan assuming equal dims would be faster).
  bool has_unknown = false;

  size_t rank() const { return extents.size(); }
};

/// Plans `out` with inputs `ins` (ins[i] empty for an input the loops never read is fine).
/// Let names start with `prefix`. With `assume_no_runtime_broadcast`, an input dim only the run
/// time knows is taken as equal to the output's (kSame, so axes merge and loads stay
/// contiguous) and the condition is listed in `assumptions`: the fast version of a generic nest.
BroadcastPlan plan_broadcast(const TensorDims& out, const std::vector<TensorDims>& ins,
                             const std::string& prefix, bool assume_no_runtime_broadcast = false);

/// sum(idx[a] * strides[a]) over the axes whose stride is not constant 0 (IntImm 0 when empty).
Expr flat_index(const std::vector<Expr>& idx, const std::vector<Expr>& strides);

/// let <name> = <value> in ... body, for each binding in order.
Stmt wrap_lets(const std::vector<std::pair<std::string, Expr>>& lets, Stmt body);

/// a * b and a + b on int64 scalars with constants folded (x*0, x*1, x+0, c1 op c2).
Expr mul_i64(const Expr& a, const Expr& b);
Expr add_i64(const Expr& a, const Expr& b);
/// The constant value of an IntImm, else -1.
int64_t const_value(const Expr& e);

}  // namespace tierjit::kir::lowering
