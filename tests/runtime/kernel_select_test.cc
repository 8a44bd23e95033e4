// Tests of tier-3 kernel selection: every candidate measured, the lowest best time chosen, the
// chosen generated kernel computes what tier 0 computes, and the failure cases.
#include "runtime/kernel_select.h"

#include <cmath>

#include "codegen/codegen.h"
#include "interp/evaluate_node.h"
#include "passes/partition.h"
#include "passes/pass_test_util.h"

namespace tierjit::runtime {
namespace {

using namespace passes::testing;
using ir::OpKind;

Tensor random_tensor(Shape shape, uint32_t seed) {
  Tensor t = Tensor::empty(DType::kFloat32, std::move(shape));
  uint32_t s = seed;
  for (float& v : t.span<float>()) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<float>(s >> 8) / static_cast<float>(1u << 24) * 2.f - 1.f;
  }
  return t;
}

kir::TensorSpec exact(const Tensor& t) {
  kir::TensorSpec s;
  s.dtype = t.dtype();
  s.dims = t.shape();
  s.bounds.assign(t.shape().size(), -1);
  return s;
}

// x[m, k] (fed) @ w[k, n] (constant) as one matmul region, with one call's arguments in the
// kernel ABI (region inputs in Region::inputs order, then the output) and exact tier-3 options.
struct MatMulCall {
  GraphBuilder b;
  ir::Value* x = nullptr;
  Tensor xt, wt, out;
  Expected<passes::Partition> part = Status();
  std::vector<void*> buffers;
  std::vector<int64_t> dims_arg;
  kir::LowerOptions o;
  MatMulCall(int64_t m, int64_t k, int64_t n) {
    x = b.input("x", DType::kFloat32, dims({C(m), C(k)}));
    wt = random_tensor({k, n}, 2);
    ir::Value* w = b.constant("w", wt);
    b.output(b.node(OpKind::MatMul, {x, w}, "mm"));
    b.infer();
    part = passes::partition_graph(b.g, {});
    xt = random_tensor({m, k}, 1);
    out = Tensor::zeros(DType::kFloat32, {m, n});
    o.level = kir::ShapeLevel::kExact;
    o.tier = 3;
    o.vector_lanes = codegen::host_cpu().f32_lanes();
    if (!part.ok() || part->regions.empty()) return;
    for (const ir::Value* v : part->regions[0].inputs) {
      Tensor& t = v == x ? xt : wt;
      buffers.push_back(t.raw_data());
      dims_arg.insert(dims_arg.end(), t.shape().begin(), t.shape().end());
      o.inputs.push_back(exact(t));
    }
    buffers.push_back(out.raw_data());
    dims_arg.insert(dims_arg.end(), {m, n});
    o.outputs.push_back(exact(out));
  }
};

TEST(KernelSelect, MatMulChoosesTheFastestMeasuredCandidateAndItIsCorrect) {
  MatMulCall mc(17, 64, 33);
  ASSERT_TRUE(mc.part.ok());
  ASSERT_EQ(mc.part->regions.size(), 1u);
  const passes::Region& r = mc.part->regions[0];
  ASSERT_EQ(r.kind, passes::RegionKind::kMatMulEpilogue);
  auto want = interp::evaluate_node(*r.nodes[0], {mc.xt, mc.wt}, interp::ExecOptions{});
  ASSERT_TRUE(want.ok());
  Tensor& out = mc.out;
  const std::vector<void*>& buffers = mc.buffers;
  const std::vector<int64_t>& dims_arg = mc.dims_arg;
  const kir::LowerOptions& o = mc.o;

  int library_calls = 0;
  SelectOptions so;
  so.reps = 3;
  so.min_rep_us = 200;
  so.min_search_us = 0;  // search every candidate, however fast the region
  auto sel = select_kernel(r, o, buffers, dims_arg, [&] {
    ++library_calls;
    return Status();
  }, so);
  ASSERT_TRUE(sel.ok()) << sel.status().message();
  ASSERT_GE(sel->chosen, 0);
  EXPECT_GT(library_calls, 3);  // warm-up plus every repetition
  EXPECT_TRUE(sel->searched);
  // K = 64: K blocks of 256 and 512 give the same code; each such pair is compiled once.
  EXPECT_GT(sel->duplicates, 0);
  EXPECT_EQ(sel->candidates.size() + sel->duplicates,
            kir::tuning_candidates(r, o).size() + 1);  // + the library
  for (const KernelCandidate& c : sel->candidates) {
    if (c.status.ok()) {
      EXPECT_LE(sel->choice().best_us, c.best_us) << c.name;
    }
  }
  EXPECT_NE(sel->summary().find("chose"), std::string::npos) << sel->summary();
  if (!sel->choice().library) {
    ASSERT_NE(sel->kernel.fn, nullptr);
    std::vector<void*> args = buffers;
    Tensor ws;
    if (sel->lowered.workspace_bytes > 0) {
      ws = Tensor::empty(DType::kUInt8, {sel->lowered.workspace_bytes});
      args.push_back(ws.raw_data());
    }
    std::fill(out.span<float>().begin(), out.span<float>().end(), 0.f);
    sel->kernel(args.data(), dims_arg.data());
    auto got = out.span<const float>();
    auto ref = (*want)[0].span<const float>();
    // K = 64 products per element, float32: summation order differs from oneDNN's.
    for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(got[i], ref[i], 1e-4 + 1e-4 * std::fabs(ref[i])) << i;
  }
}

TEST(KernelSelect, ARegionUnderTheSearchThresholdKeepsTheDefaultAndTheLibrary) {
  MatMulCall mc(2, 4, 3);
  ASSERT_TRUE(mc.part.ok());
  const passes::Region& r = mc.part->regions[0];
  const kir::LowerOptions& o = mc.o;
  const std::vector<void*>& buffers = mc.buffers;
  const std::vector<int64_t>& dims_arg = mc.dims_arg;
  ASSERT_GT(kir::tuning_candidates(r, o).size(), 2u);
  SelectOptions so;
  so.reps = 2;
  so.min_rep_us = 50;
  so.min_search_us = 1e6;  // every region is "fast": nothing beyond the default is compiled
  auto sel = select_kernel(r, o, buffers, dims_arg, [] { return Status(); }, so);
  ASSERT_TRUE(sel.ok()) << sel.status().message();
  EXPECT_FALSE(sel->searched);
  ASSERT_EQ(sel->candidates.size(), 2u);
  EXPECT_TRUE(sel->candidates[0].tuning.empty());
  EXPECT_TRUE(sel->candidates[1].library);
  EXPECT_EQ(sel->unsearched, static_cast<int>(kir::tuning_candidates(r, o).size()) - 1);
  EXPECT_NE(sel->summary().find("not tried"), std::string::npos) << sel->summary();
}

// Conv regions: a 1x1, stride-1, unpadded product or a K = C x KH x KW <= 32 offers tuning
// candidates; other convolutions run the kernel layer's tiles only.
TEST(KernelSelect, ConvTuningCandidatesForOneByOneProductsAndSmallK) {
  for (auto [c, k, stride, pad, want_knobs] :
       {std::tuple<int64_t, int64_t, int64_t, int64_t, bool>{48, 1, 1, 0, true},
        {48, 3, 1, 1, false}, {48, 1, 2, 0, false}, {48, 1, 1, 1, false}, {1, 3, 1, 1, true},
        {3, 3, 2, 1, true}, {4, 3, 1, 1, false}}) {
    GraphBuilder b;
    ir::Value* x = b.input("x", DType::kFloat32, dims({C(1), C(c), C(6), C(6)}));
    ir::Value* w = b.constant("w", random_tensor({16, c, k, k}, 3));
    b.output(b.node(OpKind::Conv, {x, w}, "conv",
                    {{"strides", attr_ints({stride, stride})},
                     {"pads", attr_ints({pad, pad, pad, pad})}}));
    b.infer();
    auto part = passes::partition_graph(b.g, {});
    ASSERT_TRUE(part.ok());
    ASSERT_EQ(part->regions[0].anchor->op(), OpKind::Conv);
    kir::LowerOptions o;
    o.vector_lanes = 16;
    EXPECT_EQ(kir::tuning_candidates(part->regions[0], o).size() > 1, want_knobs)
        << "C " << c << " k " << k << " stride " << stride << " pad " << pad;
  }
}

// A region with no lowering (NonZero: an opaque region) and its lowering options.
struct NonZeroRegion {
  GraphBuilder b;
  Expected<passes::Partition> part = Status();
  kir::LowerOptions options;
  NonZeroRegion() {
    ir::Value* x = b.input("x", DType::kFloat32, dims({C(3)}));
    b.output(b.node(OpKind::NonZero, {x}, "nz"));
    b.infer();
    part = passes::partition_graph(b.g, {});
    options.inputs.push_back({DType::kFloat32, {3}, {-1}});
    options.outputs.push_back({DType::kInt64, {1, -1}, {-1, -1}});
  }
};

TEST(KernelSelect, NoCandidateAndNoLibraryIsUnsupported) {
  NonZeroRegion nz;
  ASSERT_TRUE(nz.part.ok());
  const kir::LowerOptions& o = nz.options;
  auto sel = select_kernel(nz.part->regions[0], o, {}, {}, nullptr);
  ASSERT_FALSE(sel.ok());
  EXPECT_EQ(sel.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(sel.status().message().find("no kernel candidate"), std::string::npos) << sel.status().message();
}

TEST(KernelSelect, LibraryErrorIsReturned) {
  NonZeroRegion nz;
  ASSERT_TRUE(nz.part.ok());
  const kir::LowerOptions& o = nz.options;
  auto sel = select_kernel(nz.part->regions[0], o, {}, {}, [] { return internal_error("boom"); });
  ASSERT_FALSE(sel.ok());
  EXPECT_EQ(sel.status().message(), "boom");
}

}  // namespace
}  // namespace tierjit::runtime
