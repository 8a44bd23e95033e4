// Tests of the Resize and Upsample kernels: hand-computed 2x2 -> 4x4 cases per mode and
// coordinate transformation, size-0/size-1 dims, and the input errors.
#include <gtest/gtest.h>

#include "node_runner.h"

namespace tierjit {
namespace {

using testing::attr_string;
using testing::expect_tensor_near;
using testing::NodeSpec;
using testing::run_node;

Tensor f(Shape s, std::vector<float> v) {
  return Tensor::from_vector<float>(s, v);
}
Tensor x2x2() {
  return f({1, 1, 2, 2}, {1, 2, 3, 4});
}
Tensor scales4() {
  return f({4}, {1, 1, 2, 2});
}

Expected<std::vector<Tensor>> resize(Tensor x, Tensor scales, Tensor sizes,
                                     std::vector<std::pair<std::string, ir::Attribute>> attrs,
                                     int opset = 13) {
  return run_node(NodeSpec{ir::OpKind::Resize, {x, Tensor(), scales, sizes}, 1, attrs, opset});
}

TEST(ResizeTest, NearestHalfPixelUpsample) {
  // half_pixel: x = (y + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25 -> round_prefer_floor
  // picks 0, 0, 1, 1 on each axis.
  auto r = resize(x2x2(), scales4(), Tensor(), {{"mode", attr_string("nearest")}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_tensor_near((*r)[0], f({1, 1, 4, 4}, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
}

TEST(ResizeTest, LinearHalfPixelUpsample) {
  // Per axis weights: y0 -> v0; y1 -> .75 v0 + .25 v1; y2 -> .25 v0 + .75 v1; y3 -> v1.
  // Rows: [1, 1.25, 1.75, 2] and [3, 3.25, 3.75, 4]; middle rows blend them 3:1 and 1:3.
  auto r = resize(x2x2(), scales4(), Tensor(), {{"mode", attr_string("linear")}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_tensor_near((*r)[0], f({1, 1, 4, 4}, {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75,
                                               3.25, 3.5, 3, 3.25, 3.75, 4}));
}

TEST(ResizeTest, LinearAlignCornersWithSizes) {
  // align_corners: x = y * (2 - 1) / (4 - 1) = 0, 1/3, 2/3, 1.
  // Row [1, 2] -> [1, 4/3, 5/3, 2]; rows blend 1 -> 3 in thirds (+2/3 per step).
  auto r = resize(x2x2(), Tensor(), Tensor::from_vector<int64_t>({4}, {1, 1, 4, 4}),
                  {{"mode", attr_string("linear")},
                   {"coordinate_transformation_mode", attr_string("align_corners")}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const float t = 1.0f / 3, u = 2.0f / 3;
  std::vector<float> e;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) e.push_back(1 + j * t + 2 * i * t);
  (void)u;
  expect_tensor_near((*r)[0], f({1, 1, 4, 4}, e));
}

TEST(ResizeTest, NearestAsymmetricFloorOnInt) {
  // asymmetric: x = y / 2 = 0, 0.5, 1, 1.5; floor -> 0, 0, 1, 1. int32 data stays exact.
  auto r = resize(Tensor::from_vector<int32_t>({1, 2}, {7, -9}), f({2}, {1, 2}), Tensor(),
                  {{"mode", attr_string("nearest")},
                   {"coordinate_transformation_mode", attr_string("asymmetric")},
                   {"nearest_mode", attr_string("floor")}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_tensor_near((*r)[0], Tensor::from_vector<int32_t>({1, 4}, {7, 7, -9, -9}));
}

TEST(ResizeTest, DownsampleToSizeOneAndZero) {
  // sizes [1, 1, 1, 0]: an empty output; [1,1,1,1] nearest half_pixel: x = (0.5)*2 - 0.5 = 0.5
  // on each axis -> round_prefer_floor picks index 0 -> 1.
  auto r0 = resize(x2x2(), Tensor(), Tensor::from_vector<int64_t>({4}, {1, 1, 1, 0}),
                   {{"mode", attr_string("nearest")}});
  ASSERT_TRUE(r0.ok()) << r0.status().message();
  EXPECT_EQ((*r0)[0].shape(), (Shape{1, 1, 1, 0}));
  auto r1 = resize(x2x2(), Tensor(), Tensor::from_vector<int64_t>({4}, {1, 1, 1, 1}),
                   {{"mode", attr_string("nearest")}});
  ASSERT_TRUE(r1.ok()) << r1.status().message();
  expect_tensor_near((*r1)[0], f({1, 1, 1, 1}, {1}));
}

TEST(ResizeTest, NanPropagatesThroughLinear) {
  auto r = resize(f({1, 2}, {NAN, 2}), f({2}, {1, 2}), Tensor(), {{"mode", attr_string("linear")}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(std::isnan((*r)[0].data<float>()[0]));
}

TEST(ResizeTest, UpsampleOpset9Nearest) {
  // Upsample = asymmetric + floor: index y / 2 -> 0, 0, 1, 1.
  auto r = run_node(NodeSpec{ir::OpKind::Upsample,
                             {f({1, 2}, {5, 6}), f({2}, {1, 2})},
                             1,
                             {{"mode", attr_string("nearest")}},
                             9});
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_tensor_near((*r)[0], f({1, 4}, {5, 5, 6, 6}));
}

TEST(ResizeTest, MemoryLimitCoversOutputButNotTransposedGrowth) {
  // [1, 1000] -> [1000, 1]: shrinking axis 1 first keeps every intermediate at <= 1000 values,
  // so a 16 KB limit suffices (resizing axis 0 first would need 10^6 doubles).
  interp::ExecOptions opt;
  opt.memory_limit_bytes = 16 << 10;
  auto r = run_node(NodeSpec{ir::OpKind::Resize,
                             {Tensor::zeros(DType::kFloat32, {1, 1000}), Tensor(), Tensor(),
                              Tensor::from_vector<int64_t>({2}, {1000, 1})},
                             1,
                             {{"mode", attr_string("nearest")}},
                             13},
                    opt);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0].shape(), (Shape{1000, 1}));
  auto big = run_node(NodeSpec{ir::OpKind::Resize,
                               {Tensor::zeros(DType::kFloat32, {1, 1000}), Tensor(), Tensor(),
                                Tensor::from_vector<int64_t>({2}, {1000, 1000})},
                               1,
                               {{"mode", attr_string("nearest")}},
                               13},
                      opt);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted);
}

TEST(ResizeTest, Opset7UpsampleAndOpset10ResizeAreAsymmetric) {
  // Linear, x = y / 2 = 0, 0.5, 1, 1.5 over [1, 2] (edge-clamped): 1, 1.5, 2, 2.
  auto up =
      run_node(NodeSpec{ir::OpKind::Upsample,
                        {f({1, 2}, {1, 2})},
                        1,
                        {{"mode", attr_string("linear")}, {"scales", testing::attr_floats({1, 2})}},
                        7});
  ASSERT_TRUE(up.ok()) << up.status().message();
  expect_tensor_near((*up)[0], f({1, 4}, {1, 1.5, 2, 2}));
  auto r10 = run_node(NodeSpec{ir::OpKind::Resize,
                               {f({1, 2}, {1, 2}), f({2}, {1, 2})},
                               1,
                               {{"mode", attr_string("linear")}},
                               10});
  ASSERT_TRUE(r10.ok()) << r10.status().message();
  expect_tensor_near((*r10)[0], f({1, 4}, {1, 1.5, 2, 2}));
  auto cubic10 = run_node(NodeSpec{ir::OpKind::Resize,
                                   {f({1, 2}, {1, 2}), f({2}, {1, 2})},
                                   1,
                                   {{"mode", attr_string("cubic")}},
                                   10});
  ASSERT_FALSE(cubic10.ok());  // opset 10 knows only nearest and linear
}

TEST(ResizeTest, BothScalesAndSizesIsAnError) {
  auto r = resize(x2x2(), scales4(), Tensor::from_vector<int64_t>({4}, {1, 1, 4, 4}),
                  {{"mode", attr_string("nearest")}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("only one of 'scales'"), std::string::npos)
      << r.status().message();
}

TEST(ResizeTest, BadInputsAreErrors) {
  auto wrong_len = resize(x2x2(), f({2}, {2, 2}), Tensor(), {{"mode", attr_string("nearest")}});
  ASSERT_FALSE(wrong_len.ok());
  EXPECT_NE(wrong_len.status().message().find("2 entries, input rank is 4"), std::string::npos);
  auto bad_mode = resize(x2x2(), scales4(), Tensor(), {{"mode", attr_string("spline")}});
  ASSERT_FALSE(bad_mode.ok());
  EXPECT_NE(bad_mode.status().message().find("'spline'"), std::string::npos);
  auto neg_scale =
      resize(x2x2(), f({4}, {1, 1, -2, 2}), Tensor(), {{"mode", attr_string("nearest")}});
  ASSERT_FALSE(neg_scale.ok());
  auto none = resize(x2x2(), Tensor(), Tensor(), {{"mode", attr_string("nearest")}});
  ASSERT_FALSE(none.ok());
}

}  // namespace
}  // namespace tierjit
