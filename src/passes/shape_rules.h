// Internal to the shape inference pass: the per-node RuleContext the shape rules read inputs from
// and write outputs to, the rule table (one rule per OpKind, registered per op family in
// shape_rules_*.cc), and symbolic-dim arithmetic shared by the rules (shape_sym.cc).
// Rules never guess: a dim they cannot decide is Dim::unknown(), a rank they cannot decide nullopt.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ir/graph.h"
#include "support/status.h"

namespace tierjit::passes::shapes {

/// One element of an integer tensor whose contents the pass tracks (shape arithmetic): a constant
/// of any sign, a symbolic dim (same spelling as ir::Dim symbols), or unknown.
struct SymInt {
  bool known = false;
  int64_t value = 0;   ///< meaningful when known and symbol is empty
  std::string symbol;  ///< non-empty: a symbolic value (always >= 0: a dim or a product of dims)

  static SymInt constant(int64_t v) { return SymInt{true, v, {}}; }
  static SymInt named(std::string s) { return SymInt{true, 0, std::move(s)}; }
  static SymInt unknown() { return SymInt{}; }
  static SymInt from_dim(const ir::Dim& d);
  bool is_constant() const { return known && symbol.empty(); }
  bool is_symbol() const { return known && !symbol.empty(); }
  /// As a dim: negative constants and unknowns give Dim::unknown().
  ir::Dim to_dim() const;
  bool operator==(const SymInt&) const = default;
};
using SymInts = std::vector<SymInt>;

// ---- symbolic arithmetic (shape_sym.cc) -------------------------------------------------------
/// Bounds on a derived symbolic expression (docs/passes.md "Symbolic dims"): at most this many
/// atoms in a product ("N*S*S" has 3) and this many characters in any expression the rules build
/// (products, min(X,c), window extents). A result past either bound is unknown, so that a chain
/// of ops that doubles an expression each step (x * x, reshaped, k times: 2^k atoms) costs linear
/// time and memory at load.
inline constexpr size_t kMaxSymAtoms = 64;
inline constexpr size_t kMaxSymChars = 1024;
/// The dim named by the derived expression `expr`, or unknown past kMaxSymChars.
ir::Dim derived_dim(std::string expr);
SymInt sym_mul(const SymInt& a, const SymInt& b);
/// a / b when it divides exactly (constants, or cancelling symbol factors); else unknown.
SymInt sym_div_exact(const SymInt& a, const SymInt& b);
/// Integer floor division for constants (ONNX Div on int64 truncates; shapes are >= 0).
SymInt sym_div_trunc(const SymInt& a, const SymInt& b);
SymInt sym_add(const SymInt& a, const SymInt& b);
SymInt sym_sub(const SymInt& a, const SymInt& b);
ir::Dim dim_mul(const ir::Dim& a, const ir::Dim& b);
ir::Dim dim_div_exact(const ir::Dim& a, const ir::Dim& b);
ir::Dim dim_add(const ir::Dim& a, const ir::Dim& b);
/// Product of shape[begin, end).
ir::Dim dim_product(const ir::SymShape& shape, size_t begin, size_t end);
/// min(d, c) for a dim d >= 0: a constant, or the symbol "min(X,c)".
ir::Dim dim_min_const(const ir::Dim& d, int64_t c);
/// Result dim of broadcasting dims (multidirectional, numpy); error text when two constants
/// differ and neither is 1. A symbol with 1 gives the symbol; two different symbols or a symbol
/// with unknown give unknown ("X" with "min(X,c)" gives "X": any other value fails at run time).
std::optional<ir::Dim> broadcast_dim(const std::vector<const ir::Dim*>& dims);
/// Broadcasts shapes right-aligned; nullptr entries (rank unknown) make the result nullopt.
/// Sets *error (and returns nullopt) when the shapes can never broadcast.
std::optional<ir::SymShape> broadcast_shapes(const std::vector<const ir::SymShape*>& shapes,
                                             std::string* error);

// ---- per-node context -------------------------------------------------------------------------
class GraphState;

/// What a shape rule sees of one node: input types, tracked contents, and the outputs it sets.
class RuleContext {
 public:
  RuleContext(GraphState& state, ir::Node& node);

  const ir::Node& node() const { return node_; }
  ir::Node& mutable_node() { return node_; }
  int opset() const { return node_.opset(); }

  size_t num_inputs() const { return node_.num_inputs(); }
  bool has_input(size_t i) const { return node_.input(i) != nullptr; }
  DType dtype(size_t i) const;  ///< kUndefined when omitted or not known
  const std::optional<ir::SymShape>& shape(size_t i) const;  ///< nullopt when omitted or unknown
  /// Tracked integer contents (row-major) of input i, or nullptr.
  const SymInts* known(size_t i) const;
  /// The input's contents when every element is a known constant.
  std::optional<std::vector<int64_t>> const_ints(size_t i) const;
  /// The input's tensor when it is an initializer or the output of a Constant node.
  const Tensor* constant(size_t i) const;

  size_t num_outputs() const { return node_.num_outputs(); }
  bool has_output(size_t i) const { return node_.output(i) != nullptr; }
  /// Sets the inferred type of output i (ignored for omitted outputs).
  void set_output(size_t i, DType dtype, std::optional<ir::SymShape> shape);
  void set_known(size_t i, SymInts contents);
  void set_constant(size_t i, const Tensor* t);
  const std::vector<ir::ValueType>& inferred() const { return out_; }

  /// Error (kInvalidModel) prefixed with the node: "node 'x' (Op): <message>".
  template <class... Args>
  Status fail(fmt::format_string<Args...> f, Args&&... args) const {
    return invalid_model("{}: {}", node_.describe(), fmt::format(f, std::forward<Args>(args)...));
  }
  /// Error when inputs a and b both have known dtypes that differ.
  Status same_dtype(size_t a, size_t b) const;
  /// Normalizes `axis` into [0, rank) (or [0, rank] with `inclusive`), or fails naming `what`.
  Status normalize_axis(int64_t& axis, int64_t rank, const char* what, bool inclusive = false) const;

  /// The subgraph held by attribute `name`, or nullptr.
  ir::Graph* body(const char* name) const;
  /// Runs inference on a subgraph body: captures take the types of their outer values.
  Status infer_body(ir::Graph& body);

 private:
  GraphState& state_;
  ir::Node& node_;
  std::vector<ir::ValueType> out_;
};

using ShapeRule = Status (*)(RuleContext&);
using RuleTable = std::array<ShapeRule, static_cast<size_t>(ir::OpKind::kNumOps)>;

inline void add_rule(RuleTable& t, ir::OpKind op, ShapeRule r) { t[static_cast<size_t>(op)] = r; }

void register_elementwise_rules(RuleTable& t);  // shape_rules_elementwise.cc
void register_tensor_rules(RuleTable& t);       // shape_rules_tensor.cc
void register_index_rules(RuleTable& t);        // shape_rules_index.cc
void register_nn_rules(RuleTable& t);           // shape_rules_nn.cc
void register_reduce_rules(RuleTable& t);       // shape_rules_reduce.cc
void register_misc_rules(RuleTable& t);         // shape_rules_misc.cc (calls register_control_rules)
void register_control_rules(RuleTable& t);      // shape_rules_control.cc (If/Loop/Scan, sequences)

// ---- small helpers shared by rules ------------------------------------------------------------
/// Output shape = input i's shape, dtype = `dtype` (or input i's when kUndefined).
void same_as_input(RuleContext& c, size_t out, size_t in, DType dtype = DType::kUndefined);
/// Shape of rank r with every dim unknown.
ir::SymShape unknown_dims(size_t r);
/// Axes from attribute `attr` (opset < input_from) or from input `input` (later opsets); nullopt
/// when they are given as a non-constant input. `*present` tells whether axes were given at all.
std::optional<std::vector<int64_t>> axes_arg(const RuleContext& c, const char* attr, size_t input,
                                             int input_from, bool* present);

}  // namespace tierjit::passes::shapes
