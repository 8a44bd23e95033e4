// Tests of the tier-0 Softmax, LogSoftmax and Hardmax kernels: opset-13 single-axis semantics vs
// the 2-D coercion of opsets < 13, default axes, large inputs (max subtraction), NaN, float16,
// size-0 inputs and errors. Values hand-computed:
//   softmax([a, a+1]) = [1/(1+e), e/(1+e)] = [0.26894142, 0.73105858]
//   softmax([a, a+2]) = [1/(1+e^2), e^2/(1+e^2)] = [0.11920292, 0.88079708]
//   softmax([0,1,2,3]) = e^k / 31.19287485 = [0.03205860, 0.08714432, 0.23688282, 0.64391426]
#include <cmath>
#include <limits>

#include "reduction_test_util.h"

namespace tierjit::testing {
namespace {

using namespace red;  // NOLINT
using ir::OpKind;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

Tensor soft(OpKind op, const Tensor& x, int opset, std::optional<int64_t> axis = std::nullopt) {
  Attrs a;
  if (axis) a.push_back({"axis", attr_int(*axis)});
  return run1(spec(op, {x}, a, opset));
}

TEST(SoftmaxOps, Opset13SingleAxis) {
  Tensor x = iota({2, 2, 2});
  // default axis -1: pairs (2m, 2m+1)
  expect_tensor_near(soft(OpKind::Softmax, x, 13),
                     f32({2, 2, 2}, {0.26894142f, 0.73105858f, 0.26894142f, 0.73105858f,
                                     0.26894142f, 0.73105858f, 0.26894142f, 0.73105858f}));
  // axis 1 (inner = 2): x[i,0,k] and x[i,1,k] differ by 2
  expect_tensor_near(soft(OpKind::Softmax, x, 13, 1),
                     f32({2, 2, 2}, {0.11920292f, 0.11920292f, 0.88079708f, 0.88079708f,
                                     0.11920292f, 0.11920292f, 0.88079708f, 0.88079708f}));
  // axis 0: x[0,..] and x[1,..] differ by 4: 1/(1+e^4) = 0.01798621
  Tensor y0 = soft(OpKind::Softmax, x, 13, 0);
  EXPECT_NEAR(y0.data<float>()[0], 0.01798621f, 1e-6);
  EXPECT_NEAR(y0.data<float>()[7], 0.98201379f, 1e-6);
}

TEST(SoftmaxOps, OldOpsetCoercesTo2D) {
  Tensor x = iota({2, 2, 2});
  // opset 11, default axis 1: rows [0,1,2,3] and [4,5,6,7] (shift-invariant: same values)
  const std::vector<float> row = {0.03205860f, 0.08714432f, 0.23688282f, 0.64391426f};
  std::vector<float> both(row);
  both.insert(both.end(), row.begin(), row.end());
  expect_tensor_near(soft(OpKind::Softmax, x, 11), f32({2, 2, 2}, both));
  expect_tensor_near(soft(OpKind::Softmax, x, 1, 1), f32({2, 2, 2}, both));
  // opset 11 axis 2 equals opset 13 axis -1 here (the last dim)
  expect_tensor_near(soft(OpKind::Softmax, x, 11, 2), soft(OpKind::Softmax, x, 13, -1));
  // opset 11 axis 0: one row of 8
  Tensor y = soft(OpKind::Softmax, x, 11, 0);
  double sum = 0;
  for (int i = 0; i < 8; ++i) sum += y.data<float>()[i];
  EXPECT_NEAR(sum, 1.0, 1e-6);
  EXPECT_NEAR(y.data<float>()[7] / y.data<float>()[6], std::exp(1.0), 1e-5);
}

TEST(SoftmaxOps, LogSoftmaxAndLargeNumbers) {
  // ln(0.26894142) = -1.31326169, ln(0.73105858) = -0.31326169
  Tensor big = f32({2, 2}, {1000, 1001, -1000, -999});
  expect_tensor_near(soft(OpKind::Softmax, big, 13),
                     f32({2, 2}, {0.26894142f, 0.73105858f, 0.26894142f, 0.73105858f}));
  expect_tensor_near(soft(OpKind::LogSoftmax, big, 13),
                     f32({2, 2}, {-1.31326169f, -0.31326169f, -1.31326169f, -0.31326169f}));
  expect_tensor_near(soft(OpKind::LogSoftmax, iota({2, 2, 2}), 11),
                     soft(OpKind::LogSoftmax, iota({2, 4}), 13).reshaped({2, 2, 2}));
  // inner > 1 path of LogSoftmax: axis 0 of [2, 2] with rows differing by 1
  expect_tensor_near(soft(OpKind::LogSoftmax, f32({2, 2}, {0, 5, 1, 6}), 13, 0),
                     f32({2, 2}, {-1.31326169f, -1.31326169f, -0.31326169f, -0.31326169f}));
}

TEST(SoftmaxOps, NanPropagatesAndFloat16) {
  expect_tensor_near(soft(OpKind::Softmax, f32({2, 2}, {1, kNaN, 0, 0}), 13),
                     f32({2, 2}, {kNaN, kNaN, 0.5f, 0.5f}));
  expect_tensor_near(soft(OpKind::LogSoftmax, f32({1, 2}, {kNaN, 1}), 13),
                     f32({1, 2}, {kNaN, kNaN}));
  // softmax([0, ln 3]) = [0.25, 0.75], exact in float16
  Tensor h = soft(OpKind::Softmax, f16({2}, {0, 1.09861229f}), 13);
  ASSERT_EQ(h.dtype(), DType::kFloat16);
  EXPECT_EQ(h.value_as_double(0), 0.25);
  EXPECT_EQ(h.value_as_double(1), 0.75);
  Tensor d = soft(OpKind::Softmax, f64({2}, {0, std::log(3.0)}), 13);
  EXPECT_NEAR(d.data<double>()[1], 0.75, 1e-15);
}

TEST(SoftmaxOps, SizeZeroAndOne) {
  expect_tensor_near(soft(OpKind::Softmax, f32({0, 3}, {}), 13), f32({0, 3}, {}));
  expect_tensor_near(soft(OpKind::Softmax, f32({3, 1}, {5, -2, 7}), 13), f32({3, 1}, {1, 1, 1}));
  expect_tensor_near(soft(OpKind::LogSoftmax, f32({3, 1}, {5, -2, 7}), 13), f32({3, 1}, {0, 0, 0}));
}

TEST(SoftmaxHardmax, FirstMaxPerAxis) {
  expect_tensor_near(soft(OpKind::Hardmax, f32({2, 4}, {1, 3, 3, 2, 0, 0, 0, -1}), 13),
                     f32({2, 4}, {0, 1, 0, 0, 1, 0, 0, 0}));
  // opset 11 default axis 1 on [2, 2, 2]: one-hot at the last of each row of 4
  expect_tensor_near(soft(OpKind::Hardmax, iota({2, 2, 2}), 11),
                     f32({2, 2, 2}, {0, 0, 0, 1, 0, 0, 0, 1}));
  // opset 13 axis 1: per (i, k) the j = 1 entry is larger
  expect_tensor_near(soft(OpKind::Hardmax, iota({2, 2, 2}), 13, 1),
                     f32({2, 2, 2}, {0, 0, 1, 1, 0, 0, 1, 1}));
}

TEST(SoftmaxOps, Errors) {
  expect_fails(spec(OpKind::Softmax, {iota({2, 3})}, {{"axis", attr_int(2)}}, 13),
               "axis 2 is out of range for rank 2");
  expect_fails(spec(OpKind::LogSoftmax, {iota({2, 3})}, {{"axis", attr_int(-3)}}, 11),
               "out of range");
  expect_fails(spec(OpKind::Hardmax, {i64({2}, {1, 2})}, {}, 13), "float");
}

}  // namespace
}  // namespace tierjit::testing
