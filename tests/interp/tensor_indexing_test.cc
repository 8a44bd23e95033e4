// Tier-0 kernels Gather, GatherElements, GatherND, Scatter, ScatterElements, ScatterND,
// Compress, NonZero, OneHot, ReverseSequence: hand-computed values (mostly the ONNX spec's
// examples), negative and empty indices, strings and the out-of-range errors.
#include <cmath>

#include "tensor_test_util.h"

namespace tierjit::testing {
namespace {

using ir::OpKind;

TEST(TensorGatherTest, Gather) {
  Tensor data = tf({3, 2}, {1, 2, 3, 4, 5, 6});
  // rows 0,1 / 1,2 -> [[[1,2],[3,4]],[[3,4],[5,6]]]
  TJ_RUN_OK(a, node(OpKind::Gather, {data, ti({2, 2}, {0, 1, 1, 2})}));
  expect_tensor_near(a[0], tf({2, 2, 2}, {1, 2, 3, 4, 3, 4, 5, 6}));
  // axis 1, index -1 -> last column.
  TJ_RUN_OK(b, node(OpKind::Gather, {data, ti32({1}, {-1})}, 1, {{"axis", attr_int(1)}}));
  expect_tensor_near(b[0], tf({3, 1}, {2, 4, 6}));
  TJ_RUN_OK(c, node(OpKind::Gather, {data, Tensor::scalar<int64_t>(1)}));
  expect_tensor_near(c[0], tf({2}, {3, 4}));
  TJ_RUN_OK(d, node(OpKind::Gather, {data, ti({0}, {})}));
  EXPECT_EQ(d[0].shape(), (Shape{0, 2}));
  TJ_RUN_OK(e, node(OpKind::Gather, {ts({3}, {"x", "y", "z"}), ti({3}, {2, 0, 2})}));
  expect_tensor_near(e[0], ts({3}, {"z", "x", "z"}));
  expect_fails(node(OpKind::Gather, {data, ti({2}, {0, 3})}), "input 1 'indices': index 3 out of range [-3, 3)");
  expect_fails(node(OpKind::Gather, {data, ti({1}, {-4})}), "index -4");
  expect_fails(node(OpKind::Gather, {data, tf({1}, {0})}), "int32 or int64");
}

TEST(TensorGatherTest, GatherElements) {
  // Spec: [[1,2],[3,4]], indices [[0,0],[1,0]], axis 1 -> [[1,1],[4,3]].
  TJ_RUN_OK(a, node(OpKind::GatherElements, {tf({2, 2}, {1, 2, 3, 4}), ti({2, 2}, {0, 0, 1, 0})}, 1,
                    {{"axis", attr_int(1)}}));
  expect_tensor_near(a[0], tf({2, 2}, {1, 1, 4, 3}));
  // Spec: 3x3 1..9, indices [[1,2,0],[2,0,0]], axis 0 -> [[4,8,3],[7,2,3]].
  Tensor d9 = tf({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  TJ_RUN_OK(b, node(OpKind::GatherElements, {d9, ti({2, 3}, {1, 2, 0, 2, 0, 0})}));
  expect_tensor_near(b[0], tf({2, 3}, {4, 8, 3, 7, 2, 3}));
  // Negative index -1 = row 2 -> data[2][0] = 7; data[0][1] = 2.
  TJ_RUN_OK(c, node(OpKind::GatherElements, {d9, ti({1, 2}, {-1, 0})}));
  expect_tensor_near(c[0], tf({1, 2}, {7, 2}));
  // Indices smaller than data off-axis: [3,1] on axis 1 -> data[i][idx].
  TJ_RUN_OK(d, node(OpKind::GatherElements, {d9, ti({3, 1}, {2, 1, 0})}, 1, {{"axis", attr_int(-1)}}));
  expect_tensor_near(d[0], tf({3, 1}, {3, 5, 7}));
  TJ_RUN_OK(e, node(OpKind::GatherElements, {d9, ti({0, 3}, {})}));
  EXPECT_EQ(e[0].shape(), (Shape{0, 3}));
  expect_fails(node(OpKind::GatherElements, {d9, ti({1, 1}, {3})}), "index 3 out of range [-3, 3)");
  expect_fails(node(OpKind::GatherElements, {d9, ti({1, 4}, {0, 0, 0, 0})}), "exceeds");
}

TEST(TensorGatherTest, GatherND) {
  Tensor d = ti({2, 2}, {0, 1, 2, 3});
  TJ_RUN_OK(a, node(OpKind::GatherND, {d, ti({2, 2}, {0, 0, 1, 1})}));
  expect_tensor_near(a[0], ti({2}, {0, 3}));
  TJ_RUN_OK(b, node(OpKind::GatherND, {d, ti({2, 1}, {1, 0})}));
  expect_tensor_near(b[0], ti({2, 2}, {2, 3, 0, 1}));
  // batch_dims 1: data [[[0,1],[2,3]],[[4,5],[6,7]]], indices [[1],[0]] -> [[2,3],[4,5]].
  TJ_RUN_OK(c, node(OpKind::GatherND, {ti({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}), ti({2, 1}, {1, 0})}, 1,
                    {{"batch_dims", attr_int(1)}}));
  expect_tensor_near(c[0], ti({2, 2}, {2, 3, 4, 5}));
  TJ_RUN_OK(e, node(OpKind::GatherND, {d, ti({1, 2}, {-1, -2})}));
  expect_tensor_near(e[0], ti({1}, {2}));
  expect_fails(node(OpKind::GatherND, {d, ti({1, 2}, {2, 0})}), "index 2 out of range [-2, 2)");
  expect_fails(node(OpKind::GatherND, {d, ti({1, 3}, {0, 0, 0})}), "exceeds");
}

TEST(TensorScatterTest, ScatterElements) {
  // Spec: zeros 3x3, indices [[1,0,2],[0,2,1]], updates [[1.0,1.1,1.2],[2.0,2.1,2.2]], axis 0.
  Tensor ind = ti({2, 3}, {1, 0, 2, 0, 2, 1});
  Tensor upd = tf({2, 3}, {1.0f, 1.1f, 1.2f, 2.0f, 2.1f, 2.2f});
  TJ_RUN_OK(a, node(OpKind::ScatterElements, {tf({3, 3}, {0, 0, 0, 0, 0, 0, 0, 0, 0}), ind, upd}));
  expect_tensor_near(a[0], tf({3, 3}, {2.0f, 1.1f, 0, 1.0f, 0, 2.2f, 0, 2.1f, 1.2f}));
  // axis 1 with a negative index: [[1,2,3,4,5]], indices [[1,-3]] -> positions 1 and 2.
  Tensor row = tf({1, 5}, {1, 2, 3, 4, 5});
  TJ_RUN_OK(b, node(OpKind::ScatterElements, {row, ti({1, 2}, {1, -3}), tf({1, 2}, {1.1f, 2.1f})}, 1,
                    {{"axis", attr_int(1)}}));
  expect_tensor_near(b[0], tf({1, 5}, {1, 1.1f, 2.1f, 4, 5}));
  // Duplicates: add -> 2 + 1.1 + 2.1 = 5.2; mul -> 2 * 1.1 * 2.1 = 4.62.
  TJ_RUN_OK(c, node(OpKind::ScatterElements, {row, ti({1, 2}, {1, 1}), tf({1, 2}, {1.1f, 2.1f})}, 1,
                    {{"axis", attr_int(1)}, {"reduction", attr_string("add")}}));
  expect_tensor_near(c[0], tf({1, 5}, {1, 5.2f, 3, 4, 5}));
  TJ_RUN_OK(d, node(OpKind::ScatterElements, {row, ti({1, 2}, {1, 1}), tf({1, 2}, {1.1f, 2.1f})}, 1,
                    {{"axis", attr_int(1)}, {"reduction", attr_string("mul")}}));
  expect_tensor_near(d[0], tf({1, 5}, {1, 4.62f, 3, 4, 5}));
  // Old name Scatter (opset 9), strings.
  TJ_RUN_OK(e, node(OpKind::Scatter, {ts({3}, {"a", "b", "c"}), ti({1}, {2}), ts({1}, {"z"})}, 1, {}, 9));
  expect_tensor_near(e[0], ts({3}, {"a", "b", "z"}));
  expect_fails(node(OpKind::ScatterElements, {row, ti({1, 1}, {5}), tf({1, 1}, {0})}, 1, {{"axis", attr_int(1)}}),
               "index 5 out of range [-5, 5)");
  expect_fails(node(OpKind::ScatterElements, {row, ti({1, 1}, {0}), tf({1, 2}, {0, 0})}), "differs");
}

TEST(TensorScatterTest, ScatterND) {
  Tensor d = tf({8}, {1, 2, 3, 4, 5, 6, 7, 8});
  // Spec: indices [[4],[3],[1],[7]], updates [9,10,11,12] -> [1,11,3,10,9,6,7,12].
  TJ_RUN_OK(a, node(OpKind::ScatterND, {d, ti({4, 1}, {4, 3, 1, 7}), tf({4}, {9, 10, 11, 12})}));
  expect_tensor_near(a[0], tf({8}, {1, 11, 3, 10, 9, 6, 7, 12}));
  // add: 5 + 5 + 6 = 16; mul: 5 * 5 * 6 = 150.
  TJ_RUN_OK(b, node(OpKind::ScatterND, {d, ti({2, 1}, {4, -4}), tf({2}, {5, 6})}, 1,
                    {{"reduction", attr_string("add")}}));
  expect_tensor_near(b[0], tf({8}, {1, 2, 3, 4, 16, 6, 7, 8}));
  TJ_RUN_OK(c, node(OpKind::ScatterND, {d, ti({2, 1}, {4, 4}), tf({2}, {5, 6})}, 1,
                    {{"reduction", attr_string("mul")}}));
  expect_tensor_near(c[0], tf({8}, {1, 2, 3, 4, 150, 6, 7, 8}));
  // Slices: [[1,2],[3,4]] row 1 <- [7, 8].
  TJ_RUN_OK(e, node(OpKind::ScatterND, {ti({2, 2}, {1, 2, 3, 4}), ti({1, 1}, {1}), ti({1, 2}, {7, 8})}));
  expect_tensor_near(e[0], ti({2, 2}, {1, 2, 7, 8}));
  expect_fails(node(OpKind::ScatterND, {d, ti({1, 1}, {8}), tf({1}, {0})}), "index 8 out of range [-8, 8)");
  expect_fails(node(OpKind::ScatterND, {d, ti({1, 1}, {0}), tf({2}, {0, 0})}), "must be [1]");
  expect_fails(node(OpKind::ScatterND, {d, ti({1, 1}, {0}), tf({1}, {0})}, 1, {{"reduction", attr_string("xor")}}),
               "reduction");
}

TEST(TensorIndexingTest, Compress) {
  Tensor x = tf({3, 2}, {1, 2, 3, 4, 5, 6});
  TJ_RUN_OK(a, node(OpKind::Compress, {x, tb({3}, {false, true, true})}, 1, {{"axis", attr_int(0)}}));
  expect_tensor_near(a[0], tf({2, 2}, {3, 4, 5, 6}));
  TJ_RUN_OK(b, node(OpKind::Compress, {x, tb({2}, {false, true})}, 1, {{"axis", attr_int(-1)}}));
  expect_tensor_near(b[0], tf({3, 1}, {2, 4, 6}));
  TJ_RUN_OK(c, node(OpKind::Compress, {x, tb({5}, {false, true, false, false, true})}));
  expect_tensor_near(c[0], tf({2}, {2, 5}));
  // A shorter condition drops the rest.
  TJ_RUN_OK(d, node(OpKind::Compress, {x, tb({1}, {true})}, 1, {{"axis", attr_int(0)}}));
  expect_tensor_near(d[0], tf({1, 2}, {1, 2}));
  TJ_RUN_OK(e, node(OpKind::Compress, {x, tb({3}, {false, false, false})}, 1, {{"axis", attr_int(0)}}));
  EXPECT_EQ(e[0].shape(), (Shape{0, 2}));
  expect_fails(node(OpKind::Compress, {x, tb({7}, {false, false, false, false, false, false, true})}), "beyond axis size 6");
}

TEST(TensorIndexingTest, NonZero) {
  TJ_RUN_OK(a, node(OpKind::NonZero, {tf({2, 2}, {1, 0, 1, 1})}));
  expect_tensor_near(a[0], ti({2, 3}, {0, 1, 1, 0, 0, 1}));
  TJ_RUN_OK(b, node(OpKind::NonZero, {Tensor::scalar<float>(3)}));
  expect_tensor_near(b[0], ti({1, 1}, {0}));
  TJ_RUN_OK(c, node(OpKind::NonZero, {ti({2}, {0, 0})}));
  EXPECT_EQ(c[0].shape(), (Shape{1, 0}));
  // NaN is non-zero, -0.0 is zero.
  TJ_RUN_OK(d, node(OpKind::NonZero, {tf({3}, {-0.0f, NAN, 0.0f})}));
  expect_tensor_near(d[0], ti({1, 1}, {1}));
}

TEST(TensorIndexingTest, OneHot) {
  // indices [0, 2, -1, 5], depth 3: -1 -> 2; 5 is out of range -> all off.
  Tensor ind = ti({4}, {0, 2, -1, 5});
  TJ_RUN_OK(a, node(OpKind::OneHot, {ind, Tensor::scalar<int64_t>(3), tf({2}, {0, 1})}));
  expect_tensor_near(a[0], tf({4, 3}, {1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0}));
  TJ_RUN_OK(b, node(OpKind::OneHot, {ind, tf({1}, {3}), ti({2}, {2, 5})}, 1, {{"axis", attr_int(0)}}));
  expect_tensor_near(b[0], ti({3, 4}, {5, 2, 2, 2, 2, 2, 2, 2, 2, 5, 5, 2}));
  expect_fails(node(OpKind::OneHot, {ind, Tensor::scalar<int64_t>(0), tf({2}, {0, 1})}), "depth");
  expect_fails(node(OpKind::OneHot, {ind, Tensor::scalar<int64_t>(3), tf({3}, {0, 1, 2})}), "2 elements");
}

TEST(TensorIndexingTest, ReverseSequence) {
  // Spec, batch_axis 0 / time_axis 1, lens [1,2,3,4].
  Tensor x = iota_f({4, 4});
  TJ_RUN_OK(a, node(OpKind::ReverseSequence, {x, ti({4}, {1, 2, 3, 4})}, 1,
                    {{"time_axis", attr_int(1)}, {"batch_axis", attr_int(0)}}));
  expect_tensor_near(a[0], tf({4, 4}, {0, 1, 2, 3, 5, 4, 6, 7, 10, 9, 8, 11, 15, 14, 13, 12}));
  // Spec, time_axis 0, lens [4,3,2,1] on [[0,4,8,12],[1,5,9,13],[2,6,10,14],[3,7,11,15]].
  Tensor y = tf({4, 4}, {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15});
  TJ_RUN_OK(b, node(OpKind::ReverseSequence, {y, ti({4}, {4, 3, 2, 1})}));
  expect_tensor_near(b[0], tf({4, 4}, {3, 6, 9, 12, 2, 5, 8, 13, 1, 4, 10, 14, 0, 7, 11, 15}));
  expect_fails(node(OpKind::ReverseSequence, {y, ti({4}, {5, 1, 1, 1})}), "length 5 out of range");
}

}  // namespace
}  // namespace tierjit::testing
