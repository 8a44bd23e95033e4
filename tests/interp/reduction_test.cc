// Tests of the tier-0 reductions: Reduce* over every axis of a [2,3,4] tensor, axis sets,
// keepdims, noop_with_empty_axes, size-0/size-1/rank-0 inputs, NaN, integer wrap, the 2^26-ones
// accuracy check, ArgMax/ArgMin, CumSum, Global*Pool, and the error cases.
// Values are hand-computed; x = iota([2,3,4]) means x[i,j,k] = 12i + 4j + k.
#include <cmath>
#include <limits>

#include "reduction_test_util.h"

namespace tierjit::testing {
namespace {

using namespace red;  // NOLINT
using ir::OpKind;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

Tensor reduce(OpKind op, const Tensor& x, std::vector<int64_t> axes, int64_t keepdims = 1) {
  Attrs a{{"keepdims", attr_int(keepdims)}};
  if (!axes.empty()) a.push_back({"axes", attr_ints(std::move(axes))});
  return run1(spec(op, {x}, a, 11));
}

TEST(ReduceOps, SumEachAxisOf234) {
  Tensor x = iota({2, 3, 4});
  // axis 0: x[0,j,k] + x[1,j,k] = 12 + 8j + 2k
  expect_tensor_near(reduce(OpKind::ReduceSum, x, {0}),
                     f32({1, 3, 4}, {12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34}));
  // axis 1: sum_j (12i + 4j + k) = 36i + 12 + 3k
  expect_tensor_near(reduce(OpKind::ReduceSum, x, {1}),
                     f32({2, 1, 4}, {12, 15, 18, 21, 48, 51, 54, 57}));
  // axis 2: sum_k = 48i + 16j + 6
  expect_tensor_near(reduce(OpKind::ReduceSum, x, {2}), f32({2, 3, 1}, {6, 22, 38, 54, 70, 86}));
  expect_tensor_near(reduce(OpKind::ReduceSum, x, {-1}, 0), f32({2, 3}, {6, 22, 38, 54, 70, 86}));
  // axes {0, 2} (not contiguous: gather path): sum_i (48i + 16j + 6) = 60 + 32j
  expect_tensor_near(reduce(OpKind::ReduceSum, x, {0, 2}), f32({1, 3, 1}, {60, 92, 124}));
  expect_tensor_near(reduce(OpKind::ReduceSum, x, {2, -3}, 0), f32({3}, {60, 92, 124}));
  // all axes (no axes attribute): 0 + 1 + ... + 23 = 276
  expect_tensor_near(reduce(OpKind::ReduceSum, x, {}), f32({1, 1, 1}, {276}));
  expect_tensor_near(reduce(OpKind::ReduceSum, x, {}, 0), f32({}, {276}));
  expect_tensor_near(reduce(OpKind::ReduceSum, x, {0, 1, 2}, 0), f32({}, {276}));
}

TEST(ReduceOps, OtherKindsOn234) {
  Tensor x = iota({2, 3, 4});
  // max over j: x[i,2,k] = 12i + 8 + k
  expect_tensor_near(reduce(OpKind::ReduceMax, x, {1}),
                     f32({2, 1, 4}, {8, 9, 10, 11, 20, 21, 22, 23}));
  // min over {i, k}: x[0,j,0] = 4j
  expect_tensor_near(reduce(OpKind::ReduceMin, x, {0, 2}, 0), f32({3}, {0, 4, 8}));
  // mean over k: (48i + 16j + 6) / 4 = 12i + 4j + 1.5
  expect_tensor_near(reduce(OpKind::ReduceMean, x, {2}, 0),
                     f32({2, 3}, {1.5, 5.5, 9.5, 13.5, 17.5, 21.5}));
  // mean over i: 6 + 4j + k
  expect_tensor_near(reduce(OpKind::ReduceMean, x, {0}, 0),
                     f32({3, 4}, {6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}));
  // prod over j of x[0,j,1] = 1 * 5 * 9 = 45; x[1,j,0] = 12 * 16 * 20 = 3840
  Tensor p = reduce(OpKind::ReduceProd, x, {1}, 0);
  EXPECT_FLOAT_EQ(p.data<float>()[1], 45);
  EXPECT_FLOAT_EQ(p.data<float>()[4], 3840);
  // sum of squares over k of x[0,0,:] = 0 + 1 + 4 + 9 = 14
  EXPECT_FLOAT_EQ(reduce(OpKind::ReduceSumSquare, x, {2}, 0).data<float>()[0], 14);
}

TEST(ReduceOps, NormsAndLogs) {
  Tensor v = f32({3}, {-1, 2, -3});
  expect_tensor_near(reduce(OpKind::ReduceL1, v, {0}, 0), f32({}, {6}));  // 1 + 2 + 3
  expect_tensor_near(reduce(OpKind::ReduceL2, f32({2}, {3, -4}), {0}, 0),
                     f32({}, {5}));  // sqrt(9+16)
  expect_tensor_near(reduce(OpKind::ReduceLogSum, f32({2}, {1, 2}), {0}, 0),
                     f32({}, {1.09861229f}));  // ln 3
  // log(e^1000 + e^1000) = 1000 + ln 2: no overflow
  expect_tensor_near(reduce(OpKind::ReduceLogSumExp, f32({2}, {1000, 1000}), {0}, 0),
                     f32({}, {1000.693147f}));
  // ln(e^0 + e^ln3) = ln 4
  expect_tensor_near(reduce(OpKind::ReduceLogSumExp, f32({2, 1}, {0, 1.09861229f}), {0}, 0),
                     f32({1}, {1.38629436f}));
  // inner > 1 path: [2, 2] over axis 0: ln(e^0 + e^0) = ln 2 twice
  expect_tensor_near(reduce(OpKind::ReduceLogSumExp, f32({2, 2}, {0, 0, 0, 0}), {0}, 0),
                     f32({2}, {0.69314718f, 0.69314718f}));
}

TEST(ReduceOps, NanPropagates) {
  Tensor x = f32({2, 3}, {1, kNaN, 3, 4, 5, 6});
  expect_tensor_near(reduce(OpKind::ReduceMax, x, {1}, 0), f32({2}, {kNaN, 6}));
  expect_tensor_near(reduce(OpKind::ReduceMin, x, {1}, 0), f32({2}, {kNaN, 4}));
  expect_tensor_near(reduce(OpKind::ReduceSum, x, {1}, 0), f32({2}, {kNaN, 15}));
  expect_tensor_near(reduce(OpKind::ReduceMax, x, {0}, 0), f32({3}, {4, kNaN, 6}));
  // row 2: 6 + ln(1 + e^-1 + e^-2) = 6.40760596
  expect_tensor_near(reduce(OpKind::ReduceLogSumExp, x, {1}, 0), f32({2}, {kNaN, 6.40760596f}));
}

TEST(ReduceOps, SizeZeroReducedAxis) {
  Tensor x = f32({2, 0, 3}, {});
  expect_tensor_near(reduce(OpKind::ReduceSum, x, {1}), f32({2, 1, 3}, {0, 0, 0, 0, 0, 0}));
  expect_tensor_near(reduce(OpKind::ReduceProd, x, {1}, 0), f32({2, 3}, {1, 1, 1, 1, 1, 1}));
  // Empty max/min: -inf/+inf (ONNX: "minus infinity ... or the minimum value of the data type")
  expect_tensor_near(reduce(OpKind::ReduceMax, x, {1}, 0),
                     f32({2, 3}, {-kInf, -kInf, -kInf, -kInf, -kInf, -kInf}));
  expect_tensor_near(reduce(OpKind::ReduceMin, x, {1}, 0),
                     f32({2, 3}, {kInf, kInf, kInf, kInf, kInf, kInf}));
  expect_tensor_near(reduce(OpKind::ReduceMean, x, {1}, 0),
                     f32({2, 3}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}));
  expect_tensor_near(reduce(OpKind::ReduceLogSumExp, x, {1}, 0),
                     f32({2, 3}, {-kInf, -kInf, -kInf, -kInf, -kInf, -kInf}));
  expect_tensor_near(reduce(OpKind::ReduceL2, x, {1}, 0), f32({2, 3}, {0, 0, 0, 0, 0, 0}));
  // all axes of an empty tensor -> one element
  expect_tensor_near(reduce(OpKind::ReduceSum, x, {}, 0), f32({}, {0}));
  Tensor imax = reduce(OpKind::ReduceMax, Tensor::from_vector<int32_t>({0}, {}), {0}, 0);
  EXPECT_EQ(imax.data<int32_t>()[0], std::numeric_limits<int32_t>::lowest());
  // a kept size-0 dim: empty output
  expect_tensor_near(reduce(OpKind::ReduceSum, x, {0}), f32({1, 0, 3}, {}));
}

TEST(ReduceOps, SizeOneAndRankZero) {
  Tensor x = f32({1, 3}, {-1, 2, -3});
  expect_tensor_near(reduce(OpKind::ReduceSum, x, {0}), f32({1, 3}, {-1, 2, -3}));
  expect_tensor_near(reduce(OpKind::ReduceL2, x, {0}, 0), f32({3}, {1, 2, 3}));
  expect_tensor_near(reduce(OpKind::ReduceSum, x, {0, 1}, 0), f32({}, {-2}));
  expect_tensor_near(reduce(OpKind::ReduceMax, f32({}, {7}), {}), f32({}, {7}));
  expect_tensor_near(reduce(OpKind::ReduceSum, f32({}, {7}), {0}, 0), f32({}, {7}));
}

TEST(ReduceOps, SumAxesInputAndNoop) {
  Tensor x = iota({2, 3, 4});
  // opset 13: axes come as input 1
  expect_tensor_near(
      run1(spec(OpKind::ReduceSum, {x, i64({1}, {2})}, {{"keepdims", attr_int(0)}}, 13)),
      f32({2, 3}, {6, 22, 38, 54, 70, 86}));
  // empty axes + noop_with_empty_axes: identity
  expect_tensor_near(
      run1(spec(OpKind::ReduceSum, {x, i64({0}, {})}, {{"noop_with_empty_axes", attr_int(1)}}, 13)),
      x);
  expect_tensor_near(
      run1(spec(OpKind::ReduceSum, {x}, {{"noop_with_empty_axes", attr_int(1)}}, 13)), x);
  // empty axes without noop: all
  expect_tensor_near(run1(spec(OpKind::ReduceSum, {x, i64({0}, {})}, {}, 13)),
                     f32({1, 1, 1}, {276}));
}

TEST(ReduceOps, Integers) {
  // int32 sums wrap: INT32_MAX + 1 -> INT32_MIN
  Tensor s = reduce(OpKind::ReduceSum, i32({2}, {2147483647, 1}), {0}, 0);
  ASSERT_EQ(s.dtype(), DType::kInt32);
  EXPECT_EQ(s.data<int32_t>()[0], std::numeric_limits<int32_t>::min());
  // int64 max stays exact beyond 2^53
  const int64_t big = (int64_t{1} << 62) + 1;
  EXPECT_EQ(reduce(OpKind::ReduceMax, i64({2}, {big, big - 1}), {0}, 0).data<int64_t>()[0], big);
  // integer mean truncates: (1 + 2) / 2 = 1
  EXPECT_EQ(reduce(OpKind::ReduceMean, i64({2}, {1, 2}), {0}, 0).data<int64_t>()[0], 1);
  EXPECT_EQ(reduce(OpKind::ReduceProd, i64({3}, {2, -3, 4}), {0}, 0).data<int64_t>()[0], -24);
}

TEST(ReduceOps, Float16) {
  Tensor y = reduce(OpKind::ReduceSum, f16({4}, {0.5f, 0.25f, 1, 2}), {0}, 0);
  ASSERT_EQ(y.dtype(), DType::kFloat16);
  EXPECT_EQ(y.value_as_double(0), 3.75);
}

TEST(ReduceOps, AccuracyOf2To26Ones) {
  const int64_t n = int64_t{1} << 26;  // 256 MiB of float32 ones, allocated once
  Tensor ones = Tensor::empty(DType::kFloat32, {n});
  std::fill(ones.data<float>(), ones.data<float>() + n, 1.0f);
  // [n] -> scalar: the contiguous (inner = 1) path
  EXPECT_EQ(reduce(OpKind::ReduceSum, ones, {0}, 0).data<float>()[0], 67108864.0f);
  EXPECT_EQ(reduce(OpKind::ReduceMean, ones, {0}, 0).data<float>()[0], 1.0f);
  // [n/2, 2] over axis 0: the blocked inner path, 2^25 = 33554432 per column
  Tensor cols = ones.reshaped({n / 2, 2});
  expect_tensor_near(reduce(OpKind::ReduceSum, cols, {0}, 0), f32({2}, {33554432.0f, 33554432.0f}),
                     0, 0);
  expect_tensor_near(reduce(OpKind::ReduceMean, cols, {0}, 0), f32({2}, {1, 1}), 0, 0);
  // and with two threads: one long row split in chunks, then two rows
  interp::ExecOptions two_threads;
  two_threads.intra_op_threads = 2;
  auto full =
      run_all(spec(OpKind::ReduceSum, {ones}, {{"keepdims", attr_int(0)}}, 11), two_threads);
  EXPECT_EQ(full[0].data<float>()[0], 67108864.0f);
  auto lse =
      run_all(spec(OpKind::ReduceLogSumExp, {ones}, {{"keepdims", attr_int(0)}}, 11), two_threads);
  EXPECT_NEAR(lse[0].data<float>()[0], 1 + 26 * std::log(2.0), 1e-5);  // 1 + ln(2^26)
  interp::ExecOptions two;
  two.intra_op_threads = 2;
  auto r = run_all(spec(OpKind::ReduceSum, {cols.reshaped({2, n / 2})},
                        {{"axes", attr_ints({1})}, {"keepdims", attr_int(0)}}, 11),
                   two);
  expect_tensor_near(r[0], f32({2}, {33554432.0f, 33554432.0f}), 0, 0);
}

TEST(ReduceOps, Errors) {
  Tensor x = iota({2, 3, 4});
  expect_fails(spec(OpKind::ReduceSum, {x}, {{"axes", attr_ints({3})}}, 11),
               "axis 3 is out of range for rank 3");
  expect_fails(spec(OpKind::ReduceMean, {x}, {{"axes", attr_ints({-4})}}, 11), "out of range");
  expect_fails(spec(OpKind::ReduceMax, {x}, {{"axes", attr_ints({1, -2})}}, 11), "repeated");
  expect_fails(spec(OpKind::ReduceSum, {x, f32({1}, {1})}, {}, 13), "integer");
  expect_fails(spec(OpKind::ReduceSum, {Tensor::from_vector<bool>({2}, {true, false})}, {}, 13),
               "bool");
}

TEST(ReduceGlobalPool, AverageMaxLp) {
  Tensor x = f32({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  // channel means (1+2+3+4)/4 = 2.5, (5+6+7+8)/4 = 6.5
  expect_tensor_near(run1(spec(OpKind::GlobalAveragePool, {x})), f32({1, 2, 1, 1}, {2.5, 6.5}));
  expect_tensor_near(run1(spec(OpKind::GlobalMaxPool, {x})), f32({1, 2, 1, 1}, {4, 8}));
  // p = 2: sqrt(3^2 + 4^2) = 5; p = 1: 3 + 4 = 7
  expect_tensor_near(run1(spec(OpKind::GlobalLpPool, {f32({1, 1, 2}, {3, -4})})),
                     f32({1, 1, 1}, {5}));
  expect_tensor_near(
      run1(spec(OpKind::GlobalLpPool, {f32({1, 1, 2}, {3, -4})}, {{"p", attr_int(1)}})),
      f32({1, 1, 1}, {7}));
  expect_fails(spec(OpKind::GlobalAveragePool, {f32({3}, {1, 2, 3})}), "rank >= 2");
  expect_fails(spec(OpKind::GlobalMaxPool, {i64({1, 1, 1}, {1})}), "float");
}

TEST(ReduceArgMinMax, AxesKeepdimsAndLastIndex) {
  Tensor x = f32({2, 3}, {1, 5, 5, 7, 2, 7});
  expect_tensor_near(run1(spec(OpKind::ArgMax, {x}, {{"axis", attr_int(1)}})), i64({2, 1}, {1, 0}));
  expect_tensor_near(
      run1(spec(OpKind::ArgMax, {x}, {{"axis", attr_int(-1)}, {"select_last_index", attr_int(1)}})),
      i64({2, 1}, {2, 2}));
  // default axis 0: column argmin of (1,7), (5,2), (5,7) -> 0, 1, 0
  expect_tensor_near(run1(spec(OpKind::ArgMin, {x}, {{"keepdims", attr_int(0)}})),
                     i64({3}, {0, 1, 0}));
  expect_tensor_near(run1(spec(OpKind::ArgMax, {x}, {{"keepdims", attr_int(0)}})),
                     i64({3}, {1, 0, 1}));
  expect_tensor_near(
      run1(spec(OpKind::ArgMin, {f32({3}, {2, 1, 1})}, {{"select_last_index", attr_int(1)}})),
      i64({1}, {2}));
  expect_tensor_near(run1(spec(OpKind::ArgMax, {i64({1, 3}, {-5, 9, 9})}, {{"axis", attr_int(1)}})),
                     i64({1, 1}, {1}));
  expect_tensor_near(run1(spec(OpKind::ArgMax, {f32({1, 1}, {4})})), i64({1, 1}, {0}));
  expect_tensor_near(run1(spec(OpKind::ArgMax, {f32({}, {4})})), i64({}, {0}));  // a scalar
}

TEST(ReduceArgMinMax, NanIsLargest) {
  expect_tensor_near(run1(spec(OpKind::ArgMax, {f32({4}, {1, kNaN, 3, kNaN})})), i64({1}, {1}));
  expect_tensor_near(run1(spec(OpKind::ArgMin, {f32({3}, {kNaN, 2, 1})})), i64({1}, {2}));
}

TEST(ReduceArgMinMax, Errors) {
  expect_fails(spec(OpKind::ArgMax, {f32({2, 3}, {1, 2, 3, 4, 5, 6})}, {{"axis", attr_int(2)}}),
               "axis 2 is out of range");
  expect_fails(spec(OpKind::ArgMin, {f32({2, 0}, {})}, {{"axis", attr_int(1)}}), "size 0");
}

TEST(ReduceCumSum, Modes) {
  Tensor x = f32({4}, {1, 2, 3, 4});
  Tensor ax = i64({}, {0});
  expect_tensor_near(run1(spec(OpKind::CumSum, {x, ax})), f32({4}, {1, 3, 6, 10}));
  expect_tensor_near(run1(spec(OpKind::CumSum, {x, ax}, {{"exclusive", attr_int(1)}})),
                     f32({4}, {0, 1, 3, 6}));
  expect_tensor_near(run1(spec(OpKind::CumSum, {x, ax}, {{"reverse", attr_int(1)}})),
                     f32({4}, {10, 9, 7, 4}));
  expect_tensor_near(
      run1(spec(OpKind::CumSum, {x, ax}, {{"reverse", attr_int(1)}, {"exclusive", attr_int(1)}})),
      f32({4}, {9, 7, 4, 0}));
  Tensor m = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_tensor_near(run1(spec(OpKind::CumSum, {m, i32({}, {0})})),
                     f32({2, 3}, {1, 2, 3, 5, 7, 9}));
  expect_tensor_near(run1(spec(OpKind::CumSum, {m, i32({1}, {-1})})),
                     f32({2, 3}, {1, 3, 6, 4, 9, 15}));
  expect_tensor_near(run1(spec(OpKind::CumSum, {i64({3}, {5, -2, 7}), ax})), i64({3}, {5, 3, 10}));
  expect_tensor_near(run1(spec(OpKind::CumSum, {f32({0, 3}, {}), ax})), f32({0, 3}, {}));
}

TEST(ReduceCumSum, Errors) {
  Tensor m = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_fails(spec(OpKind::CumSum, {m, i64({}, {2})}), "axis 2 is out of range for rank 2");
  expect_fails(spec(OpKind::CumSum, {m, i64({2}, {0, 1})}), "scalar");
  expect_fails(spec(OpKind::CumSum, {m, f32({}, {0})}), "integer");
}

}  // namespace
}  // namespace tierjit::testing
