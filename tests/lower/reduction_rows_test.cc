// Differential tests of the reduction lowering's row code (lower_reduction_kernel.cc,
// lower_reduction_rows.cc) against tier 0: rows in blocks of 4 with a remainder, row tails in
// vector chunks of every width (lengths 1..33, 77, 255), rows longer than the blocking limit
// (1025, 10^5), attention masks of -inf / -1e9 / float lowest broadcast along every axis,
// fully masked rows, NaN and -inf scores, residual LayerNorm and ReduceMean on the models'
// widths, at every level, tiers 1 and 2, and 2 threads. Tolerances as reduction_test.cc.
#include <cmath>
#include <limits>

#include "lower_test_util.h"

namespace tierjit::lower_testing {
namespace {

using ir::OpKind;
using passes::testing::attr_int;
using passes::testing::attr_ints;
using passes::testing::C;
using passes::testing::S;

constexpr Tolerance kSum{1e-6, 1e-6};
constexpr Tolerance kSoftmax{4e-6, 1e-12};
constexpr Tolerance kNorm{2e-5, 2e-5};
constexpr float kInf = std::numeric_limits<float>::infinity();

DiffOptions opts(Tolerance tol, int threads = 1) {
  DiffOptions o;
  o.kinds = {passes::RegionKind::kReduction};
  o.tol = tol;
  o.threads = threads;
  return o;
}

/// Softmax(scores [B, H, Q, S] / 8 + mask) over the last axis with `mask_shape` given as dims of
/// rank 4 where 1 means broadcast; mask values cycle through `values` (0 where i % 3 != 0).
void check_attention(Shape s, Shape mask_shape, std::vector<float> values, int threads = 1) {
  SCOPED_TRACE("scores " + shape_to_string(s) + " mask " + shape_to_string(mask_shape));
  GraphBuilder b;
  b.opset = 13;
  const char* names[] = {"B", "H", "Q", "S"};
  ir::SymShape qs, ms;
  for (int d = 0; d < 4; ++d) {
    qs.push_back(S(names[d]));
    ms.push_back(mask_shape[d] == 1 ? C(1) : S(names[d]));
  }
  ir::Value* q = b.input("scores", DType::kFloat32, qs);
  ir::Value* m = b.input("mask", DType::kFloat32, ms);
  ir::Value* d = b.node(OpKind::Div, {q, b.fconst("sqrt_d", {8.f})}, "div");
  ir::Value* a = b.node(OpKind::Add, {d, m}, "add");
  b.output(b.node(OpKind::Softmax, {a}, "softmax", {{"axis", attr_int(-1)}}));
  b.infer();
  Tensor mask = Tensor::zeros(DType::kFloat32, mask_shape);
  auto mk = mask.span<float>();
  for (size_t i = 0; i < mk.size(); i += 3) mk[i] = values[(i / 3) % values.size()];
  Tensor x = random_f32(s, 8, -6.f, 6.f);
  expect_all_levels_match(b.g, {x, mask}, opts(kSoftmax, threads));
}

TEST(ReductionRows, AttentionMaskValuesOnEveryBroadcastAxis) {
  const std::vector<float> masks = {-kInf, -1e9f, std::numeric_limits<float>::lowest(), -10000.f};
  for (int64_t len : {1, 7, 16, 17, 77}) {
    const Shape s = {2, 3, len, len};
    for (Shape m : {Shape{2, 1, 1, len}, Shape{1, 3, 1, len}, Shape{2, 1, len, len}, Shape{1, 1, 1, len},
                    Shape{2, 3, len, len}, Shape{1, 1, len, 1}, Shape{2, 3, 1, 1}})
      check_attention(s, m, masks);
  }
}

TEST(ReductionRows, AttentionLongRowsAndTwoThreads) {
  check_attention({1, 2, 255, 255}, {1, 1, 1, 255}, {-kInf, -1e9f});
  check_attention({1, 1, 3, 1025}, {1, 1, 1, 1025}, {-1e9f});  // above the row-blocking limit
  check_attention({4, 2, 64, 64}, {4, 1, 1, 64}, {-kInf}, /*threads=*/2);  // parallel blocks
  check_attention({1, 1, 2, 100003}, {1, 1, 1, 100003}, {-1e9f}, /*threads=*/2);
}

TEST(ReductionRows, FullyMaskedRowsNaNAndInfScores) {
  // A row of -inf scores gives NaN (max -inf, exp(-inf - -inf)); a NaN or +inf anywhere in a
  // row makes the row NaN; -inf entries alone give 0. Every row length of the tail widths.
  GraphBuilder b;
  b.opset = 13;
  ir::Value* x = b.input("x", DType::kFloat32, {S("N"), S("D")});
  b.output(b.node(OpKind::Softmax, {x}, "y", {{"axis", attr_int(-1)}}));
  b.infer();
  for (int64_t len : {1, 2, 3, 5, 8, 15, 31, 33}) {
    Tensor t = random_f32({9, len}, 3, -4.f, 4.f);
    auto v = t.span<float>();
    for (int64_t c = 0; c < len; ++c) v[static_cast<size_t>(c)] = -kInf;  // row 0 fully masked
    v[static_cast<size_t>(len + len / 2)] = std::numeric_limits<float>::quiet_NaN();  // row 1
    v[static_cast<size_t>(2 * len)] = kInf;                                          // row 2
    v[static_cast<size_t>(3 * len + len - 1)] = -kInf;                               // row 3
    expect_all_levels_match(b.g, {t}, opts(kSoftmax));
  }
}

TEST(ReductionRows, ResidualLayerNormModelWidthsAndRemainders) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, {S("N"), S("T"), C(128)});
  ir::Value* r = b.input("r", DType::kFloat32, {S("N"), S("T"), C(128)});
  ir::Value* a = b.node(OpKind::Add, {x, r}, "add");
  b.output(b.node(OpKind::LayerNormalization,
                  {a, b.constant("s", random_f32({128}, 4)), b.constant("b", random_f32({128}, 5))}, "ln"));
  b.infer();
  for (Shape s : {Shape{1, 1, 128}, Shape{1, 7, 128}, Shape{2, 77, 128}, Shape{3, 5, 128}})
    expect_all_levels_match(b.g, {random_f32(s, 1, -3.f, 3.f), random_f32(s, 2)}, opts(kNorm));
  expect_regions_match_tier0(b.g, {random_f32({64, 16, 128}, 1), random_f32({64, 16, 128}, 2)},
                             opts(kNorm, 2));
  GraphBuilder b2;  // every width: the reduced dim dynamic
  ir::Value* x2 = b2.input("x", DType::kFloat32, {S("N"), S("D")});
  ir::Value* r2 = b2.input("r", DType::kFloat32, {S("N"), S("D")});
  b2.output(b2.node(OpKind::LayerNormalization, {b2.node(OpKind::Add, {x2, r2}, "add"),
                                                 b2.input("s", DType::kFloat32, {S("D")})}, "ln"));
  b2.infer();
  for (int64_t d : {1, 3, 9, 23, 384, 1025})
    expect_all_levels_match(b2.g, {random_f32({6, d}, 1), random_f32({6, d}, 2), random_f32({d}, 3)},
                            opts(kNorm));
}

TEST(ReductionRows, ReduceMeanRowTailsAndBlocks) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, {S("N"), S("D")});
  b.output(b.node(OpKind::ReduceMean, {x}, "m", {{"axes", attr_ints({-1})}, {"keepdims", attr_int(1)}}));
  b.infer();
  for (int64_t d : {1, 2, 4, 7, 16, 31, 33, 100})
    for (int64_t n : {1, 5, 8})
      expect_all_levels_match(b.g, {random_f32({n, d}, 7)}, opts(kSum));
  expect_regions_match_tier0(b.g, {random_f32({4096, 31}, 7)}, opts(kSum, 2));
}

}  // namespace
}  // namespace tierjit::lower_testing
