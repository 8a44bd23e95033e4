// Terse graph building for the before/after pass tests (folding, DCE, CSE, canonicalize,
// partition): typed inputs, constants, nodes with attributes; graphs compare with
// ir::structural_hash (names ignored) and print with ir::print_graph on mismatch.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "interp/evaluate_node.h"
#include "ir/graph.h"
#include "passes/pipeline.h"
#include "passes/shape_inference.h"

namespace tierjit::passes::testing {

inline ir::Attribute attr_int(int64_t v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInt;
  a.i = v;
  return a;
}
inline ir::Attribute attr_float(float v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kFloat;
  a.f = v;
  return a;
}
inline ir::Attribute attr_ints(std::vector<int64_t> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInts;
  a.ints = std::move(v);
  return a;
}
inline ir::Attribute attr_tensor(Tensor t) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kTensor;
  a.t = std::move(t);
  return a;
}
inline ir::SymShape dims(std::vector<ir::Dim> d) { return d; }
inline ir::Dim C(int64_t v) { return ir::Dim::constant(v); }
inline ir::Dim S(const char* s) { return ir::Dim::named(s); }

using Attrs = std::vector<std::pair<std::string, ir::Attribute>>;

struct GraphBuilder {
  std::unique_ptr<ir::Graph> owned = std::make_unique<ir::Graph>("g");
  ir::Graph& g = *owned;
  int opset = 17;

  ir::Value* input(const std::string& name, DType t, ir::SymShape s) {
    ir::Value* v = g.add_value(name, {t, std::move(s)});
    g.inputs().push_back(v);
    return v;
  }
  /// An initializer that is not a graph input.
  ir::Value* constant(const std::string& name, Tensor t) {
    ir::SymShape s;
    for (int64_t d : t.shape()) s.push_back(C(d));
    ir::Value* v = g.add_value(name, {t.dtype(), s});
    v->set_constant(std::move(t));
    return v;
  }
  ir::Value* fconst(const std::string& name, std::vector<float> vals, Shape shape = {}) {
    if (shape.empty() && vals.size() != 1) shape = {static_cast<int64_t>(vals.size())};
    return constant(name, Tensor::from_vector<float>(shape, vals));
  }
  ir::Value* iconst(const std::string& name, std::vector<int64_t> vals, bool scalar = false) {
    Shape shape = scalar ? Shape{} : Shape{static_cast<int64_t>(vals.size())};
    return constant(name, Tensor::from_vector<int64_t>(shape, vals));
  }
  /// A node with `nout` outputs named "<name>" (or "<name>_<i>"); returns it.
  ir::Node* node_n(ir::OpKind op, std::vector<ir::Value*> ins, const std::string& name, size_t nout,
                   Attrs attrs = {}) {
    std::vector<ir::Value*> outs;
    for (size_t i = 0; i < nout; ++i) outs.push_back(g.add_value(nout == 1 ? name : name + "_" + std::to_string(i)));
    ir::Node* n = g.add_node(op, std::move(ins), outs, name);
    n->set_opset(opset);
    for (auto& [k, a] : attrs) n->set_attr(k, a);
    return n;
  }
  /// A one-output node; returns its output value.
  ir::Value* node(ir::OpKind op, std::vector<ir::Value*> ins, const std::string& name, Attrs attrs = {}) {
    return node_n(op, std::move(ins), name, 1, std::move(attrs))->output(0);
  }
  void output(ir::Value* v) { g.outputs().push_back(v); }
  /// Runs shape inference (types for every value); fails the test on error.
  void infer() {
    Status s = infer_shapes(g, PassContext{});
    ASSERT_TRUE(s.ok()) << s.message() << "\n" << ir::print_graph(g);
  }
};

/// PassContext whose evaluate_node runs the tier-0 kernels, as the Session sets it.
inline PassContext folding_context() {
  PassContext ctx;
  ctx.evaluate_node = [](const ir::Node& n, const std::vector<Tensor>& in) {
    return interp::evaluate_node(n, in, interp::ExecOptions{});
  };
  return ctx;
}

/// Structural equality (names ignored) with both graphs printed on mismatch.
inline ::testing::AssertionResult same_graph(const ir::Graph& got, const ir::Graph& want) {
  if (ir::structural_hash(got) == ir::structural_hash(want)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got:\n" << ir::print_graph(got) << "want:\n" << ir::print_graph(want);
}

}  // namespace tierjit::passes::testing
