// Differential tests of matmul-epilogue lowerings (lower_matmul.cc, gemm_kernel.cc) against tier 0
// (oneDNN sgemm): MatMul shapes with M/N/K in {0, 1, 3, 17, 64, 129}, batched MatMul with
// broadcast batch dims, Gemm transA/transB/alpha/beta and C broadcasts, epilogues, tile sizes.
// Tolerance: both sides sum K float32 products in different orders (oneDNN blocks K its own way,
// the generated kernel by kc and with FMA), so the results differ by rounding only: |err| <=
// ~K * 2^-24 * sum |a_k b_k| in the worst case; with |a|, |b| < 1 we use atol = 1e-6 * K plus
// rtol = 1e-4 (observed errors are ~100x smaller). Epilogues with erf/tanh add codegen's few ulp.
#include "lower_test_util.h"
#include "support/cpu_load.h"

namespace tierjit::lower_testing {
namespace {

using ir::OpKind;
using passes::testing::attr_float;
using passes::testing::attr_int;
using passes::testing::C;
using passes::testing::dims;
using passes::testing::S;

DiffOptions gemm_opts(int64_t k) {
  DiffOptions o;
  o.kinds = {passes::RegionKind::kMatMulEpilogue};
  o.tol.rtol = 1e-4;
  o.tol.atol = 1e-6 * static_cast<double>(std::max<int64_t>(k, 1)) + 1e-6;
  return o;
}

// Y = A[M, K] x W[K, N], M symbolic, W a constant (a model's weight).
void check_matmul(int64_t m, int64_t k, int64_t n, DiffOptions opts, bool all_levels = true) {
  SCOPED_TRACE("M=" + std::to_string(m) + " K=" + std::to_string(k) + " N=" + std::to_string(n));
  GraphBuilder b;
  ir::Value* a = b.input("a", DType::kFloat32, dims({S("M"), C(k)}));
  ir::Value* w = b.constant("w", random_f32({k, n}, 7));
  b.output(b.node(OpKind::MatMul, {a, w}, "mm"));
  b.infer();
  std::vector<Tensor> feeds = {random_f32({m, k}, 11)};
  if (all_levels) {
    expect_all_levels_match(b.g, feeds, opts);
  } else {
    EXPECT_EQ(expect_regions_match_tier0(b.g, feeds, opts), 1);
  }
}

TEST(LowerMatMul, EveryMAtAllLevelsAndTiers) {
  for (int64_t m : {0, 1, 3, 17, 64, 129}) check_matmul(m, 17, 64, gemm_opts(17));
}

TEST(LowerMatMul, EveryNAndK) {
  for (int64_t n : {0, 1, 3, 17, 64, 129}) check_matmul(17, 3, n, gemm_opts(3));
  for (int64_t k : {0, 1, 3, 17, 64, 129}) check_matmul(3, k, 17, gemm_opts(k));
}

TEST(LowerMatMul, ShapeGridExactTier2) {
  DiffOptions o = gemm_opts(129);
  for (int64_t m : {0, 1, 3, 17, 64, 129})
    for (int64_t k : {1, 17, 129})
      for (int64_t n : {0, 1, 3, 17, 64, 129}) check_matmul(m, k, n, o, /*all_levels=*/false);
}

TEST(LowerMatMul, SeveralTileSizes) {
  // Small blocks force several K, M and N blocks and edge tiles in each.
  const std::vector<std::map<std::string, int64_t>> tunings = {
      {{"mr", 4}, {"nr", 16}, {"kc", 7}, {"mc", 8}, {"nc", 32}},
      {{"mr", 8}, {"nr", 48}, {"kc", 64}, {"mc", 16}, {"nc", 96}},
      {{"mr", 1}, {"nr", 16}, {"kc", 1}, {"mc", 1}, {"nc", 16}},
      {{"mr", 14}, {"nr", 32}, {"kc", 33}},
      {{"mr", 6}, {"nr", 64}, {"kc", 500}, {"mc", 600}, {"nc", 4096}},
  };
  for (const auto& t : tunings) {
    DiffOptions o = gemm_opts(129);
    o.tuning = t;
    for (auto level : {kir::ShapeLevel::kExact, kir::ShapeLevel::kGeneric}) {
      o.level = level;
      check_matmul(67, 129, 83, o, false);
      check_matmul(1, 40, 129, o, false);
    }
  }
}

TEST(LowerMatMul, UnknownOrBadTuningKnobIsInvalidArgument) {
  GraphBuilder b;
  ir::Value* a = b.input("a", DType::kFloat32, dims({C(4), C(4)}));
  b.output(b.node(OpKind::MatMul, {a, b.constant("w", random_f32({4, 4}, 1))}, "mm"));
  b.infer();
  auto part = passes::partition_graph(b.g, {});
  ASSERT_TRUE(part.ok());
  ASSERT_TRUE(kir::has_lowering(part->regions[0]));
  kir::LowerOptions lo;
  lo.level = kir::ShapeLevel::kExact;
  lo.inputs = {{DType::kFloat32, {4, 4}, {-1, -1}}, {DType::kFloat32, {4, 4}, {-1, -1}}};
  lo.outputs = {{DType::kFloat32, {4, 4}, {-1, -1}}};
  lo.vector_lanes = 16;
  lo.tuning = {{"unroll", 4}};
  auto r = kir::lower_region(part->regions[0], lo);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("unroll"), std::string::npos) << r.status().message();
  lo.tuning = {{"nr", 20}};  // not a multiple of 16 lanes
  r = kir::lower_region(part->regions[0], lo);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(LowerMatMul, DynamicNAndK) {
  // Both operands fed: every dim symbolic.
  GraphBuilder b;
  ir::Value* a = b.input("a", DType::kFloat32, dims({S("M"), S("K")}));
  ir::Value* w = b.input("w", DType::kFloat32, dims({S("K"), S("N")}));
  b.output(b.node(OpKind::MatMul, {a, w}, "mm"));
  b.infer();
  for (auto [m, k, n] : {std::array<int64_t, 3>{5, 33, 70}, {1, 1, 1}, {0, 3, 4}, {3, 0, 4}})
    expect_all_levels_match(b.g, {random_f32({m, k}, 1), random_f32({k, n}, 2)}, gemm_opts(k));
}

TEST(LowerMatMul, BatchedWithBroadcastBatchDims) {
  struct Case {
    Shape a, b;
  };
  const Case cases[] = {
      {{2, 1, 5, 7}, {3, 7, 18}},  // both broadcast
      {{5, 7}, {2, 7, 18}},        // A shared
      {{2, 3, 5, 7}, {7, 18}},     // B shared: folded into M
      {{4, 5, 7}, {4, 7, 18}},     // same batch
      {{1, 5, 7}, {3, 7, 18}},     // size-1 batch of A
      {{7}, {2, 7, 18}},           // 1-D A
      {{2, 5, 7}, {7}},            // 1-D B
      {{7}, {7}},                  // dot product
      {{0, 5, 7}, {1, 7, 3}},      // empty batch
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(shape_to_string(c.a) + " x " + shape_to_string(c.b));
    GraphBuilder b;
    ir::SymShape sa, sb;
    for (size_t d = 0; d < c.a.size(); ++d) sa.push_back(d == 0 ? S("B0") : C(c.a[d]));
    for (size_t d = 0; d < c.b.size(); ++d) sb.push_back(d == 0 ? S("B1") : C(c.b[d]));
    ir::Value* a = b.input("a", DType::kFloat32, sa);
    ir::Value* w = b.input("w", DType::kFloat32, sb);
    b.output(b.node(OpKind::MatMul, {a, w}, "mm"));
    b.infer();
    expect_all_levels_match(b.g, {random_f32(c.a, 3), random_f32(c.b, 4)}, gemm_opts(7));
  }
}

// Gemm(A, B, C) with the given attributes; A/B shapes follow transA/transB.
void check_gemm(int64_t m, int64_t k, int64_t n, bool ta, bool tb, float alpha, float beta,
                std::optional<Shape> c_shape, bool prepare = true) {
  SCOPED_TRACE("transA=" + std::to_string(ta) + " transB=" + std::to_string(tb) + " C=" +
               (c_shape ? shape_to_string(*c_shape) : "none"));
  GraphBuilder b;
  ir::Value* a = b.input("a", DType::kFloat32, ta ? dims({C(k), S("M")}) : dims({S("M"), C(k)}));
  ir::Value* w = b.constant("w", random_f32(tb ? Shape{n, k} : Shape{k, n}, 5));
  std::vector<ir::Value*> ins = {a, w};
  if (c_shape) ins.push_back(b.constant("c", random_f32(*c_shape, 6)));
  b.output(b.node(OpKind::Gemm, ins, "gemm",
                  {{"transA", attr_int(ta)}, {"transB", attr_int(tb)}, {"alpha", attr_float(alpha)},
                   {"beta", attr_float(beta)}}));
  b.infer();
  DiffOptions o = gemm_opts(k);
  o.prepare_constants = prepare;
  expect_all_levels_match(b.g, {random_f32(ta ? Shape{k, m} : Shape{m, k}, 8)}, o);
}

TEST(LowerGemm, TransposesAlphaBetaAndCBroadcasts) {
  const int64_t m = 19, k = 23, n = 37;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) check_gemm(m, k, n, ta, tb, 0.5f, 2.f, Shape{n});
  for (const Shape& c : {Shape{n}, Shape{1, n}, Shape{m, 1}, Shape{}, Shape{m, n}, Shape{1, 1}})
    check_gemm(m, k, n, false, true, 1.f, 1.f, c);
  check_gemm(m, k, n, true, false, 1.5f, 0.f, Shape{m, n});  // beta 0: C ignored
  check_gemm(m, k, n, false, false, -1.f, 1.f, std::nullopt);
  check_gemm(1, 64, 10, false, true, 1.f, 1.f, Shape{10});
  // Few rows with B transposed in place: the dot-product form, 4-row blocks and single rows
  // (K tail 37 % 16, N tail 19 % 8 and 19 % 4).
  for (int64_t m2 : {1, 3, 4, 5, 8, 11, 16})
    check_gemm(m2, 37, 19, false, true, 0.75f, 1.f, Shape{19}, /*prepare=*/false);
  // The same with the constant B prepared transposed once ([K, N]: read in place or packed).
  for (int64_t m2 : {0, 1, 2, 5, 16, 17, 70})
    check_gemm(m2, 37, 19, false, true, 0.75f, 1.f, Shape{19}, /*prepare=*/true);
  check_gemm(2, 5, 3, true, true, 1.f, 1.f, Shape{1, 3});
}

// A Linear layer's constant [N, K] weight is asked for transposed ([K, N]) at tier 2 unless the
// code is for exactly one row; never at tier 1, never when the caller cannot prepare inputs.
TEST(LowerGemm, ConstantWeightsArePackedIntoPanelsOnce) {
  auto layouts = [](int64_t m, kir::ShapeLevel level, int tier, bool prepare) {
    GraphBuilder b;
    ir::Value* a = b.input("a", DType::kFloat32, dims({S("M"), C(40)}));
    b.output(b.node(OpKind::Gemm, {a, b.constant("w", random_f32({24, 40}, 5)),
                                   b.constant("c", random_f32({24}, 6))},
                    "gemm", {{"transB", attr_int(1)}}));
    b.infer();
    std::vector<kir::InputLayout> seen;
    DiffOptions o = gemm_opts(40);
    o.level = level;
    o.tier = tier;
    o.prepare_constants = prepare;
    o.layouts_seen = &seen;
    EXPECT_EQ(expect_regions_match_tier0(b.g, {random_f32({m, 40}, 8)}, o), 1);
    return seen;
  };
  using L = kir::InputLayout;
  // Every tier and level reads the weight ([N, K], transB) as the microkernel's panels, packed
  // once per version from the constant; without prepared inputs it is read as it is.
  const std::vector<L> panels = {L::kAsIs, L::kGemmPanelsTransposed, L::kAsIs}, as_is(3, L::kAsIs);
  EXPECT_EQ(layouts(8, kir::ShapeLevel::kExact, 2, true), panels);
  EXPECT_EQ(layouts(8, kir::ShapeLevel::kGeneric, 2, true), panels);
  EXPECT_EQ(layouts(1, kir::ShapeLevel::kGeneric, 2, true), panels);
  EXPECT_EQ(layouts(1, kir::ShapeLevel::kExact, 2, true), panels);
  EXPECT_EQ(layouts(8, kir::ShapeLevel::kExact, 1, true), panels);
  EXPECT_EQ(layouts(8, kir::ShapeLevel::kExact, 2, false), as_is);
}

TEST(LowerMatMul, EpilogueBiasReluResidualClip) {
  GraphBuilder b;
  const int64_t k = 40, n = 35;
  ir::Value* x = b.input("x", DType::kFloat32, dims({S("M"), C(k)}));
  ir::Value* res = b.input("res", DType::kFloat32, dims({S("M"), C(n)}));
  ir::Value* mm = b.node(OpKind::MatMul, {x, b.constant("w", random_f32({k, n}, 1))}, "mm");
  ir::Value* biased = b.node(OpKind::Add, {mm, b.constant("bias", random_f32({n}, 2))}, "bias");
  ir::Value* r = b.node(OpKind::Relu, {biased}, "relu");
  ir::Value* s = b.node(OpKind::Add, {r, res}, "residual");
  ir::Value* c = b.node(OpKind::Clip, {s, b.fconst("lo", {-0.25f}), b.fconst("hi", {0.5f})}, "clip");
  b.output(c);
  b.infer();
  for (int64_t m : {1, 13, 64})
    expect_all_levels_match(b.g, {random_f32({m, k}, 3), random_f32({m, n}, 4)}, gemm_opts(k));
}

TEST(LowerMatMul, EpilogueGeluChainAndTwoOutputs) {
  // y = x W + b; gelu = 0.5 * y * (1 + erf(y / sqrt(2))); y is also a graph output.
  GraphBuilder b;
  const int64_t k = 64, n = 48;
  ir::Value* x = b.input("x", DType::kFloat32, dims({S("B"), S("S"), C(k)}));
  ir::Value* mm = b.node(OpKind::MatMul, {x, b.constant("w", random_f32({k, n}, 1))}, "mm");
  ir::Value* y = b.node(OpKind::Add, {mm, b.constant("bias", random_f32({n}, 2))}, "bias");
  ir::Value* d = b.node(OpKind::Div, {y, b.fconst("sqrt2", {1.4142135f})}, "div");
  ir::Value* e = b.node(OpKind::Erf, {d}, "erf");
  ir::Value* p = b.node(OpKind::Add, {e, b.fconst("one", {1.f})}, "add1");
  ir::Value* q = b.node(OpKind::Mul, {y, p}, "mul");
  ir::Value* g = b.node(OpKind::Mul, {q, b.fconst("half", {0.5f})}, "half");
  b.output(g);
  b.output(y);
  b.infer();
  DiffOptions o = gemm_opts(k);
  o.tol.atol += 1e-6;  // erf: codegen's bound 4.5e-7 absolute
  expect_all_levels_match(b.g, {random_f32({2, 9, k}, 3)}, o);
}

TEST(LowerMatMul, NaNAndInfPropagate) {
  GraphBuilder b;
  ir::Value* a = b.input("a", DType::kFloat32, dims({S("M"), C(20)}));
  ir::Value* mm = b.node(OpKind::MatMul, {a, b.constant("w", random_f32({20, 33}, 1))}, "mm");
  b.output(b.node(OpKind::Relu, {mm}, "relu"));
  b.infer();
  Tensor x = random_f32({9, 20}, 2);
  x.span<float>()[3 * 20 + 5] = std::nanf("");
  x.span<float>()[7 * 20 + 1] = INFINITY;
  expect_all_levels_match(b.g, {x}, gemm_opts(20));
}

TEST(LowerMatMul, LongK) {
  // K = 100000: a long accumulation; |sum| ~ sqrt(K)/3, so rounding stays far below atol.
  DiffOptions o = gemm_opts(100000);
  o.tol.atol = 2e-3;
  check_matmul(3, 100000, 5, o, false);
  o.level = kir::ShapeLevel::kGeneric;
  check_matmul(3, 100000, 5, o, false);
}

}  // namespace
}  // namespace tierjit::lower_testing

namespace tierjit::lower_testing {
namespace {

TEST(LowerMatMul, TwoThreads) {
  // Enough work (M*N*K >= 2^22) for the parallel loop over N panels / dot-product blocks / rows.
  DiffOptions o = gemm_opts(129);
  o.threads = 2;
  check_matmul(257, 129, 200, o);
  o = gemm_opts(1000);
  o.threads = 2;
  GraphBuilder b;  // B transposed, 3 rows: the dot-product form
  ir::Value* a = b.input("a", DType::kFloat32, dims({S("M"), C(1000)}));
  b.output(b.node(OpKind::Gemm, {a, b.constant("w", random_f32({1500, 1000}, 5))}, "gemm",
                  {{"transB", attr_int(1)}}));
  b.infer();
  o.prepare_constants = false;  // keep B transposed in place: the dot-product form
  expect_all_levels_match(b.g, {random_f32({3, 1000}, 8)}, o);
}

// Mid-sized products (2^16 .. 2^22 multiply-adds) run their parallel loop on two threads while
// the cores are idle and on one while they are busy: the same values either way (the machine's
// load is forced with support::override_foreign_busy_cores).
TEST(LowerMatMul, ParallelLoopsMatchTier0IdleAndBusy) {
  for (double foreign : {0.0, 8.0}) {
    SCOPED_TRACE("foreign load " + std::to_string(foreign));
    support::override_foreign_busy_cores(foreign);
    DiffOptions o = gemm_opts(129);
    o.threads = 2;
    check_matmul(33, 129, 100, o);  // blocked form at M = 33, dot/direct forms below 17 rows
    check_matmul(9, 129, 257, o);
    GraphBuilder b;  // B transposed, 5 rows: the dot-product form, 5 x 600 x 300 = 900k
    ir::Value* a = b.input("a", DType::kFloat32, dims({S("M"), C(300)}));
    b.output(b.node(OpKind::Gemm, {a, b.constant("w", random_f32({600, 300}, 5))}, "gemm",
                    {{"transB", attr_int(1)}}));
    b.infer();
    o.prepare_constants = false;
    expect_all_levels_match(b.g, {random_f32({5, 300}, 8)}, o);
  }
  support::override_foreign_busy_cores(-1);
}

TEST(LowerMatMul, ParallelLoopOnlyWithThreadsAndWork) {
  auto lowered = [](int64_t n, int threads) {
    GraphBuilder b;
    ir::Value* a = b.input("a", DType::kFloat32, dims({C(n), C(n)}));
    b.output(b.node(OpKind::MatMul, {a, b.constant("w", random_f32({n, n}, 1))}, "mm"));
    b.infer();
    auto part = passes::partition_graph(b.g, {});
    EXPECT_TRUE(part.ok());
    kir::LowerOptions lo;
    lo.level = kir::ShapeLevel::kExact;
    lo.inputs = {{DType::kFloat32, {n, n}, {-1, -1}}, {DType::kFloat32, {n, n}, {-1, -1}}};
    lo.outputs = {{DType::kFloat32, {n, n}, {-1, -1}}};
    lo.vector_lanes = 16;
    lo.threads = threads;
    auto r = kir::lower_region(part->regions[0], lo);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? kir::to_string(r->fn) : std::string();
  };
  // From 2^16 multiply-adds a parallel loop (one thread at run time while the spare cores are
  // busy); 4096: serial; one thread: serial.
  EXPECT_NE(lowered(256, 2).find("parallel"), std::string::npos);  // 2^24
  EXPECT_NE(lowered(64, 2).find("parallel"), std::string::npos);   // 2^18
  EXPECT_EQ(lowered(256, 1).find("parallel"), std::string::npos);
  EXPECT_EQ(lowered(16, 2).find("parallel"), std::string::npos);
}

}  // namespace
}  // namespace tierjit::lower_testing
