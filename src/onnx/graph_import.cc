// GraphProto -> ir::Graph: values for inputs, initializers (constants) and node outputs, declared
// types (inputs, outputs, value_info), nodes with their opsets and typed attributes, subgraphs
// converted recursively with outer-scope reads turned into captures (each graph captures from
// its immediate parent, which captures from its own parent first when needed). Ends with the
// legacy broadcast rewrite and a topological sort.
#include <fmt/format.h>

#include <optional>
#include <span>

#include "onnx/import_internal.h"
#include "onnx/schema_facts.h"

namespace tierjit::onnx_import {

std::string normalize_domain(const std::string& domain) {
  return domain == "ai.onnx" ? std::string() : domain;
}

std::string describe_node(const onnx::NodeProto& node) {
  std::string op = node.domain().empty() || node.domain() == "ai.onnx"
                       ? fmt::format("op {}", node.op_type())
                       : fmt::format("op {}, domain '{}'", node.op_type(), node.domain());
  if (!node.name().empty()) return fmt::format("node '{}' ({})", node.name(), op);
  for (const std::string& o : node.output())
    if (!o.empty()) return fmt::format("node with output '{}' ({})", o, op);
  return fmt::format("unnamed node ({})", op);
}

Expected<ir::ValueType> type_from_proto(const onnx::TypeProto& type, const std::string& what) {
  ir::ValueType vt;
  switch (type.value_case()) {
    case onnx::TypeProto::VALUE_NOT_SET: return vt;
    case onnx::TypeProto::kSequenceType:
      return unsupported("{}: sequence types are not supported yet", what);
    case onnx::TypeProto::kMapType: return unsupported("{}: map types are not supported yet", what);
    case onnx::TypeProto::kOptionalType:
      return unsupported("{}: optional types are not supported yet", what);
    case onnx::TypeProto::kSparseTensorType:
      return unsupported("{}: sparse tensor types are not supported yet", what);
    case onnx::TypeProto::kTensorType: break;
    default: return unsupported("{}: only tensor types are supported", what);
  }
  const auto& tt = type.tensor_type();
  const int32_t code = tt.elem_type();
  if (code == onnx::TensorProto_DataType_COMPLEX64 || code == onnx::TensorProto_DataType_COMPLEX128)
    return unsupported("{}: complex element types are not supported", what);
  if (code != 0 && !dtype_is_valid(code))
    return unsupported("{}: element type code {} is not supported", what, code);
  vt.dtype = static_cast<DType>(code);
  if (!tt.has_shape()) return vt;
  ir::SymShape shape;
  for (const auto& d : tt.shape().dim()) {
    if (d.has_dim_value()) {
      if (d.dim_value() < 0)
        return invalid_model("{}: negative dim {} in declared shape", what, d.dim_value());
      shape.push_back(ir::Dim::constant(d.dim_value()));
    } else if (d.has_dim_param() && !d.dim_param().empty()) {
      shape.push_back(ir::Dim::named(d.dim_param()));
    } else {
      shape.push_back(ir::Dim::unknown());
    }
  }
  vt.shape = std::move(shape);
  return vt;
}

/// Names visible while converting one graph: its own values, then (through captures) the
/// enclosing graphs'.
class Scope {
 public:
  Scope(ir::Graph& graph, Scope* parent) : graph_(graph), parent_(parent) {}
  ir::Graph& graph() { return graph_; }
  bool defines(const std::string& name) const { return local_.count(name) != 0; }
  void define(const std::string& name, ir::Value* v) { local_[name] = v; }
  /// The value named `name` here, capturing it from the enclosing graphs when it is theirs;
  /// nullptr when no graph defines it.
  ir::Value* resolve(const std::string& name) {
    auto it = local_.find(name);
    if (it != local_.end()) return it->second;
    if (!parent_) return nullptr;
    ir::Value* outer = parent_->resolve(name);
    if (!outer) return nullptr;
    ir::Value* v = graph_.add_value(name, outer->type());
    graph_.captures().push_back(v);
    graph_.capture_sources().push_back(outer);
    local_[name] = v;
    return v;
  }

 private:
  ir::Graph& graph_;
  Scope* parent_;
  std::map<std::string, ir::Value*> local_;
};

namespace {

// Merges the declaration `b` into `a`; kInvalidModel when they contradict each other.
Status merge_type(ir::ValueType& a, const ir::ValueType& b, const std::string& what) {
  if (a.dtype != DType::kUndefined && b.dtype != DType::kUndefined && a.dtype != b.dtype)
    return invalid_model("{}: declared with two element types, {} and {}", what,
                         dtype_name(a.dtype), dtype_name(b.dtype));
  if (a.dtype == DType::kUndefined) a.dtype = b.dtype;
  if (!b.shape) return Status();
  if (!a.shape) {
    a.shape = b.shape;
    return Status();
  }
  if (a.shape->size() != b.shape->size())
    return invalid_model("{}: declared with two shapes, {} and {}", what,
                         ir::sym_shape_to_string(*a.shape), ir::sym_shape_to_string(*b.shape));
  for (size_t i = 0; i < a.shape->size(); ++i) {
    ir::Dim& x = (*a.shape)[i];
    const ir::Dim& y = (*b.shape)[i];
    if (x.is_constant() && y.is_constant() && x.value != y.value)
      return invalid_model("{}: declared with two shapes, {} and {}", what,
                           ir::sym_shape_to_string(*a.shape), ir::sym_shape_to_string(*b.shape));
    if (!x.is_constant() && (y.is_constant() || (!x.is_symbol() && y.is_symbol()))) x = y;
  }
  return Status();
}

Status check_declared_size(const ir::ValueType& t, int64_t limit, const std::string& what) {
  if (!t.shape || t.dtype == DType::kUndefined) return Status();
  Shape s;
  for (const ir::Dim& d : *t.shape) {
    if (!d.is_constant()) return Status();
    s.push_back(d.value);
  }
  return check_tensor_size(t.dtype, s, limit, what);
}

ir::ValueType type_of_tensor(const Tensor& t) {
  ir::SymShape s;
  for (int64_t d : t.shape()) s.push_back(ir::Dim::constant(d));
  return ir::ValueType{t.dtype(), std::move(s)};
}

class GraphImporter {
 public:
  GraphImporter(ImportContext& ctx, const onnx::GraphProto& proto, const OpsetMap& opsets,
                Scope* parent, ir::Graph& out)
      : ctx_(ctx), proto_(proto), opsets_(opsets), graph_(out), scope_(out, parent) {}

  Status run() {
    TJ_RETURN_IF_ERROR(import_initializers());
    TJ_RETURN_IF_ERROR(collect_declared_types());
    TJ_RETURN_IF_ERROR(import_inputs());
    for (const auto& n : proto_.node()) TJ_RETURN_IF_ERROR(expand_node(ctx_, n, opsets_, nodes_));
    TJ_RETURN_IF_ERROR(define_node_outputs());
    for (const ExpandedNode& en : nodes_) TJ_RETURN_IF_ERROR(import_node(en));
    TJ_RETURN_IF_ERROR(import_outputs());
    TJ_RETURN_IF_ERROR(rewrite_legacy_broadcast(graph_));
    if (!graph_.topological_sort())
      return invalid_model("graph '{}': the nodes form a cycle", proto_.name());
    return check_capture_order();
  }

 private:
  Status import_initializers() {
    if (proto_.sparse_initializer_size() > 0)
      return unsupported("sparse initializer '{}': sparse tensors are not supported",
                         proto_.sparse_initializer(0).values().name());
    for (const auto& tp : proto_.initializer()) {
      const std::string what = fmt::format("initializer '{}'", tp.name());
      if (tp.name().empty()) return invalid_model("an initializer has no name");
      if (scope_.defines(tp.name())) return invalid_model("{}: defined twice", what);
      TJ_ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(tp, ctx_.roots,
                                                      ctx_.options.memory_limit_bytes, what));
      ir::Value* v = graph_.add_value(tp.name(), type_of_tensor(t));
      v->set_constant(std::move(t));
      scope_.define(tp.name(), v);
    }
    return Status();
  }

  // value_info and graph outputs, merged by name.
  Status collect_declared_types() {
    auto add = [&](const onnx::ValueInfoProto& vi, const char* kind) -> Status {
      const std::string what = fmt::format("{} '{}'", kind, vi.name());
      if (vi.name().empty()) return invalid_model("a graph {} has no name", kind);
      TJ_ASSIGN_OR_RETURN(ir::ValueType t, type_from_proto(vi.type(), what));
      TJ_RETURN_IF_ERROR(check_declared_size(t, ctx_.options.memory_limit_bytes, what));
      auto [it, fresh] = declared_.emplace(vi.name(), t);
      if (!fresh) TJ_RETURN_IF_ERROR(merge_type(it->second, t, what));
      return Status();
    };
    for (const auto& vi : proto_.output()) TJ_RETURN_IF_ERROR(add(vi, "output"));
    for (const auto& vi : proto_.value_info()) TJ_RETURN_IF_ERROR(add(vi, "value"));
    return Status();
  }

  Status import_inputs() {
    std::map<std::string, bool> seen;
    for (const auto& vi : proto_.input()) {
      const std::string what = fmt::format("input '{}'", vi.name());
      if (vi.name().empty()) return invalid_model("a graph input has no name");
      if (seen[vi.name()]) return invalid_model("{}: listed twice", what);
      seen[vi.name()] = true;
      TJ_ASSIGN_OR_RETURN(ir::ValueType t, type_from_proto(vi.type(), what));
      TJ_RETURN_IF_ERROR(check_declared_size(t, ctx_.options.memory_limit_bytes, what));
      auto d = declared_.find(vi.name());
      if (d != declared_.end()) TJ_RETURN_IF_ERROR(merge_type(t, d->second, what));
      ir::Value* v = nullptr;
      if (scope_.defines(vi.name())) {
        // An initializer listed as an input: a constant (its declared type must agree).
        v = scope_.resolve(vi.name());
        ir::ValueType init_type = v->type();
        TJ_RETURN_IF_ERROR(merge_type(init_type, t, what));
      } else {
        v = graph_.add_value(vi.name(), t);
        scope_.define(vi.name(), v);
      }
      graph_.inputs().push_back(v);
    }
    return Status();
  }

  Status define_node_outputs() {
    for (const ExpandedNode& en : nodes_) {
      for (const std::string& name : en.node->output()) {
        if (name.empty()) continue;
        if (scope_.defines(name))
          return invalid_model("{}: output '{}' is already defined (by a graph input, an "
                               "initializer or another node)", describe_node(*en.node), name);
        ir::ValueType t;
        auto d = declared_.find(name);
        if (d != declared_.end()) t = d->second;
        scope_.define(name, graph_.add_value(name, t));
      }
    }
    return Status();
  }

  Expected<ir::OpKind> resolve_op(const onnx::NodeProto& n, const OpsetMap& opsets, int* opset) {
    const std::string domain = normalize_domain(n.domain());
    std::optional<ir::OpKind> op;
    if (domain.empty()) op = ir::op_from_name(n.op_type());
    if (!op) return unsupported("{}: unknown operator", describe_node(n));
    auto it = opsets.find(domain);
    if (it == opsets.end())
      return invalid_model("{}: the model imports no opset for domain '{}'", describe_node(n),
                           domain);
    *opset = static_cast<int>(it->second);
    return *op;
  }

  // The type of attribute `a`; IR version 1 models leave `type` unset: then the field that is
  // set (UNDEFINED when none is).
  static int attr_type(const onnx::AttributeProto& a) {
    using AP = onnx::AttributeProto;
    if (a.type() != AP::UNDEFINED) return a.type();
    if (a.floats_size()) return AP::FLOATS;
    if (a.ints_size()) return AP::INTS;
    if (a.strings_size()) return AP::STRINGS;
    if (a.tensors_size()) return AP::TENSORS;
    if (a.graphs_size()) return AP::GRAPHS;
    if (a.has_f()) return AP::FLOAT;
    if (a.has_i()) return AP::INT;
    if (a.has_s()) return AP::STRING;
    if (a.has_t()) return AP::TENSOR;
    if (a.has_g()) return AP::GRAPH;
    return AP::UNDEFINED;
  }

  // Every attribute of node `n` is one its op's schema declares, of the declared type (ONNX
  // Runtime rejects the model otherwise; the kernels would read a default instead, e.g.
  // LeakyRelu alpha = "abc" ran with 0.01). Ops without a schema in libonnx are left to the
  // kernels.
  static Status check_attr_types(const onnx::NodeProto& n, const SchemaFacts& schema) {
    for (const auto& a : n.attribute()) {
      const SchemaAttribute* declared = schema.attribute(a.name());
      // An attribute the op does not have (Clip's min/max at opset 11, where they are inputs;
      // Split's `split` at 13): the kernels would ignore it and compute something else.
      if (!declared)
        return invalid_model("{}: '{}' is not an attribute of {} (ONNX {} opset {})",
                             describe_node(n), a.name(), n.op_type(), n.op_type(),
                             schema.since_version());
      if (a.has_ref_attr_name()) continue;
      const int want = declared->type, got = attr_type(a);
      if (want != onnx::AttributeProto::UNDEFINED && got != want)
        return invalid_model("{}: attribute '{}' must be {} (ONNX {} opset {}), got {}",
                             describe_node(n), a.name(),
                             onnx::AttributeProto::AttributeType_Name(
                                 static_cast<onnx::AttributeProto::AttributeType>(want)),
                             n.op_type(), schema.since_version(),
                             got == onnx::AttributeProto::UNDEFINED
                                 ? std::string("no value")
                                 : onnx::AttributeProto::AttributeType_Name(
                                       static_cast<onnx::AttributeProto::AttributeType>(got)));
    }
    return Status();
  }

  // The ONNX schema a node is checked against: its op's version at `opset`; for an op used
  // below its first opset (LayerNormalization at 16: ONNX Runtime registers it for older
  // opsets and loads such models; Celu at 11), the first version, which it then runs as.
  static std::optional<SchemaFacts> node_schema(const onnx::NodeProto& n, int opset) {
    std::optional<SchemaFacts> schema = find_schema(n.domain(), n.op_type(), opset);
    if (!schema)
      if (const std::optional<int> first = first_opset(n.domain(), n.op_type()))
        schema = find_schema(n.domain(), n.op_type(), *first);
    return schema;
  }

  // A deprecated op (Upsample from opset 10, Scatter from 11): ONNX Runtime rejects it, and
  // its replacement's semantics differ.
  static Status check_not_deprecated(const onnx::NodeProto& n, const SchemaFacts& schema,
                                     int opset) {
    if (schema.deprecated())
      return invalid_model("{}: {} is deprecated from ONNX opset {} on; the model imports opset {}",
                           describe_node(n), n.op_type(), schema.since_version(), opset);
    return Status();
  }

  // Input count and required inputs against the op's ONNX schema (as ONNX Runtime checks them): a
  // MatMul without B, a Gemm with B given as "" or a Relu with two inputs is an invalid model
  // here, not a crash or a silent guess later (a MatMul missing B crashed adaptive mode's region
  // analysis).
  static Status check_input_counts(const onnx::NodeProto& n, const SchemaFacts& schema) {
    const int count = n.input_size();
    if (count > schema.max_input())
      return invalid_model("{}: takes at most {} inputs (ONNX {} opset {}), got {}",
                           describe_node(n), schema.max_input(), n.op_type(),
                           schema.since_version(), count);
    const std::span<const SchemaInput> formal = schema.inputs();
    for (int i = 0; i < std::max(count, schema.min_input()); ++i) {
      if (formal.empty()) break;
      const SchemaInput& f = formal[std::min<size_t>(static_cast<size_t>(i), formal.size() - 1)];
      // Missing: below the schema's minimum count, or a required (single) input given as "".
      if (i < count ? n.input(i).empty() && f.option == kSingleInput : i < schema.min_input())
        return invalid_model("{}: input {} ('{}') is required (ONNX {} opset {}) but missing",
                             describe_node(n), i, f.name, n.op_type(), schema.since_version());
    }
    return Status();
  }

  // Output count against the op's ONNX schema (as ONNX Runtime checks it): a Conv with two
  // outputs is an invalid model here, not an internal error from the kernel at the first run.
  static Status check_output_counts(const onnx::NodeProto& n, const SchemaFacts& schema) {
    const int count = n.output_size();
    if (count > schema.max_output())
      return invalid_model("{}: has at most {} outputs (ONNX {} opset {}), got {}", describe_node(n),
                           schema.max_output(), n.op_type(), schema.since_version(), count);
    if (count < schema.min_output())
      return invalid_model("{}: has at least {} outputs (ONNX {} opset {}), got {}", describe_node(n),
                           schema.min_output(), n.op_type(), schema.since_version(), count);
    return Status();
  }

  Expected<ir::Attribute> convert_attr(const onnx::AttributeProto& a, const ExpandedNode& en) {
    using AP = onnx::AttributeProto;
    const std::string what = fmt::format("attribute '{}'", a.name());
    if (a.has_ref_attr_name())
      return invalid_model("{}: refers to function attribute '{}' outside a function", what,
                           a.ref_attr_name());
    const int type = attr_type(a);
    if (type == AP::UNDEFINED) return invalid_model("{}: no value", what);
    ir::Attribute r;
    using K = ir::Attribute::Kind;
    const int64_t limit = ctx_.options.memory_limit_bytes;
    switch (type) {
      case AP::FLOAT: r.kind = K::kFloat; r.f = a.f(); break;
      case AP::INT: r.kind = K::kInt; r.i = a.i(); break;
      case AP::STRING: r.kind = K::kString; r.s = a.s(); break;
      case AP::FLOATS: r.kind = K::kFloats; r.floats.assign(a.floats().begin(), a.floats().end()); break;
      case AP::INTS: r.kind = K::kInts; r.ints.assign(a.ints().begin(), a.ints().end()); break;
      case AP::STRINGS:
        r.kind = K::kStrings;
        r.strings.assign(a.strings().begin(), a.strings().end());
        break;
      case AP::TENSOR: {
        r.kind = K::kTensor;
        TJ_ASSIGN_OR_RETURN(r.t, tensor_from_proto(a.t(), ctx_.roots, limit, what));
        break;
      }
      case AP::TENSORS:
        r.kind = K::kTensors;
        for (const auto& tp : a.tensors()) {
          TJ_ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(tp, ctx_.roots, limit, what));
          r.tensors.push_back(std::move(t));
        }
        break;
      case AP::GRAPH: {
        r.kind = K::kGraph;
        TJ_ASSIGN_OR_RETURN(r.g, import_subgraph(a.g(), en, what));
        break;
      }
      case AP::GRAPHS:
        r.kind = K::kGraphs;
        for (const auto& gp : a.graphs()) {
          TJ_ASSIGN_OR_RETURN(auto g, import_subgraph(gp, en, what));
          r.graphs.push_back(std::move(g));
        }
        break;
      case AP::SPARSE_TENSOR:
      case AP::SPARSE_TENSORS:
        return unsupported("{}: sparse tensors are not supported", what);
      case AP::TYPE_PROTO:
      case AP::TYPE_PROTOS:
        return unsupported("{}: type attributes are not supported", what);
      default: return invalid_model("{}: unknown attribute type {}", what, type);
    }
    return r;
  }

  Expected<std::shared_ptr<ir::Graph>> import_subgraph(const onnx::GraphProto& gp,
                                                       const ExpandedNode& en,
                                                       const std::string& what) {
    auto g = std::make_shared<ir::Graph>(gp.name(), &graph_);
    Status s = import_graph(ctx_, gp, *en.opsets, &scope_, *g);
    if (!s.ok()) return s.with_prefix(what);
    return g;
  }

  Status import_node(const ExpandedNode& en) {
    const onnx::NodeProto& n = *en.node;
    int opset = 0;
    TJ_ASSIGN_OR_RETURN(ir::OpKind op, resolve_op(n, *en.opsets, &opset));
    std::vector<ir::Value*> inputs, outputs;
    for (const std::string& name : n.input()) {
      if (name.empty()) {
        inputs.push_back(nullptr);
        continue;
      }
      ir::Value* v = scope_.resolve(name);
      if (!v) return invalid_model("{}: input '{}' is not defined", describe_node(n), name);
      inputs.push_back(v);
    }
    for (const std::string& name : n.output())
      outputs.push_back(name.empty() ? nullptr : scope_.resolve(name));
    if (const std::optional<SchemaFacts> schema = node_schema(n, opset)) {
      TJ_RETURN_IF_ERROR(check_not_deprecated(n, *schema, opset));
      TJ_RETURN_IF_ERROR(check_attr_types(n, *schema));
      TJ_RETURN_IF_ERROR(check_input_counts(n, *schema));
      TJ_RETURN_IF_ERROR(check_output_counts(n, *schema));
    }
    std::map<std::string, ir::Attribute> attrs;
    for (const auto& a : n.attribute()) {
      Expected<ir::Attribute> r = convert_attr(a, en);
      if (!r.ok()) return r.status().with_prefix(describe_node(n));
      if (!attrs.emplace(a.name(), std::move(r).value()).second)
        return invalid_model("{}: attribute '{}' given twice", describe_node(n), a.name());
    }
    ir::Node* node = graph_.add_node(op, std::move(inputs), std::move(outputs), n.name(),
                                     normalize_domain(n.domain()));
    node->set_opset(opset);
    if (!n.doc_string().empty()) node->set_doc_string(n.doc_string());
    for (auto& [name, a] : attrs) node->set_attr(name, std::move(a));
    return Status();
  }

  Status import_outputs() {
    for (const auto& vi : proto_.output()) {
      ir::Value* v = scope_.resolve(vi.name());
      if (!v)
        return invalid_model("output '{}' is not produced by any node nor is it an input",
                             vi.name());
      if (!v->producer()) {  // an input, initializer or capture: check its declared type agrees
        ir::ValueType t = v->type();
        TJ_RETURN_IF_ERROR(merge_type(t, declared_.at(vi.name()),
                                      fmt::format("output '{}'", vi.name())));
        if (!v->is_constant()) v->mutable_type() = t;
      }
      graph_.outputs().push_back(v);
    }
    return Status();
  }

  // A subgraph may read a value of this graph only after the node producing it has run.
  Status check_capture_order() {
    std::map<const ir::Value*, size_t> produced_at;
    for (size_t i = 0; i < graph_.nodes().size(); ++i) {
      const ir::Node& n = *graph_.nodes()[i];
      for (const auto& [name, a] : n.attributes()) {
        std::vector<const ir::Graph*> subs;
        if (a.g) subs.push_back(a.g.get());
        for (const auto& g : a.graphs) subs.push_back(g.get());
        for (const ir::Graph* g : subs)
          for (const ir::Value* src : g->capture_sources()) {
            if (src->owner() != &graph_ || !src->producer()) continue;
            auto it = produced_at.find(src);
            if (it == produced_at.end())
              return invalid_model("{}: its subgraph reads '{}' before that value is produced",
                                   n.describe(), src->name());
          }
      }
      for (const ir::Value* o : n.outputs())
        if (o) produced_at[o] = i;
    }
    return Status();
  }

  ImportContext& ctx_;
  const onnx::GraphProto& proto_;
  const OpsetMap& opsets_;
  ir::Graph& graph_;
  Scope scope_;
  std::map<std::string, ir::ValueType> declared_;
  std::vector<ExpandedNode> nodes_;
};

}  // namespace

Status import_graph(ImportContext& ctx, const onnx::GraphProto& proto, const OpsetMap& opsets,
                    Scope* parent, ir::Graph& out) {
  GraphImporter importer(ctx, proto, opsets, parent, out);
  return importer.run();
}

}  // namespace tierjit::onnx_import
