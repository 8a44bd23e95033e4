// Differential tests of a Conv region's fused pool (partition.h rule 4b; lower_conv_pool.cc)
// against tier 0, which runs Conv, the epilogue and the pool one at a time: MaxPool and
// AveragePool (count_include_pad 0 and 1) with windows taller than their stride (conv rows
// computed by two items), padding on every side, odd map sizes, batch 0, 1 and 3, one and two
// threads; through the direct convolution's tile and through the generated GEMM's per-image
// workspace (a 1x1 conv, a narrow strided map); NaN in the conv's input reaching MaxPool.
// Tolerance as conv_test.cc: atol = 1e-6 * K + rtol 1e-4.
#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "lower_test_util.h"

namespace tierjit::lower_testing {
namespace {

using ir::OpKind;
using passes::testing::attr_int;
using passes::testing::attr_ints;
using passes::testing::C;
using passes::testing::dims;
using passes::testing::S;

struct PoolCase {
  const char* what;
  int64_t c, h, w, m, k, stride, pad;  // the Conv (square kernel, pads on every side)
  OpKind pool;
  std::vector<int64_t> kernel, strides, pads;
  int64_t count_include_pad = 0;
};

void check_pool(const PoolCase& k, int64_t batch, int threads, bool nan = false,
                bool residual = false) {
  SCOPED_TRACE(std::string(k.what) + " batch=" + std::to_string(batch) +
               " threads=" + std::to_string(threads));
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({S("N"), C(k.c), C(k.h), C(k.w)}));
  ir::Value* conv = b.node(
      OpKind::Conv, {x, b.constant("w", random_f32({k.m, k.c, k.k, k.k}, 1)), b.constant("b", random_f32({k.m}, 2))},
      "conv",
      {{"strides", attr_ints({k.stride, k.stride})},
       {"pads", attr_ints({k.pad, k.pad, k.pad, k.pad})}});
  // Relu(NaN) = 0: the NaN cases pool the conv's output itself.
  ir::Value* relu = nan ? conv : b.node(OpKind::Relu, {conv}, "relu");
  std::vector<Tensor> feeds = {random_f32({batch, k.c, k.h, k.w}, 3)};
  if (residual) {  // a second fed input of the conv output's shape, added after the Relu
    b.infer();
    const auto& ys = *conv->type().shape;
    ir::Value* r = b.input("res", DType::kFloat32, dims({S("N"), ys[1], ys[2], ys[3]}));
    relu = b.node(OpKind::Add, {relu, r}, "residual");
    feeds.push_back(random_f32({batch, ys[1].value, ys[2].value, ys[3].value}, 4));
  }
  passes::testing::Attrs a = {{"kernel_shape", attr_ints(k.kernel)},
                              {"strides", attr_ints(k.strides)},
                              {"pads", attr_ints(k.pads)}};
  if (k.pool == OpKind::AveragePool) a.push_back({"count_include_pad", attr_int(k.count_include_pad)});
  b.output(b.node(k.pool, {relu}, "pool", a));
  b.infer();
  auto part = passes::partition_graph(b.g, {});
  ASSERT_TRUE(part.ok());
  ASSERT_EQ(part->regions.size(), 1u) << passes::format_partition(*part);
  ASSERT_NE(part->regions[0].pool, nullptr);
  Tensor& feed = feeds[0];
  if (nan && feed.numel() > 0) {
    auto s = feed.span<float>();
    s[s.size() / 2] = std::numeric_limits<float>::quiet_NaN();
  }
  DiffOptions o;
  o.threads = threads;
  o.kinds = {passes::RegionKind::kMatMulEpilogue};
  o.tol.rtol = 1e-4;
  o.tol.atol = 1e-6 * static_cast<double>(k.c * k.k * k.k) + 1e-6;
  expect_all_levels_match(b.g, feeds, o);
}

const PoolCase kLenet = {"lenet 16->32 3x3, max 2x2/2", 16, 14, 14, 32, 3, 1, 1,
                         OpKind::MaxPool, {2, 2}, {2, 2}, {0, 0, 0, 0}};

TEST(LowerConvPool, MaxPoolThroughTheDirectTile) {
  // A ResNet-like stem: 7x7/2 conv, max 3x3/2 pad 1 (windows overlap: shared conv rows).
  const PoolCase stem = {"stem 3->8 7x7/2, max 3x3/2 p1", 3, 30, 30, 8, 7, 2, 3,
                         OpKind::MaxPool, {3, 3}, {2, 2}, {1, 1, 1, 1}};
  // Odd sizes: conv output 13 x 11 (unpadded 3x3 on 15 x 13), window 3x2, strides 2x1,
  // asymmetric pads.
  const PoolCase odd = {"odd 5->6 3x3 on 15x13, max 3x2/(2,1)", 5, 15, 13, 6, 3, 1, 0,
                        OpKind::MaxPool, {3, 2}, {2, 1}, {1, 0, 1, 1}};
  // 64 channels of 28 x 28: several pooled-row blocks per image.
  const PoolCase rows = {"64->64 3x3 28x28, max 2x2/2", 64, 28, 28, 64, 3, 1, 1,
                         OpKind::MaxPool, {2, 2}, {2, 2}, {0, 0, 0, 0}};
  // Pooled rows of 39 and 20 columns: vectors of 16, 8 and 4 lanes and single columns.
  const PoolCase wide = {"wide 4->8 3x3 on 20x40, max 3x3/1 p1", 4, 20, 40, 8, 3, 1, 1,
                         OpKind::MaxPool, {3, 3}, {1, 1}, {1, 1, 1, 1}};
  const PoolCase wide2 = {"wide 4->8 3x3 on 12x80, max 2x2/2", 4, 12, 80, 8, 3, 1, 1,
                          OpKind::MaxPool, {2, 2}, {2, 2}, {0, 0, 0, 0}};
  for (int threads : {1, 2})
    for (int64_t n : {0, 1, 3}) {
      check_pool(kLenet, n, threads);
      if (n == 0) continue;
      check_pool(wide, n, threads);
      check_pool(wide2, n, threads);
      check_pool(stem, n, threads);
      check_pool(odd, n, threads);
      check_pool(rows, n, threads);
    }
}

TEST(LowerConvPool, AveragePoolCountsPaddingOrNot) {
  for (int64_t include : {0, 1}) {
    const PoolCase avg = {"avg 3x3/1 p1", 6, 12, 12, 8, 3, 1, 1, OpKind::AveragePool,
                          {3, 3}, {1, 1}, {1, 1, 1, 1}, include};
    const PoolCase avg2 = {"avg 2x2/2 p(0,1,1,0)", 6, 13, 13, 8, 3, 1, 1, OpKind::AveragePool,
                           {2, 2}, {2, 2}, {0, 1, 1, 0}, include};
    for (int threads : {1, 2}) {
      check_pool(avg, 2, threads);
      check_pool(avg2, 1, threads);
    }
  }
}

// Convolutions the direct tile does not take: the generated GEMM writes each image's output to
// the workspace and the pool reads it there.
TEST(LowerConvPool, ThroughTheGeneratedGemm) {
  const PoolCase pointwise = {"1x1 24->16, avg 2x2/2 (a DenseNet transition)", 24, 10, 10, 16, 1,
                              1, 0, OpKind::AveragePool, {2, 2}, {2, 2}, {0, 0, 0, 0}};
  const PoolCase narrow = {"3x3/2 8->12 on 14x14 (7 columns), max 2x2/1", 8, 14, 14, 12, 3, 2, 1,
                           OpKind::MaxPool, {2, 2}, {1, 1}, {0, 0, 0, 0}};
  for (int threads : {1, 2})
    for (int64_t n : {0, 1, 3}) {
      check_pool(pointwise, n, threads);
      check_pool(narrow, n, threads);
    }
}

// An epilogue reading a residual input along the columns (applied on the tile first for
// overlapping windows, on the taps for 2x2/2).
TEST(LowerConvPool, ResidualEpilogue) {
  const PoolCase s1 = {"max 3x3/1 p1", 4, 20, 40, 8, 3, 1, 1, OpKind::MaxPool, {3, 3}, {1, 1},
                       {1, 1, 1, 1}};
  // A window narrower than its stride (1x1/2, a strided subsample): spans would read past the
  // residual, so it takes the workspace; without a residual, the tile.
  const PoolCase sub = {"max 1x1/2", 4, 20, 40, 8, 3, 1, 1, OpKind::MaxPool, {1, 1}, {2, 2},
                        {0, 0, 0, 0}};
  for (int threads : {1, 2}) {
    check_pool(kLenet, 3, threads, false, /*residual=*/true);
    check_pool(s1, 2, threads, false, /*residual=*/true);
    check_pool(sub, 2, threads, false, /*residual=*/true);
    check_pool(sub, 2, threads);
  }
}

// Seeded random geometries (conv 1x1/3x3/5x5, stride 1-2, pads; pool windows 1-3 by 1-3,
// strides 1-3, pads below the window; max and average): whichever path each takes.
TEST(LowerConvPool, RandomGeometriesMatchTier0) {
  std::mt19937 rng(2026);
  auto pick = [&](std::initializer_list<int64_t> v) {
    return *(v.begin() + std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng));
  };
  auto in = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  int checked = 0;
  while (checked < 12) {
    PoolCase k{"random", pick({1, 3, 8}), in(5, 30), in(5, 30), pick({4, 7, 16}), pick({1, 3, 5}),
               pick({1, 1, 2}), 0, OpKind::MaxPool, {}, {}, {}};
    k.pad = in(0, k.k / 2);
    k.pool = checked % 2 ? OpKind::MaxPool : OpKind::AveragePool;
    k.count_include_pad = in(0, 1);
    k.kernel = {in(1, 3), in(1, 3)};
    k.strides = {in(1, 3), in(1, 3)};
    k.pads = {in(0, k.kernel[0] - 1), in(0, k.kernel[1] - 1), in(0, k.kernel[0] - 1),
              in(0, k.kernel[1] - 1)};
    const int64_t oh = (k.h + 2 * k.pad - k.k) / k.stride + 1, ow = (k.w + 2 * k.pad - k.k) / k.stride + 1;
    if (oh < 1 || ow < 1 || oh + k.pads[0] + k.pads[2] < k.kernel[0] ||
        ow + k.pads[1] + k.pads[3] < k.kernel[1])
      continue;
    const std::string what = "C=" + std::to_string(k.c) + " " + std::to_string(k.h) + "x" +
                             std::to_string(k.w) + " M=" + std::to_string(k.m) + " k" +
                             std::to_string(k.k) + "/" + std::to_string(k.stride) + " pool " +
                             std::to_string(k.kernel[0]) + "x" + std::to_string(k.kernel[1]) + "/" +
                             std::to_string(k.strides[0]) + "," + std::to_string(k.strides[1]);
    k.what = what.c_str();
    check_pool(k, 2, 1 + checked % 2);
    ++checked;
  }
}

TEST(LowerConvPool, MaxPoolPropagatesNaN) {
  check_pool(kLenet, 2, 1, /*nan=*/true);
  const PoolCase wide = {"wide max 3x3/1 p1", 4, 20, 40, 8, 3, 1, 1, OpKind::MaxPool, {3, 3},
                         {1, 1}, {1, 1, 1, 1}};
  check_pool(wide, 1, 1, /*nan=*/true);
  const PoolCase narrow = {"narrow max", 8, 14, 14, 12, 3, 2, 1, OpKind::MaxPool, {2, 2}, {1, 1},
                           {0, 0, 0, 0}};
  check_pool(narrow, 1, 2, /*nan=*/true);
}

}  // namespace
}  // namespace tierjit::lower_testing
