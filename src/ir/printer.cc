// Text printer for the graph IR: a readable dump for logs, `tierjit explain` and tests.
// Grammar (one item per line, subgraphs indented by two spaces under the node that holds them):
//   graph 'NAME' {
//     input %x: float32[N,256]            (feeds; "const input" when it is an initializer)
//     const %w: float32[256,256]          (initializers not listed as inputs; contents not shown)
//     capture %a <- %a                    (subgraph value <- value of the enclosing graph)
//     %3:float32[N,256] = Gemm(%x, %w, %b) {alpha=1, transB=1}
//       then_branch = graph 'then' { ... }
//     output %3: float32[N,256]
//   }
// A value prints as %name, or %<id> when unnamed; an omitted optional input/output prints as "_".
#include <fmt/format.h>

#include "ir/graph.h"
#include "support/escape.h"

namespace tierjit::ir {

namespace {

std::string value_ref(const Value* v) {
  if (!v) return "_";
  if (v->name().empty()) return fmt::format("%{}", v->id());
  return "%" + support::escape_name(v->name());
}

std::string type_str(const ValueType& t) {
  std::string s = t.dtype == DType::kUndefined ? std::string("?") : std::string(dtype_name(t.dtype));
  if (!t.shape) return s;
  s += "[";
  for (size_t i = 0; i < t.shape->size(); ++i) {
    if (i) s += ",";
    const Dim& d = (*t.shape)[i];
    s += d.is_constant() ? std::to_string(d.value) : (d.is_symbol() ? support::escape_name(d.symbol) : "?");
  }
  return s + "]";
}

std::string tensor_str(const Tensor& t) {
  if (!t.defined()) return "tensor<undefined>";
  std::string s = fmt::format("tensor<{}[", dtype_name(t.dtype()));
  for (size_t i = 0; i < t.shape().size(); ++i) s += (i ? "," : "") + std::to_string(t.shape()[i]);
  s += "]";
  // Show the value of small numeric tensors (scalars such as a Constant's value help reading).
  if (t.numel() >= 1 && t.numel() <= 4 && t.dtype() != DType::kString) {
    s += " ";
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (i) s += ",";
      if (dtype_is_float(t.dtype()))
        s += fmt::format("{}", t.value_as_double(i));
      else
        s += fmt::format("{}", t.value_as_int64(i));
    }
  }
  return s + ">";
}

template <class T, class F>
std::string list_str(const std::vector<T>& xs, F f) {
  std::string s = "[";
  for (size_t i = 0; i < xs.size(); ++i) s += (i ? "," : "") + f(xs[i]);
  return s + "]";
}

std::string attr_str(const Attribute& a) {
  using K = Attribute::Kind;
  switch (a.kind) {
    case K::kFloat: return fmt::format("{}", a.f);
    case K::kInt: return fmt::format("{}", a.i);
    case K::kString: return fmt::format("\"{}\"", a.s);
    case K::kTensor: return tensor_str(a.t);
    case K::kGraph: return fmt::format("graph '{}'", a.g ? support::escape_name(a.g->name()) : "");
    case K::kFloats: return list_str(a.floats, [](float f) { return fmt::format("{}", f); });
    case K::kInts: return list_str(a.ints, [](int64_t i) { return fmt::format("{}", i); });
    case K::kStrings:
      return list_str(a.strings, [](const std::string& s) { return fmt::format("\"{}\"", s); });
    case K::kTensors: return list_str(a.tensors, [](const Tensor& t) { return tensor_str(t); });
    case K::kGraphs:
      return list_str(a.graphs, [](const std::shared_ptr<Graph>& g) {
        return fmt::format("graph '{}'", g ? support::escape_name(g->name()) : "");
      });
  }
  return "?";
}

void print_into(const Graph& g, int indent, std::string& out);

void print_node(const Node& n, int indent, std::string& out) {
  std::string pad(static_cast<size_t>(indent), ' ');
  std::string line = pad;
  for (size_t i = 0; i < n.outputs().size(); ++i) {
    const Value* v = n.outputs()[i];
    if (i) line += ", ";
    line += v ? value_ref(v) + ":" + type_str(v->type()) : "_";
  }
  if (!n.outputs().empty()) line += " = ";
  if (!n.domain().empty()) line += support::escape_name(n.domain()) + "::";
  line += std::string(op_name(n.op())) + "(";
  for (size_t i = 0; i < n.inputs().size(); ++i) line += (i ? ", " : "") + value_ref(n.inputs()[i]);
  line += ")";
  if (!n.attributes().empty()) {
    line += " {";
    bool first = true;
    for (const auto& [name, a] : n.attributes()) {
      line += (first ? "" : ", ") + name + "=" + attr_str(a);
      first = false;
    }
    line += "}";
  }
  out += line + "\n";
  for (const auto& [name, a] : n.attributes()) {
    if (a.kind == Attribute::Kind::kGraph && a.g) {
      out += pad + "  " + name + " = ";
      print_into(*a.g, indent + 2, out);
    }
    if (a.kind == Attribute::Kind::kGraphs)
      for (size_t i = 0; i < a.graphs.size(); ++i) {
        if (!a.graphs[i]) continue;
        out += fmt::format("{}  {}[{}] = ", pad, name, i);
        print_into(*a.graphs[i], indent + 2, out);
      }
  }
}

// Prints "graph 'name' {" (the caller wrote the indentation of this first line) ... "}".
void print_into(const Graph& g, int indent, std::string& out) {
  std::string pad(static_cast<size_t>(indent) + 2, ' ');
  out += fmt::format("graph '{}' {{\n", support::escape_name(g.name()));
  for (const Value* v : g.inputs())
    out += fmt::format("{}{} {}: {}\n", pad, v->is_constant() ? "const input" : "input", value_ref(v),
                       type_str(v->type()));
  for (const auto& v : g.values()) {
    if (!v->is_constant() || v->producer()) continue;
    bool is_input = false;
    for (const Value* in : g.inputs()) is_input |= in == v.get();
    if (!is_input)
      out += fmt::format("{}const {}: {}\n", pad, value_ref(v.get()), type_str(v->type()));
  }
  for (size_t i = 0; i < g.captures().size(); ++i)
    out += fmt::format("{}capture {} <- {}\n", pad, value_ref(g.captures()[i]),
                       i < g.capture_sources().size() ? value_ref(g.capture_sources()[i]) : "?");
  for (const auto& n : g.nodes()) print_node(*n, indent + 2, out);
  for (const Value* v : g.outputs())
    out += fmt::format("{}output {}: {}\n", pad, value_ref(v), v ? type_str(v->type()) : "?");
  out += std::string(static_cast<size_t>(indent), ' ') + "}\n";
}

}  // namespace

std::string print_graph(const Graph& graph) {
  std::string out;
  print_into(graph, 0, out);
  return out;
}

}  // namespace tierjit::ir
