// Test helper shared by the conv chain tests (conv_chain_test.cc, conv_chain_clip_test.cc): a
// graph built node by node whose every value is also computed with the one-node tier-0 kernels
// on the way (`ref`: the reference, tier 0 without any fusion), and a float32 random tensor.
#pragma once

#include <limits>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "ir/graph.h"
#include "node_runner.h"

namespace tierjit::testing {

/// Uniform floats in [-scale, scale) from `seed`; NaN at every `nan_every`-th element when > 0.
inline Tensor random_f32(Shape s, uint32_t seed, int64_t nan_every = 0, float scale = 1.0f) {
  Tensor t = Tensor::empty(DType::kFloat32, std::move(s));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-scale, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  if (nan_every > 0)
    for (int64_t i = 0; i < t.numel(); i += nan_every)
      t.data<float>()[i] = std::numeric_limits<float>::quiet_NaN();
  return t;
}

/// A graph and the reference value of each of its values (see the file comment). `ok` turns
/// false (and the test fails) when a node's kernel rejects its inputs.
class RefGraphBuilder {
 public:
  using Attrs = std::vector<std::pair<std::string, ir::Attribute>>;
  explicit RefGraphBuilder(const std::string& name) : g{name} {}

  ir::Graph g;
  std::map<const ir::Value*, Tensor> ref;
  std::vector<Tensor> feeds;
  bool ok = true;

  ir::Value* input(const Tensor& t) {
    ir::Value* v = g.add_value("x" + std::to_string(count_++), {t.dtype(), std::nullopt});
    g.inputs().push_back(v);
    feeds.push_back(t);
    ref[v] = t;
    return v;
  }
  ir::Value* constant(const Tensor& t) {
    ir::Value* v = g.add_value("c" + std::to_string(count_++), {t.dtype(), std::nullopt});
    v->set_constant(t);
    ref[v] = t;
    return v;
  }
  ir::Value* node(ir::OpKind op, std::vector<ir::Value*> in, Attrs attrs = {}, int opset = 17) {
    ir::Value* out = g.add_value("v" + std::to_string(count_++));
    ir::Node* n = g.add_node(op, in, {out}, "n" + std::to_string(count_++));
    n->set_opset(opset);
    for (const auto& [k, a] : attrs) n->set_attr(k, a);
    NodeSpec spec{op, {}, 1, attrs, opset};
    for (ir::Value* v : in) spec.inputs.push_back(v ? ref[v] : Tensor());
    auto r = run_node(spec);
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (r.ok()) ref[out] = (*r)[0];
    else ok = false;
    return out;
  }
  void output(ir::Value* v) { g.outputs().push_back(v); }

 private:
  int count_ = 0;
};

}  // namespace tierjit::testing
