// Tier 0 runs each Region's ops one at a time (DESIGN.md "Tier"): fusion is decided once, by the
// partitioner, and only the compiled tiers generate fused code. A model whose partition fuses a
// Conv with its Relu, a MatMul with its bias Add, an erf-GELU chain, a residual Add with its
// LayerNormalization and a Softmax with its scale/mask prologue runs, on every tier-0 path
// (run_nodes over each Region, the recording call, Plan::run, the interpret-only GraphRunner and
// both Session modes), every node through its own kernel exactly once per call, in the Region's
// order (counted through interp::set_kernel_observer_for_testing), and every node's output is a
// value of its own in the frame, equal bit for bit to that node's kernel alone on its inputs
// (a Conv's output keeps its negative values: no activation was applied in its place).
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "interp/evaluate_node.h"
#include "interp/executor.h"
#include "onnx/loader.h"
#include "onnx/model_builder.h"
#include "passes/partition.h"
#include "passes/pipeline.h"
#include "runtime/plan.h"
#include "tierjit/session.h"

namespace tierjit {
namespace {

using namespace onnx_test;  // NOLINT

constexpr int32_t kF32 = onnx::TensorProto_DataType_FLOAT;

std::vector<float> ramp(size_t n, float scale, float shift = 0.f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * (static_cast<float>(i % 7) - 3.f) + shift;
  return v;
}

// img[N,3,6,6] -> Conv(3->4, 3x3, pad 1) -> Relu -> img_out
// h[N,8] -> MatMul(w[8,8]) -> Add(b) -> erf-GELU (Div, Erf, Add, Mul, Mul) -> Add(h) ->
//   LayerNormalization -> ln_out
// scores[N,2,5,5] -> Div(8) -> Add(mask[1,1,1,5]) -> Softmax -> probs
std::string write_model(const TempDir& dir) {
  onnx::GraphProto g;
  add_input(g, "img", kF32, {"N", 3, 6, 6});
  add_input(g, "h", kF32, {"N", 8});
  add_input(g, "scores", kF32, {"N", 2, 5, 5});
  add_float_init(g, "cw", {4, 3, 3, 3}, ramp(4 * 3 * 9, 0.1f));
  add_float_init(g, "cb", {4}, {0.5f, -0.5f, 0.25f, -1.f});
  add_float_init(g, "w", {8, 8}, ramp(64, 0.2f));
  add_float_init(g, "b", {8}, ramp(8, 0.1f));
  add_float_init(g, "sqrt2", {}, {1.4142135f});
  add_float_init(g, "one", {}, {1.f});
  add_float_init(g, "half", {}, {0.5f});
  add_float_init(g, "gamma", {8}, ramp(8, 0.1f, 1.f));
  add_float_init(g, "beta", {8}, ramp(8, 0.05f));
  add_float_init(g, "eight", {}, {8.f});
  add_float_init(g, "mask", {1, 1, 1, 5}, {0.f, 0.f, -1e4f, 0.f, -1e4f});
  attr_ints(add_node(g, "Conv", {"img", "cw", "cb"}, {"conv"}, "conv"), "pads", {1, 1, 1, 1});
  add_node(g, "Relu", {"conv"}, {"img_out"}, "relu");
  add_node(g, "MatMul", {"h", "w"}, {"mm"}, "matmul");
  add_node(g, "Add", {"mm", "b"}, {"mmb"}, "bias_add");
  add_node(g, "Div", {"mmb", "sqrt2"}, {"g_div"}, "gelu_div");
  add_node(g, "Erf", {"g_div"}, {"g_erf"}, "gelu_erf");
  add_node(g, "Add", {"g_erf", "one"}, {"g_add"}, "gelu_add");
  add_node(g, "Mul", {"mmb", "g_add"}, {"g_mul"}, "gelu_mul");
  add_node(g, "Mul", {"g_mul", "half"}, {"gelu"}, "gelu_scale");
  add_node(g, "Add", {"gelu", "h"}, {"res"}, "residual_add");
  add_node(g, "LayerNormalization", {"res", "gamma", "beta"}, {"ln_out"}, "layer_norm");
  add_node(g, "Div", {"scores", "eight"}, {"scaled"}, "scale_div");
  add_node(g, "Add", {"scaled", "mask"}, {"masked"}, "mask_add");
  attr_int(add_node(g, "Softmax", {"masked"}, {"probs"}, "softmax"), "axis", -1);
  add_output(g, "img_out", kF32, {"N", 4, 6, 6});
  add_output(g, "ln_out", kF32, {"N", 8});
  add_output(g, "probs", kF32, {"N", 2, 5, 5});
  dir.write("op_by_op.onnx", serialize(make_model(g)));
  return dir.file("op_by_op.onnx");
}

std::vector<Tensor> feeds(int64_t n) {
  return {Tensor::from_vector<float>({n, 3, 6, 6}, ramp(static_cast<size_t>(n * 108), 0.7f)),
          Tensor::from_vector<float>({n, 8}, ramp(static_cast<size_t>(n * 8), 0.9f, 0.1f)),
          Tensor::from_vector<float>({n, 2, 5, 5}, ramp(static_cast<size_t>(n * 50), 2.f))};
}

// Kernel runs seen by the observer: node names in order.
std::mutex g_mu;
std::vector<std::string> g_seen;
void observe(const ir::Node& n) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_seen.push_back(n.name());
}
std::vector<std::string> take_seen() {
  std::lock_guard<std::mutex> lock(g_mu);
  return std::exchange(g_seen, {});
}
struct Observing {
  Observing() {
    take_seen();
    interp::set_kernel_observer_for_testing(observe);
  }
  ~Observing() { interp::set_kernel_observer_for_testing(nullptr); }
};

std::map<std::string, int> counts(const std::vector<std::string>& names) {
  std::map<std::string, int> c;
  for (const std::string& n : names) ++c[n];
  return c;
}

// Every node of `g` ran exactly `calls` times.
void expect_each_node_ran(const ir::Graph& g, const std::vector<std::string>& seen, int calls) {
  const std::map<std::string, int> c = counts(seen);
  EXPECT_EQ(seen.size(), g.nodes().size() * static_cast<size_t>(calls));
  for (const auto& n : g.nodes()) {
    auto it = c.find(n->name());
    EXPECT_EQ(it == c.end() ? 0 : it->second, calls) << "node " << n->name();
  }
}

struct Loaded {
  TempDir dir{"op_by_op"};
  std::string path;
  ir::Model model;
  passes::Partition partition;
};

void load(Loaded& l) {
  l.path = write_model(l.dir);
  auto model = onnx_import::load_model(l.path);
  ASSERT_TRUE(model.ok()) << model.status().message();
  l.model = std::move(model.value());
  passes::PassContext pctx;  // as Session does
  pctx.evaluate_node = [](const ir::Node& node, const std::vector<Tensor>& inputs) {
    return interp::evaluate_node(node, inputs, interp::ExecOptions{});
  };
  ASSERT_TRUE(passes::run_tier0_pipeline(*l.model.graph, pctx).ok());
  auto part = passes::partition_graph(*l.model.graph, passes::PartitionOptions{});
  ASSERT_TRUE(part.ok()) << part.status().message();
  l.partition = std::move(part.value());
}

// The region holding the node named `name`.
const passes::Region* region_of(const passes::Partition& p, const std::string& name) {
  for (const passes::Region& r : p.regions)
    for (const ir::Node* n : r.nodes)
      if (n->name() == name) return &r;
  return nullptr;
}

TEST(Tier0OpByOp, TheModelsRegionsAreFused) {
  Loaded l;
  ASSERT_NO_FATAL_FAILURE(load(l));
  const std::vector<std::vector<std::string>> fused = {
      {"conv", "relu"},
      {"matmul", "bias_add"},
      {"gelu_div", "gelu_erf", "gelu_add", "gelu_mul", "gelu_scale"},
      {"residual_add", "layer_norm"},
      {"scale_div", "mask_add", "softmax"}};
  for (const auto& group : fused) {
    const passes::Region* r = region_of(l.partition, group[0]);
    ASSERT_NE(r, nullptr) << group[0];
    for (const std::string& name : group)
      EXPECT_EQ(region_of(l.partition, name), r) << name << " shares " << group[0] << "'s region";
  }
}

TEST(Tier0OpByOp, EachRegionsNodesRunOneAtATimeAndKeepTheirOwnValues) {
  Loaded l;
  ASSERT_NO_FATAL_FAILURE(load(l));
  const ir::Graph& g = *l.model.graph;
  interp::Frame frame;
  interp::init_frame(frame, g);
  const std::vector<Tensor> in = feeds(2);
  const std::vector<ir::Value*> fi = g.feed_inputs();
  for (size_t i = 0; i < fi.size(); ++i) frame.values[fi[i]->id()] = in[i];
  Observing obs;
  for (const passes::Region& r : l.partition.regions) {
    SCOPED_TRACE("region " + r.name);
    ASSERT_TRUE(interp::run_nodes(r.nodes, frame, interp::ExecOptions{}).ok());
    std::vector<std::string> want;
    for (const ir::Node* n : r.nodes) want.push_back(n->name());
    EXPECT_EQ(take_seen(), want) << "each node's kernel once, in the region's order";
    for (const ir::Node* n : r.nodes) {
      std::vector<Tensor> ins;
      for (const ir::Value* v : n->inputs()) ins.push_back(v ? frame.values[v->id()] : Tensor());
      auto alone = interp::evaluate_node(*n, ins, interp::ExecOptions{});
      ASSERT_TRUE(alone.ok()) << alone.status().message();
      const Tensor& got = frame.values[n->output(0)->id()];
      const Tensor& want_t = alone.value()[0];
      ASSERT_TRUE(got.defined()) << n->name() << "'s output is materialized";
      ASSERT_EQ(got.shape(), want_t.shape()) << n->name();
      EXPECT_EQ(std::memcmp(got.raw_data(), want_t.raw_data(), want_t.nbytes()), 0)
          << n->name() << "'s output is its own kernel's";
    }
  }
  // The Conv's output is the convolution alone (it has negative values; the Relu's has none).
  const Tensor& conv = frame.values[find_value(g, "conv")->id()];
  bool negative = false;
  for (int64_t i = 0; i < conv.numel(); ++i) negative = negative || conv.data<float>()[i] < 0.f;
  EXPECT_TRUE(negative);
}

TEST(Tier0OpByOp, RecordingPlansAndGraphRunnerRunEveryNodeOncePerCall) {
  Loaded l;
  ASSERT_NO_FATAL_FAILURE(load(l));
  const ir::Graph& g = *l.model.graph;
  const runtime::GraphLayout layout = runtime::make_layout(g, l.partition, interp::ExecOptions{});
  Observing obs;
  for (const bool keep_all : {false, true}) {
    runtime::Recording rec;
    ASSERT_TRUE(runtime::record_call(layout, feeds(2), keep_all, rec).ok());
    expect_each_node_ran(g, take_seen(), 1);
    if (keep_all) {
      for (const auto& n : g.nodes())
        EXPECT_TRUE(rec.frame.values[n->output(0)->id()].defined()) << n->name() << " kept";
    }
    runtime::Signature sig;
    for (const Tensor& t : feeds(2)) sig.add_input(t.dtype(), t.shape());
    auto plan = runtime::Plan::make(layout, sig, rec, {});
    for (const runtime::PlanStep& st : plan->steps()) {
      if (st.kind == runtime::StepKind::kTier0) {
        EXPECT_EQ(st.nodes.size(), l.partition.regions[static_cast<size_t>(st.region)].nodes.size())
            << "a tier-0 step runs its own region's nodes";
      }
    }
    bool changed = false;
    for (int call = 0; call < 3; ++call) ASSERT_TRUE(plan->run(feeds(2), &changed).ok());
    EXPECT_FALSE(changed);
    expect_each_node_ran(g, take_seen(), 3);
  }
  interp::GraphRunner runner(g);
  for (const int64_t n : {1, 3}) ASSERT_TRUE(runner.run(feeds(n), interp::ExecOptions{}).ok());
  expect_each_node_ran(g, take_seen(), 2);
}

TEST(Tier0OpByOp, SessionsRunEveryNodeOncePerCall) {
  Loaded l;
  ASSERT_NO_FATAL_FAILURE(load(l));
  SessionOptions interpret, adaptive;
  interpret.mode = ExecutionMode::kInterpretOnly;
  adaptive.theta0 = 1e18;  // adaptive mode, every region stays on tier 0
  for (const SessionOptions& o : {interpret, adaptive}) {
    const Session s(l.path, o);
    Observing obs;
    for (const int64_t n : {2, 2, 1, 2}) {
      const std::vector<Tensor> in = feeds(n);
      const NamedTensors out = s.run({{"img", in[0]}, {"h", in[1]}, {"scores", in[2]}});
      ASSERT_EQ(out.size(), 3u);
    }
    expect_each_node_ran(*l.model.graph, take_seen(), 4);
  }
}

}  // namespace
}  // namespace tierjit
