// Tier-0 kernels Slice, Pad, Tile, Expand: hand-computed values (x = 0, 1, 2, ... row-major
// unless written out), negative steps, clamping, empty results, broadcasting on every axis,
// strings, views and the error cases.
#include <limits>

#include "tensor_test_util.h"

namespace tierjit::testing {
namespace {

using ir::OpKind;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

// Slice of x = [[0,1,2,3],[4,5,6,7],[8,9,10,11]] (opset 13 inputs).
Expected<std::vector<Tensor>> slice(std::vector<int64_t> starts, std::vector<int64_t> ends,
                                    std::vector<int64_t> axes = {}, std::vector<int64_t> steps = {}) {
  const int64_t k = static_cast<int64_t>(starts.size());
  std::vector<Tensor> ins{iota_f({3, 4}), ti({k}, starts), ti({k}, ends)};
  ins.push_back(axes.empty() ? Tensor() : ti({k}, axes));
  ins.push_back(steps.empty() ? Tensor() : ti({k}, steps));
  return run_node(node(OpKind::Slice, ins));
}

TEST(TensorSliceTest, Basic) {
  TJ_RUN_OK(a, node(OpKind::Slice, {iota_f({3, 4}), ti({2}, {0, 1}), ti({2}, {2, 3})}));
  expect_tensor_near(a[0], tf({2, 2}, {1, 2, 5, 6}));
  // Reverse each row: start -1, end INT64_MIN, step -1 on axis 1.
  auto b = slice({-1}, {kMin}, {1}, {-1});
  ASSERT_TRUE(b.ok()) << b.status().message();
  expect_tensor_near((*b)[0], tf({3, 4}, {3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8}));
  // Rows 1.. (end 1000 clamps to 3): contiguous, so a view.
  auto c = slice({1}, {1000}, {0});
  ASSERT_TRUE(c.ok());
  expect_tensor_near((*c)[0], tf({2, 4}, {4, 5, 6, 7, 8, 9, 10, 11}));
  // Columns 1, 3 with end INT64_MAX and step 2.
  auto d = slice({1}, {kMax}, {-1}, {2});
  ASSERT_TRUE(d.ok());
  expect_tensor_near((*d)[0], tf({3, 2}, {1, 3, 5, 7, 9, 11}));
  // Start 100 clamps to 2, end -100 clamps to -1 ("before 0"), step -2 -> rows 2, 0.
  auto e = slice({100}, {-100}, {0}, {-2});
  ASSERT_TRUE(e.ok());
  expect_tensor_near((*e)[0], tf({2, 4}, {8, 9, 10, 11, 0, 1, 2, 3}));
  // Empty results.
  auto f = slice({2}, {1}, {0});
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)[0].shape(), (Shape{0, 4}));
  auto g = slice({10}, {20}, {1});
  ASSERT_TRUE(g.ok());
  EXPECT_EQ((*g)[0].shape(), (Shape{3, 0}));
  // Extreme steps (no overflow): INT64_MAX takes only the start; INT64_MIN likewise backwards.
  auto h = slice({1}, {kMax}, {1}, {kMax});
  ASSERT_TRUE(h.ok());
  expect_tensor_near((*h)[0], tf({3, 1}, {1, 5, 9}));
  auto i = slice({-1}, {kMin}, {1}, {kMin});
  ASSERT_TRUE(i.ok());
  expect_tensor_near((*i)[0], tf({3, 1}, {3, 7, 11}));
}

TEST(TensorSliceTest, ViewsOldOpsetAndStrings) {
  Tensor x = iota_f({3, 4});
  TJ_RUN_OK(a, node(OpKind::Slice, {x, ti({1}, {1}), ti({1}, {2})}));
  expect_tensor_near(a[0], tf({1, 4}, {4, 5, 6, 7}));
  EXPECT_TRUE(a[0].shares_storage_with(x));
  // Row 2, columns 1..3 is contiguous too: [9, 10].
  TJ_RUN_OK(b, node(OpKind::Slice, {x, ti({2}, {2, 1}), ti({2}, {3, 3})}));
  expect_tensor_near(b[0], tf({1, 2}, {9, 10}));
  EXPECT_TRUE(b[0].shares_storage_with(x));
  // opset 1 attributes.
  TJ_RUN_OK(c, node(OpKind::Slice, {x}, 1,
                    {{"starts", attr_ints({1})}, {"ends", attr_ints({3})}, {"axes", attr_ints({1})}}, 1));
  expect_tensor_near(c[0], tf({3, 2}, {1, 2, 5, 6, 9, 10}));
  TJ_RUN_OK(d, node(OpKind::Slice, {ts({3}, {"a", "b", "c"}), ti({1}, {-1}), ti({1}, {kMin}),
                                     ti({1}, {0}), ti({1}, {-1})}));
  expect_tensor_near(d[0], ts({3}, {"c", "b", "a"}));
}

TEST(TensorSliceTest, Errors) {
  auto a = slice({0}, {1}, {0}, {0});
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("'steps'"), std::string::npos);
  auto b = slice({0}, {1}, {2});
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("out of range"), std::string::npos);
  auto c = slice({0, 0}, {1, 1}, {1, -1});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("twice"), std::string::npos);
  expect_fails(node(OpKind::Slice, {iota_f({3}), ti({1}, {0}), ti({2}, {1, 2})}), "'ends' has 2");
}

TEST(TensorPadTest, Constant) {
  // [[1,2],[3,4]] pads [1,0,0,1] -> one row on top, one column on the right.
  Tensor x = tf({2, 2}, {1, 2, 3, 4});
  TJ_RUN_OK(a, node(OpKind::Pad, {x, ti({4}, {1, 0, 0, 1})}));
  expect_tensor_near(a[0], tf({3, 3}, {0, 0, 0, 1, 2, 0, 3, 4, 0}));
  TJ_RUN_OK(b, node(OpKind::Pad, {x, ti({4}, {0, 1, 0, 0}), Tensor::scalar<float>(9)}));
  expect_tensor_near(b[0], tf({2, 3}, {9, 1, 2, 9, 3, 4}));
  // Negative pad crops: [1,2,3,4] pads [-1, 1] -> [2,3,4,0].
  TJ_RUN_OK(c, node(OpKind::Pad, {tf({4}, {1, 2, 3, 4}), ti({2}, {-1, 1})}));
  expect_tensor_near(c[0], tf({4}, {2, 3, 4, 0}));
  // opset 2 attributes: pads [1, 1], value 5.
  TJ_RUN_OK(d, node(OpKind::Pad, {tf({2}, {1, 2})}, 1, {{"pads", attr_ints({1, 1})}, {"value", attr_float(5)}}, 2));
  expect_tensor_near(d[0], tf({4}, {5, 1, 2, 5}));
  // int64 and an empty input.
  TJ_RUN_OK(e, node(OpKind::Pad, {ti({0}, {}), ti({2}, {1, 2}), Tensor::scalar<int64_t>(7)}));
  expect_tensor_near(e[0], ti({3}, {7, 7, 7}));
  expect_fails(node(OpKind::Pad, {tf({2}, {1, 2}), ti({2}, {-3, 0})}), "below 0");
  expect_fails(node(OpKind::Pad, {tf({2}, {1, 2}), ti({2}, {kMax, kMax})}), "overflow");
  expect_fails(node(OpKind::Pad, {x, ti({2}, {1, 1})}), "expected 4");
}

TEST(TensorPadTest, ReflectAndEdge) {
  // reflect [1,2,3] by 2 on both sides: 3 2 | 1 2 3 | 2 1
  TJ_RUN_OK(a, node(OpKind::Pad, {tf({3}, {1, 2, 3}), ti({2}, {2, 2})}, 1, {{"mode", attr_string("reflect")}}));
  expect_tensor_near(a[0], tf({7}, {3, 2, 1, 2, 3, 2, 1}));
  // edge [1,2,3] by 2 in front, 1 behind: 1 1 | 1 2 3 | 3
  TJ_RUN_OK(b, node(OpKind::Pad, {tf({3}, {1, 2, 3}), ti({2}, {2, 1})}, 1, {{"mode", attr_string("edge")}}));
  expect_tensor_near(b[0], tf({6}, {1, 1, 1, 2, 3, 3}));
  // 2-D reflect by 1 everywhere of [[1,2,3],[4,5,6]]: rows (1,0,1,0), columns (1,0,1,2,1).
  TJ_RUN_OK(c, node(OpKind::Pad, {tf({2, 3}, {1, 2, 3, 4, 5, 6}), ti({4}, {1, 1, 1, 1})}, 1,
                    {{"mode", attr_string("reflect")}}));
  expect_tensor_near(c[0], tf({4, 5}, {5, 4, 5, 6, 5, 2, 1, 2, 3, 2, 5, 4, 5, 6, 5, 2, 1, 2, 3, 2}));
  expect_fails(node(OpKind::Pad, {tf({0}, {}), ti({2}, {1, 0})}, 1, {{"mode", attr_string("edge")}}), "size 0");
  auto w = run_node(node(OpKind::Pad, {tf({1}, {1}), ti({2}, {1, 0})}, 1, {{"mode", attr_string("wrap")}}));
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kUnsupported);
}

TEST(TensorTileTest, Values) {
  Tensor x = tf({2, 2}, {1, 2, 3, 4});
  TJ_RUN_OK(a, node(OpKind::Tile, {x, ti({2}, {1, 2})}));
  expect_tensor_near(a[0], tf({2, 4}, {1, 2, 1, 2, 3, 4, 3, 4}));
  TJ_RUN_OK(b, node(OpKind::Tile, {x, ti({2}, {2, 1})}));
  expect_tensor_near(b[0], tf({4, 2}, {1, 2, 3, 4, 1, 2, 3, 4}));
  TJ_RUN_OK(c, node(OpKind::Tile, {x, ti({2}, {0, 3})}));
  EXPECT_EQ(c[0].shape(), (Shape{0, 6}));
  TJ_RUN_OK(d, node(OpKind::Tile, {ts({1}, {"ab"}), ti({1}, {3})}));
  expect_tensor_near(d[0], ts({3}, {"ab", "ab", "ab"}));
  expect_fails(node(OpKind::Tile, {x, ti({1}, {2})}), "1 values for input rank 2");
  expect_fails(node(OpKind::Tile, {x, ti({2}, {1, -1})}), "negative");
  expect_fails(node(OpKind::Tile, {x, ti({2}, {kMax, 1})}), "overflows");
}

TEST(TensorExpandTest, EveryAxis) {
  // [3,1] -> [2,3,4]: new leading axis and the last axis broadcast.
  TJ_RUN_OK(a, node(OpKind::Expand, {tf({3, 1}, {1, 2, 3}), ti({3}, {2, 1, 4})}));
  expect_tensor_near(a[0], tf({2, 3, 4}, {1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}));
  // Middle axis: [2,1,2] -> [2,3,2].
  TJ_RUN_OK(b, node(OpKind::Expand, {tf({2, 1, 2}, {1, 2, 3, 4}), ti({3}, {2, 3, 2})}));
  expect_tensor_near(b[0], tf({2, 3, 2}, {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4}));
  // First axis: [1,3] -> [2,3].
  TJ_RUN_OK(c, node(OpKind::Expand, {tf({1, 3}, {1, 2, 3}), ti({2}, {2, 1})}));
  expect_tensor_near(c[0], tf({2, 3}, {1, 2, 3, 1, 2, 3}));
  // Scalar -> [2, 2]; shape smaller than input keeps the input (a view).
  TJ_RUN_OK(d, node(OpKind::Expand, {Tensor::scalar<float>(7), ti({2}, {2, 2})}));
  expect_tensor_near(d[0], tf({2, 2}, {7, 7, 7, 7}));
  Tensor x = tf({3, 2}, {1, 2, 3, 4, 5, 6});
  TJ_RUN_OK(e, node(OpKind::Expand, {x, ti({1}, {1})}));
  expect_tensor_near(e[0], x);
  EXPECT_TRUE(e[0].shares_storage_with(x));
  TJ_RUN_OK(f, node(OpKind::Expand, {tf({1, 2}, {1, 2}), ti({2}, {0, 2})}));
  EXPECT_EQ(f[0].shape(), (Shape{0, 2}));
  TJ_RUN_OK(g, node(OpKind::Expand, {ts({2, 1}, {"a", "b"}), ti({2}, {2, 2})}));
  expect_tensor_near(g[0], ts({2, 2}, {"a", "a", "b", "b"}));
  expect_fails(node(OpKind::Expand, {tf({3}, {1, 2, 3}), ti({1}, {2})}), "cannot expand");
  expect_fails(node(OpKind::Expand, {tf({3}, {1, 2, 3}), ti({1}, {-1})}), "negative");
}

}  // namespace
}  // namespace tierjit::testing
