// Tier-0 MaxPool / AveragePool / LpPool / MaxUnpool / MaxRoiPool / RoiAlign: hand-computed cases
// for padding, strides, dilations, ceil_mode, count_include_pad, Indices with both storage
// orders, uint8 input, and bad input.
#include <gtest/gtest.h>

#include "nn_test_util.h"
#include "node_runner.h"

namespace tierjit::testing {
namespace {

using ir::OpKind;
using nn_test::Attrs;
using nn_test::f32;
using nn_test::run;

// 1x1x4x4 image with values 1..16:
//   1  2  3  4
//   5  6  7  8
//   9 10 11 12
//  13 14 15 16
Tensor image4() {
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = static_cast<float>(i + 1);
  return f32({1, 1, 4, 4}, v);
}

TEST(NnMaxPool, StridesAndIndices) {
  // 2x2 windows, stride 2: maxima 6, 8, 14, 16 at flat indices 5, 7, 13, 15.
  auto out = run(OpKind::MaxPool, {image4()}, 2,
                 {{"kernel_shape", attr_ints({2, 2})}, {"strides", attr_ints({2, 2})}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  expect_tensor_near((*out)[0], f32({1, 1, 2, 2}, {6, 8, 14, 16}));
  expect_tensor_near((*out)[1], Tensor::from_vector<int64_t>({1, 1, 2, 2}, {5, 7, 13, 15}));
  // storage_order 1: index = h + w * H: (1,1) -> 5, (1,3) -> 13, (3,1) -> 7, (3,3) -> 15.
  auto col = run(OpKind::MaxPool, {image4()}, 2,
                 {{"kernel_shape", attr_ints({2, 2})}, {"strides", attr_ints({2, 2})},
                  {"storage_order", attr_int(1)}});
  ASSERT_TRUE(col.ok()) << col.status().message();
  expect_tensor_near((*col)[1], Tensor::from_vector<int64_t>({1, 1, 2, 2}, {5, 13, 7, 15}));
}

TEST(NnMaxPool, CeilModeAndPads) {
  // 3x3 windows, stride 2 over 4x4: floor -> 1x1 (11), ceil -> 2x2: windows start at 0 and 2:
  // [0..2]x[0..2] -> 11, [0..2]x[2..3] -> 12, [2..3]x[0..2] -> 15, [2..3]x[2..3] -> 16.
  Attrs a = {{"kernel_shape", attr_ints({3, 3})}, {"strides", attr_ints({2, 2})}};
  auto fl = run(OpKind::MaxPool, {image4()}, 1, a);
  ASSERT_TRUE(fl.ok()) << fl.status().message();
  expect_tensor_near((*fl)[0], f32({1, 1, 1, 1}, {11}));
  a.push_back({"ceil_mode", attr_int(1)});
  auto ce = run(OpKind::MaxPool, {image4()}, 1, a);
  ASSERT_TRUE(ce.ok()) << ce.status().message();
  expect_tensor_near((*ce)[0], f32({1, 1, 2, 2}, {11, 12, 15, 16}));
  // pads 1 everywhere, 2x2 stride 2 over 6x6 padded: windows rows {-1,0},{1,2},{3,4}:
  // [[1, 3, 4], [9, 11, 12], [13, 15, 16]]
  auto pad = run(OpKind::MaxPool, {image4()}, 1,
                 {{"kernel_shape", attr_ints({2, 2})}, {"strides", attr_ints({2, 2})},
                  {"pads", attr_ints({1, 1, 1, 1})}});
  ASSERT_TRUE(pad.ok()) << pad.status().message();
  expect_tensor_near((*pad)[0], f32({1, 1, 3, 3}, {1, 3, 4, 9, 11, 12, 13, 15, 16}));
}

TEST(NnMaxPool, DilationsOneDAndUint8) {
  // 2x2 kernel, dilation 2 covers rows/cols {i, i+2}: out 2x2 = [[11, 12], [15, 16]].
  auto d = run(OpKind::MaxPool, {image4()}, 1,
               {{"kernel_shape", attr_ints({2, 2})}, {"dilations", attr_ints({2, 2})}});
  ASSERT_TRUE(d.ok()) << d.status().message();
  expect_tensor_near((*d)[0], f32({1, 1, 2, 2}, {11, 12, 15, 16}));
  // 1-D uint8: [3 200 7 9 1], kernel 2, stride 2 -> [200, 9]
  auto u = run(OpKind::MaxPool, {Tensor::from_vector<uint8_t>({1, 1, 5}, {3, 200, 7, 9, 1})}, 1,
               {{"kernel_shape", attr_ints({2})}, {"strides", attr_ints({2})}});
  ASSERT_TRUE(u.ok()) << u.status().message();
  expect_tensor_near((*u)[0], Tensor::from_vector<uint8_t>({1, 1, 2}, {200, 9}));
}

TEST(NnAveragePool, CountIncludePadAndCeil) {
  // 2x2 stride 2 with pads 1: the corner window holds only x[0][0] = 1:
  // exclude pad: 1 / 1 = 1; include pad: 1 / 4 = 0.25.
  // window (0,1) covers cols 1..2 of row 0: (2 + 3) / 2 = 2.5 vs 5 / 4 = 1.25.
  Attrs a = {{"kernel_shape", attr_ints({2, 2})}, {"strides", attr_ints({2, 2})}, {"pads", attr_ints({1, 1, 1, 1})}};
  auto ex = run(OpKind::AveragePool, {image4()}, 1, a);
  ASSERT_TRUE(ex.ok()) << ex.status().message();
  EXPECT_EQ((*ex)[0].shape(), (Shape{1, 1, 3, 3}));
  EXPECT_FLOAT_EQ((*ex)[0].data<float>()[0], 1.f);
  EXPECT_FLOAT_EQ((*ex)[0].data<float>()[1], 2.5f);
  a.push_back({"count_include_pad", attr_int(1)});
  auto in = run(OpKind::AveragePool, {image4()}, 1, a);
  ASSERT_TRUE(in.ok()) << in.status().message();
  EXPECT_FLOAT_EQ((*in)[0].data<float>()[0], 0.25f);
  EXPECT_FLOAT_EQ((*in)[0].data<float>()[1], 1.25f);
  // ceil_mode: 3x3 stride 2 over 4x4 -> 2x2; window (1,1) covers [2..3]x[2..3]:
  // (11 + 12 + 15 + 16) / 4 = 13.5 (the clipped part is not counted).
  auto ce = run(OpKind::AveragePool, {image4()}, 1,
                {{"kernel_shape", attr_ints({3, 3})}, {"strides", attr_ints({2, 2})}, {"ceil_mode", attr_int(1)}});
  ASSERT_TRUE(ce.ok()) << ce.status().message();
  expect_tensor_near((*ce)[0], f32({1, 1, 2, 2}, {6, 7.5f, 12, 13.5f}));
}

// ceil_mode with a window longer than the padded input by less than the stride: one window
// (ONNX's ceil((padded - extent) / stride) + 1 = 1, as ONNX Runtime computes), its taps past the
// end skipped; by the stride or more (no window starts inside) and in floor mode: an error.
TEST(NnPool, CeilModeWindowLongerThanTheInput) {
  // 3x3 stride 2 over 2x2 [[1, 2], [3, 4]]: one window holding all four values.
  const Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  const Attrs a = {{"kernel_shape", attr_ints({3, 3})}, {"strides", attr_ints({2, 2})}, {"ceil_mode", attr_int(1)}};
  auto mx = run(OpKind::MaxPool, {x}, 1, a);
  ASSERT_TRUE(mx.ok()) << mx.status().message();
  expect_tensor_near((*mx)[0], f32({1, 1, 1, 1}, {4}));
  auto av = run(OpKind::AveragePool, {x}, 1, a);
  ASSERT_TRUE(av.ok()) << av.status().message();
  expect_tensor_near((*av)[0], f32({1, 1, 1, 1}, {2.5f}));
  // 1-D kernel 4 stride 3, pads 1 / 1 over [5]: padded 3, window [-1, 3) holds 5 and the pads;
  // count_include_pad counts the padded input's 3 positions, not the tap past it: 5 / 3 (ONNX
  // Runtime's value).
  Attrs p = {{"kernel_shape", attr_ints({4})}, {"strides", attr_ints({3})}, {"pads", attr_ints({1, 1})},
             {"ceil_mode", attr_int(1)}};
  auto m1 = run(OpKind::MaxPool, {f32({1, 1, 1}, {5})}, 1, p);
  ASSERT_TRUE(m1.ok()) << m1.status().message();
  expect_tensor_near((*m1)[0], f32({1, 1, 1}, {5}));
  p.push_back({"count_include_pad", attr_int(1)});
  auto a1 = run(OpKind::AveragePool, {f32({1, 1, 1}, {5})}, 1, p);
  ASSERT_TRUE(a1.ok()) << a1.status().message();
  expect_tensor_near((*a1)[0], f32({1, 1, 1}, {5.f / 3.f}));
  // Short by the stride (kernel 3, stride 2 over 1) or in floor mode: errors.
  auto short_by_stride = run(OpKind::MaxPool, {f32({1, 1, 1, 2}, {1, 2})}, 1, a);
  ASSERT_FALSE(short_by_stride.ok());
  EXPECT_NE(short_by_stride.status().message().find("exceeds the padded input"), std::string::npos);
  auto floor_mode = run(OpKind::MaxPool, {x}, 1, {{"kernel_shape", attr_ints({3, 3})}, {"strides", attr_ints({2, 2})}});
  EXPECT_FALSE(floor_mode.ok());
}

TEST(NnLpPool, PTwo) {
  // 1-D [3 4 0 5], kernel 2 stride 2, p 2: [sqrt(9+16), sqrt(0+25)] = [5, 5]
  auto out = run(OpKind::LpPool, {f32({1, 1, 4}, {3, 4, 0, 5})}, 1,
                 {{"kernel_shape", attr_ints({2})}, {"strides", attr_ints({2})}, {"p", attr_int(2)}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  expect_tensor_near((*out)[0], f32({1, 1, 2}, {5, 5}));
}

TEST(NnPool, SizeZeroBatchAndErrors) {
  auto empty = run(OpKind::MaxPool, {f32({0, 2, 4, 4}, {})}, 1, {{"kernel_shape", attr_ints({2, 2})}});
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  EXPECT_EQ((*empty)[0].shape(), (Shape{0, 2, 3, 3}));
  auto no_kernel = run(OpKind::MaxPool, {image4()});
  ASSERT_FALSE(no_kernel.ok());
  EXPECT_NE(no_kernel.status().message().find("kernel_shape"), std::string::npos);
  auto too_big = run(OpKind::AveragePool, {image4()}, 1, {{"kernel_shape", attr_ints({5, 5})}});
  EXPECT_FALSE(too_big.ok());
  auto bad_rank = run(OpKind::MaxPool, {image4()}, 1, {{"kernel_shape", attr_ints({2})}});
  EXPECT_FALSE(bad_rank.ok());
  auto bad_pad = run(OpKind::MaxPool, {image4()}, 1,
                     {{"kernel_shape", attr_ints({2, 2})}, {"auto_pad", attr_string("SAME")}});
  EXPECT_FALSE(bad_pad.ok());
  auto int_avg = run(OpKind::AveragePool, {Tensor::from_vector<int32_t>({1, 1, 2}, {1, 2})}, 1,
                     {{"kernel_shape", attr_ints({2})}});
  EXPECT_FALSE(int_avg.ok());
}

TEST(NnMaxUnpool, ScattersAndChecksIndices) {
  // x = [6 8] at indices [1 3] of a 1-D output of (2-1)*2 + 2 = 4: [0 6 0 8]
  auto out = run(OpKind::MaxUnpool, {f32({1, 1, 2}, {6, 8}), Tensor::from_vector<int64_t>({1, 1, 2}, {1, 3})}, 1,
                 {{"kernel_shape", attr_ints({2})}, {"strides", attr_ints({2})}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  expect_tensor_near((*out)[0], f32({1, 1, 4}, {0, 6, 0, 8}));
  auto bad = run(OpKind::MaxUnpool, {f32({1, 1, 2}, {6, 8}), Tensor::from_vector<int64_t>({1, 1, 2}, {1, 9})}, 1,
                 {{"kernel_shape", attr_ints({2})}, {"strides", attr_ints({2})}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("out of range"), std::string::npos);
}

TEST(NnMaxRoiPool, WholeImageRoi) {
  // roi (batch 0, x1 0, y1 0, x2 3, y2 3) over image4, pooled 2x2: quadrant maxima.
  auto out = run(OpKind::MaxRoiPool, {image4(), f32({1, 5}, {0, 0, 0, 3, 3})}, 1,
                 {{"pooled_shape", attr_ints({2, 2})}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  expect_tensor_near((*out)[0], f32({1, 1, 2, 2}, {6, 8, 14, 16}));
  auto bad = run(OpKind::MaxRoiPool, {image4(), f32({1, 5}, {3, 0, 0, 3, 3})}, 1,
                 {{"pooled_shape", attr_ints({2, 2})}});
  EXPECT_FALSE(bad.ok());
}

TEST(NnRoiAlign, BilinearAverage) {
  // output_half_pixel, roi (0,0)-(2,2), 1x1 output, sampling_ratio 1: one sample at the bin
  // centre (1, 1) -> x[1][1] = 6. With 2x2 output, samples at (0.5, 0.5) etc.:
  // (0.5,0.5) -> (1+2+5+6)/4 = 3.5; (0.5,1.5) -> 4.5; (1.5,0.5) -> 7.5; (1.5,1.5) -> 8.5.
  Tensor rois = f32({1, 4}, {0, 0, 2, 2});
  Tensor bi = Tensor::from_vector<int64_t>({1}, {0});
  Attrs a = {{"coordinate_transformation_mode", attr_string("output_half_pixel")},
             {"sampling_ratio", attr_int(1)}};
  auto one = run(OpKind::RoiAlign, {image4(), rois, bi}, 1, a);
  ASSERT_TRUE(one.ok()) << one.status().message();
  expect_tensor_near((*one)[0], f32({1, 1, 1, 1}, {6}));
  a.push_back({"output_height", attr_int(2)});
  a.push_back({"output_width", attr_int(2)});
  auto two = run(OpKind::RoiAlign, {image4(), rois, bi}, 1, a);
  ASSERT_TRUE(two.ok()) << two.status().message();
  expect_tensor_near((*two)[0], f32({1, 1, 2, 2}, {3.5f, 4.5f, 7.5f, 8.5f}));
  auto bad = run(OpKind::RoiAlign, {image4(), rois, Tensor::from_vector<int64_t>({1}, {4})});
  EXPECT_FALSE(bad.ok());
}

}  // namespace
}  // namespace tierjit::testing
