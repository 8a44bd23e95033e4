// Tests of the tier-0 Pow (mixed dtypes), Mod (sign rules), BitShift, variadic Max/Min/Sum/Mean,
// Where and Clip kernels: hand-computed values, NaN propagation, broadcasting and errors.
#include <cmath>
#include <limits>

#include "elementwise_test_util.h"

namespace tierjit::testing {
namespace {

using ir::OpKind;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(ElementwisePow, SameAndMixedTypes) {
  // 2^3 = 8, 4^0.5 = 2
  expect_tensor_near(run1(OpKind::Pow, {f32({2}, {2, 4}), f32({2}, {3, 0.5f})}), f32({2}, {8, 2}));
  // float ^ int64 -> float: 2^2 = 4, 3^3 = 27
  expect_tensor_near(run1(OpKind::Pow, {f32({2}, {2, 3}), i64({2}, {2, 3})}), f32({2}, {4, 27}));
  // int ^ int exact: 2^10 = 1024, 3^0 = 1, (-2)^3 = -8; negative exponents: 2^-1 = 0, 1^-2 = 1,
  // (-1)^-3 = -1
  expect_tensor_near(run1(OpKind::Pow, {i32({3}, {2, 3, -2}), i32({3}, {10, 0, 3})}),
                     i32({3}, {1024, 1, -8}));
  expect_tensor_near(run1(OpKind::Pow, {i32({3}, {2, 1, -1}), i32({3}, {-1, -2, -3})}),
                     i32({3}, {0, 1, -1}));
  // int ^ float -> int: 4^0.5 = 2, 9^2 = 81, 10^0.5 = 3.16 -> 3 (truncated)
  expect_tensor_near(run1(OpKind::Pow, {i64({3}, {4, 9, 10}), f32({3}, {0.5f, 2, 0.5f})}),
                     i64({3}, {2, 81, 3}));
  // 3^39 = 4052555153018976267 < 2^63: exact in int64 (double pow would round it)
  expect_tensor_near(run1(OpKind::Pow, {i64({1}, {3}), i64({1}, {39})}),
                     i64({1}, {4052555153018976267}));
  // float16 base, float32 exponent broadcast as a scalar: [3, 0.5]^2 = [9, 0.25]
  Tensor h = run1(OpKind::Pow, {f16({2}, {3, 0.5f}), f32({}, {2})});
  ASSERT_EQ(h.dtype(), DType::kFloat16);
  expect_tensor_near(h, f16({2}, {9, 0.25f}));
  // Broadcast [2,1] ^ [3]: z[i,j] = a[i]^b[j]
  expect_tensor_near(run1(OpKind::Pow, {f32({2, 1}, {2, 3}), f32({3}, {0, 1, 2})}),
                     f32({2, 3}, {1, 2, 4, 1, 3, 9}));
  // Before opset 12 both inputs share one dtype
  EXPECT_EQ(run_error(OpKind::Pow, {f32({1}, {2}), i64({1}, {2})}, {}, 7).code(),
            StatusCode::kInvalidArgument);
}

TEST(ElementwiseMod, SignRules) {
  // fmod=0 (floored, divisor's sign): -4 mod 2 = 0, 7 mod -3 = -2 (7 = -3*-3 - 2), 5 mod 8 = 5,
  // 4 mod -2 = 0, -7 mod 3 = 2 (-7 = 3*-3 + 2), 8 mod 5 = 3
  Tensor a = i32({6}, {-4, 7, 5, 4, -7, 8});
  Tensor b = i32({6}, {2, -3, 8, -2, 3, 5});
  expect_tensor_near(run1(OpKind::Mod, {a, b}), i32({6}, {0, -2, 5, 0, 2, 3}));
  // fmod=1 (truncated, dividend's sign): 7 fmod -3 = 1, -7 fmod 3 = -1
  expect_tensor_near(run1(OpKind::Mod, {a, b}, {{"fmod", attr_int(1)}}), i32({6}, {0, 1, 5, 0, -1, 3}));
  // float fmod=1: -4.3 fmod 2.1 = -0.1, 7.2 fmod -3.4 = 0.4, -7.2 fmod 3.4 = -0.4
  expect_tensor_near(run1(OpKind::Mod, {f32({3}, {-4.3f, 7.2f, -7.2f}), f32({3}, {2.1f, -3.4f, 3.4f})},
                          {{"fmod", attr_int(1)}}),
                     f32({3}, {-0.1f, 0.4f, -0.4f}), 1e-4, 1e-5);
  // float16 fmod=1: 5.5 fmod 2 = 1.5
  expect_tensor_near(run1(OpKind::Mod, {f16({1}, {5.5f}), f16({1}, {2})}, {{"fmod", attr_int(1)}}),
                     f16({1}, {1.5f}));
  // INT_MIN mod -1 = 0 (no trap); uint8 250 mod 7 = 5 (250 = 35*7 + 5)
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  expect_tensor_near(run1(OpKind::Mod, {i64({2}, {5, kMin}), i64({2}, {3, -1})}), i64({2}, {2, 0}));
  expect_tensor_near(run1(OpKind::Mod, {Tensor::from_vector<uint8_t>({1}, {250}),
                                        Tensor::from_vector<uint8_t>({1}, {7})}),
                     Tensor::from_vector<uint8_t>({1}, {5}));
  // broadcast [2,2] mod [2]
  expect_tensor_near(run1(OpKind::Mod, {i32({2, 2}, {5, -5, 9, -9}), i32({2}, {3, 4})}),
                     i32({2, 2}, {2, 3, 0, 3}));
  // float with fmod=0 is an error
  Status s = run_error(OpKind::Mod, {f32({1}, {1}), f32({1}, {1})});
  EXPECT_NE(s.message().find("fmod"), std::string::npos) << s.message();
}

TEST(ElementwiseBitShift, Directions) {
  auto u8 = [](std::vector<uint8_t> v) { return Tensor::from_vector<uint8_t>({3}, v); };
  auto u32 = [](std::vector<uint32_t> v) { return Tensor::from_vector<uint32_t>({3}, v); };
  expect_tensor_near(run1(OpKind::BitShift, {u8({16, 4, 1}), u8({1, 2, 3})},
                          {{"direction", attr_string("RIGHT")}}),
                     u8({8, 1, 0}));
  // 16<<1 = 32, 4<<2 = 16, 1<<40 (>= width) = 0
  expect_tensor_near(run1(OpKind::BitShift, {u32({16, 4, 1}), u32({1, 2, 40})},
                          {{"direction", attr_string("LEFT")}}),
                     u32({32, 16, 0}));
  EXPECT_FALSE(run_error(OpKind::BitShift, {u8({1, 1, 1}), u8({1, 1, 1})},
                         {{"direction", attr_string("UP")}}).ok());
  EXPECT_EQ(run_error(OpKind::BitShift, {i32({1}, {1}), i32({1}, {1})},
                      {{"direction", attr_string("LEFT")}}).code(),
            StatusCode::kUnsupported);
}

TEST(ElementwiseVariadic, MaxMinBroadcastThreeInputs) {
  // [3] x [2,1] x [] -> [2,3]; row 0: max(1|2|3, 4, 2.5) = 4; row 1: max(1, 0, 2.5) = 2.5,
  // max(2, 0, 2.5) = 2.5, max(3, 0, 2.5) = 3
  Tensor a = f32({3}, {1, 2, 3});
  Tensor b = f32({2, 1}, {4, 0});
  Tensor c = f32({}, {2.5f});
  expect_tensor_near(run1(OpKind::Max, {a, b, c}), f32({2, 3}, {4, 4, 4, 2.5f, 2.5f, 3}));
  // min: row 0: min(x, 4, 2.5) = 1, 2, 2.5; row 1: min(x, 0, 2.5) = 0
  expect_tensor_near(run1(OpKind::Min, {a, b, c}), f32({2, 3}, {1, 2, 2.5f, 0, 0, 0}));
  expect_tensor_near(run1(OpKind::Max, {Tensor::from_vector<int8_t>({2}, {-1, 5}),
                                        Tensor::from_vector<int8_t>({2}, {3, -7})}),
                     Tensor::from_vector<int8_t>({2}, {3, 5}));
  expect_tensor_near(run1(OpKind::Min, {f16({2}, {1, 5}), f16({2}, {3, -7})}), f16({2}, {1, -7}));
}

TEST(ElementwiseVariadic, NaNPropagates) {
  Tensor a = f32({3}, {1, kNaN, 2});
  Tensor b = f32({3}, {kNaN, 2, 1});
  expect_tensor_near(run1(OpKind::Max, {a, b}), f32({3}, {kNaN, kNaN, 2}));
  expect_tensor_near(run1(OpKind::Min, {a, b}), f32({3}, {kNaN, kNaN, 1}));
  expect_tensor_near(run1(OpKind::Sum, {a, b}), f32({3}, {kNaN, kNaN, 3}));
}

TEST(ElementwiseVariadic, SumMean) {
  Tensor a = f32({3}, {1, 2, 3}), b = f32({3}, {4, 5, 6}), c = f32({3}, {7, 8, 9});
  expect_tensor_near(run1(OpKind::Sum, {a, b, c}), f32({3}, {12, 15, 18}));
  expect_tensor_near(run1(OpKind::Mean, {a, b, c}), f32({3}, {4, 5, 6}));  // /3
  // [2,1] + [3]: z[i,j] = a[i] + b[j]
  expect_tensor_near(run1(OpKind::Sum, {f32({2, 1}, {10, 20}), a}), f32({2, 3}, {11, 12, 13, 21, 22, 23}));
  // float16 mean of 1 and 2 = 1.5
  expect_tensor_near(run1(OpKind::Mean, {f16({1}, {1}), f16({1}, {2})}), f16({1}, {1.5f}));
  // one input: the input itself, no copy
  Tensor one = run1(OpKind::Sum, {a});
  EXPECT_TRUE(one.shares_storage_with(a));
  // size 0
  EXPECT_EQ(run1(OpKind::Max, {f32({0, 2}, {}), f32({2}, {1, 2})}).shape(), (Shape{0, 2}));
}

TEST(ElementwiseVariadic, Errors) {
  Status s = run_error(OpKind::Sum, {f32({2}, {1, 2}), f32({3}, {1, 2, 3})});
  EXPECT_NE(s.message().find("broadcast"), std::string::npos) << s.message();
  s = run_error(OpKind::Max, {f32({1}, {1}), f64({1}, {1})});
  EXPECT_NE(s.message().find("float64"), std::string::npos) << s.message();
  EXPECT_EQ(run_error(OpKind::Mean, {i32({1}, {1}), i32({1}, {1})}).code(), StatusCode::kUnsupported);
}

TEST(ElementwiseWhere, BroadcastThreeWays) {
  // cond [2,1], X [3], Y scalar -> [2,3]: row 0 from X, row 1 from Y
  expect_tensor_near(run1(OpKind::Where, {bools({2, 1}, {1, 0}), f32({3}, {1, 2, 3}), f32({}, {9})}),
                     f32({2, 3}, {1, 2, 3, 9, 9, 9}));
  // cond [3] along columns, X [2,1], Y [2,3]
  expect_tensor_near(run1(OpKind::Where, {bools({3}, {1, 0, 1}), i64({2, 1}, {-1, -2}),
                                          i64({2, 3}, {10, 11, 12, 13, 14, 15})}),
                     i64({2, 3}, {-1, 11, -1, -2, 14, -2}));
  expect_tensor_near(run1(OpKind::Where, {bools({2}, {0, 1}), strings({2}, {"a", "b"}),
                                          strings({}, {"z"})}),
                     strings({2}, {"z", "b"}));
  EXPECT_EQ(run1(OpKind::Where, {bools({0}, {}), f32({1}, {1}), f32({1}, {2})}).shape(), (Shape{0}));
  Status s = run_error(OpKind::Where, {f32({1}, {1}), f32({1}, {1}), f32({1}, {2})});
  EXPECT_NE(s.message().find("bool"), std::string::npos) << s.message();
  s = run_error(OpKind::Where, {bools({1}, {1}), f32({1}, {1}), i32({1}, {2})});
  EXPECT_NE(s.message().find("dtype"), std::string::npos) << s.message();
}

TEST(ElementwiseClip, InputsAndAttributes) {
  Tensor x = f32({4}, {-2, 0.5f, 3, kNaN});
  expect_tensor_near(run1(OpKind::Clip, {x, f32({}, {-1}), f32({}, {1})}), f32({4}, {-1, 0.5f, 1, kNaN}));
  // only max (min omitted)
  expect_tensor_near(run1(OpKind::Clip, {x, Tensor(), f32({}, {0})}), f32({4}, {-2, 0, 0, kNaN}));
  // only min
  expect_tensor_near(run1(OpKind::Clip, {x, f32({1}, {0})}), f32({4}, {0, 0.5f, 3, kNaN}));
  // min > max: every value becomes max
  expect_tensor_near(run1(OpKind::Clip, {f32({3}, {-5, 0, 5}), f32({}, {2}), f32({}, {1})}),
                     f32({3}, {1, 1, 1}));
  // opset 6: attributes
  expect_tensor_near(run1_opset(6, OpKind::Clip, {x}, {{"min", attr_float(-1)}, {"max", attr_float(1)}}),
                     f32({4}, {-1, 0.5f, 1, kNaN}));
  // integers (opset 12+): int8 [-128, 0, 127] clipped to [-5, 5]; no bounds: unchanged
  auto i8 = [](std::vector<int8_t> v) { return Tensor::from_vector<int8_t>({static_cast<int64_t>(v.size())}, v); };
  expect_tensor_near(run1(OpKind::Clip, {i8({-128, 0, 127}), Tensor::from_vector<int8_t>({}, {-5}),
                                         Tensor::from_vector<int8_t>({}, {5})}),
                     i8({-5, 0, 5}));
  expect_tensor_near(run1(OpKind::Clip, {i8({-128, 0, 127})}), i8({-128, 0, 127}));
  // float16
  expect_tensor_near(run1(OpKind::Clip, {f16({2}, {-3, 3}), f16({}, {-1}), f16({}, {2})}), f16({2}, {-1, 2}));
  Status s = run_error(OpKind::Clip, {x, f32({2}, {0, 1})});
  EXPECT_NE(s.message().find("scalar"), std::string::npos) << s.message();
  s = run_error(OpKind::Clip, {x, f64({}, {0})});
  EXPECT_NE(s.message().find("float64"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace tierjit::testing
