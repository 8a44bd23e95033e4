// Tests of the Einsum kernel: matmul, transpose, trace (diagonal), sums, ellipsis broadcasting,
// implicit output, size-0 dims and malformed equations. Values computed by hand.
#include <gtest/gtest.h>

#include "node_runner.h"

namespace tierjit {
namespace {

using testing::attr_string;
using testing::expect_tensor_near;
using testing::NodeSpec;
using testing::run_node;

Tensor f(Shape s, std::vector<float> v) {
  return Tensor::from_vector<float>(s, v);
}

Expected<std::vector<Tensor>> einsum(const std::string& eq, std::vector<Tensor> ins) {
  return run_node(
      NodeSpec{ir::OpKind::Einsum, std::move(ins), 1, {{"equation", attr_string(eq)}}, 12});
}

TEST(EinsumTest, MatMul) {
  // [[1,2,3],[4,5,6]] x [[1,0],[0,1],[1,1]] = [[1+3, 2+3], [4+6, 5+6]]
  auto r = einsum("ij,jk->ik", {f({2, 3}, {1, 2, 3, 4, 5, 6}), f({3, 2}, {1, 0, 0, 1, 1, 1})});
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_tensor_near((*r)[0], f({2, 2}, {4, 5, 10, 11}));
}

TEST(EinsumTest, ImplicitOutputIsSortedLabels) {
  // "ba" implicit output "ab" = transpose.
  auto r = einsum("ba", {f({2, 3}, {1, 2, 3, 4, 5, 6})});
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_tensor_near((*r)[0], f({3, 2}, {1, 4, 2, 5, 3, 6}));
}

TEST(EinsumTest, TraceAndDiagonal) {
  auto tr = einsum("ii->", {f({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9})});  // 1 + 5 + 9
  ASSERT_TRUE(tr.ok()) << tr.status().message();
  expect_tensor_near((*tr)[0], f({}, {15}));
  auto dg = einsum("ii->i", {f({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9})});
  ASSERT_TRUE(dg.ok()) << dg.status().message();
  expect_tensor_near((*dg)[0], f({3}, {1, 5, 9}));
}

TEST(EinsumTest, SumsAndIntegers) {
  auto all = einsum("ij->", {Tensor::from_vector<int64_t>({2, 2}, {1, 2, 3, 4})});
  ASSERT_TRUE(all.ok()) << all.status().message();
  expect_tensor_near((*all)[0], Tensor::from_vector<int64_t>({}, {10}));
  auto rows = einsum("ij->i", {f({2, 3}, {1, 2, 3, 4, 5, 6})});
  ASSERT_TRUE(rows.ok());
  expect_tensor_near((*rows)[0], f({2}, {6, 15}));
}

TEST(EinsumTest, EllipsisBatchMatMulWithBroadcast) {
  // a [2, 1, 2]: two 1x2 rows; b [2, 1] shared (ellipsis of rank 0 broadcasts).
  auto r = einsum("...ij,jk->...ik", {f({2, 1, 2}, {1, 2, 3, 4}), f({2, 1}, {10, 1})});
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_tensor_near((*r)[0], f({2, 1, 1}, {12, 34}));  // 1*10+2*1, 3*10+4*1
}

TEST(EinsumTest, OuterProductAndEmpty) {
  auto outer = einsum("i,j->ij", {f({2}, {1, 2}), f({3}, {1, 10, 100})});
  ASSERT_TRUE(outer.ok());
  expect_tensor_near((*outer)[0], f({2, 3}, {1, 10, 100, 2, 20, 200}));
  // Contraction over a size-0 label gives zeros.
  auto empty = einsum("ij,jk->ik", {Tensor::empty(DType::kFloat32, {2, 0}),
                                    Tensor::empty(DType::kFloat32, {0, 2})});
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  expect_tensor_near((*empty)[0], f({2, 2}, {0, 0, 0, 0}));
}

TEST(EinsumTest, TwoInputGemmPathMatchesGenericPath) {
  // "bij,bjk->bik" runs as a batched GEMM; the same product with a third all-ones operand
  // "bij,bjk,k->bik" runs the generic odometer. Odd sizes, a diagonal ("ii,ij->ij") and a
  // summed-away label of one input ("ij,k->i") too.
  std::vector<float> a(3 * 5 * 7), b(3 * 7 * 4);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 37) % 11) - 5;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>((i * 13) % 7) - 3;
  auto gemm = einsum("bij,bjk->bik", {f({3, 5, 7}, a), f({3, 7, 4}, b)});
  auto gen = einsum("bij,bjk,k->bik", {f({3, 5, 7}, a), f({3, 7, 4}, b), f({4}, {1, 1, 1, 1})});
  ASSERT_TRUE(gemm.ok() && gen.ok());
  expect_tensor_near((*gemm)[0], (*gen)[0], 0, 0);
  // diag(A)[i] * B[i][j]: A = [[1,2],[3,4]] -> diag 1, 4.
  auto dg = einsum("ii,ij->ij", {f({2, 2}, {1, 2, 3, 4}), f({2, 3}, {1, 2, 3, 4, 5, 6})});
  ASSERT_TRUE(dg.ok()) << dg.status().message();
  expect_tensor_near((*dg)[0], f({2, 3}, {1, 2, 3, 16, 20, 24}));
  // sum_j A[i][j] * sum_k c[k]: rows 3 and 7 times 10.
  auto sm = einsum("ij,k->i", {f({2, 2}, {1, 2, 3, 4}), f({2}, {4, 6})});
  ASSERT_TRUE(sm.ok()) << sm.status().message();
  expect_tensor_near((*sm)[0], f({2}, {30, 70}));
}

TEST(EinsumTest, BadEquationsAreErrors) {
  auto count = einsum("ij,jk->ik", {f({2, 2}, {1, 2, 3, 4})});
  ASSERT_FALSE(count.ok());
  EXPECT_NE(count.status().message().find("2 input terms"), std::string::npos)
      << count.status().message();
  auto chr = einsum("i1->i", {f({2, 2}, {1, 2, 3, 4})});
  ASSERT_FALSE(chr.ok());
  EXPECT_NE(chr.status().message().find("invalid character"), std::string::npos);
  auto rank = einsum("ijk->i", {f({2, 2}, {1, 2, 3, 4})});
  ASSERT_FALSE(rank.ok());
  auto size = einsum("ij,jk->ik", {f({2, 2}, {1, 2, 3, 4}), f({3, 2}, {1, 2, 3, 4, 5, 6})});
  ASSERT_FALSE(size.ok());
  EXPECT_NE(size.status().message().find("mismatch"), std::string::npos);
  auto out_label = einsum("ij->k", {f({2, 2}, {1, 2, 3, 4})});
  ASSERT_FALSE(out_label.ok());
}

}  // namespace
}  // namespace tierjit
