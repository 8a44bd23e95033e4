// Tests of the tier-0 elementwise kernels: unary math and predicates, activations, binary
// arithmetic/logic/comparisons, the broadcasting engine (every axis, size-0 and size-1 dims,
// parallel path) and the error cases. Expected values are hand-computed (arithmetic in comments).
#include <cmath>
#include <limits>

#include "elementwise_test_util.h"

namespace tierjit::testing {
namespace {

using ir::OpKind;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(ElementwiseUnary, FloatMath) {
  Tensor x = f32({2}, {-1.5f, 2.0f});
  expect_tensor_near(run1(OpKind::Abs, {x}), f32({2}, {1.5f, 2.0f}));
  expect_tensor_near(run1(OpKind::Neg, {x}), f32({2}, {1.5f, -2.0f}));
  expect_tensor_near(run1(OpKind::Ceil, {f32({3}, {-1.5f, 1.2f, 2.0f})}), f32({3}, {-1, 2, 2}));
  expect_tensor_near(run1(OpKind::Floor, {f32({3}, {-1.5f, 1.7f, 2.0f})}), f32({3}, {-2, 1, 2}));
  expect_tensor_near(run1(OpKind::Sqrt, {f32({2}, {4, 2})}), f32({2}, {2, 1.41421356f}));
  expect_tensor_near(run1(OpKind::Exp, {f32({2}, {0, 1})}), f32({2}, {1, 2.71828183f}));
  expect_tensor_near(run1(OpKind::Log, {f32({2}, {1, 2.71828183f})}), f32({2}, {0, 1}));
  expect_tensor_near(run1(OpKind::Reciprocal, {f32({2}, {4, -0.5f})}), f32({2}, {0.25f, -2}));
  // sin(pi/2) = 1, cos(0) = 1, tan(pi/4) = 1
  expect_tensor_near(run1(OpKind::Sin, {f32({1}, {1.57079633f})}), f32({1}, {1}));
  expect_tensor_near(run1(OpKind::Cos, {f32({1}, {0})}), f32({1}, {1}));
  expect_tensor_near(run1(OpKind::Tan, {f32({1}, {0.78539816f})}), f32({1}, {1}));
  // acos(1) = 0, asin(1) = pi/2, atan(1) = pi/4
  expect_tensor_near(run1(OpKind::Acos, {f32({1}, {1})}), f32({1}, {0}));
  expect_tensor_near(run1(OpKind::Asin, {f32({1}, {1})}), f32({1}, {1.57079633f}));
  expect_tensor_near(run1(OpKind::Atan, {f32({1}, {1})}), f32({1}, {0.78539816f}));
  // sinh(1) = (e - 1/e)/2 = 1.1752012, cosh(1) = 1.5430806, tanh(1) = 0.7615942
  expect_tensor_near(run1(OpKind::Sinh, {f32({1}, {1})}), f32({1}, {1.1752012f}));
  expect_tensor_near(run1(OpKind::Cosh, {f32({1}, {1})}), f32({1}, {1.5430806f}));
  expect_tensor_near(run1(OpKind::Tanh, {f32({1}, {1})}), f32({1}, {0.7615942f}));
  // asinh(1) = ln(1 + sqrt 2) = 0.8813736, acosh(2) = ln(2 + sqrt 3) = 1.3169579,
  // atanh(0.5) = ln(3)/2 = 0.5493061, erf(1) = 0.8427008
  expect_tensor_near(run1(OpKind::Asinh, {f32({1}, {1})}), f32({1}, {0.8813736f}));
  expect_tensor_near(run1(OpKind::Acosh, {f32({1}, {2})}), f32({1}, {1.3169579f}));
  expect_tensor_near(run1(OpKind::Atanh, {f32({1}, {0.5f})}), f32({1}, {0.5493061f}));
  expect_tensor_near(run1(OpKind::Erf, {f32({1}, {1})}), f32({1}, {0.8427008f}));
}

TEST(ElementwiseUnary, RoundHalfToEvenAndSign) {
  expect_tensor_near(run1(OpKind::Round, {f32({7}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f, 2.6f})}),
                     f32({7}, {0, 2, 2, -0.0f, -2, 2, 3}));
  expect_tensor_near(run1(OpKind::Sign, {f32({4}, {-3, 0, 2, kNaN})}), f32({4}, {-1, 0, 1, kNaN}));
  expect_tensor_near(run1(OpKind::Sign, {i64({3}, {-9, 0, 4})}), i64({3}, {-1, 0, 1}));
}

TEST(ElementwiseUnary, IntegersWrap) {
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
  // |INT_MIN| does not fit: wraps to INT_MIN (two's complement), no trap.
  expect_tensor_near(run1(OpKind::Abs, {i32({3}, {-5, kMin, 7})}), i32({3}, {5, kMin, 7}));
  expect_tensor_near(run1(OpKind::Neg, {Tensor::from_vector<int8_t>({2}, {-128, 5})}),
                     Tensor::from_vector<int8_t>({2}, {-128, -5}));
  expect_tensor_near(run1(OpKind::Abs, {Tensor::from_vector<uint8_t>({2}, {0, 255})}),
                     Tensor::from_vector<uint8_t>({2}, {0, 255}));
}

TEST(ElementwiseUnary, Float16ComputesInFloatAndRounds) {
  // sqrt(2) = 1.41421356 -> nearest float16 is 1.4140625 (0x3DA8; spacing 2^-10 near 1.4)
  Tensor y = run1(OpKind::Sqrt, {f16({2}, {4, 2})});
  ASSERT_EQ(y.dtype(), DType::kFloat16);
  EXPECT_EQ(y.data<uint16_t>()[0], 0x4000);  // 2.0
  EXPECT_EQ(y.data<uint16_t>()[1], 0x3DA8);
  Tensor b = run1(OpKind::Neg, {bf16({1}, {1.5f})});
  ASSERT_EQ(b.dtype(), DType::kBFloat16);
  EXPECT_EQ(b.data<uint16_t>()[0], 0xBFC0);  // -1.5
}

TEST(ElementwiseUnary, Predicates) {
  Tensor x = f32({4}, {1, kNaN, kInf, -kInf});
  expect_tensor_near(run1(OpKind::IsNaN, {x}), bools({4}, {0, 1, 0, 0}));
  expect_tensor_near(run1(OpKind::IsInf, {x}), bools({4}, {0, 0, 1, 1}));
  expect_tensor_near(run1(OpKind::IsInf, {x}, {{"detect_negative", attr_int(0)}}),
                     bools({4}, {0, 0, 1, 0}));
  expect_tensor_near(run1(OpKind::IsInf, {x}, {{"detect_positive", attr_int(0)}}),
                     bools({4}, {0, 0, 0, 1}));
  expect_tensor_near(run1(OpKind::Not, {bools({2}, {1, 0})}), bools({2}, {0, 1}));
}

TEST(ElementwiseUnary, SizeZeroAndScalar) {
  Tensor y = run1(OpKind::Exp, {f32({2, 0, 3}, {})});
  EXPECT_EQ(y.shape(), (Shape{2, 0, 3}));
  expect_tensor_near(run1(OpKind::Exp, {Tensor::scalar<float>(0)}), Tensor::scalar<float>(1));
}

TEST(ElementwiseUnary, UnsupportedDtypes) {
  Status s = run_error(OpKind::Sqrt, {i32({1}, {4})});
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("int32"), std::string::npos) << s.message();
  EXPECT_EQ(run_error(OpKind::Neg, {Tensor::from_vector<uint8_t>({1}, {1})}).code(),
            StatusCode::kUnsupported);
  EXPECT_EQ(run_error(OpKind::Not, {f32({1}, {1})}).code(), StatusCode::kUnsupported);
}

TEST(ElementwiseActivation, Values) {
  expect_tensor_near(run1(OpKind::Relu, {f32({3}, {-1, 0, 2})}), f32({3}, {0, 0, 2}));
  expect_tensor_near(run1(OpKind::Relu, {Tensor::from_vector<int8_t>({2}, {-3, 4})}),
                     Tensor::from_vector<int8_t>({2}, {0, 4}));
  expect_tensor_near(run1(OpKind::LeakyRelu, {f32({2}, {-2, 3})}, {{"alpha", attr_float(0.1f)}}),
                     f32({2}, {-0.2f, 3}));
  expect_tensor_near(run1(OpKind::LeakyRelu, {f32({1}, {-2})}), f32({1}, {-0.02f}));  // 0.01
  // Elu alpha 2: 2 * (e^-1 - 1) = 2 * -0.6321206 = -1.2642411
  expect_tensor_near(run1(OpKind::Elu, {f32({2}, {-1, 1})}, {{"alpha", attr_float(2)}}),
                     f32({2}, {-1.2642411f, 1}));
  // Selu: 1.0507010 * 1.6732632 * (e^-1 - 1) = -1.1113307; 1.0507010 * 2 = 2.1014020
  expect_tensor_near(run1(OpKind::Selu, {f32({3}, {-1, 0, 2})}),
                     f32({3}, {-1.1113307f, 0, 2.1014020f}));
  // Celu alpha 2: x=-2 -> 2 * (e^(-2/2) - 1) = -1.2642411; x=3 -> 3
  expect_tensor_near(run1(OpKind::Celu, {f32({2}, {-2, 3})}, {{"alpha", attr_float(2)}}),
                     f32({2}, {-1.2642411f, 3}));
  // HardSigmoid 0.2x + 0.5 clamped: -3 -> 0, 1 -> 0.7, 4 -> 1
  expect_tensor_near(run1(OpKind::HardSigmoid, {f32({3}, {-3, 1, 4})}), f32({3}, {0, 0.7f, 1}));
  // HardSwish x * clamp(x/6 + 0.5): -4 -> 0, 1 -> 0.6666667, 3 -> 3
  expect_tensor_near(run1(OpKind::HardSwish, {f32({3}, {-4, 1, 3})}), f32({3}, {0, 0.6666667f, 3}));
  // Sigmoid: 0 -> 0.5; +-100 stay finite (no exp overflow): 1 and e^-100 = 3.72e-44
  expect_tensor_near(run1(OpKind::Sigmoid, {f32({3}, {0, 100, -100})}), f32({3}, {0.5f, 1, 0}));
  // Softplus: ln 2 = 0.6931472; 100 -> 100 (no overflow); -100 -> ~0
  expect_tensor_near(run1(OpKind::Softplus, {f32({3}, {0, 100, -100})}),
                     f32({3}, {0.6931472f, 100, 0}));
  expect_tensor_near(run1(OpKind::Softsign, {f32({2}, {3, -1})}), f32({2}, {0.75f, -0.5f}));
  expect_tensor_near(run1(OpKind::ThresholdedRelu, {f32({3}, {0.5f, 1, 2})}), f32({3}, {0, 0, 2}));
  // Shrink lambd 1.5 bias 0.5: -2 -> -1.5, |x| <= 1.5 -> 0, 2 -> 1.5
  expect_tensor_near(run1(OpKind::Shrink, {f32({5}, {-2, -1, 0, 1, 2})},
                          {{"lambd", attr_float(1.5f)}, {"bias", attr_float(0.5f)}}),
                     f32({5}, {-1.5f, 0, 0, 0, 1.5f}));
  expect_tensor_near(run1(OpKind::Shrink, {i32({3}, {-3, 1, 3})},
                          {{"lambd", attr_float(1.5f)}, {"bias", attr_float(1)}}),
                     i32({3}, {-2, 0, 2}));
}

TEST(ElementwiseActivation, PReluBroadcastsSlope) {
  // X [2,3], slope [3] = [0.1, 0.2, 0.3] along the last axis
  Tensor x = f32({2, 3}, {-1, -1, -1, 1, -2, 3});
  expect_tensor_near(run1(OpKind::PRelu, {x, f32({3}, {0.1f, 0.2f, 0.3f})}),
                     f32({2, 3}, {-0.1f, -0.2f, -0.3f, 1, -0.4f, 3}));
  // slope [2,1] along the first axis
  expect_tensor_near(run1(OpKind::PRelu, {x, f32({2, 1}, {0.5f, 2})}),
                     f32({2, 3}, {-0.5f, -0.5f, -0.5f, 1, -4, 3}));
  // PRelu-6: a slope of C values is per channel (axis 1): X [2,3,2], slope [3]
  expect_tensor_near(run1_opset(6, OpKind::PRelu, {f32({2, 3, 2}, {-1, -1, -1, -1, -1, 1, -2, -2, -2, -2, -2, 2}),
                                                   f32({3}, {1, 2, 3})}),
                     f32({2, 3, 2}, {-1, -1, -2, -2, -3, 1, -2, -2, -4, -4, -6, 2}));
  // slope must not enlarge X
  Status s = run_error(OpKind::PRelu, {f32({3}, {1, 2, 3}), f32({2, 3}, {1, 1, 1, 1, 1, 1})});
  EXPECT_NE(s.message().find("slope"), std::string::npos) << s.message();
}

TEST(ElementwiseBinary, Arithmetic) {
  Tensor a = f32({4}, {1, -2, 3.5f, 0});
  Tensor b = f32({4}, {2, 4, -0.5f, 0});
  expect_tensor_near(run1(OpKind::Add, {a, b}), f32({4}, {3, 2, 3, 0}));
  expect_tensor_near(run1(OpKind::Sub, {a, b}), f32({4}, {-1, -6, 4, 0}));
  expect_tensor_near(run1(OpKind::Mul, {a, b}), f32({4}, {2, -8, -1.75f, 0}));
  expect_tensor_near(run1(OpKind::Div, {a, b}), f32({4}, {0.5f, -0.5f, -7, kNaN}));  // 0/0 = NaN
}

TEST(ElementwiseBinary, IntegerDivisionTruncatesAndWraps) {
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
  // 7/2 = 3, -7/2 = -3 (toward zero), 5/5 = 1, INT_MIN/-1 wraps to INT_MIN
  expect_tensor_near(run1(OpKind::Div, {i32({4}, {7, -7, 5, kMin}), i32({4}, {2, 2, 5, -1})}),
                     i32({4}, {3, -3, 1, kMin}));
  // INT_MAX + 1 wraps; uint8 200 + 100 = 300 - 256 = 44; uint16 60000 * 2 = 120000 - 65536 = 54464
  expect_tensor_near(run1(OpKind::Add, {i32({1}, {kMax}), i32({1}, {1})}), i32({1}, {kMin}));
  expect_tensor_near(run1(OpKind::Add, {Tensor::from_vector<uint8_t>({1}, {200}),
                                        Tensor::from_vector<uint8_t>({1}, {100})}),
                     Tensor::from_vector<uint8_t>({1}, {44}));
  expect_tensor_near(run1(OpKind::Mul, {Tensor::from_vector<uint16_t>({1}, {60000}),
                                        Tensor::from_vector<uint16_t>({1}, {2})}),
                     Tensor::from_vector<uint16_t>({1}, {54464}));
  expect_tensor_near(run1(OpKind::Div, {i64({2}, {-9, 9}), i64({2}, {4, 1})}), i64({2}, {-2, 9}));
}

TEST(ElementwiseBinary, IntegerDivisionByZeroRaises) {
  // As ONNX Runtime: an integer Div or Mod (either fmod) by zero is an error naming the node, for
  // every integer dtype and through broadcasting; floats keep IEEE results.
  auto expect_div0 = [](ir::OpKind op, std::vector<Tensor> ins, Attrs attrs = {}) {
    Status s = run_error(op, std::move(ins), std::move(attrs));
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
    EXPECT_NE(s.message().find("integer division by zero"), std::string::npos) << s.message();
  };
  expect_div0(OpKind::Div, {i32({3}, {7, -7, 5}), i32({3}, {2, 0, 1})});
  expect_div0(OpKind::Div, {i64({2, 2}, {1, 2, 3, 4}), i64({}, {0})});
  expect_div0(OpKind::Div, {Tensor::from_vector<uint8_t>({1}, {9}), Tensor::from_vector<uint8_t>({1}, {0})});
  expect_div0(OpKind::Mod, {i32({2}, {5, 6}), i32({2}, {3, 0})});
  expect_div0(OpKind::Mod, {i64({1}, {5}), i64({1}, {0})}, {{"fmod", attr_int(1)}});
  Status s = run_error(OpKind::Div, {i32({3}, {7, -7, 5}), i32({3}, {2, 0, 1})});
  EXPECT_NE(s.message().find("flat index 1"), std::string::npos) << s.message();
  // An empty dividend divides nothing.
  EXPECT_EQ(run1(OpKind::Div, {i32({0}, {}), i32({1}, {0})}).numel(), 0);
  // Floats: x / 0 = +-inf, 0 / 0 = NaN, fmod(x, 0) = NaN.
  Tensor q = run1(OpKind::Div, {f32({3}, {1, -1, 0}), f32({3}, {0, 0, 0})});
  EXPECT_EQ(q.data<float>()[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(q.data<float>()[1], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(q.data<float>()[2]));
  Tensor m = run1(OpKind::Mod, {f32({1}, {1}), f32({1}, {0})}, {{"fmod", attr_int(1)}});
  EXPECT_TRUE(std::isnan(m.data<float>()[0]));
}

TEST(ElementwiseBinary, Float16) {
  // 1.5 + 2.25 = 3.75 exactly; 0.1 + 0.2 in float16: 0.09998 + 0.2 = 0.2998 -> 0.2998047 (0x34CC)
  Tensor z = run1(OpKind::Add, {f16({2}, {1.5f, 0.1f}), f16({2}, {2.25f, 0.2f})});
  ASSERT_EQ(z.dtype(), DType::kFloat16);
  EXPECT_EQ(z.data<uint16_t>()[0], 0x4380);  // 3.75
  EXPECT_NEAR(z.value_as_double(1), 0.3, 1e-3);
}

TEST(ElementwiseBinary, Float16LongRunsMatchScalarRounding) {
  // 37 elements (vector tiles of 8 plus a tail) with NaN, inf and subnormals inside the tiles;
  // expected: float16(float(x) * float(y)) element by element with the scalar RNE conversion.
  const int n = 37;
  std::vector<float> xv(n);
  for (int i = 0; i < n; ++i) xv[i] = (i - 18) * 0.37f;
  xv[3] = kNaN;
  xv[9] = kInf;
  xv[10] = 3e-6f;  // float16 subnormal
  Tensor x = f16({n}, xv);
  Tensor y = f16({}, {1.7f});
  Tensor z = run1(OpKind::Mul, {x, y});
  ASSERT_EQ(z.dtype(), DType::kFloat16);
  const float ys = support::half_to_float(y.data<uint16_t>()[0]);
  for (int i = 0; i < n; ++i) {
    const uint16_t want = support::float_to_half(support::half_to_float(x.data<uint16_t>()[i]) * ys);
    EXPECT_EQ(z.data<uint16_t>()[i], want) << "at " << i;
  }
  // unary on the same data: Abs keeps bits except the sign
  Tensor a = run1(OpKind::Abs, {x});
  for (int i = 0; i < n; ++i) EXPECT_EQ(a.data<uint16_t>()[i], x.data<uint16_t>()[i] & 0x7FFF) << i;
}

TEST(ElementwiseBinary, ComparisonsWithNaNAreFalse) {
  Tensor a = f32({4}, {1, kNaN, 3, 2});
  Tensor b = f32({4}, {2, 1, kNaN, 2});
  expect_tensor_near(run1(OpKind::Greater, {a, b}), bools({4}, {0, 0, 0, 0}));
  expect_tensor_near(run1(OpKind::Less, {a, b}), bools({4}, {1, 0, 0, 0}));
  expect_tensor_near(run1(OpKind::GreaterOrEqual, {a, b}), bools({4}, {0, 0, 0, 1}));
  expect_tensor_near(run1(OpKind::LessOrEqual, {a, b}), bools({4}, {1, 0, 0, 1}));
  expect_tensor_near(run1(OpKind::Equal, {a, a}), bools({4}, {1, 0, 1, 1}));  // NaN != NaN
  expect_tensor_near(run1(OpKind::Equal, {i64({2}, {5, 6}), i64({}, {6})}), bools({2}, {0, 1}));
  expect_tensor_near(run1(OpKind::Equal, {bools({2}, {1, 0}), bools({2}, {1, 1})}), bools({2}, {1, 0}));
  expect_tensor_near(run1(OpKind::Greater, {f16({2}, {1, 2}), f16({2}, {2, 1})}), bools({2}, {0, 1}));
}

TEST(ElementwiseBinary, Logic) {
  Tensor a = bools({2, 2}, {0, 0, 1, 1});
  Tensor b = bools({2}, {0, 1});  // broadcast along the rows
  expect_tensor_near(run1(OpKind::And, {a, b}), bools({2, 2}, {0, 0, 0, 1}));
  expect_tensor_near(run1(OpKind::Or, {a, b}), bools({2, 2}, {0, 1, 1, 1}));
  expect_tensor_near(run1(OpKind::Xor, {a, b}), bools({2, 2}, {0, 1, 1, 0}));
  EXPECT_EQ(run_error(OpKind::And, {i32({1}, {1}), i32({1}, {1})}).code(), StatusCode::kUnsupported);
}

// A = iota over [2,3,4] (a[i,j,k] = 12i + 4j + k); each case adds B broadcast along other axes.
TEST(ElementwiseBroadcast, EveryAxis) {
  std::vector<float> iota(24);
  for (int i = 0; i < 24; ++i) iota[i] = static_cast<float>(i);
  Tensor a = f32({2, 3, 4}, iota);
  auto expect_sum = [&](const Tensor& b, auto term) {
    std::vector<float> e(24);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 4; ++k) e[12 * i + 4 * j + k] = 12.0f * i + 4 * j + k + term(i, j, k);
    expect_tensor_near(run1(OpKind::Add, {a, b}), f32({2, 3, 4}, e));
    expect_tensor_near(run1(OpKind::Add, {b, a}), f32({2, 3, 4}, e));  // either side
  };
  expect_sum(f32({3, 1}, {100, 200, 300}), [](int, int j, int) { return 100.0f * (j + 1); });
  expect_sum(f32({1, 4}, {1000, 2000, 3000, 4000}), [](int, int, int k) { return 1000.0f * (k + 1); });
  expect_sum(f32({4}, {1000, 2000, 3000, 4000}), [](int, int, int k) { return 1000.0f * (k + 1); });
  expect_sum(f32({2, 1, 1}, {10000, 20000}), [](int i, int, int) { return 10000.0f * (i + 1); });
  expect_sum(f32({2, 1, 4}, {1, 2, 3, 4, 5, 6, 7, 8}), [](int i, int, int k) { return 4.0f * i + k + 1; });
  expect_sum(f32({}, {5}), [](int, int, int) { return 5.0f; });
  expect_sum(f32({1, 1, 1}, {7}), [](int, int, int) { return 7.0f; });
  // spot check by hand: a[1,2,3] = 23, + B[2,0] = 300 -> 323
  Tensor z = run1(OpKind::Add, {a, f32({3, 1}, {100, 200, 300})});
  EXPECT_EQ(z.data<float>()[23], 323.0f);
}

TEST(ElementwiseBroadcast, OuterProductAndSizeOneDims) {
  // [3,1] - [1,2] -> [3,2]: z[i,j] = a[i] - b[j]
  expect_tensor_near(run1(OpKind::Sub, {f32({3, 1}, {10, 20, 30}), f32({1, 2}, {1, 2})}),
                     f32({3, 2}, {9, 8, 19, 18, 29, 28}));
  // size-1 dims on both sides: [1,3,1] * [2,1,1] -> [2,3,1]
  expect_tensor_near(run1(OpKind::Mul, {f32({1, 3, 1}, {1, 2, 3}), f32({2, 1, 1}, {10, -1})}),
                     f32({2, 3, 1}, {10, 20, 30, -1, -2, -3}));
}

TEST(ElementwiseBroadcast, SizeZeroDims) {
  EXPECT_EQ(run1(OpKind::Add, {f32({2, 0, 4}, {}), f32({1, 4}, {1, 2, 3, 4})}).shape(), (Shape{2, 0, 4}));
  EXPECT_EQ(run1(OpKind::Add, {f32({0}, {}), f32({}, {1})}).shape(), (Shape{0}));
  EXPECT_EQ(run1(OpKind::Add, {f32({1}, {1}), f32({0}, {})}).shape(), (Shape{0}));
  EXPECT_EQ(run1(OpKind::Less, {f32({3, 0}, {}), f32({3, 1}, {1, 2, 3})}).shape(), (Shape{3, 0}));
}

TEST(ElementwiseBroadcast, ParallelLargeInputs) {
  interp::ExecOptions opts;
  opts.intra_op_threads = 2;
  // flat: 100003 elements (odd); z[i] = i + 2i = 3i
  const int n = 100003;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) { x[i] = static_cast<float>(i); y[i] = 2.0f * i; }
  Tensor z = run1(OpKind::Add, {f32({n}, x), f32({n}, y)}, {}, opts);
  for (int i = 0; i < n; i += 997) ASSERT_EQ(z.data<float>()[i], 3.0f * i) << i;
  EXPECT_EQ(z.data<float>()[n - 1], 3.0f * (n - 1));
  // rows: [301, 207] + [301, 1]: z[r,c] = c + 1000 r
  std::vector<float> m(301 * 207), col(301);
  for (int r = 0; r < 301; ++r) {
    col[r] = 1000.0f * r;
    for (int c = 0; c < 207; ++c) m[r * 207 + c] = static_cast<float>(c);
  }
  Tensor w = run1(OpKind::Add, {f32({301, 207}, m), f32({301, 1}, col)}, {}, opts);
  for (int r = 0; r < 301; r += 7)
    for (int c = 0; c < 207; c += 13) ASSERT_EQ(w.data<float>()[r * 207 + c], c + 1000.0f * r);
  EXPECT_EQ(w.data<float>()[301 * 207 - 1], 206 + 300000.0f);
}

TEST(ElementwiseBinary, Errors) {
  Status s = run_error(OpKind::Add, {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({4}, {1, 2, 3, 4})});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("[2, 3]"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("broadcast"), std::string::npos) << s.message();
  s = run_error(OpKind::Add, {f32({1}, {1}), i32({1}, {1})});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("int32"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("Add"), std::string::npos) << s.message();  // names the node
  s = run_error(OpKind::Mul, {f32({1}, {1})});
  EXPECT_FALSE(s.ok());  // missing input 1
}

}  // namespace
}  // namespace tierjit::testing
