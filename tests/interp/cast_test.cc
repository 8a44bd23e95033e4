// Tests of the tier-0 Cast, CastLike and Identity kernels: float16/bfloat16 rounding to nearest
// even (without double rounding from float64), float -> integer rules, bool, and the string
// conversions (numpy str() formatting, "NaN"/"INF" parsing). Bit patterns worked out by hand.
#include <cmath>
#include <limits>

#include "elementwise_test_util.h"

namespace tierjit::testing {
namespace {

using ir::OpKind;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

Tensor cast(const Tensor& x, DType to, int opset = 13) {
  return run1_opset(opset, OpKind::Cast, {x}, {{"to", attr_int(static_cast<int64_t>(to))}});
}

uint16_t bits16(const Tensor& t, int64_t i) { return t.data<uint16_t>()[i]; }

TEST(Cast, ToFloat16RoundsToNearestEven) {
  // 1 + 2^-11 is halfway between 1 (0x3C00) and 1 + 2^-10 (0x3C01): ties to even -> 0x3C00.
  // 1 + 3*2^-11 is halfway between 0x3C01 and 0x3C02: -> 0x3C02 (even).
  // 65519 -> 65504 (0x7BFF); 65520 is halfway to 65536 (out of range): -> inf (0x7C00).
  Tensor y = cast(f32({5}, {1.00048828125f, 1.00146484375f, 65519, 65520, -2}), DType::kFloat16);
  ASSERT_EQ(y.dtype(), DType::kFloat16);
  EXPECT_EQ(bits16(y, 0), 0x3C00);
  EXPECT_EQ(bits16(y, 1), 0x3C02);
  EXPECT_EQ(bits16(y, 2), 0x7BFF);
  EXPECT_EQ(bits16(y, 3), 0x7C00);
  EXPECT_EQ(bits16(y, 4), 0xC000);
  Tensor n = cast(f32({1}, {kNaN}), DType::kFloat16);
  EXPECT_EQ(bits16(n, 0) & 0x7C00, 0x7C00);
  EXPECT_NE(bits16(n, 0) & 0x03FF, 0);
}

TEST(Cast, DoubleToFloat16WithoutDoubleRounding) {
  // d = 1 + 2^-11 + 2^-40 lies just above the halfway point between 0x3C00 and 0x3C01, so the
  // correct float16 is 0x3C01. Rounding to float first would lose 2^-40, make a tie, and give
  // 0x3C00.
  Tensor y = cast(f64({1}, {1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)}), DType::kFloat16);
  EXPECT_EQ(bits16(y, 0), 0x3C01);
  // same for bfloat16: 1 + 2^-8 + 2^-40 -> 0x3F81 (not the tie's even 0x3F80)
  Tensor b = cast(f64({1}, {1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)}), DType::kBFloat16);
  EXPECT_EQ(bits16(b, 0), 0x3F81);
}

TEST(Cast, ToBFloat16RoundsToNearestEven) {
  // 1 + 2^-8 is halfway between 0x3F80 and 0x3F81 -> 0x3F80; 1 + 3*2^-8 -> 0x3F82
  Tensor y = cast(f32({3}, {1.00390625f, 1.01171875f, -2}), DType::kBFloat16);
  ASSERT_EQ(y.dtype(), DType::kBFloat16);
  EXPECT_EQ(bits16(y, 0), 0x3F80);
  EXPECT_EQ(bits16(y, 1), 0x3F82);
  EXPECT_EQ(bits16(y, 2), 0xC000);
  // back to float: 0x3F82 = 1 + 2/128 = 1.015625
  expect_tensor_near(cast(y, DType::kFloat32), f32({3}, {1, 1.015625f, -2}), 0, 0);
}

TEST(Cast, Float16ToWider) {
  Tensor h = Tensor::empty(DType::kFloat16, {2});
  h.data<uint16_t>()[0] = 0x3C01;  // 1 + 2^-10 = 1.0009765625
  h.data<uint16_t>()[1] = 0x0001;  // smallest subnormal 2^-24 = 5.9604644775390625e-08
  expect_tensor_near(cast(h, DType::kFloat64), f64({2}, {1.0009765625, 5.9604644775390625e-08}), 0, 0);
  expect_tensor_near(cast(h, DType::kInt32), i32({2}, {1, 0}));
}

TEST(Cast, FloatToInteger) {
  // truncation toward zero, NaN -> 0
  expect_tensor_near(cast(f32({4}, {1.9f, -1.9f, kNaN, 0.5f}), DType::kInt32), i32({4}, {1, -1, 0, 0}));
  // narrow targets wrap like numpy: 300 -> 300 - 256 = 44, -1 -> 255
  expect_tensor_near(cast(f32({2}, {300, -1}), DType::kUInt8), Tensor::from_vector<uint8_t>({2}, {44, 255}));
  // beyond int64: saturates
  expect_tensor_near(cast(f32({2}, {1e20f, -1e20f}), DType::kInt64),
                     i64({2}, {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()}));
  // 2^63 fits uint64 exactly
  expect_tensor_near(cast(f64({1}, {9223372036854775808.0}), DType::kUInt64),
                     Tensor::from_vector<uint64_t>({1}, {9223372036854775808ull}));
}

TEST(Cast, IntegersAndBool) {
  // int64 2^24 + 1 -> float32 rounds to even 2^24 = 16777216
  expect_tensor_near(cast(i64({1}, {16777217}), DType::kFloat32), f32({1}, {16777216}), 0, 0);
  // int32 200 -> int8 wraps to 200 - 256 = -56
  expect_tensor_near(cast(i32({1}, {200}), DType::kInt8), Tensor::from_vector<int8_t>({1}, {-56}));
  expect_tensor_near(cast(f32({4}, {0, -0.0f, 0.5f, kNaN}), DType::kBool), bools({4}, {0, 0, 1, 1}));
  expect_tensor_near(cast(i32({3}, {0, 3, -1}), DType::kBool), bools({3}, {0, 1, 1}));
  expect_tensor_near(cast(bools({2}, {1, 0}), DType::kFloat32), f32({2}, {1, 0}));
  expect_tensor_near(cast(bools({2}, {1, 0}), DType::kInt64), i64({2}, {1, 0}));
}

TEST(Cast, NumbersToStrings) {
  Tensor f = f32({12}, {0.039187793f, 1.0f, 100.0f, 1e-5f, -2.5f, kNaN, kInf, -kInf, 1e16f, 1e-4f,
                        123456789.0f, 999999.9f});
  // numpy str(): float32(1e-4) = 9.99999974e-05 < 1e-4 -> scientific; float32 switches to
  // scientific at 1e6
  expect_tensor_near(cast(f, DType::kString),
                     strings({12}, {"0.039187793", "1.0", "100.0", "1e-05", "-2.5", "nan", "inf", "-inf",
                                    "1e+16", "1e-04", "1.2345679e+08", "999999.9"}));
  expect_tensor_near(cast(f64({5}, {0.1, 1e-5, 1e100, 0.0001, 1234567.0}), DType::kString),
                     strings({5}, {"0.1", "1e-05", "1e+100", "0.0001", "1234567.0"}));
  // float16: shortest digits that read back to the same half; scientific from 1e3
  expect_tensor_near(cast(f16({4}, {0.1f, 65504, 1e-5f, 999}), DType::kString),
                     strings({4}, {"0.1", "6.55e+04", "1e-05", "999.0"}));
  expect_tensor_near(cast(i32({2}, {-42, 0}), DType::kString), strings({2}, {"-42", "0"}));
  expect_tensor_near(cast(bools({2}, {1, 0}), DType::kString), strings({2}, {"True", "False"}));
}

TEST(Cast, StringsToNumbers) {
  Tensor s = strings({9}, {"1.5", "NaN", "INF", "+INF", "-INF", "-inf", "1e-5", " 7 ", "0.47892547"});
  expect_tensor_near(cast(s, DType::kFloat32),
                     f32({9}, {1.5f, kNaN, kInf, kInf, -kInf, -kInf, 1e-5f, 7, 0.47892547f}), 0, 0);
  // integers: exact beyond 2^53; fractional text truncates
  expect_tensor_near(cast(strings({3}, {"12345678901234567", "-3", "100.5"}), DType::kInt64),
                     i64({3}, {12345678901234567, -3, 100}));
  Tensor h = cast(strings({1}, {"0.1"}), DType::kFloat16);
  EXPECT_EQ(bits16(h, 0), 0x2E66);  // 0.1 -> 0.0999755859375
  expect_tensor_near(cast(strings({3}, {"True", "0", "2"}), DType::kBool), bools({3}, {1, 0, 1}));
  Status st = run_error(OpKind::Cast, {strings({2}, {"1", "abc"})}, {{"to", attr_int(1)}}, 13);
  EXPECT_NE(st.message().find("abc"), std::string::npos) << st.message();
}

TEST(Cast, AttributeFormsAndIdentity) {
  Tensor x = f32({2}, {1.5f, -2.5f});
  // Cast-1 names the dtype
  expect_tensor_near(run1_opset(1, OpKind::Cast, {x}, {{"to", attr_string("INT32")}}), i32({2}, {1, -2}));
  // same dtype: the input itself
  EXPECT_TRUE(cast(x, DType::kFloat32).shares_storage_with(x));
  EXPECT_TRUE(run1(OpKind::Identity, {x}).shares_storage_with(x));
  expect_tensor_near(run1(OpKind::CastLike, {x, f64({0}, {})}), f64({2}, {1.5, -2.5}));
  EXPECT_EQ(cast(f32({0, 3}, {}), DType::kInt8).shape(), (Shape{0, 3}));
  EXPECT_EQ(run_error(OpKind::Cast, {x}, {{"to", attr_int(99)}}).code(), StatusCode::kUnsupported);
  EXPECT_FALSE(run_error(OpKind::Cast, {x}).ok());  // 'to' missing
}

}  // namespace
}  // namespace tierjit::testing
