// Tier-0 kernels TopK, Unique, Constant, ConstantOfShape, Range, EyeLike, Trilu: hand-computed
// values (x = 0, 1, 2, ... row-major unless written out; Unique from the ONNX spec examples),
// ties, NaN, strings, size-0 results and the error cases.
#include <cmath>
#include <limits>

#include "tensor_test_util.h"

namespace tierjit::testing {
namespace {

using ir::OpKind;

TEST(TensorTopKTest, LargestSmallestTies) {
  Tensor x = iota_f({3, 4});
  TJ_RUN_OK(a, node(OpKind::TopK, {x, ti({1}, {3})}, 2));
  expect_tensor_near(a[0], tf({3, 3}, {3, 2, 1, 7, 6, 5, 11, 10, 9}));
  expect_tensor_near(a[1], ti({3, 3}, {3, 2, 1, 3, 2, 1, 3, 2, 1}));
  TJ_RUN_OK(b, node(OpKind::TopK, {x, ti({1}, {2})}, 2, {{"largest", attr_int(0)}}));
  expect_tensor_near(b[0], tf({3, 2}, {0, 1, 4, 5, 8, 9}));
  // axis -2, k 1: the last row.
  TJ_RUN_OK(c, node(OpKind::TopK, {x, ti({1}, {1})}, 2, {{"axis", attr_int(-2)}}));
  expect_tensor_near(c[0], tf({1, 4}, {8, 9, 10, 11}));
  expect_tensor_near(c[1], ti({1, 4}, {2, 2, 2, 2}));
  // Ties go to the lower index: [1,3,3,2,3] top 2 -> 3@1, 3@2; bottom 3 -> 1@0, 2@3, 3@1.
  Tensor t = tf({5}, {1, 3, 3, 2, 3});
  TJ_RUN_OK(d, node(OpKind::TopK, {t, ti({1}, {2})}, 2));
  expect_tensor_near(d[1], ti({2}, {1, 2}));
  TJ_RUN_OK(e, node(OpKind::TopK, {t, ti({1}, {3})}, 2, {{"largest", attr_int(0)}}));
  expect_tensor_near(e[0], tf({3}, {1, 2, 3}));
  expect_tensor_near(e[1], ti({3}, {0, 3, 1}));
  // NaN is the largest.
  TJ_RUN_OK(f, node(OpKind::TopK, {tf({3}, {1, NAN, 3}), ti({1}, {2})}, 2));
  expect_tensor_near(f[0], tf({2}, {NAN, 3}));
  // opset 1 attribute k; int64 values; k = 0.
  TJ_RUN_OK(g, node(OpKind::TopK, {ti({4}, {5, -1, 9, 2})}, 2, {{"k", attr_int(2)}}, 1));
  expect_tensor_near(g[0], ti({2}, {9, 5}));
  TJ_RUN_OK(h, node(OpKind::TopK, {x, ti({1}, {0})}, 2));
  EXPECT_EQ(h[0].shape(), (Shape{3, 0}));
  expect_fails(node(OpKind::TopK, {x, ti({1}, {5})}, 2), "k = 5 is out of range [0, 4]");
  expect_fails(node(OpKind::TopK, {x, ti({1}, {-1})}, 2), "k = -1");
}

TEST(TensorUniqueTest, SpecExamples) {
  Tensor x = tf({6}, {2, 1, 1, 3, 4, 3});
  TJ_RUN_OK(a, node(OpKind::Unique, {x}, 4, {{"sorted", attr_int(0)}}));
  expect_tensor_near(a[0], tf({4}, {2, 1, 3, 4}));
  expect_tensor_near(a[1], ti({4}, {0, 1, 3, 4}));
  expect_tensor_near(a[2], ti({6}, {0, 1, 1, 2, 3, 2}));
  expect_tensor_near(a[3], ti({4}, {1, 2, 2, 1}));
  TJ_RUN_OK(b, node(OpKind::Unique, {x}, 4));
  expect_tensor_near(b[0], tf({4}, {1, 2, 3, 4}));
  expect_tensor_near(b[1], ti({4}, {1, 0, 3, 4}));
  expect_tensor_near(b[2], ti({6}, {1, 0, 0, 2, 3, 2}));
  expect_tensor_near(b[3], ti({4}, {2, 1, 2, 1}));
  TJ_RUN_OK(c, node(OpKind::Unique, {tf({3, 3}, {1, 0, 0, 1, 0, 0, 2, 3, 4})}, 4, {{"axis", attr_int(0)}}));
  expect_tensor_near(c[0], tf({2, 3}, {1, 0, 0, 2, 3, 4}));
  expect_tensor_near(c[1], ti({2}, {0, 2}));
  expect_tensor_near(c[2], ti({3}, {0, 0, 1}));
  expect_tensor_near(c[3], ti({2}, {2, 1}));
  // [2, 4, 2] along axis 1 (= -2): slices (1,1),(0,1),(2,1),(0,1) per batch.
  Tensor y = tf({2, 4, 2}, {1, 1, 0, 1, 2, 1, 0, 1, 1, 1, 0, 1, 2, 1, 0, 1});
  TJ_RUN_OK(d, node(OpKind::Unique, {y}, 4, {{"axis", attr_int(-2)}}));
  expect_tensor_near(d[0], tf({2, 3, 2}, {0, 1, 1, 1, 2, 1, 0, 1, 1, 1, 2, 1}));
  expect_tensor_near(d[1], ti({3}, {1, 0, 2}));
  expect_tensor_near(d[2], ti({4}, {1, 0, 2, 0}));
  expect_tensor_near(d[3], ti({3}, {2, 1, 1}));
  TJ_RUN_OK(e, node(OpKind::Unique, {ts({3}, {"b", "a", "b"})}, 4));
  expect_tensor_near(e[0], ts({2}, {"a", "b"}));
  expect_tensor_near(e[2], ti({3}, {1, 0, 1}));
  expect_tensor_near(e[3], ti({2}, {1, 2}));
  TJ_RUN_OK(f, node(OpKind::Unique, {tf({0}, {})}, 4));
  EXPECT_EQ(f[0].shape(), (Shape{0}));
  expect_fails(node(OpKind::Unique, {x}, 4, {{"axis", attr_int(1)}}), "out of range");
}

TEST(TensorGeneratorTest, Constant) {
  TJ_RUN_OK(a, node(OpKind::Constant, {}, 1, {{"value", attr_tensor(tf({2}, {1.5f, 2}))}}));
  expect_tensor_near(a[0], tf({2}, {1.5f, 2}));
  TJ_RUN_OK(b, node(OpKind::Constant, {}, 1, {{"value_float", attr_float(3)}}));
  expect_tensor_near(b[0], Tensor::scalar<float>(3));
  TJ_RUN_OK(c, node(OpKind::Constant, {}, 1, {{"value_ints", attr_ints({4, 5})}}));
  expect_tensor_near(c[0], ti({2}, {4, 5}));
  TJ_RUN_OK(d, node(OpKind::Constant, {}, 1, {{"value_string", attr_string("hi")}}));
  expect_tensor_near(d[0], ts({}, {"hi"}));
  expect_fails(node(OpKind::Constant, {}), "no value");
}

TEST(TensorGeneratorTest, ConstantOfShape) {
  TJ_RUN_OK(a, node(OpKind::ConstantOfShape, {ti({2}, {2, 3})}, 1, {{"value", attr_tensor(ti({1}, {5}))}}));
  expect_tensor_near(a[0], ti({2, 3}, {5, 5, 5, 5, 5, 5}));
  TJ_RUN_OK(b, node(OpKind::ConstantOfShape, {ti({1}, {3})}));
  expect_tensor_near(b[0], tf({3}, {0, 0, 0}));
  TJ_RUN_OK(c, node(OpKind::ConstantOfShape, {ti({0}, {})}, 1, {{"value", attr_tensor(tf({1}, {2}))}}));
  expect_tensor_near(c[0], Tensor::scalar<float>(2));
  TJ_RUN_OK(d, node(OpKind::ConstantOfShape, {ti({2}, {4, 0})}));
  EXPECT_EQ(d[0].shape(), (Shape{4, 0}));
  expect_fails(node(OpKind::ConstantOfShape, {ti({2}, {2, -1})}), "negative dim -1");
}

TEST(TensorGeneratorTest, Range) {
  // ceil((5 - 1) / 1.5) = 3 -> 1, 2.5, 4
  TJ_RUN_OK(a, node(OpKind::Range, {Tensor::scalar<float>(1), Tensor::scalar<float>(5), Tensor::scalar<float>(1.5f)}));
  expect_tensor_near(a[0], tf({3}, {1, 2.5f, 4}));
  // ceil((4 - 10) / -3) = 2 -> 10, 7
  TJ_RUN_OK(b, node(OpKind::Range, {Tensor::scalar<int32_t>(10), Tensor::scalar<int32_t>(4), Tensor::scalar<int32_t>(-3)}));
  expect_tensor_near(b[0], ti32({2}, {10, 7}));
  TJ_RUN_OK(c, node(OpKind::Range, {Tensor::scalar<int64_t>(5), Tensor::scalar<int64_t>(1), Tensor::scalar<int64_t>(1)}));
  EXPECT_EQ(c[0].shape(), (Shape{0}));
  // Extremes: ceil((INT64_MAX - INT64_MIN) / INT64_MAX) = 3 -> MIN, MIN + MAX = -1, -1 + MAX.
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  TJ_RUN_OK(d, node(OpKind::Range, {Tensor::scalar<int64_t>(kMin), Tensor::scalar<int64_t>(kMax),
                                     Tensor::scalar<int64_t>(kMax)}));
  expect_tensor_near(d[0], ti({3}, {kMin, -1, kMax - 1}));
  expect_fails(node(OpKind::Range, {Tensor::scalar<int64_t>(0), Tensor::scalar<int64_t>(1), Tensor::scalar<int64_t>(0)}),
               "must not be 0");
  expect_fails(node(OpKind::Range, {Tensor::scalar<int64_t>(0), Tensor::scalar<int32_t>(1), Tensor::scalar<int64_t>(1)}),
               "dtype");
}

TEST(TensorGeneratorTest, EyeLike) {
  TJ_RUN_OK(a, node(OpKind::EyeLike, {iota_f({3, 4})}, 1, {{"k", attr_int(1)}}));
  expect_tensor_near(a[0], tf({3, 4}, {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}));
  TJ_RUN_OK(b, node(OpKind::EyeLike, {iota_f({3, 3})}, 1, {{"k", attr_int(-1)}, {"dtype", attr_int(7)}}));
  expect_tensor_near(b[0], ti({3, 3}, {0, 0, 0, 1, 0, 0, 0, 1, 0}));
  TJ_RUN_OK(c, node(OpKind::EyeLike, {iota_f({2, 2})}, 1, {{"k", attr_int(5)}}));
  expect_tensor_near(c[0], tf({2, 2}, {0, 0, 0, 0}));
  expect_fails(node(OpKind::EyeLike, {iota_f({3})}), "2-D");
}

TEST(TensorGeneratorTest, Trilu) {
  Tensor x = iota_f({3, 4});
  TJ_RUN_OK(a, node(OpKind::Trilu, {x}));  // keep j >= i
  expect_tensor_near(a[0], tf({3, 4}, {0, 1, 2, 3, 0, 5, 6, 7, 0, 0, 10, 11}));
  TJ_RUN_OK(b, node(OpKind::Trilu, {x}, 1, {{"upper", attr_int(0)}}));  // keep j <= i
  expect_tensor_near(b[0], tf({3, 4}, {0, 0, 0, 0, 4, 5, 0, 0, 8, 9, 10, 0}));
  TJ_RUN_OK(c, node(OpKind::Trilu, {x, Tensor::scalar<int64_t>(-1)}));  // keep j >= i - 1
  expect_tensor_near(c[0], tf({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 0, 9, 10, 11}));
  TJ_RUN_OK(d, node(OpKind::Trilu, {x, Tensor::scalar<int64_t>(std::numeric_limits<int64_t>::max())}, 1,
                    {{"upper", attr_int(0)}}));
  expect_tensor_near(d[0], x);
  // Batched [2, 2, 2] upper: [[a,b],[0,d]] per matrix.
  TJ_RUN_OK(e, node(OpKind::Trilu, {iota_f({2, 2, 2})}));
  expect_tensor_near(e[0], tf({2, 2, 2}, {0, 1, 0, 3, 4, 5, 0, 7}));
  TJ_RUN_OK(f, node(OpKind::Trilu, {ts({2, 2}, {"a", "b", "c", "d"})}, 1, {{"upper", attr_int(0)}}));
  expect_tensor_near(f[0], ts({2, 2}, {"a", "", "c", "d"}));
  TJ_RUN_OK(g, node(OpKind::Trilu, {iota_f({0, 3})}));
  EXPECT_EQ(g[0].shape(), (Shape{0, 3}));
  expect_fails(node(OpKind::Trilu, {iota_f({3})}), "rank >= 2");
}

}  // namespace
}  // namespace tierjit::testing
