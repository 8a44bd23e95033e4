// Tier-0 QuantizeLinear / DequantizeLinear / DynamicQuantizeLinear: round half to even,
// uint8/int8 saturation, per-axis parameters, and bad input.
#include <gtest/gtest.h>

#include "nn_test_util.h"
#include "node_runner.h"

namespace tierjit::testing {
namespace {

using ir::OpKind;
using nn_test::f32;
using nn_test::run;

TEST(NnQuantizeLinear, RoundsHalfToEvenAndSaturatesUint8) {
  // scale 2, zp 10: x/2 = 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -0.5 -> -0 ; +10 -> 10, 12, 12, 10;
  // 1000/2 + 10 = 510 -> 255; -100/2 + 10 = -40 -> 0.
  auto out = run(OpKind::QuantizeLinear, {f32({6}, {1, 3, 5, -1, 1000, -100}), Tensor::scalar<float>(2.f),
                                          Tensor::scalar<uint8_t>(10)});
  ASSERT_TRUE(out.ok()) << out.status().message();
  expect_tensor_near((*out)[0], Tensor::from_vector<uint8_t>({6}, {10, 12, 12, 10, 255, 0}));
}

TEST(NnQuantizeLinear, Int8AndDefaultZeroPoint) {
  // int8 zp -1: 300 -> 299 -> 127; -300 -> -128; 2.5 -> 2 - 1 = 1; -2.5 -> -2 - 1 = -3
  auto i8 = run(OpKind::QuantizeLinear, {f32({4}, {300, -300, 2.5f, -2.5f}), Tensor::scalar<float>(1.f),
                                         Tensor::scalar<int8_t>(-1)});
  ASSERT_TRUE(i8.ok()) << i8.status().message();
  expect_tensor_near((*i8)[0], Tensor::from_vector<int8_t>({4}, {127, -128, 1, -3}));
  // no zero point: uint8, zp 0; NaN saturates to 0
  auto u8 = run(OpKind::QuantizeLinear, {f32({2}, {3.5f, NAN}), Tensor::scalar<float>(1.f)});
  ASSERT_TRUE(u8.ok()) << u8.status().message();
  expect_tensor_near((*u8)[0], Tensor::from_vector<uint8_t>({2}, {4, 0}));
}

TEST(NnQuantizeLinear, PerAxis) {
  // x [2, 2], axis 0: row 0 scale 1 zp 0, row 1 scale 10 zp 100:
  // [[1, 2], [10, 20]] -> [[1, 2], [101, 102]]
  auto out = run(OpKind::QuantizeLinear, {f32({2, 2}, {1, 2, 10, 20}), f32({2}, {1, 10}),
                                          Tensor::from_vector<uint8_t>({2}, {0, 100})},
                 1, {{"axis", attr_int(0)}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  expect_tensor_near((*out)[0], Tensor::from_vector<uint8_t>({2, 2}, {1, 2, 101, 102}));
  // wrong per-axis length
  auto bad = run(OpKind::QuantizeLinear, {f32({2, 2}, {1, 2, 10, 20}), f32({3}, {1, 1, 1})}, 1,
                 {{"axis", attr_int(0)}});
  EXPECT_FALSE(bad.ok());
}

TEST(NnDequantizeLinear, PerTensorAndPerAxis) {
  // (x - zp) * scale: (0 - 128) * 0.5 = -64, (255 - 128) * 0.5 = 63.5
  auto out = run(OpKind::DequantizeLinear, {Tensor::from_vector<uint8_t>({2}, {0, 255}), Tensor::scalar<float>(0.5f),
                                            Tensor::scalar<uint8_t>(128)});
  ASSERT_TRUE(out.ok()) << out.status().message();
  expect_tensor_near((*out)[0], f32({2}, {-64, 63.5f}));
  // axis 1 on [1, 2, 2]: channel 0 scale 1, channel 1 scale 2 (int8, zp 0)
  auto ax = run(OpKind::DequantizeLinear, {Tensor::from_vector<int8_t>({1, 2, 2}, {1, -2, 3, -4}), f32({2}, {1, 2}),
                                           Tensor::from_vector<int8_t>({2}, {0, 0})});
  ASSERT_TRUE(ax.ok()) << ax.status().message();
  expect_tensor_near((*ax)[0], f32({1, 2, 2}, {1, -2, 6, -8}));
  auto bad = run(OpKind::DequantizeLinear, {f32({1}, {1}), Tensor::scalar<float>(1.f)});
  EXPECT_FALSE(bad.ok());
}

TEST(NnDynamicQuantizeLinear, ScaleAndZeroPoint) {
  // x in [-1, 2]: range includes 0 -> min -1, max 2; scale 3/255; zp = round(1 / (3/255)) = 85;
  // y(2) = round(2 / scale) + 85 = 170 + 85 = 255; y(-1) = -85 + 85 = 0; y(0) = 85.
  auto out = run(OpKind::DynamicQuantizeLinear, {f32({3}, {-1, 0, 2})}, 3);
  ASSERT_TRUE(out.ok()) << out.status().message();
  expect_tensor_near((*out)[0], Tensor::from_vector<uint8_t>({3}, {0, 85, 255}));
  expect_tensor_near((*out)[1], Tensor::scalar<float>(3.f / 255.f));
  expect_tensor_near((*out)[2], Tensor::scalar<uint8_t>(85));
  // all positive: min is 0 -> zp 0
  auto pos = run(OpKind::DynamicQuantizeLinear, {f32({2}, {1, 2})}, 3);
  ASSERT_TRUE(pos.ok()) << pos.status().message();
  expect_tensor_near((*pos)[2], Tensor::scalar<uint8_t>(0));
  // all zeros: scale 0, outputs 0
  auto zero = run(OpKind::DynamicQuantizeLinear, {f32({2}, {0, 0})}, 3);
  ASSERT_TRUE(zero.ok()) << zero.status().message();
  expect_tensor_near((*zero)[0], Tensor::from_vector<uint8_t>({2}, {0, 0}));
}

}  // namespace
}  // namespace tierjit::testing
