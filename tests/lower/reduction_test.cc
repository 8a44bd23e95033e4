// Differential tests of the reduction lowering (kir/lower/lower_reduction*.cc) against tier 0:
// ReduceSum/Mean/Max/Min, Softmax, LogSoftmax, LayerNormalization with prologues and epilogues,
// at exact / shape-class / generic level and tiers 1 and 2 (lower_test_util.h), on size-0,
// size-1, odd (37, 1023) and long (2^17) reduced dims, every axis, keepdims 0/1, NaN.
// Tolerances: Max/Min are exact (bit for bit). Sums accumulate in float64 like tier 0 and differ
// only in summation order before the final float32 rounding: rtol 1e-6. Softmax adds the
// vectorized exp (<= 1 ulp, docs/codegen.md): rtol 4e-6. LogSoftmax subtracts nearly equal
// numbers at the row maximum: atol 2e-6. LayerNorm: float32 affine step on statistics that may
// round differently by 1 ulp: rtol/atol 2e-5 (relative to |y| ~ 1).
#include <cmath>
#include <limits>

#include "lower_test_util.h"

namespace tierjit::lower_testing {
namespace {

using ir::OpKind;
using passes::testing::Attrs;
using passes::testing::attr_float;
using passes::testing::attr_int;
using passes::testing::attr_ints;
using passes::testing::C;
using passes::testing::S;

constexpr Tolerance kExact{0, 0};
constexpr Tolerance kSum{1e-6, 1e-6};
constexpr Tolerance kSoftmax{4e-6, 1e-12};
constexpr Tolerance kLogSoftmax{1e-6, 2e-6};
constexpr Tolerance kNorm{2e-5, 2e-5};
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

DiffOptions opts(Tolerance tol) {
  DiffOptions o;
  o.kinds = {passes::RegionKind::kReduction};
  o.tol = tol;
  return o;
}

/// Symbolic shape "d0, d1, ..." of rank n (every dim dynamic in the graph).
ir::SymShape sym(size_t n, const std::string& prefix = "d") {
  ir::SymShape s;
  for (size_t i = 0; i < n; ++i) s.push_back(S((prefix + std::to_string(i)).c_str()));
  return s;
}

/// x with a few NaNs at fixed positions.
Tensor with_nans(Tensor t) {
  auto s = t.span<float>();
  for (size_t i = 3; i < s.size(); i += 101) s[i] = kNaN;
  return t;
}

Tolerance reduce_tol(OpKind op) {
  return op == OpKind::ReduceMax || op == OpKind::ReduceMin ? kExact : kSum;
}

// One Reduce node over a feed of `shape`; axes as attribute (opset 11) or input (opset 18).
void check_reduce(OpKind op, Shape shape, std::vector<int64_t> axes, int keepdims, int opset,
                  bool nans = false, int noop = 0) {
  SCOPED_TRACE(std::string(ir::op_name(op)) + " opset " + std::to_string(opset) + " keepdims " +
               std::to_string(keepdims));
  GraphBuilder b;
  b.opset = opset;
  ir::Value* x = b.input("x", DType::kFloat32, sym(shape.size()));
  Attrs attrs = {{"keepdims", attr_int(keepdims)}};
  if (noop) attrs.push_back({"noop_with_empty_axes", attr_int(noop)});
  std::vector<ir::Value*> ins = {x};
  const bool as_input = opset >= 18 || (op == OpKind::ReduceSum && opset >= 13);
  if (as_input) {
    if (!axes.empty()) ins.push_back(b.iconst("axes", axes));
  } else if (!axes.empty()) {
    attrs.push_back({"axes", attr_ints(axes)});
  }
  b.output(b.node(op, ins, "r", attrs));
  b.infer();
  Tensor feed = random_f32(shape, 7);
  if (nans) feed = with_nans(feed);
  expect_all_levels_match(b.g, {feed}, opts(reduce_tol(op)));
}

TEST(ReductionLowering, ReduceEveryAxisAndKeepdims) {
  for (OpKind op : {OpKind::ReduceSum, OpKind::ReduceMean, OpKind::ReduceMax, OpKind::ReduceMin})
    for (int keep : {0, 1}) {
      check_reduce(op, {3, 37, 5}, {1}, keep, 11);
      check_reduce(op, {3, 37, 5}, {0}, keep, 18);
      check_reduce(op, {3, 37, 5}, {-1}, keep, 18);
      check_reduce(op, {3, 37, 5}, {0, 2}, keep, 11);
      check_reduce(op, {4, 1023}, {}, keep, 18);  // every axis
    }
}

TEST(ReductionLowering, ReduceSumAxesInputOpset13AndNoop) {
  check_reduce(OpKind::ReduceSum, {5, 9}, {1}, 1, 13);
  check_reduce(OpKind::ReduceSum, {5, 9}, {}, 1, 13, false, /*noop=*/1);
  check_reduce(OpKind::ReduceMax, {5, 9}, {}, 0, 18, false, /*noop=*/1);
}

TEST(ReductionLowering, ReduceSizeZeroAndOne) {
  for (OpKind op : {OpKind::ReduceSum, OpKind::ReduceMean, OpKind::ReduceMax, OpKind::ReduceMin}) {
    check_reduce(op, {0, 5}, {0}, 1, 18);  // empty reduction: the identity (mean NaN)
    check_reduce(op, {4, 0}, {1}, 0, 18);
    check_reduce(op, {0, 5}, {1}, 0, 18);  // empty output
    check_reduce(op, {1, 37, 1}, {1}, 1, 18);
    check_reduce(op, {6, 1}, {1}, 0, 18);
    check_reduce(op, {1, 1}, {0, 1}, 1, 18);
  }
}

TEST(ReductionLowering, ReduceLongAndNaN) {
  for (OpKind op : {OpKind::ReduceSum, OpKind::ReduceMean, OpKind::ReduceMax, OpKind::ReduceMin}) {
    check_reduce(op, {2, (1 << 17) + 3}, {1}, 0, 18);
    check_reduce(op, {3, 37, 5}, {1}, 1, 18, /*nans=*/true);
    check_reduce(op, {3, 37, 9}, {2}, 1, 18, /*nans=*/true);
  }
  check_reduce(OpKind::ReduceSum, {(1 << 17) + 1, 3}, {0}, 0, 18);  // long column reduction
}

TEST(ReductionLowering, ReduceSumOfOnesIsExactOnLongRows) {
  // 2^20 ones: a float32 running sum would still be exact here, so add 0.1s: float32 sequential
  // accumulation drifts by ~1e-3 relative, float64 by none visible in float32.
  GraphBuilder b;
  b.opset = 18;
  ir::Value* x = b.input("x", DType::kFloat32, sym(2));
  b.output(b.node(OpKind::ReduceSum, {x, b.iconst("axes", {1})}, "r", {{"keepdims", attr_int(0)}}));
  b.infer();
  Tensor feed = Tensor::empty(DType::kFloat32, {2, 1 << 20});
  for (float& v : feed.span<float>()) v = 0.1f;
  expect_all_levels_match(b.g, {feed}, opts(Tolerance{1e-7, 0}));
}

// One Softmax/LogSoftmax node.
void check_softmax(OpKind op, Shape shape, int64_t axis, int opset, bool nans = false,
                   float scale = 1.f) {
  SCOPED_TRACE(std::string(ir::op_name(op)) + " opset " + std::to_string(opset) + " axis " +
               std::to_string(axis));
  GraphBuilder b;
  b.opset = opset;
  ir::Value* x = b.input("x", DType::kFloat32, sym(shape.size()));
  b.output(b.node(op, {x}, "y", {{"axis", attr_int(axis)}}));
  b.infer();
  Tensor feed = random_f32(shape, 11, -scale, scale);
  if (nans) feed = with_nans(feed);
  expect_all_levels_match(b.g, {feed}, opts(op == OpKind::Softmax ? kSoftmax : kLogSoftmax));
}

TEST(ReductionLowering, SoftmaxEveryAxisBothOpsetForms) {
  for (OpKind op : {OpKind::Softmax, OpKind::LogSoftmax}) {
    for (int64_t axis : {0, 1, 2, -1}) check_softmax(op, {3, 37, 5}, axis, 13);
    for (int64_t axis : {0, 1, 2, 3}) check_softmax(op, {3, 37, 5}, axis, 11);  // 2-D coercion
    check_softmax(op, {2, 1023}, -1, 13);
  }
}

TEST(ReductionLowering, SoftmaxSizeZeroOneLongNaNLarge) {
  for (OpKind op : {OpKind::Softmax, OpKind::LogSoftmax}) {
    check_softmax(op, {0, 7}, -1, 13);
    check_softmax(op, {5, 0}, -1, 13);
    check_softmax(op, {1, 1}, -1, 13);
    check_softmax(op, {4, 1}, 0, 13);
    check_softmax(op, {7, 1}, -1, 13);
    check_softmax(op, {2, (1 << 17) + 5}, -1, 13);
    check_softmax(op, {3, 37, 5}, 1, 13, /*nans=*/true);
    check_softmax(op, {3, 37}, -1, 13, /*nans=*/true);
    check_softmax(op, {3, 37}, -1, 13, false, /*scale=*/200.f);  // exp would overflow unshifted
  }
}

// LayerNormalization (opset 17): X [shape], Scale/B over dims [axis, rank) (or `scale_shape`).
void check_layernorm(Shape shape, int64_t axis, bool bias, bool stats, Shape scale_shape = {},
                     bool nans = false) {
  SCOPED_TRACE("LayerNormalization axis " + std::to_string(axis));
  GraphBuilder b;
  const int64_t n = static_cast<int64_t>(shape.size());
  const int64_t a = axis < 0 ? axis + n : axis;
  if (scale_shape.empty()) scale_shape.assign(shape.begin() + a, shape.end());
  ir::Value* x = b.input("x", DType::kFloat32, sym(shape.size()));
  ir::Value* s = b.constant("scale", random_f32(scale_shape, 3, 0.5f, 1.5f));
  std::vector<ir::Value*> ins = {x, s};
  if (bias) ins.push_back(b.constant("bias", random_f32(scale_shape, 4)));
  ir::Node* ln = b.node_n(OpKind::LayerNormalization, ins, "ln", stats ? 3 : 1,
                          {{"axis", attr_int(axis)}, {"epsilon", attr_float(1e-3f)}});
  for (ir::Value* o : ln->outputs()) b.output(o);
  b.infer();
  Tensor feed = random_f32(shape, 5, -2.f, 3.f);
  if (nans) feed = with_nans(feed);
  expect_all_levels_match(b.g, {feed}, opts(kNorm));
}

TEST(ReductionLowering, LayerNorm) {
  check_layernorm({4, 37}, -1, true, false);
  check_layernorm({4, 37}, -1, false, true);
  check_layernorm({2, 3, 37}, 1, true, true);
  check_layernorm({2, 3, 37}, 1, true, false, {37});  // Scale broadcast over the axis-1 dim
  check_layernorm({2, 3, 1023}, -1, true, true, {}, /*nans=*/true);
  check_layernorm({3, 1}, -1, true, true);
  check_layernorm({0, 8}, -1, true, true);
  check_layernorm({4, 0}, -1, true, true, {1});
  check_layernorm({2, (1 << 17) + 7}, -1, true, true);
}

TEST(ReductionLowering, AttentionScoresDivMaskSoftmax) {
  // scores [B, H, S, S] / sqrt(d) + mask [B, 1, 1, S] -> Softmax(-1): one reduction region.
  GraphBuilder b;
  b.opset = 13;
  ir::Value* q = b.input("scores", DType::kFloat32, {S("B"), S("H"), S("S"), S("S")});
  ir::Value* m = b.input("mask", DType::kFloat32, {S("B"), C(1), C(1), S("S")});
  ir::Value* d = b.node(OpKind::Div, {q, b.fconst("sqrt_d", {8.f})}, "div");
  ir::Value* a = b.node(OpKind::Add, {d, m}, "add");
  b.output(b.node(OpKind::Softmax, {a}, "softmax", {{"axis", attr_int(-1)}}));
  b.infer();
  for (Shape s : {Shape{2, 3, 37, 37}, Shape{1, 2, 1, 1}, Shape{2, 1, 0, 0}}) {
    Tensor mask = random_f32({s[0], 1, 1, s[3]}, 9, -3.f, 0.f);
    if (mask.numel() > 2) mask.data<float>()[1] = -std::numeric_limits<float>::infinity();
    expect_all_levels_match(b.g, {random_f32(s, 8, -4.f, 4.f), mask}, opts(kSoftmax));
  }
}

TEST(ReductionLowering, AttentionBoolMaskWhereSoftmax) {
  // Where(mask [B, 1, 1, S] bool, scores, -1e9) -> Softmax(-1): a bool operand in the prologue.
  GraphBuilder b;
  b.opset = 13;
  ir::Value* q = b.input("scores", DType::kFloat32, {S("B"), S("H"), S("S"), S("S")});
  ir::Value* m = b.input("mask", DType::kBool, {S("B"), C(1), C(1), S("S")});
  ir::Value* w = b.node(OpKind::Where, {m, q, b.fconst("neg", {-1e9f})}, "where");
  b.output(b.node(OpKind::Softmax, {w}, "softmax", {{"axis", attr_int(-1)}}));
  b.infer();
  for (Shape s : {Shape{2, 3, 19, 19}, Shape{1, 1, 1, 1}}) {
    Tensor mask = Tensor::empty(DType::kBool, {s[0], 1, 1, s[3]});
    auto mk = mask.span<bool>();
    for (size_t i = 0; i < mk.size(); ++i) mk[i] = i % 3 != 1;
    expect_all_levels_match(b.g, {random_f32(s, 8, -4.f, 4.f), mask}, opts(kSoftmax));
  }
}

TEST(ReductionLowering, LayerNormWithEpilogue) {
  // LN(x) * gamma + beta -> Relu, gamma/beta [D] constants, x [N, D] dynamic.
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, {S("N"), C(37)});
  ir::Value* ln = b.node(OpKind::LayerNormalization, {x, b.constant("s", random_f32({37}, 1))}, "ln");
  ir::Value* mu = b.node(OpKind::Mul, {ln, b.constant("g", random_f32({37}, 2))}, "mul");
  ir::Value* ad = b.node(OpKind::Add, {mu, b.constant("be", random_f32({37}, 3))}, "add");
  b.output(b.node(OpKind::Relu, {ad}, "relu"));
  b.infer();
  for (int64_t n : {5, 1, 0}) expect_all_levels_match(b.g, {random_f32({n, 37}, 4)}, opts(kNorm));
}

TEST(ReductionLowering, RmsNormPrologueAndEpilogue) {
  // sqrt(ReduceMean(x * x, -1) + eps): prologue Mul, epilogue Add + Sqrt, on the reduced shape.
  GraphBuilder b;
  b.opset = 18;
  ir::Value* x = b.input("x", DType::kFloat32, {S("N"), S("D")});
  ir::Value* sq = b.node(OpKind::Mul, {x, x}, "sq");
  ir::Value* mean = b.node(OpKind::ReduceMean, {sq, b.iconst("axes", {-1})}, "mean");
  ir::Value* e = b.node(OpKind::Add, {mean, b.fconst("eps", {1e-6f})}, "add");
  b.output(b.node(OpKind::Sqrt, {e}, "rms"));
  b.infer();
  for (Shape s : {Shape{3, 37}, Shape{2, 1023}, Shape{1, 1}, Shape{2, 0}})
    expect_all_levels_match(b.g, {random_f32(s, 6)}, opts(kSum));
}

TEST(ReductionLowering, ColumnReductionWithBroadcastPrologue) {
  // ReduceSum(x * w, axis 0) where w [D] broadcasts along the reduced axis; column mode.
  GraphBuilder b;
  b.opset = 18;
  ir::Value* x = b.input("x", DType::kFloat32, {S("N"), S("D")});
  ir::Value* w = b.input("w", DType::kFloat32, {S("D")});
  ir::Value* p = b.node(OpKind::Mul, {x, w}, "p");
  b.output(b.node(OpKind::ReduceSum, {p, b.iconst("axes", {0})}, "r", {{"keepdims", attr_int(0)}}));
  b.infer();
  for (Shape s : {Shape{37, 19}, Shape{5, 1}, Shape{1, 8}, Shape{0, 3}})
    expect_all_levels_match(b.g, {random_f32(s, 1), random_f32({s[1]}, 2)}, opts(kSum));
}

TEST(ReductionLowering, SoftmaxAndEpilogueBothOutputs) {
  // Softmax(x) escapes and feeds Mul(., w): two region outputs, the first is the scratch.
  GraphBuilder b;
  b.opset = 13;
  ir::Value* x = b.input("x", DType::kFloat32, {S("N"), S("D")});
  ir::Value* sm = b.node(OpKind::Softmax, {x}, "sm", {{"axis", attr_int(0)}});
  b.output(sm);
  b.output(b.node(OpKind::Mul, {sm, b.input("w", DType::kFloat32, {S("D")})}, "mul"));
  b.infer();
  for (Shape s : {Shape{37, 19}, Shape{1, 40}, Shape{3, 0}})
    expect_all_levels_match(b.g, {random_f32(s, 1), random_f32({s[1]}, 2)}, opts(kSoftmax));
}

TEST(ReductionLowering, SoftmaxWithoutScratchRecomputes) {
  // The only output is bool (Greater): no float32 buffer to keep exp in, pass 3 recomputes it.
  GraphBuilder b;
  b.opset = 13;
  ir::Value* x = b.input("x", DType::kFloat32, {S("N"), S("D")});
  ir::Value* a = b.node(OpKind::Add, {x, b.fconst("one", {1.f})}, "add");
  ir::Value* sm = b.node(OpKind::Softmax, {a}, "sm", {{"axis", attr_int(-1)}});
  b.output(b.node(OpKind::Greater, {sm, b.fconst("thr", {0.03f})}, "gt"));
  b.infer();
  for (Shape s : {Shape{5, 37}, Shape{2, 1}, Shape{0, 4}})
    expect_all_levels_match(b.g, {random_f32(s, 3, -2.f, 2.f)}, opts(kSoftmax));
}

TEST(ReductionLowering, ColumnReduceMaxWithEpilogue) {
  // ReduceMax(x, axis 0, keepdims 1) * w: column mode with an epilogue on the reduced shape.
  GraphBuilder b;
  b.opset = 18;
  ir::Value* x = b.input("x", DType::kFloat32, {S("N"), S("D")});
  ir::Value* r = b.node(OpKind::ReduceMax, {x, b.iconst("axes", {0})}, "r");
  b.output(b.node(OpKind::Mul, {r, b.input("w", DType::kFloat32, {S("D")})}, "mul"));
  b.infer();
  for (Shape s : {Shape{37, 19}, Shape{5, 1}, Shape{0, 33}})
    expect_all_levels_match(b.g, {with_nans(random_f32(s, 1)), random_f32({s[1]}, 2)}, opts(kExact));
}

TEST(ReductionLowering, ResidualAddLayerNorm) {
  // LN(x + r): the prologue result is kept in the output between the passes.
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, {S("N"), S("D")});
  ir::Value* r = b.input("r", DType::kFloat32, {S("N"), S("D")});
  ir::Value* a = b.node(OpKind::Add, {x, r}, "add");
  b.output(b.node(OpKind::LayerNormalization, {a, b.input("s", DType::kFloat32, {S("D")})}, "ln"));
  b.infer();
  for (Shape s : {Shape{3, 37}, Shape{2, 1023}, Shape{1, 1}, Shape{0, 5}})
    expect_all_levels_match(b.g, {random_f32(s, 1), random_f32(s, 2), random_f32({s[1]}, 3)},
                            opts(kNorm));
}

TEST(ReductionLowering, ParallelRowsMatch) {
  GraphBuilder b;
  b.opset = 13;
  ir::Value* x = b.input("x", DType::kFloat32, {S("N"), S("D")});
  b.output(b.node(OpKind::Softmax, {x}, "y", {{"axis", attr_int(-1)}}));
  b.infer();
  DiffOptions o = opts(kSoftmax);
  o.threads = 4;
  expect_all_levels_match(b.g, {random_f32({257, 301}, 2)}, o);
}

TEST(ReductionLowering, ParallelColumnsMatch) {
  // Softmax over axis 0 and ReduceSum over axis 0: one row of column chunks split across threads.
  GraphBuilder b;
  b.opset = 18;
  ir::Value* x = b.input("x", DType::kFloat32, {S("N"), S("D")});
  b.output(b.node(OpKind::ReduceSum, {x, b.iconst("axes", {0})}, "r", {{"keepdims", attr_int(0)}}));
  b.infer();
  DiffOptions o = opts(kSum);
  o.threads = 4;
  expect_all_levels_match(b.g, {random_f32({301, 257}, 2)}, o);
  expect_all_levels_match(b.g, {random_f32({40000, 5}, 3)}, o);  // fewer columns than lanes
  GraphBuilder b2;
  b2.opset = 13;
  ir::Value* x2 = b2.input("x", DType::kFloat32, {S("N"), S("D")});
  b2.output(b2.node(OpKind::Softmax, {x2}, "y", {{"axis", attr_int(0)}}));
  b2.infer();
  DiffOptions o2 = opts(kSoftmax);
  o2.threads = 4;
  expect_all_levels_match(b2.g, {random_f32({301, 257}, 4)}, o2);
}

// expect_regions_match_tier0 with vector_lanes forced (the harness uses the host's lanes): the
// row and column code at 4 and 8 lanes (AVX2, SSE widths) on the same region.
void expect_match_with_lanes(const ir::Graph& g, const std::vector<Tensor>& feeds, int lanes,
                             Tolerance tol) {
  auto vals = run_tier0(g, feeds);
  auto part = passes::partition_graph(g, passes::PartitionOptions{});
  ASSERT_TRUE(part.ok());
  int checked = 0;
  for (const passes::Region& r : part->regions) {
    if (r.kind != passes::RegionKind::kReduction) continue;
    for (int tier : {1, 2}) {
      SCOPED_TRACE(r.name + " lanes " + std::to_string(lanes) + " tier " + std::to_string(tier));
      kir::LowerOptions lo;
      lo.level = kir::ShapeLevel::kGeneric;
      lo.tier = tier;
      lo.vector_lanes = lanes;
      std::vector<Tensor> ins, outs, want;
      for (const ir::Value* v : r.inputs) {
        ins.push_back(vals.at(v));
        lo.inputs.push_back(spec_of(*v, ins.back(), lo.level));
      }
      for (const ir::Value* v : r.outputs) {
        want.push_back(vals.at(v));
        outs.push_back(Tensor::empty(want.back().dtype(), want.back().shape()));
        lo.outputs.push_back(spec_of(*v, want.back(), lo.level));
      }
      auto lowered = kir::lower_region(r, lo);
      ASSERT_TRUE(lowered.ok()) << lowered.status().message();
      codegen::CompileOptions co;
      co.tier = tier >= 2 ? codegen::Tier::kTier2 : codegen::Tier::kTier1;
      auto kernel = codegen::compile(lowered->fn, co);
      ASSERT_TRUE(kernel.ok()) << kernel.status().message();
      std::vector<void*> buffers;
      std::vector<int64_t> dims;
      for (auto* ts : {&ins, &outs})
        for (Tensor& t : *ts) {
          buffers.push_back(t.raw_data());
          for (int64_t d : t.shape()) dims.push_back(d);
        }
      (*kernel)(buffers.data(), dims.data());
      for (size_t i = 0; i < outs.size(); ++i) EXPECT_TRUE(close(outs[i], want[i], tol, r.name));
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

TEST(ReductionLowering, NarrowerVectorLanes) {
  for (int lanes : {4, 8}) {
    {
      GraphBuilder b;
      b.opset = 13;
      ir::Value* x = b.input("x", DType::kFloat32, sym(3));
      b.output(b.node(OpKind::Softmax, {x}, "y", {{"axis", attr_int(-1)}}));
      b.output(b.node(OpKind::LogSoftmax, {x}, "z", {{"axis", attr_int(1)}}));
      b.infer();
      expect_match_with_lanes(b.g, {random_f32({3, 21, 37}, 1)}, lanes, kLogSoftmax);
    }
    {
      GraphBuilder b;
      ir::Value* x = b.input("x", DType::kFloat32, sym(2));
      ir::Value* s = b.constant("s", random_f32({1023}, 2));
      ir::Node* ln = b.node_n(OpKind::LayerNormalization, {x, s}, "ln", 3);
      for (ir::Value* o : ln->outputs()) b.output(o);
      b.infer();
      expect_match_with_lanes(b.g, {random_f32({5, 1023}, 3)}, lanes, kNorm);
    }
    {
      GraphBuilder b;
      b.opset = 18;
      ir::Value* x = b.input("x", DType::kFloat32, sym(3));
      b.output(b.node(OpKind::ReduceMean, {x, b.iconst("a", {1})}, "m"));
      b.output(b.node(OpKind::ReduceMax, {x, b.iconst("b", {2})}, "n"));
      b.infer();
      expect_match_with_lanes(b.g, {with_nans(random_f32({3, 45, 29}, 4))}, lanes, kSum);
    }
  }
}

TEST(ReductionLowering, UnsupportedIsAnErrorNotACrash) {
  GraphBuilder b;
  b.opset = 18;
  ir::Value* x = b.input("x", DType::kFloat32, {S("N"), S("D")});
  ir::Value* axes = b.input("axes", DType::kInt64, {C(1)});  // not a constant
  b.output(b.node(OpKind::ReduceSum, {x, axes}, "r"));
  b.infer();
  auto part = passes::partition_graph(b.g, passes::PartitionOptions{});
  ASSERT_TRUE(part.ok());
  for (const passes::Region& r : part->regions) {
    if (r.kind != passes::RegionKind::kReduction) continue;
    EXPECT_FALSE(kir::has_lowering(r));
    kir::LowerOptions lo;
    lo.inputs = {kir::TensorSpec{DType::kFloat32, {-1, -1}, {-1, -1}},
                 kir::TensorSpec{DType::kInt64, {1}, {-1}}};
    lo.outputs = {kir::TensorSpec{DType::kFloat32, {-1, -1}, {-1, -1}}};
    auto l = kir::lower_region(r, lo);
    ASSERT_FALSE(l.ok());
    EXPECT_EQ(l.status().code(), StatusCode::kUnsupported) << l.status().message();
  }
}

}  // namespace
}  // namespace tierjit::lower_testing
