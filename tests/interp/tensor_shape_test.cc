// Tier-0 kernels Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze, Dropout: hand-computed
// shapes, views (no copy), opset differences, strings and the error cases.
#include <limits>

#include "tensor_test_util.h"

namespace tierjit::testing {
namespace {

using ir::OpKind;

TEST(TensorShapeTest, ShapeAndSize) {
  Tensor x = iota_f({2, 3, 4});
  TJ_RUN_OK(a, node(OpKind::Shape, {x}));
  expect_tensor_near(a[0], ti({3}, {2, 3, 4}));
  // opset 15: start=1 -> [3, 4]; end=-1 -> [2, 3]; start=-5 clamps to 0; start > end -> empty.
  TJ_RUN_OK(b, node(OpKind::Shape, {x}, 1, {{"start", attr_int(1)}}, 15));
  expect_tensor_near(b[0], ti({2}, {3, 4}));
  TJ_RUN_OK(c, node(OpKind::Shape, {x}, 1, {{"end", attr_int(-1)}}, 15));
  expect_tensor_near(c[0], ti({2}, {2, 3}));
  TJ_RUN_OK(d, node(OpKind::Shape, {x}, 1, {{"start", attr_int(-5)}, {"end", attr_int(10)}}, 15));
  expect_tensor_near(d[0], ti({3}, {2, 3, 4}));
  TJ_RUN_OK(e, node(OpKind::Shape, {x}, 1, {{"start", attr_int(2)}, {"end", attr_int(1)}}, 15));
  expect_tensor_near(e[0], ti({0}, {}));
  // opset 13 ignores start.
  TJ_RUN_OK(f, node(OpKind::Shape, {x}, 1, {{"start", attr_int(1)}}, 13));
  expect_tensor_near(f[0], ti({3}, {2, 3, 4}));
  TJ_RUN_OK(g, node(OpKind::Shape, {Tensor::scalar<float>(1)}));
  expect_tensor_near(g[0], ti({0}, {}));
  TJ_RUN_OK(s, node(OpKind::Size, {x}));
  expect_tensor_near(s[0], Tensor::scalar<int64_t>(24));
  TJ_RUN_OK(s0, node(OpKind::Size, {iota_f({3, 0})}));
  expect_tensor_near(s0[0], Tensor::scalar<int64_t>(0));
}

TEST(TensorShapeTest, ReshapeZeroMinusOneAndView) {
  Tensor x = iota_f({2, 3, 4});
  // [0, -1]: 0 copies dim 0 (2), -1 = 24 / 2 = 12.
  TJ_RUN_OK(a, node(OpKind::Reshape, {x, ti({2}, {0, -1})}));
  expect_tensor_near(a[0], iota_f({2, 12}));
  EXPECT_TRUE(a[0].shares_storage_with(x));
  // [-1, 2, 2] -> 24 / 4 = 6.
  TJ_RUN_OK(b, node(OpKind::Reshape, {x, ti({3}, {-1, 2, 2})}));
  EXPECT_EQ(b[0].shape(), (Shape{6, 2, 2}));
  // int32 shape input works too.
  TJ_RUN_OK(c, node(OpKind::Reshape, {x, ti32({1}, {24})}));
  EXPECT_EQ(c[0].shape(), (Shape{24}));
  // opset 1 takes the attribute.
  TJ_RUN_OK(d, node(OpKind::Reshape, {x}, 1, {{"shape", attr_ints({4, 6})}}, 1));
  EXPECT_EQ(d[0].shape(), (Shape{4, 6}));
  // Size 0: [0, 3] to [3, -1]: -1 = 0 elements / 3 = 0.
  TJ_RUN_OK(e, node(OpKind::Reshape, {iota_f({0, 3}), ti({2}, {3, -1})}));
  EXPECT_EQ(e[0].shape(), (Shape{3, 0}));
}

TEST(TensorShapeTest, ReshapeAllowZero) {
  // allowzero=1: a 0 in shape is a real 0 dim; input of 0 elements -> [0, 4].
  Tensor x = iota_f({4, 0});
  TJ_RUN_OK(a, node(OpKind::Reshape, {x, ti({2}, {0, 4})}, 1, {{"allowzero", attr_int(1)}}, 14));
  EXPECT_EQ(a[0].shape(), (Shape{0, 4}));
  // allowzero=0: 0 copies dim 0 (4) -> [4, 4] has 16 != 0 elements: error.
  expect_fails(node(OpKind::Reshape, {x, ti({2}, {0, 4})}, 1, {}, 14), "cannot reshape");
  expect_fails(node(OpKind::Reshape, {x, ti({2}, {0, -1})}, 1, {{"allowzero", attr_int(1)}}, 14), "allowzero");
}

TEST(TensorShapeTest, ReshapeErrors) {
  Tensor x = iota_f({2, 3});
  expect_fails(node(OpKind::Reshape, {x, ti({2}, {-1, -1})}), "more than one -1");
  expect_fails(node(OpKind::Reshape, {x, ti({2}, {4, -1})}), "cannot reshape");
  expect_fails(node(OpKind::Reshape, {x, ti({1}, {5})}), "cannot reshape");
  expect_fails(node(OpKind::Reshape, {x, ti({2}, {-2, 3})}), "invalid dim -2");
  expect_fails(node(OpKind::Reshape, {x, ti({3}, {1, 6, 0})}), "0 at index 2");
  expect_fails(node(OpKind::Reshape, {x, tf({1}, {6})}), "integer");
}

TEST(TensorShapeTest, ReshapeStrings) {
  Tensor x = ts({2, 2}, {"a", "b", "c", "d"});
  TJ_RUN_OK(a, node(OpKind::Reshape, {x, ti({1}, {4})}));
  expect_tensor_near(a[0], ts({4}, {"a", "b", "c", "d"}));
}

TEST(TensorShapeTest, Flatten) {
  Tensor x = iota_f({2, 3, 4, 5});
  TJ_RUN_OK(a, node(OpKind::Flatten, {x}));  // axis 1: [2, 60]
  EXPECT_EQ(a[0].shape(), (Shape{2, 60}));
  EXPECT_TRUE(a[0].shares_storage_with(x));
  TJ_RUN_OK(b, node(OpKind::Flatten, {x}, 1, {{"axis", attr_int(0)}}));
  EXPECT_EQ(b[0].shape(), (Shape{1, 120}));
  TJ_RUN_OK(c, node(OpKind::Flatten, {x}, 1, {{"axis", attr_int(4)}}));
  EXPECT_EQ(c[0].shape(), (Shape{120, 1}));
  TJ_RUN_OK(d, node(OpKind::Flatten, {x}, 1, {{"axis", attr_int(-1)}}));
  EXPECT_EQ(d[0].shape(), (Shape{24, 5}));
  TJ_RUN_OK(e, node(OpKind::Flatten, {Tensor::scalar<float>(3)}, 1, {{"axis", attr_int(0)}}));
  EXPECT_EQ(e[0].shape(), (Shape{1, 1}));
  expect_fails(node(OpKind::Flatten, {x}, 1, {{"axis", attr_int(5)}}), "out of range");
}

TEST(TensorShapeTest, Squeeze) {
  Tensor x = iota_f({1, 3, 1, 2});
  TJ_RUN_OK(a, node(OpKind::Squeeze, {x}));
  expect_tensor_near(a[0], iota_f({3, 2}));
  TJ_RUN_OK(a2, node(OpKind::Squeeze, {x, ti({0}, {})}));
  EXPECT_EQ(a2[0].shape(), (Shape{3, 2}));
  TJ_RUN_OK(b, node(OpKind::Squeeze, {x, ti({1}, {-2})}));
  EXPECT_EQ(b[0].shape(), (Shape{1, 3, 2}));
  TJ_RUN_OK(c, node(OpKind::Squeeze, {x}, 1, {{"axes", attr_ints({0, 2})}}, 11));
  EXPECT_EQ(c[0].shape(), (Shape{3, 2}));
  EXPECT_TRUE(c[0].shares_storage_with(x));
  expect_fails(node(OpKind::Squeeze, {x, ti({1}, {1})}), "cannot squeeze axis 1 of size 3");
  expect_fails(node(OpKind::Squeeze, {x, ti({1}, {4})}), "out of range");
  TJ_RUN_OK(d, node(OpKind::Squeeze, {ts({1, 1}, {"s"})}));
  expect_tensor_near(d[0], ts({}, {"s"}));
}

TEST(TensorShapeTest, Unsqueeze) {
  Tensor x = iota_f({3, 2});
  TJ_RUN_OK(a, node(OpKind::Unsqueeze, {x, ti({2}, {0, 3})}));
  EXPECT_EQ(a[0].shape(), (Shape{1, 3, 2, 1}));
  // Unsorted and negative axes {-1, 1} in the output rank 4: positions 3 and 1 -> [3, 1, 2, 1].
  TJ_RUN_OK(b, node(OpKind::Unsqueeze, {x, ti({2}, {-1, 1})}));
  EXPECT_EQ(b[0].shape(), (Shape{3, 1, 2, 1}));
  TJ_RUN_OK(c, node(OpKind::Unsqueeze, {x}, 1, {{"axes", attr_ints({2})}}, 11));
  EXPECT_EQ(c[0].shape(), (Shape{3, 2, 1}));
  TJ_RUN_OK(d, node(OpKind::Unsqueeze, {Tensor::scalar<float>(2), ti({1}, {0})}));
  expect_tensor_near(d[0], tf({1}, {2}));
  expect_fails(node(OpKind::Unsqueeze, {x, ti({2}, {1, 1})}), "twice");
  expect_fails(node(OpKind::Unsqueeze, {x, ti({1}, {3})}), "out of range");
}

TEST(TensorShapeTest, DropoutInference) {
  Tensor x = tf({2, 2}, {1, -2, 3, 4});
  TJ_RUN_OK(a, node(OpKind::Dropout, {x}, 2));
  expect_tensor_near(a[0], x);
  expect_tensor_near(a[1], tb({2, 2}, {true, true, true, true}));
  // opset 7: mask has the input dtype (ones).
  TJ_RUN_OK(b, node(OpKind::Dropout, {x}, 2, {{"ratio", attr_float(0.3f)}}, 7));
  expect_tensor_near(b[1], tf({2, 2}, {1, 1, 1, 1}));
  // training with ratio 0 is identity; ratio 0.5 needs random numbers: unsupported.
  TJ_RUN_OK(c, node(OpKind::Dropout, {x, Tensor::scalar<float>(0), Tensor::scalar<bool>(true)}, 2));
  expect_tensor_near(c[0], x);
  expect_tensor_near(c[1], tb({2, 2}, {true, true, true, true}));
  // Training with seed 0: numpy's np.random.seed(0); uniform(0, 1, 3) = [0.5488, 0.7152, 0.6028];
  // ratio 0.6 drops the first; kept values scale by 1 / (1 - 0.6) = 2.5 -> [0, 5, 7.5].
  TJ_RUN_OK(d, node(OpKind::Dropout, {tf({3}, {1, 2, 3}), Tensor::scalar<float>(0.6f), Tensor::scalar<bool>(true)},
                    2, {{"seed", attr_int(0)}}));
  expect_tensor_near(d[0], tf({3}, {0, 5, 7.5f}));
  expect_tensor_near(d[1], tb({3}, {false, true, true}));
  expect_fails(node(OpKind::Dropout, {x, Tensor::scalar<float>(1.0f), Tensor::scalar<bool>(true)}), "[0, 1)");
}

}  // namespace
}  // namespace tierjit::testing
