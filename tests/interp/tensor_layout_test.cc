// Tier-0 kernels Transpose, Concat, Split, DepthToSpace, SpaceToDepth: hand-computed values
// (x = 0, 1, 2, ... in row-major order unless written out), size-0 and size-1 dims, strings,
// views, a large transpose against a naive loop, and the error cases.
#include <numeric>
#include <random>

#include "tensor_test_util.h"

namespace tierjit::testing {
namespace {

using ir::OpKind;

// Naive transpose of a float tensor, as the reference for the tiled/strided kernel.
Tensor naive_transpose(const Tensor& x, const std::vector<int64_t>& perm) {
  Shape os;
  for (int64_t p : perm) os.push_back(x.dim(p));
  Tensor out = Tensor::empty(DType::kFloat32, os);
  std::vector<int64_t> is(x.rank(), 1);
  for (int64_t d = x.rank() - 2; d >= 0; --d) is[d] = is[d + 1] * x.dim(d + 1);
  std::vector<int64_t> idx(os.size(), 0);
  for (int64_t e = 0; e < out.numel(); ++e) {
    int64_t off = 0;
    for (size_t d = 0; d < os.size(); ++d) off += idx[d] * is[perm[d]];
    out.data<float>()[e] = x.data<float>()[off];
    for (int64_t d = static_cast<int64_t>(os.size()) - 1; d >= 0; --d) {
      if (++idx[d] < os[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

TEST(TensorLayoutTest, TransposeSmall) {
  // [[0,1,2],[3,4,5]]^T = [[0,3],[1,4],[2,5]]
  TJ_RUN_OK(a, node(OpKind::Transpose, {iota_f({2, 3})}));
  expect_tensor_near(a[0], tf({3, 2}, {0, 3, 1, 4, 2, 5}));
  // perm [1,0,2] keeps the last dim: out[j][i][k] = 6i + 2j + k.
  TJ_RUN_OK(b, node(OpKind::Transpose, {iota_f({2, 3, 2})}, 1, {{"perm", attr_ints({1, 0, 2})}}));
  expect_tensor_near(b[0], tf({3, 2, 2}, {0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11}));
  // perm [2,0,1]: out[k][i][j] = 6i + 2j + k.
  TJ_RUN_OK(c, node(OpKind::Transpose, {iota_f({2, 3, 2})}, 1, {{"perm", attr_ints({2, 0, 1})}}));
  expect_tensor_near(c[0], tf({2, 2, 3}, {0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11}));
  TJ_RUN_OK(d, node(OpKind::Transpose, {ts({2, 2}, {"a", "b", "c", "d"})}));
  expect_tensor_near(d[0], ts({2, 2}, {"a", "c", "b", "d"}));
  TJ_RUN_OK(e, node(OpKind::Transpose, {iota_f({0, 3})}));
  EXPECT_EQ(e[0].shape(), (Shape{3, 0}));
  // Moving only a size-1 dim is a view.
  Tensor x = iota_f({1, 3});
  TJ_RUN_OK(f, node(OpKind::Transpose, {x}));
  expect_tensor_near(f[0], tf({3, 1}, {0, 1, 2}));
  EXPECT_TRUE(f[0].shares_storage_with(x));
  expect_fails(node(OpKind::Transpose, {x}, 1, {{"perm", attr_ints({0, 0})}}), "not a permutation");
  expect_fails(node(OpKind::Transpose, {x}, 1, {{"perm", attr_ints({0})}}), "entries");
}

TEST(TensorLayoutTest, TransposeLargeMatchesNaive) {
  Tensor x = iota_f({67, 45});
  TJ_RUN_OK(a, node(OpKind::Transpose, {x}));
  expect_tensor_near(a[0], naive_transpose(x, {1, 0}));
  Tensor y = iota_f({3, 5, 7, 11});
  std::vector<int64_t> perm{0, 1, 2, 3};
  do {
    TJ_RUN_OK(b, node(OpKind::Transpose, {y}, 1, {{"perm", attr_ints(perm)}}));
    expect_tensor_near(b[0], naive_transpose(y, perm));
  } while (std::next_permutation(perm.begin(), perm.end()));
  // Threads on a big input give the same result.
  Tensor z = iota_f({4, 130, 70});
  interp::ExecOptions opts;
  opts.intra_op_threads = 2;
  TJ_RUN_OK(c, node(OpKind::Transpose, {z}, 1, {{"perm", attr_ints({2, 0, 1})}}), opts);
  expect_tensor_near(c[0], naive_transpose(z, {2, 0, 1}));
}

TEST(TensorLayoutTest, Concat) {
  Tensor a = tf({2, 1}, {1, 2}), b = tf({2, 2}, {3, 4, 5, 6});
  // axis 1: [[1,3,4],[2,5,6]]
  TJ_RUN_OK(r1, node(OpKind::Concat, {a, b}, 1, {{"axis", attr_int(1)}}));
  expect_tensor_near(r1[0], tf({2, 3}, {1, 3, 4, 2, 5, 6}));
  TJ_RUN_OK(r2, node(OpKind::Concat, {a, iota_f({2, 0}), b}, 1, {{"axis", attr_int(-1)}}));
  expect_tensor_near(r2[0], tf({2, 3}, {1, 3, 4, 2, 5, 6}));
  TJ_RUN_OK(r3, node(OpKind::Concat, {iota_f({0, 2}), b}, 1, {{"axis", attr_int(0)}}));
  expect_tensor_near(r3[0], b);
  TJ_RUN_OK(r4, node(OpKind::Concat, {ts({1}, {"x"}), ts({2}, {"y", "z"})}, 1, {{"axis", attr_int(0)}}));
  expect_tensor_near(r4[0], ts({3}, {"x", "y", "z"}));
  TJ_RUN_OK(r5, node(OpKind::Concat, {iota_f({0, 2}), iota_f({0, 2})}, 1, {{"axis", attr_int(0)}}));
  EXPECT_EQ(r5[0].shape(), (Shape{0, 2}));
  expect_fails(node(OpKind::Concat, {a, tf({3, 1}, {0, 0, 0})}, 1, {{"axis", attr_int(1)}}), "does not match");
  expect_fails(node(OpKind::Concat, {a, ti({2, 1}, {0, 0})}, 1, {{"axis", attr_int(1)}}), "dtype");
  expect_fails(node(OpKind::Concat, {a, b}, 1, {{"axis", attr_int(2)}}), "out of range");
}

TEST(TensorLayoutTest, Split) {
  TJ_RUN_OK(a, node(OpKind::Split, {iota_f({6})}, 3));
  expect_tensor_near(a[0], tf({2}, {0, 1}));
  expect_tensor_near(a[1], tf({2}, {2, 3}));
  expect_tensor_near(a[2], tf({2}, {4, 5}));
  // [[0,1,2,3],[4,5,6,7]] split [1,3] on axis 1.
  TJ_RUN_OK(b, node(OpKind::Split, {iota_f({2, 4}), ti({2}, {1, 3})}, 2, {{"axis", attr_int(-1)}}));
  expect_tensor_near(b[0], tf({2, 1}, {0, 4}));
  expect_tensor_near(b[1], tf({2, 3}, {1, 2, 3, 5, 6, 7}));
  TJ_RUN_OK(c, node(OpKind::Split, {iota_f({6})}, 2, {{"split", attr_ints({2, 4})}}, 11));
  expect_tensor_near(c[1], tf({4}, {2, 3, 4, 5}));
  TJ_RUN_OK(d, node(OpKind::Split, {iota_f({3}), ti({2}, {0, 3})}, 2));
  EXPECT_EQ(d[0].shape(), (Shape{0}));
  expect_tensor_near(d[1], tf({3}, {0, 1, 2}));
  // Axis 0 parts are views.
  Tensor x = iota_f({4, 2});
  TJ_RUN_OK(e, node(OpKind::Split, {x}, 2));
  expect_tensor_near(e[1], tf({2, 2}, {4, 5, 6, 7}));
  EXPECT_TRUE(e[1].shares_storage_with(x));
  TJ_RUN_OK(f, node(OpKind::Split, {ts({2}, {"p", "q"})}, 2));
  expect_tensor_near(f[1], ts({1}, {"q"}));
  expect_fails(node(OpKind::Split, {iota_f({5})}, 2), "evenly");
  expect_fails(node(OpKind::Split, {iota_f({5}), ti({2}, {1, 2})}, 2), "sums to 3");
  expect_fails(node(OpKind::Split, {iota_f({5}), ti({1}, {5})}, 2), "1 sizes for 2 outputs");
}

TEST(TensorLayoutTest, DepthToSpaceAndSpaceToDepth) {
  // x = 0..47 as [1, 8, 2, 3], blocksize 2 (numpy reshape/transpose reference of the spec).
  Tensor x = iota_f({1, 8, 2, 3});
  TJ_RUN_OK(a, node(OpKind::DepthToSpace, {x}, 1, {{"blocksize", attr_int(2)}}));
  expect_tensor_near(a[0], tf({1, 2, 4, 6}, {0,  12, 1,  13, 2,  14, 24, 36, 25, 37, 26, 38, 3,  15, 4,  16,
                                             5,  17, 27, 39, 28, 40, 29, 41, 6,  18, 7,  19, 8,  20, 30, 42,
                                             31, 43, 32, 44, 9,  21, 10, 22, 11, 23, 33, 45, 34, 46, 35, 47}));
  TJ_RUN_OK(b, node(OpKind::DepthToSpace, {x}, 1, {{"blocksize", attr_int(2)}, {"mode", attr_string("CRD")}}));
  expect_tensor_near(b[0], tf({1, 2, 4, 6}, {0,  6,  1,  7,  2,  8,  12, 18, 13, 19, 14, 20, 3,  9,  4,  10,
                                             5,  11, 15, 21, 16, 22, 17, 23, 24, 30, 25, 31, 26, 32, 36, 42,
                                             37, 43, 38, 44, 27, 33, 28, 34, 29, 35, 39, 45, 40, 46, 41, 47}));
  // y = 0..15 as [1, 1, 4, 4] -> [1, 4, 2, 2].
  TJ_RUN_OK(c, node(OpKind::SpaceToDepth, {iota_f({1, 1, 4, 4})}, 1, {{"blocksize", attr_int(2)}}));
  expect_tensor_near(c[0], tf({1, 4, 2, 2}, {0, 2, 8, 10, 1, 3, 9, 11, 4, 6, 12, 14, 5, 7, 13, 15}));
  // Round trip DCR.
  TJ_RUN_OK(d, node(OpKind::DepthToSpace, {c[0]}, 1, {{"blocksize", attr_int(2)}}));
  expect_tensor_near(d[0], iota_f({1, 1, 4, 4}));
  expect_fails(node(OpKind::DepthToSpace, {iota_f({1, 6, 2, 2})}, 1, {{"blocksize", attr_int(2)}}), "multiple");
  expect_fails(node(OpKind::SpaceToDepth, {iota_f({1, 1, 3, 4})}, 1, {{"blocksize", attr_int(2)}}), "multiples");
  expect_fails(node(OpKind::SpaceToDepth, {iota_f({1, 4})}, 1, {{"blocksize", attr_int(2)}}), "4-D");
}

}  // namespace
}  // namespace tierjit::testing
