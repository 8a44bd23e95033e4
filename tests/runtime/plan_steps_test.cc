// Tier-0 plan steps (runtime/plan.cc): one step per region, a shape-only region's values bound
// at the start of the call. A model of opaque regions (Transpose, Reshape, Gather, NonZero), a
// shape-only region in the middle of them and an elementwise region: its plan gives run_graph's
// outputs for new values of the same shapes, bit for bit (the same tier-0 kernels run), times
// every step, and notices a data-dependent shape (NonZero's count) changing from the recorded one.
#include <gtest/gtest.h>

#include <cstring>

#include "interp/evaluate_node.h"
#include "interp/executor.h"
#include "onnx/loader.h"
#include "onnx/model_builder.h"
#include "passes/partition.h"
#include "passes/pipeline.h"
#include "runtime/plan.h"

namespace tierjit {
namespace {

using namespace onnx_test;  // NOLINT

constexpr int32_t kF32 = onnx::TensorProto_DataType_FLOAT;

// x[N, S] -> Transpose -> t[S, N]; Shape(x) -> Gather([1, 0]) -> sh (shape-only); Reshape(t,
// sh) -> Transpose -> u[N, S]; e = Relu(u + x) (elementwise); y = Gather(e, [0, 0], axis 1)
// [N, 2]; z = Transpose(NonZero(x)) int64[K, 2].
std::string write_model(const TempDir& dir) {
  onnx::GraphProto g;
  add_input(g, "x", kF32, {"N", "S"});
  add_int64_init(g, "perm", {1, 0});
  add_int64_init(g, "cols", {0, 0});
  attr_ints(add_node(g, "Transpose", {"x"}, {"t"}), "perm", {1, 0});
  add_node(g, "Shape", {"x"}, {"shape"});
  add_node(g, "Gather", {"shape", "perm"}, {"sh"});
  add_node(g, "Reshape", {"t", "sh"}, {"r"});
  attr_ints(add_node(g, "Transpose", {"r"}, {"u"}), "perm", {1, 0});
  add_node(g, "Add", {"u", "x"}, {"a"});
  add_node(g, "Relu", {"a"}, {"e"});
  attr_int(add_node(g, "Gather", {"e", "cols"}, {"y"}), "axis", 1);
  add_node(g, "NonZero", {"x"}, {"nz"});
  attr_ints(add_node(g, "Transpose", {"nz"}, {"z"}), "perm", {1, 0});
  add_output(g, "y", kF32, {"N", 2});
  add_output(g, "z", onnx::TensorProto_DataType_INT64, {"K", 2});
  dir.write("plan_steps.onnx", serialize(make_model(g)));
  return dir.file("plan_steps.onnx");
}

// x[n, s]: values (i % 5) - 2 + seed / 8, a zero wherever i % 5 == 2 unless seed moves them.
Tensor input(int64_t n, int64_t s, int seed) {
  Tensor t = Tensor::empty(DType::kFloat32, {n, s});
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i)
    p[i] = static_cast<float>(i % 5) - 2.f + static_cast<float>(seed % 3 == 2 ? 0 : seed) / 8.f;
  return t;
}

void expect_identical(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), want.nbytes()), 0);
}

TEST(PlanSteps, OneStepPerRegionAcrossShapeOnlySteps) {
  TempDir dir{"plan_steps"};
  auto model = onnx_import::load_model(write_model(dir));
  ASSERT_TRUE(model.ok()) << model.status().message();
  passes::PassContext pctx;  // as Session does: shape inference finds the shape-only region
  pctx.evaluate_node = [](const ir::Node& node, const std::vector<Tensor>& inputs) {
    return interp::evaluate_node(node, inputs, interp::ExecOptions{});
  };
  ASSERT_TRUE(passes::run_tier0_pipeline(*model.value().graph, pctx).ok());
  const ir::Graph& g = *model.value().graph;
  auto part = passes::partition_graph(g, passes::PartitionOptions{});
  ASSERT_TRUE(part.ok()) << part.status().message();
  bool shape_only = false;
  for (const passes::Region& r : part.value().regions)
    shape_only = shape_only || r.kind == passes::RegionKind::kShapeOnly;
  ASSERT_TRUE(shape_only) << "the model must hold a shape-only region";
  {
    const runtime::GraphLayout layout = runtime::make_layout(g, part.value(), interp::ExecOptions{});
    for (const int64_t n : {1, 3}) {
      const Tensor first = input(n, 7, 0);
      runtime::Recording rec;
      ASSERT_TRUE(runtime::record_call(layout, {first}, false, rec).ok());
      runtime::Signature sig;
      sig.add_input(first.dtype(), first.shape());
      auto plan = runtime::Plan::make(layout, sig, rec, {});
      const auto& steps = plan->steps();
      ASSERT_EQ(steps.size(), part.value().regions.size()) << "one step per region";
      for (size_t s = 0; s < steps.size(); ++s) {
        const passes::Region& r = part.value().regions[s];
        EXPECT_EQ(steps[s].kind, r.kind == passes::RegionKind::kShapeOnly ? runtime::StepKind::kBound
                                                                          : runtime::StepKind::kTier0);
        if (steps[s].kind == runtime::StepKind::kTier0) {
          EXPECT_EQ(steps[s].nodes.size(), r.nodes.size());
        }
      }
      for (int seed = 1; seed <= 3; ++seed) {
        SCOPED_TRACE(::testing::Message() << "n " << n << ", seed " << seed);
        const Tensor x = input(n, 7, seed);
        auto want = interp::run_graph(g, {x}, interp::ExecOptions{});
        ASSERT_TRUE(want.ok()) << want.status().message();
        std::vector<double> step_us(steps.size(), -1);
        bool shape_changed = false;
        auto got = plan->run({x}, &shape_changed, step_us.data());
        ASSERT_TRUE(got.ok()) << got.status().message();
        // seed 2 keeps the recorded zeros (same NonZero count); 1 and 3 move every value off 0.
        EXPECT_EQ(shape_changed, seed != 2);
        if (shape_changed) continue;
        ASSERT_EQ(got.value().size(), 2u);
        for (size_t o = 0; o < 2; ++o) expect_identical(got.value()[o], want.value()[o]);
        for (double us : step_us) EXPECT_GE(us, 0) << "every step gets a time";
      }
    }
  }
}

}  // namespace
}  // namespace tierjit
