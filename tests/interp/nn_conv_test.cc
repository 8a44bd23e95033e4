// Tier-0 Conv / ConvTranspose / ConvInteger / QLinearConv: hand-computed small cases (padding,
// strides, dilation, groups, depthwise, bias, 1-D / 3-D), a loop reference, and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "interp/kernels/conv_ref.h"
#include "interp/kernels/dnnl_util.h"
#include "nn_test_util.h"
#include "node_runner.h"

namespace tierjit::testing {
namespace {

using ir::OpKind;
using nn_test::Attrs;
using nn_test::f32;
using nn_test::run;

// x = 1..9 as a 1x1x3x3 image:
//  1 2 3
//  4 5 6
//  7 8 9
Tensor image3() { return f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}); }
// kernel [[1, 0], [0, -1]] (top-left minus bottom-right)
Tensor kernel2() { return f32({1, 1, 2, 2}, {1, 0, 0, -1}); }

TEST(NnConv, TwoByTwoKernelNoPadding) {
  // y[i][j] = x[i][j] - x[i+1][j+1] = -4 everywhere: [[1-5, 2-6], [4-8, 5-9]]
  auto out = run(OpKind::Conv, {image3(), kernel2()});
  ASSERT_TRUE(out.ok()) << out.status().message();
  expect_tensor_near((*out)[0], f32({1, 1, 2, 2}, {-4, -4, -4, -4}));
}

TEST(NnConv, PaddingStrideAndBias) {
  // pads 1 on every side -> padded 5x5; stride 2 -> out 2x2 at padded (0,0),(0,2),(2,0),(2,2):
  // (0,0): 0 - x[0][0] = -1; (0,2): 0 - x[0][2] = -3; (2,0): x[1][-1]=0 - x[2][0] = -7;
  // (2,2): x[1][1] - x[2][2] = 5 - 9 = -4. bias +10.
  auto out = run(OpKind::Conv, {image3(), kernel2(), f32({1}, {10})}, 1,
                       {{"pads", attr_ints({1, 1, 1, 1})}, {"strides", attr_ints({2, 2})}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  expect_tensor_near((*out)[0], f32({1, 1, 2, 2}, {9, 7, 3, 6}));
}

TEST(NnConv, AutoPadSameUpperAndLower) {
  // SAME_UPPER, kernel 2: total pad 1 goes to the end: out 3x3, y[i][j] = x[i][j] - x[i+1][j+1]
  // with zeros past the edge: [[-4,-4,3],[-4,-4,6],[7,8,9]].
  auto up = run(OpKind::Conv, {image3(), kernel2()}, 1, {{"auto_pad", attr_string("SAME_UPPER")}});
  ASSERT_TRUE(up.ok()) << up.status().message();
  expect_tensor_near((*up)[0], f32({1, 1, 3, 3}, {-4, -4, 3, -4, -4, 6, 7, 8, 9}));
  // SAME_LOWER: pad at the start: y[i][j] = x[i-1][j-1] - x[i][j]:
  // [[-1,-2,-3],[-4,-4,-4],[-7,-4,-4]]
  auto lo = run(OpKind::Conv, {image3(), kernel2()}, 1, {{"auto_pad", attr_string("SAME_LOWER")}});
  ASSERT_TRUE(lo.ok()) << lo.status().message();
  expect_tensor_near((*lo)[0], f32({1, 1, 3, 3}, {-1, -2, -3, -4, -4, -4, -7, -4, -4}));
}

TEST(NnConv, Dilation) {
  // dilation 2 with the 2x2 kernel spans 3x3: y = x[0][0] - x[2][2] = 1 - 9 = -8.
  auto out = run(OpKind::Conv, {image3(), kernel2()}, 1, {{"dilations", attr_ints({2, 2})}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  expect_tensor_near((*out)[0], f32({1, 1, 1, 1}, {-8}));
}

TEST(NnConv, DepthwiseAndGroups) {
  // 2 channels, group 2, kernel 1x1 weights [2, 3]: y0 = 2*x0, y1 = 3*x1.
  Tensor x = f32({1, 2, 1, 2}, {1, 2, 3, 4});
  auto dw = run(OpKind::Conv, {x, f32({2, 1, 1, 1}, {2, 3})}, 1, {{"group", attr_int(2)}});
  ASSERT_TRUE(dw.ok()) << dw.status().message();
  expect_tensor_near((*dw)[0], f32({1, 2, 1, 2}, {2, 4, 9, 12}));
  // Depthwise with multiplier 2: out channels 0,1 read channel 0; 2,3 read channel 1.
  auto mult = run(OpKind::Conv, {x, f32({4, 1, 1, 1}, {1, -1, 10, 0})}, 1, {{"group", attr_int(2)}});
  ASSERT_TRUE(mult.ok()) << mult.status().message();
  expect_tensor_near((*mult)[0], f32({1, 4, 1, 2}, {1, 2, -1, -2, 30, 40, 0, 0}));
}

TEST(NnConv, OneDAndThreeD) {
  // 1-D: x = [1 2 3 4], w = [1 1], stride 2 -> [3, 7]
  auto c1 = run(OpKind::Conv, {f32({1, 1, 4}, {1, 2, 3, 4}), f32({1, 1, 2}, {1, 1})}, 1,
                      {{"strides", attr_ints({2})}});
  ASSERT_TRUE(c1.ok()) << c1.status().message();
  expect_tensor_near((*c1)[0], f32({1, 1, 2}, {3, 7}));
  // 3-D: 2x2x2 ones with a 2x2x2 ones kernel -> 8; pads 0.
  auto c3 = run(OpKind::Conv, {f32({1, 1, 2, 2, 2}, std::vector<float>(8, 1.f)),
                                     f32({1, 1, 2, 2, 2}, std::vector<float>(8, 1.f))});
  ASSERT_TRUE(c3.ok()) << c3.status().message();
  expect_tensor_near((*c3)[0], f32({1, 1, 1, 1, 1}, {8}));
}

TEST(NnConv, Float64MatchesFloat32) {
  std::vector<float> xv(2 * 3 * 5 * 4), wv(4 * 3 * 3 * 2);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(i % 11) - 5.f;
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = static_cast<float>(i % 5) * 0.5f - 1.f;
  std::vector<double> xd(xv.begin(), xv.end()), wd(wv.begin(), wv.end());
  std::vector<std::pair<std::string, ir::Attribute>> attrs = {
      {"pads", attr_ints({1, 0, 2, 1})}, {"strides", attr_ints({2, 1})}, {"dilations", attr_ints({1, 2})}};
  auto f = run(OpKind::Conv, {f32({2, 3, 5, 4}, xv), f32({4, 3, 3, 2}, wv)}, 1, attrs);
  auto d = run(OpKind::Conv, {Tensor::from_vector<double>({2, 3, 5, 4}, xd),
                                    Tensor::from_vector<double>({4, 3, 3, 2}, wd)}, 1, attrs);
  ASSERT_TRUE(f.ok()) << f.status().message();
  ASSERT_TRUE(d.ok()) << d.status().message();
  const Tensor& fy = (*f)[0];
  const Tensor& dy = (*d)[0];
  ASSERT_EQ(fy.shape(), dy.shape());
  // H: padded 5+1+2 = 8, extent 3, stride 2 -> 3; W: padded 4+0+1 = 5, extent (2-1)*2+1 = 3 -> 3
  EXPECT_EQ(fy.shape(), (Shape{2, 4, 3, 3}));
  for (int64_t i = 0; i < fy.numel(); ++i) EXPECT_NEAR(fy.value_as_double(i), dy.value_as_double(i), 1e-4);
}

TEST(NnConv, RepeatedShapeWithNewWeightsAndThreads) {
  // The primitive cache is keyed by shape: a second run with other (non-constant) weights must
  // use them. 3x3 kernel of ones over image3 with pads 1: centre = 45, corner (0,0) = 1+2+4+5 = 12.
  Attrs pads = {{"pads", attr_ints({1, 1, 1, 1})}};
  auto ones = run(OpKind::Conv, {image3(), f32({1, 1, 3, 3}, std::vector<float>(9, 1.f))}, 1, pads);
  ASSERT_TRUE(ones.ok()) << ones.status().message();
  EXPECT_FLOAT_EQ((*ones)[0].data<float>()[4], 45.f);
  EXPECT_FLOAT_EQ((*ones)[0].data<float>()[0], 12.f);
  auto twos = run(OpKind::Conv, {image3(), f32({1, 1, 3, 3}, std::vector<float>(9, 2.f))}, 1, pads);
  ASSERT_TRUE(twos.ok()) << twos.status().message();
  EXPECT_FLOAT_EQ((*twos)[0].data<float>()[4], 90.f);
  // Two threads give the same answer.
  interp::ExecOptions opts;
  opts.intra_op_threads = 2;
  auto par = run_node(NodeSpec{OpKind::Conv, {image3(), f32({1, 1, 3, 3}, std::vector<float>(9, 1.f))}, 1, pads, 17}, opts);
  ASSERT_TRUE(par.ok()) << par.status().message();
  expect_tensor_near((*par)[0], (*ones)[0]);
}

TEST(NnConv, Errors) {
  // channel mismatch: X has 1 channel, W expects 2
  auto ch = run(OpKind::Conv, {image3(), f32({1, 2, 2, 2}, std::vector<float>(8, 1))});
  ASSERT_FALSE(ch.ok());
  EXPECT_NE(ch.status().message().find("channel"), std::string::npos) << ch.status().message();
  // kernel larger than the padded input
  auto big = run(OpKind::Conv, {image3(), f32({1, 1, 4, 4}, std::vector<float>(16, 1))});
  EXPECT_FALSE(big.ok());
  // group does not divide the output channels
  auto grp = run(OpKind::Conv, {f32({1, 2, 2, 2}, std::vector<float>(8, 1)),
                                      f32({3, 1, 1, 1}, {1, 1, 1})}, 1, {{"group", attr_int(2)}});
  EXPECT_FALSE(grp.ok());
  // wrong bias length
  auto bias = run(OpKind::Conv, {image3(), kernel2(), f32({2}, {1, 2})});
  EXPECT_FALSE(bias.ok());
  // rank 2 input
  auto rank = run(OpKind::Conv, {f32({3, 3}, std::vector<float>(9, 1)), f32({2, 2}, {1, 1, 1, 1})});
  EXPECT_FALSE(rank.ok());
}

TEST(NnConvTranspose, StrideAndOutputPadding) {
  // x = [1 2] (1-D), w = [1 1 1], stride 2: y = [1 1 1+2 2 2] = [1 1 3 2 2];
  // output_padding 1 appends one more element (0).
  auto out = run(OpKind::ConvTranspose, {f32({1, 1, 2}, {1, 2}), f32({1, 1, 3}, {1, 1, 1})}, 1,
                       {{"strides", attr_ints({2})}, {"output_padding", attr_ints({1})}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  expect_tensor_near((*out)[0], f32({1, 1, 6}, {1, 1, 3, 2, 2, 0}));
  // pads 1/1 crop one element at each end: [1 3 2]
  auto pad = run(OpKind::ConvTranspose, {f32({1, 1, 2}, {1, 2}), f32({1, 1, 3}, {1, 1, 1})}, 1,
                       {{"strides", attr_ints({2})}, {"pads", attr_ints({1, 1})}});
  ASSERT_TRUE(pad.ok()) << pad.status().message();
  expect_tensor_near((*pad)[0], f32({1, 1, 3}, {1, 3, 2}));
}

TEST(NnConvTranspose, TwoDGroupsAndBias) {
  // 2 input channels, group 2, 1 output channel per group, 1x1 kernels [2], [3], bias [1, -1]:
  // y0 = 2*x0 + 1, y1 = 3*x1 - 1.
  auto out = run(OpKind::ConvTranspose, {f32({1, 2, 1, 2}, {1, 2, 3, 4}), f32({2, 1, 1, 1}, {2, 3}),
                                               f32({2}, {1, -1})}, 1, {{"group", attr_int(2)}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  expect_tensor_near((*out)[0], f32({1, 2, 1, 2}, {3, 5, 8, 11}));
}

// An input with a size-0 spatial dim (found by the loader fuzz target: col2im indexed an empty
// table, UBSan): no input element contributes, so every output is the bias. X [1, 1, 0, 0],
// W [1, 2, 3, 3], stride 1: Y spatial = 1 * (0 - 1) + 3 = 2, Y [1, 2, 2, 2] = bias [0.5, -1];
// in 2-D with a bias and in 1-D without (zeros). The release build never read the empty table;
// the sanitizer run of these tests (scripts/test-asan.sh) reports the read without the fix.
TEST(NnConvTranspose, EmptySpatialInputGivesTheBias) {
  auto out = run(OpKind::ConvTranspose, {f32({1, 1, 0, 0}, {}), f32({1, 2, 3, 3}, std::vector<float>(18, 1)),
                                         f32({2}, {0.5f, -1})});
  ASSERT_TRUE(out.ok()) << out.status().message();
  expect_tensor_near((*out)[0], f32({1, 2, 2, 2}, {0.5f, 0.5f, 0.5f, 0.5f, -1, -1, -1, -1}));
  auto plain = run(OpKind::ConvTranspose, {f32({2, 1, 0}, {}), f32({1, 1, 3}, {1, 1, 1})});
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  expect_tensor_near((*plain)[0], f32({2, 1, 2}, {0, 0, 0, 0}));
  // Conv on an input with a 0 spatial dim: refused with the axis named (no window fits).
  auto conv = run(OpKind::Conv, {f32({1, 1, 0, 4}, {}), f32({1, 1, 1, 1}, {2})});
  ASSERT_FALSE(conv.ok());
  EXPECT_NE(conv.status().message().find("spatial axis 0"), std::string::npos)
      << conv.status().message();
}

TEST(NnConvInteger, ZeroPointPadding) {
  // x = [[2 3],[4 5]] uint8, x_zp 1 -> [[1 2],[3 4]]; w = 1x1 of 2 (zp 0) -> [[2 4],[6 8]].
  // pads 1 on the left: padded values equal x_zp so they contribute 0.
  auto out = run(OpKind::ConvInteger, {Tensor::from_vector<uint8_t>({1, 1, 2, 2}, {2, 3, 4, 5}),
                                             Tensor::from_vector<uint8_t>({1, 1, 1, 1}, {2}),
                                             Tensor::scalar<uint8_t>(1)}, 1,
                       {{"pads", attr_ints({0, 1, 0, 0})}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  expect_tensor_near((*out)[0], Tensor::from_vector<int32_t>({1, 1, 2, 3}, {0, 2, 4, 0, 6, 8}));
}

TEST(NnQLinearConv, RequantizesWithBias) {
  // x = [4] (scale 0.5, zp 0) -> 2; w = [3] (scale 1, zp 1) -> 2; acc = 4*2 = 8 (int domain
  // (4-0)*(3-1) = 8), bias 2 -> 10; real = 10 * 0.5 * 1 = 5; y_scale 0.5, zp 3 -> 10 + 3 = 13.
  auto out = run(OpKind::QLinearConv,
                       {Tensor::from_vector<uint8_t>({1, 1, 1, 1}, {4}), Tensor::scalar<float>(0.5f),
                        Tensor::scalar<uint8_t>(0), Tensor::from_vector<uint8_t>({1, 1, 1, 1}, {3}),
                        Tensor::scalar<float>(1.f), Tensor::scalar<uint8_t>(1), Tensor::scalar<float>(0.5f),
                        Tensor::scalar<uint8_t>(3), Tensor::from_vector<int32_t>({1}, {2})});
  ASSERT_TRUE(out.ok()) << out.status().message();
  expect_tensor_near((*out)[0], Tensor::from_vector<uint8_t>({1, 1, 1, 1}, {13}));
}

// oneDNN's reordered copies of constant weights whose tensor only the cache still holds (the
// model is gone) are dropped at the next reorder: a service that loads and drops models keeps
// only the live ones' copies.
TEST(DnnlWeightCache, CopiesOfDroppedWeightsAreFreed) {
  interp::nn::ConvGeometry g;
  g.batch = 1;
  g.in_channels = 16;
  g.out_channels = 32;
  g.in_spatial = {8, 8};
  g.out_spatial = {8, 8};
  g.kernel = {3, 3};
  g.strides = {1, 1};
  g.dilations = {1, 1};
  g.pad_begin = {1, 1};
  g.pad_end = {1, 1};
  std::vector<float> x(16 * 64, 0.5f), y(32 * 64);
  size_t one = 0;
  for (int k = 0; k < 20; ++k) {
    Tensor w = Tensor::empty(DType::kFloat32, {32, 16, 3, 3});  // a new model's weights
    for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = static_cast<float>(i % 7 + k) * 0.01f;
    ASSERT_TRUE(interp::nn::dnnl_conv_f32(g, x.data(), w.data<float>(), &w, nullptr, y.data(), 1).ok());
    if (k == 0) one = interp::nn::dnnl_cached_weight_bytes();
    EXPECT_EQ(interp::nn::dnnl_cached_weight_bytes(), one) << "after model " << k;
  }
  EXPECT_GT(one, size_t{0});
}

// A batch size's first call runs image by image on the batch-1 primitive, its second on a
// primitive of its own (dnnl_util.h): both agree with the loop reference, at 1 and 2 threads,
// with and without a bias, for every batch up to past kConvImagesApartMax (one batched call).
TEST(NnConv, FirstCallOfABatchSizeImageByImageMatchesTheReference) {
  interp::nn::ConvGeometry g;
  g.in_channels = 16;
  g.out_channels = 32;
  g.in_spatial = {9, 7};
  g.out_spatial = {5, 4};
  g.kernel = {3, 3};
  g.strides = {2, 2};
  g.dilations = {1, 1};
  g.pad_begin = {1, 1};
  g.pad_end = {1, 1};
  Tensor w = Tensor::empty(DType::kFloat32, {32, 16, 3, 3});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = static_cast<float>(i % 13 - 6) * 0.03f;
  std::vector<float> bias(32);
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = static_cast<float>(i % 5) * 0.25f - 0.5f;
  for (int64_t batch : {int64_t{2}, int64_t{3}, int64_t{5}, interp::nn::kConvImagesApartMax + 1}) {
    g.batch = batch;
    std::vector<float> x(static_cast<size_t>(batch * 16 * 63));
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7) % 23) * 0.1f - 1.f;
    std::vector<float> want(static_cast<size_t>(batch * 32 * 20));
    interp::nn::conv_ref<float>(g, x.data(), w.data<float>(), want.data());
    for (int threads : {1, 2})
      for (bool with_bias : {false, true}) {
        // Each (threads, bias) is a new primitive key: call 1 image by image, call 2 batched.
        for (int call = 1; call <= 2; ++call) {
          std::vector<float> y(want.size(), -7.f);
          ASSERT_TRUE(interp::nn::dnnl_conv_f32(g, x.data(), w.data<float>(), &w,
                                                with_bias ? bias.data() : nullptr, y.data(), threads)
                          .ok());
          for (size_t i = 0; i < y.size(); ++i) {
            const float expect = want[i] + (with_bias ? bias[(i / 20) % 32] : 0.f);
            ASSERT_NEAR(y[i], expect, 1e-4f * (1.f + std::fabs(expect)))
                << "batch " << batch << " threads " << threads << " bias " << with_bias
                << " call " << call << " at " << i;
          }
        }
      }
  }
}

}  // namespace
}  // namespace tierjit::testing
