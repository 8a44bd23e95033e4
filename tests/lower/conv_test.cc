// Differential tests of the Conv lowering (lower_conv.cc: im2col + generated GEMM) against tier 0
// (oneDNN convolution): 2-D NCHW with pads, strides, dilations, auto_pad, groups (depthwise),
// 1x1 in place, bias and epilogues, batch symbolic (every level and tier).
// Tolerance: K = C/group * KH * KW float32 products summed in a different order than oneDNN's,
// as in matmul_test.cc: atol = 1e-6 * K + rtol 1e-4.
#include "lower_test_util.h"

namespace tierjit::lower_testing {
namespace {

using ir::OpKind;
using passes::testing::attr_int;
using passes::testing::attr_ints;
using passes::testing::C;
using passes::testing::dims;
using passes::testing::S;

struct ConvCase {
  int64_t c, h, w, m, kh, kw, group;
  std::vector<int64_t> strides, dilations, pads;
  std::string auto_pad;
  bool bias;
};

void check_conv(const ConvCase& k, int64_t batch, bool relu, bool residual, int threads = 1,
                std::vector<kir::InputLayout>* layouts = nullptr) {
  SCOPED_TRACE("C=" + std::to_string(k.c) + " HxW=" + std::to_string(k.h) + "x" + std::to_string(k.w) +
               " M=" + std::to_string(k.m) + " k=" + std::to_string(k.kh) + "x" + std::to_string(k.kw) +
               " group=" + std::to_string(k.group) + " auto_pad=" + k.auto_pad);
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({S("N"), C(k.c), C(k.h), C(k.w)}));
  std::vector<ir::Value*> ins = {x, b.constant("w", random_f32({k.m, k.c / k.group, k.kh, k.kw}, 1))};
  if (k.bias) ins.push_back(b.constant("b", random_f32({k.m}, 2)));
  passes::testing::Attrs attrs = {{"group", attr_int(k.group)}};
  if (!k.strides.empty()) attrs.push_back({"strides", attr_ints(k.strides)});
  if (!k.dilations.empty()) attrs.push_back({"dilations", attr_ints(k.dilations)});
  if (!k.pads.empty()) attrs.push_back({"pads", attr_ints(k.pads)});
  if (!k.auto_pad.empty()) {
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kString;
    a.s = k.auto_pad;
    attrs.push_back({"auto_pad", a});
  }
  ir::Value* conv = b.node(OpKind::Conv, ins, "conv", attrs);
  b.infer();
  ir::Value* y = conv;
  std::vector<Tensor> feeds = {random_f32({batch, k.c, k.h, k.w}, 3)};
  if (relu) y = b.node(OpKind::Relu, {y}, "relu");
  if (residual) {
    // The residual has the conv output's shape (a second fed input).
    const auto& ys = *conv->type().shape;
    ir::Value* r = b.input("res", DType::kFloat32, dims({S("N"), ys[1], ys[2], ys[3]}));
    y = b.node(OpKind::Add, {y, r}, "residual");
    feeds.push_back(random_f32({batch, ys[1].value, ys[2].value, ys[3].value}, 4));
  }
  b.output(y);
  b.infer();
  DiffOptions o;
  o.threads = threads;
  o.kinds = {passes::RegionKind::kMatMulEpilogue};
  const double kk = static_cast<double>(k.c / k.group * k.kh * k.kw);
  o.tol.rtol = 1e-4;
  o.tol.atol = 1e-6 * kk + 1e-6;
  o.layouts_seen = layouts;
  expect_all_levels_match(b.g, feeds, o);
}

TEST(LowerConv, PadsStridesDilationsGroups) {
  const ConvCase cases[] = {
      {3, 9, 11, 8, 3, 3, 1, {}, {}, {1, 1, 1, 1}, "", true},             // 3x3 same
      {4, 10, 7, 5, 3, 2, 1, {2, 1}, {1, 2}, {0, 1, 2, 0}, "", false},    // strided, dilated
      {6, 8, 8, 6, 3, 3, 6, {1, 1}, {}, {1, 1, 1, 1}, "", true},          // depthwise
      {6, 8, 8, 4, 3, 3, 2, {2, 2}, {}, {}, "SAME_UPPER", true},          // grouped, auto_pad
      {5, 6, 7, 3, 2, 2, 1, {}, {}, {}, "SAME_LOWER", false},
      {16, 5, 5, 33, 1, 1, 1, {}, {}, {}, "", true},                      // 1x1: X in place
      {8, 9, 9, 17, 1, 1, 1, {2, 2}, {}, {}, "", true},                   // 1x1 strided: im2col
      {2, 1, 1, 3, 1, 1, 1, {}, {}, {}, "VALID", false},                  // 1x1 image
      {3, 4, 4, 2, 5, 5, 1, {}, {}, {2, 2, 2, 2}, "", true},              // kernel > image
  };
  for (const ConvCase& c : cases) check_conv(c, 2, false, false);
}

TEST(LowerConv, BatchSizesAndEpilogues) {
  const ConvCase c = {8, 7, 7, 16, 3, 3, 1, {}, {}, {1, 1, 1, 1}, "", true};
  for (int64_t n : {0, 1, 3}) check_conv(c, n, true, true);
  const ConvCase dw = {16, 9, 9, 16, 3, 3, 16, {2, 2}, {}, {1, 1, 1, 1}, "", true};
  check_conv(dw, 2, true, false);
}

// The kernel-layer paths' edges: 1x1 products below and above the generated GEMM's K, a
// one-channel 3x3 conv (K = 9: the generated GEMM on im2col), K past one packed panel (partial sums in the output, then the
// epilogue), items split over output channels, two threads (one workspace slice each), 5x5
// depthwise with stride 2, odd pixel counts past one 64-pixel panel.
TEST(LowerConv, KBlocksThreadsAndDepthwiseStrides) {
  const ConvCase k_blocks = {64, 6, 5, 30, 3, 3, 1, {}, {}, {1, 1, 1, 1}, "", true};  // K = 576
  const ConvCase wide = {3, 13, 11, 40, 3, 3, 1, {1, 1}, {}, {1, 1, 1, 1}, "", true};  // 143 px
  const ConvCase dw5 = {12, 15, 14, 12, 5, 5, 12, {2, 2}, {}, {2, 2, 2, 2}, "", true};
  const ConvCase dw3 = {8, 9, 9, 8, 3, 3, 8, {1, 1}, {2, 2}, {2, 2, 2, 2}, "", false};
  // 1x1 products on X in place: K = 24 takes the generated GEMM at tiers 2-3 (K <= 128), K = 192
  // the kernel layer's in-place tile.
  const ConvCase pointwise_small_k = {24, 7, 9, 40, 1, 1, 1, {}, {}, {}, "", true};
  const ConvCase pointwise_large_k = {192, 5, 6, 20, 1, 1, 1, {}, {}, {}, "", true};
  // One input channel, K = 9 (im2col + generated GEMM at tiers 2-3), plain and strided.
  const ConvCase one_channel = {1, 12, 10, 16, 3, 3, 1, {}, {}, {1, 1, 1, 1}, "", true};
  const ConvCase one_channel_strided = {1, 11, 9, 6, 3, 3, 1, {2, 2}, {}, {1, 0, 1, 0}, "", true};
  for (int threads : {1, 2})
    for (int64_t n : {1, 3}) {
      check_conv(one_channel, n, true, true, threads);
      check_conv(one_channel_strided, n, true, false, threads);
      check_conv(pointwise_small_k, n, true, true, threads);
      check_conv(pointwise_large_k, n, true, true, threads);
      check_conv(k_blocks, n, true, true, threads);
      check_conv(wide, n, true, false, threads);
      check_conv(dw5, n, true, true, threads);
      check_conv(dw3, n, false, false, threads);
    }
}

// The direct convolution (direct_conv_rows_f32: maps whose rows fill the vectors, 12-16 or 24-32
// columns): K from 9 to 1152 in one pass (no K blocks), strides, dilation, groups of 2-4
// channels, items of several row blocks (64 channels x 28 columns: 9 rows per item), output
// channels split over two threads at batch 1, batch 0, and a ReLU + residual epilogue.
TEST(LowerConv, DirectConvolutionRowsAndChannelParts) {
  const ConvCase lenet2 = {16, 14, 14, 32, 3, 3, 1, {}, {}, {1, 1, 1, 1}, "", true};
  const ConvCase wide_k = {128, 14, 14, 20, 3, 3, 1, {}, {}, {1, 1, 1, 1}, "", true};  // K = 1152
  const ConvCase strided = {6, 29, 31, 13, 3, 3, 1, {2, 2}, {}, {1, 1, 1, 1}, "", false};
  const ConvCase dilated = {5, 20, 16, 7, 3, 3, 1, {}, {2, 2}, {2, 2, 2, 2}, "", true};
  const ConvCase grouped = {8, 12, 12, 12, 3, 3, 4, {}, {}, {1, 1, 1, 1}, "", true};
  const ConvCase rows = {64, 28, 28, 64, 3, 3, 1, {}, {}, {1, 1, 1, 1}, "", true};
  const ConvCase strided_1x1 = {24, 28, 28, 16, 1, 1, 1, {2, 2}, {}, {}, "", true};
  const ConvCase one_channel = {1, 28, 28, 16, 3, 3, 1, {}, {}, {1, 1, 1, 1}, "", true};
  // Unpadded: rows of 38 columns, the input channels in several chunks (the ONNX pytorch
  // operator test's conv).
  const ConvCase ragged = {16, 50, 40, 13, 3, 3, 1, {}, {}, {0, 0, 0, 0}, "", false};
  for (int threads : {1, 2})
    for (int64_t n : {0, 1, 3}) {
      check_conv(lenet2, n, true, true, threads);
      check_conv(grouped, n, true, false, threads);
      if (n == 0) continue;
      check_conv(wide_k, n, true, false, threads);
      check_conv(strided, n, false, false, threads);
      check_conv(dilated, n, true, true, threads);
      check_conv(rows, n, true, true, threads);
      check_conv(strided_1x1, n, false, false, threads);
      check_conv(one_channel, n, true, false, threads);
      check_conv(ragged, n, false, false, threads);
    }
}

// Depthwise items stored as one flat run of the plane's pixels: a 7 x 7 map (49 = 3 vectors of
// 16 + 1), 5 x 5 (25 = 16 + 8 + 1: the half vector), 3 x 3 stride 2 on 6 x 6 (9 pixels: no
// whole vector), and a 70 x 66 map split into items of rows (2048 / 66 = 31 rows per item, the
// second and third starting past pixel 0), with a ReLU and a residual through the epilogue; the
// stride-1 maps up to 64 wide take the flat tile (vectors over the pixels back to back), the
// stride-2 6 x 6 map the channel-block tile (5 channels, one partial block), the 66-wide one the
// per-channel rows.
TEST(LowerConv, DepthwiseItemsStoredAsFlatRuns) {
  const ConvCase narrow = {20, 7, 7, 20, 5, 5, 20, {}, {}, {2, 2, 2, 2}, "", true};
  const ConvCase half = {3, 5, 5, 3, 3, 3, 3, {}, {}, {1, 1, 1, 1}, "", true};
  const ConvCase tiny = {5, 6, 6, 5, 3, 3, 5, {2, 2}, {}, {1, 1, 1, 1}, "", false};
  const ConvCase tall = {2, 70, 66, 2, 3, 3, 2, {}, {}, {1, 1, 1, 1}, "", true};
  // Channel blocks (maps at most two vectors wide): 18 channels (a block and a partial one) on
  // 100 x 30 (2048 / 30 = 68 rows per item: two items of rows per block).
  const ConvCase blocks = {18, 100, 30, 18, 3, 3, 18, {}, {}, {1, 1, 1, 1}, "", true};
  for (int threads : {1, 2}) {
    check_conv(blocks, 2, true, true, threads);
    check_conv(narrow, 2, true, true, threads);
    check_conv(half, 1, true, true, threads);
    check_conv(tiny, 3, false, true, threads);
    check_conv(tall, 1, true, true, threads);
  }
}

// 1x1 products on maps of few pixels run their vectors over the output channels
// (gemm_panel_cols_f32 on W packed transposed: pointwise_by_columns): 7 x 7 (49 pixels), 10 x 10
// (100: two parts of the pixels), 3 x 3, with 70 output channels (a 64-wide panel and a partial
// one), 10 (16-wide panels) and 200; K from 16 to 600 (two blocks of 256 and a rest); a ReLU and
// a residual epilogue, batch 0, 1 and 3, one and two threads. A 14 x 14 map (196 pixels: 94% of
// the pixel panels' lanes) keeps the row tile.
TEST(LowerConv, PointwiseOnFewPixelsByOutputChannels) {
  const ConvCase seven = {320, 7, 7, 70, 1, 1, 1, {}, {}, {}, "", true};
  const ConvCase ten = {600, 10, 10, 10, 1, 1, 1, {}, {}, {}, "", true};
  const ConvCase three = {160, 3, 3, 200, 1, 1, 1, {}, {}, {}, "", false};
  const ConvCase small_k = {16, 7, 7, 24, 1, 1, 1, {}, {}, {}, "", true};
  const ConvCase fourteen = {192, 14, 14, 32, 1, 1, 1, {}, {}, {}, "", true};
  for (int threads : {1, 2})
    for (int64_t n : {0, 1, 3}) {
      std::vector<kir::InputLayout> layouts;
      for (const ConvCase& c : {seven, ten, three}) {
        check_conv(c, n, true, true, threads, &layouts);
        ASSERT_GE(layouts.size(), 2u);
        EXPECT_EQ(layouts[1], kir::InputLayout::kGemmPanelsTransposed) << "C " << c.c << " M " << c.m;
      }
      check_conv(small_k, n, true, false, threads);
      check_conv(fourteen, n, false, true, threads, &layouts);
      ASSERT_GE(layouts.size(), 2u);
      EXPECT_EQ(layouts[1], kir::InputLayout::kAsIs);
    }
}

}  // namespace
}  // namespace tierjit::lower_testing
