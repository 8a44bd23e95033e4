// Elementwise ONNX nodes -> kir expressions: the one place that knows how each elementwise op
// (FusionClass kElementwiseUnary / kElementwiseBinary of passes/partition.cc) computes one output
// element from its operand elements, with tier 0's semantics (src/interp/kernels/unary.cc,
// activation.cc, binary.cc, pow_mod.cc, variadic.cc, cast.cc). Used by every lowering: the
// elementwise regions, and the prologues/epilogues of reduction and matmul regions.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "kir/kir.h"
#include "support/status.h"

namespace tierjit::kir::lowering {

/// Collects `let name = value` bindings for one statement (a loop body), so an expression used
/// several times is computed once. bind() returns a Var of the value's type; wrap() puts the lets,
/// in binding order, around the statement that uses them. Names are "<prefix><n>" and must be
/// unique among the scopes that nest (the kir verifier forbids shadowing).
class LetScope {
 public:
  explicit LetScope(std::string prefix) : prefix_(std::move(prefix)) {}
  /// `value` itself when it is cheap to repeat (Var, IntImm, FloatImm, Broadcast of those),
  /// else a fresh Var bound to it.
  Expr bind(const Expr& value);
  /// let <b0> in let <b1> in ... body.
  Stmt wrap(Stmt body) const;
  bool empty() const { return names_.empty(); }

 private:
  std::string prefix_;
  std::vector<std::string> names_;
  std::vector<Expr> values_;
};

/// Lowers one elementwise node: `operands[i]` is the element of node input i (nullptr for an
/// omitted optional input, e.g. Clip's min), as a kir Expr of that input's dtype; scalars and
/// vectors may be mixed (scalars are broadcast to the widest lane count). Returns the element of
/// output 0 with the node's output dtype and that lane count. Semantics are tier 0's exactly:
/// NaN (Relu(NaN) = 0, Max/Min/Clip/Sign keep NaN, comparisons with NaN false), integer wrap,
/// integer Div/Mod truncating with x/0 = x%0 = 0 and INT_MIN/-1 = INT_MIN, Mod fmod=0 floored
/// (divisor's sign), Round half to even, Cast float->int truncating with NaN -> 0 and saturation
/// to int64 before wrapping, any->bool as x != 0. Transcendentals (exp, log, tanh, erf, sigmoid,
/// and Elu/Selu/Celu/Softplus built from them) carry codegen's error bounds (docs/codegen.md), a
/// few ulp for float32; Pow with a constant exponent 2 is x*x.
/// Operands are used more than once in the result; with `lets`, repeated parts are bound there
/// (wrap the statement using the result with lets->wrap()), else trees are repeated.
/// Errors: kUnsupported naming the node and op (op, dtype or attribute without a lowering, see
/// elementwise_op_supported); kInvalidArgument when operand count or dtypes do not match the node.
Expected<Expr> lower_elementwise_op(const ir::Node& node, const std::vector<Expr>& operands,
                                    LetScope* lets = nullptr);

/// True when lower_elementwise_op() lowers `node` for the dtypes and attributes the graph gives
/// it. Not lowered: float16/bfloat16 and strings; Sin Cos Tan Asin Acos Atan (kir has no such
/// intrinsics); Sinh Cosh Asinh Acosh Atanh other than float32; BitShift (no shifts in kir);
/// Mod of floats (fmod=1: no frem in kir); Pow with an integer base; PRelu-1/6 channel slopes.
bool elementwise_op_supported(const ir::Node& node);

/// The value of a one-element constant (an initializer) as an immediate of its dtype, else
/// nullptr (not constant, several elements, uint64). Code that embeds it depends on the value:
/// the cache key hashes the kernel IR, immediates included.
Expr scalar_constant(const ir::Value* v);
/// The same for a one-element tensor given by value (value specialization,
/// LowerOptions::input_values): an immediate of its dtype, else nullptr.
Expr scalar_immediate(const Tensor& t);


}  // namespace tierjit::kir::lowering
