// Graph IR: Graph, Node, Value — the typed, SSA form every later stage works on
// (loader -> passes -> interpreter / partitioning). One Node class with an OpKind from ops.def,
// typed attributes, dims that are constants or named symbols. Subgraphs (If/Loop/Scan bodies) are
// Graphs held by attributes; a subgraph names the outer values it reads in captures().
//
// Semantics shared by many ops, written once here (ONNX IR spec, docs/Broadcasting.md, opset 17):
//  * Broadcasting is multidirectional (numpy): shapes align on the right; a dim of 1 stretches;
//    other mismatches are errors. Opset < 7 "legacy" broadcast (broadcast=1, axis=k) is rewritten
//    by the loader into numpy form, so kernels see only numpy broadcasting.
//  * NaN: comparisons with NaN are false; Max/Min propagate NaN; ReduceMax/Min propagate NaN;
//    ArgMax/ArgMin treat NaN as the largest value (as ONNX Runtime does).
//  * Integers wrap on overflow (two's complement); integer division truncates toward zero;
//    integer Div and Mod by zero raise an error at every tier, as ONNX Runtime does (undefined in
//    ONNX): compiled code holds no integer Div/Mod, which run on tier 0 (docs/lowering.md).
//  * float16/bfloat16 arithmetic computes in float32 and rounds to nearest even on store.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/op_kind.h"
#include "support/status.h"
#include "tierjit/tensor.h"

namespace tierjit::ir {

class Graph;
class Node;

/// One dim of a symbolic shape: a constant (>= 0), a named symbol ("N"), or unknown (neither).
struct Dim {
  int64_t value = -1;  ///< >= 0 when constant
  std::string symbol;  ///< non-empty when symbolic

  static Dim constant(int64_t v) { return Dim{v, {}}; }
  static Dim named(std::string s) { return Dim{-1, std::move(s)}; }
  static Dim unknown() { return Dim{}; }
  bool is_constant() const { return value >= 0; }
  bool is_symbol() const { return value < 0 && !symbol.empty(); }
  bool operator==(const Dim&) const = default;
};
using SymShape = std::vector<Dim>;

/// "[N, 3, ?]"
std::string sym_shape_to_string(const SymShape& shape);

/// Static type of a value: element type and, when known, the symbolic shape.
struct ValueType {
  DType dtype = DType::kUndefined;
  std::optional<SymShape> shape;  ///< nullopt: rank unknown
  bool operator==(const ValueType&) const = default;
};

/// Typed attribute (ONNX AttributeProto). Exactly the field named by `kind` is meaningful.
struct Attribute {
  enum class Kind { kFloat, kInt, kString, kTensor, kGraph, kFloats, kInts, kStrings, kTensors, kGraphs };
  Kind kind = Kind::kInt;
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::shared_ptr<Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<Graph>> graphs;
};

/// An SSA value: a graph input, an initializer (constant), a capture of an outer value, or the
/// output of exactly one node.
class Value {
 public:
  int id() const { return id_; }  ///< dense index within its owning graph
  const std::string& name() const { return name_; }
  const ValueType& type() const { return type_; }
  ValueType& mutable_type() { return type_; }
  Node* producer() const { return producer_; }
  const std::vector<Node*>& users() const { return users_; }
  /// Defined for initializers (and values the passes folded to constants).
  const Tensor& constant() const { return constant_; }
  bool is_constant() const { return constant_.defined(); }
  void set_constant(Tensor t) { constant_ = std::move(t); }
  Graph* owner() const { return owner_; }

 private:
  friend class Graph;
  friend class Node;
  int id_ = -1;
  std::string name_;
  ValueType type_;
  Node* producer_ = nullptr;
  std::vector<Node*> users_;
  Tensor constant_;
  Graph* owner_ = nullptr;
};

class Node {
 public:
  int id() const { return id_; }
  OpKind op() const { return op_; }
  const std::string& name() const { return name_; }
  const std::string& domain() const { return domain_; }
  /// Opset version of the node's domain in the model (e.g. 13 for a default-domain op).
  int opset() const { return opset_; }
  void set_opset(int v) { opset_ = v; }
  const std::string& doc_string() const { return doc_string_; }
  void set_doc_string(std::string s) { doc_string_ = std::move(s); }

  /// Inputs in ONNX order; nullptr marks an omitted optional input ("" in ONNX).
  const std::vector<Value*>& inputs() const { return inputs_; }
  Value* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  size_t num_inputs() const { return inputs_.size(); }
  /// Outputs; nullptr marks an omitted optional output.
  const std::vector<Value*>& outputs() const { return outputs_; }
  Value* output(size_t i) const { return i < outputs_.size() ? outputs_[i] : nullptr; }
  size_t num_outputs() const { return outputs_.size(); }
  void set_input(size_t i, Value* v);  ///< rewires use lists

  const std::map<std::string, Attribute>& attributes() const { return attrs_; }
  bool has_attr(const std::string& name) const { return attrs_.count(name) != 0; }
  const Attribute* attr(const std::string& name) const;
  void set_attr(const std::string& name, Attribute a) { attrs_[name] = std::move(a); }
  void remove_attr(const std::string& name) { attrs_.erase(name); }
  int64_t attr_int(const std::string& name, int64_t dflt) const;
  float attr_float(const std::string& name, float dflt) const;
  std::string attr_string(const std::string& name, const std::string& dflt) const;
  std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> dflt = {}) const;
  std::vector<float> attr_floats(const std::string& name, std::vector<float> dflt = {}) const;
  std::vector<std::string> attr_strings(const std::string& name) const;
  const Tensor* attr_tensor(const std::string& name) const;
  const Graph* attr_graph(const std::string& name) const;

  /// "node 'name' (Op)" — the prefix error messages use; unnamed: "node with output 'y' (Op)"
  /// (its first named output, as the ONNX importer says it), "node #id (Op)" without one.
  std::string describe() const;

 private:
  friend class Graph;
  int id_ = -1;
  OpKind op_ = OpKind::Identity;
  int opset_ = 0;
  std::string name_, domain_, doc_string_;
  std::vector<Value*> inputs_, outputs_;
  std::map<std::string, Attribute> attrs_;
};

/// A dataflow graph: nodes in topological order, values, inputs, outputs, captures.
class Graph {
 public:
  explicit Graph(std::string name = {}, Graph* parent = nullptr) : name_(std::move(name)), parent_(parent) {}
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const std::string& name() const { return name_; }
  Graph* parent() const { return parent_; }

  /// Creates a value owned by this graph. Names need not be unique (but the loader keeps them so).
  Value* add_value(std::string name, ValueType type = {});
  /// Appends a node; `outputs` must be fresh values of this graph with no producer.
  Node* add_node(OpKind op, std::vector<Value*> inputs, std::vector<Value*> outputs,
                 std::string name = {}, std::string domain = {});
  /// Removes a node whose outputs have no users (or are not graph outputs). Ids are not reused.
  void remove_node(Node* node);
  /// Points every use of `from` (and graph outputs equal to it) at `to`.
  void replace_all_uses(Value* from, Value* to);
  /// Re-sorts nodes topologically (stable); returns false if the graph has a cycle.
  bool topological_sort();

  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  const std::vector<std::unique_ptr<Value>>& values() const { return values_; }
  size_t num_value_ids() const { return next_value_id_; }

  std::vector<Value*>& inputs() { return inputs_; }
  const std::vector<Value*>& inputs() const { return inputs_; }
  std::vector<Value*>& outputs() { return outputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  /// Values of this graph that stand for values of an enclosing graph (outer-scope reads).
  /// captures()[i] is a value of this graph; capture_sources()[i] the outer value it reads.
  std::vector<Value*>& captures() { return captures_; }
  const std::vector<Value*>& captures() const { return captures_; }
  std::vector<Value*>& capture_sources() { return capture_sources_; }
  const std::vector<Value*>& capture_sources() const { return capture_sources_; }

  /// Inputs that are not initializers (the feeds a caller must supply).
  std::vector<Value*> feed_inputs() const;

 private:
  std::string name_;
  Graph* parent_;
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<Value*> inputs_, outputs_, captures_, capture_sources_;
  int next_value_id_ = 0;
  int next_node_id_ = 0;
};

/// A loaded model: the main graph plus model-level metadata.
struct Model {
  std::unique_ptr<Graph> graph;
  std::string path;  ///< file it was loaded from ("" if built in memory)
  int64_t ir_version = 0;
  std::map<std::string, int64_t> opset_imports;  ///< domain ("" = ai.onnx) -> version
  std::string producer_name;
};

/// Checks structural invariants: every node input is defined earlier (graph input, capture,
/// constant or an earlier node's output), each output names its producer and is defined once,
/// graph outputs are defined, subgraphs too. Returns kInternal naming the first violation.
Status verify(const Graph& graph);

/// Text form of a graph (one node per line, subgraphs indented); see printer.cc for the grammar.
std::string print_graph(const Graph& graph);
/// Structural hash: ops, attributes, wiring, types and constant contents; ignores value and node
/// names and doc strings, so two graphs that differ only in names hash equal.
uint64_t structural_hash(const Graph& graph);

}  // namespace tierjit::ir
