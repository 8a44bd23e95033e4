// strided_copy_plain (interp/kernels/strided_copy.cc), the copy behind Transpose, Slice, Expand,
// Tile and DepthToSpace, against a naive element-by-element copy, byte for byte (it is a copy;
// random bytes, so NaN payloads too): ranks 1-6, every permutation up to rank 4, odd sizes and
// sizes past the 8x8 tiles, size-0 and size-1 dims, element sizes 1/2/4/8, one and two threads
// (boxes from the 2^15-element parallel threshold), ranks up to 18, arbitrary strides (negative,
// zero, gaps, permuted destinations); and through the Transpose node for float, double, int8 and
// strings.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "interp/kernels/tensor_internal.h"
#include "tensor_test_util.h"

namespace tierjit::testing {
namespace {

using ir::OpKind;

std::vector<int64_t> row_major(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// The reference: every element of the box, one by one (byte offsets elem * stride).
void naive_copy(uint8_t* dst, const std::vector<int64_t>& ds, const uint8_t* src,
                const std::vector<int64_t>& ss, const Shape& shape, size_t elem) {
  const int64_t n = numel(shape);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    int64_t doff = 0, soff = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      doff += idx[d] * ds[d];
      soff += idx[d] * ss[d];
    }
    std::memcpy(dst + doff * static_cast<int64_t>(elem), src + soff * static_cast<int64_t>(elem), elem);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// Copies `in_shape` permuted by perm (out dim i = in dim perm[i]) with both implementations
// and compares the bytes; the destination buffer starts as different garbage in each.
void check_transpose(const Shape& in_shape, const std::vector<int64_t>& perm, size_t elem,
                     int threads) {
  const int64_t n = numel(in_shape);
  const std::vector<uint8_t> src = random_bytes(static_cast<size_t>(n) * elem + 1, 7);
  const std::vector<int64_t> in_strides = row_major(in_shape);
  Shape out_shape;
  std::vector<int64_t> ss;
  for (int64_t p : perm) {
    out_shape.push_back(in_shape[static_cast<size_t>(p)]);
    ss.push_back(in_strides[static_cast<size_t>(p)]);
  }
  const std::vector<int64_t> ds = row_major(out_shape);
  std::vector<uint8_t> want = random_bytes(static_cast<size_t>(n) * elem + 1, 1);
  std::vector<uint8_t> got = random_bytes(static_cast<size_t>(n) * elem + 1, 2);
  want.back() = got.back() = 0xAB;  // canary past the end
  naive_copy(want.data(), ds, src.data(), ss, out_shape, elem);
  interp::strided_copy_plain(got.data(), ds.data(), src.data(), ss.data(), out_shape.data(),
                             out_shape.size(), elem, threads);
  ASSERT_EQ(got.back(), 0xAB) << "wrote past the end";
  ASSERT_TRUE(std::memcmp(got.data(), want.data(), static_cast<size_t>(n) * elem) == 0)
      << "shape " << shape_to_string(in_shape) << " perm " << shape_to_string(perm) << " elem "
      << elem << " threads " << threads;
}

const size_t kElems[] = {1, 2, 4, 8};

TEST(TransposeFastTest, EveryPermutationUpToRank4) {
  const std::vector<Shape> shapes = {
      {0}, {1}, {7}, {33},
      {1, 1}, {1, 9}, {9, 1}, {3, 5}, {8, 8}, {9, 17}, {16, 33}, {64, 7}, {0, 5}, {40, 8},
      {3, 9, 17}, {8, 16, 8}, {1, 9, 10}, {5, 1, 19}, {2, 0, 3}, {16, 2, 24}, {17, 33, 1},
      {4, 9, 2, 17}, {2, 8, 3, 16}, {1, 3, 1, 9}, {3, 17, 1, 10}, {4, 64, 2, 64}, {2, 3, 0, 4},
      {9, 1, 1, 11}, {2, 16, 2, 8}};
  for (const Shape& shape : shapes) {
    std::vector<int64_t> perm(shape.size());
    std::iota(perm.begin(), perm.end(), 0);
    do {
      for (size_t elem : kElems) check_transpose(shape, perm, elem, 1);
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
}

TEST(TransposeFastTest, RandomPermutationsRank5And6) {
  const std::vector<Shape> shapes = {{2, 3, 9, 1, 8}, {3, 1, 4, 10, 5}, {2, 8, 2, 3, 9},
                                     {2, 3, 2, 1, 9, 8}, {1, 2, 9, 3, 2, 10}, {2, 2, 2, 2, 2, 2}};
  std::mt19937 rng(5);
  for (const Shape& shape : shapes) {
    std::vector<int64_t> perm(shape.size());
    std::iota(perm.begin(), perm.end(), 0);
    for (int k = 0; k < 12; ++k) {
      std::shuffle(perm.begin(), perm.end(), rng);
      for (size_t elem : kElems) check_transpose(shape, perm, elem, 1);
    }
  }
}

TEST(TransposeFastTest, LargeBoxesOnTwoThreads) {
  // From 2^15 elements the copy is split over the team (runs, tiles with ragged edges, bands).
  for (int threads : {1, 2}) {
    for (size_t elem : kElems) {
      check_transpose({513, 300}, {1, 0}, elem, threads);
      check_transpose({8, 128, 4, 33}, {0, 2, 1, 3}, elem, threads);
      check_transpose({8, 129, 4, 33}, {0, 2, 3, 1}, elem, threads);
      check_transpose({3, 211, 250}, {2, 0, 1}, elem, threads);
    }
    check_transpose({2, 3, 5, 7, 11, 13, 2}, {6, 4, 2, 0, 1, 3, 5}, 4, threads);
  }
}

TEST(TransposeFastTest, HighRanks) {
  // Rank 18 with nothing to merge: the dim tables go to the heap (stack up to rank 16 / 12).
  const Shape shape(18, 2);
  std::vector<int64_t> perm(18);
  std::iota(perm.begin(), perm.end(), 0);
  std::reverse(perm.begin(), perm.end());
  for (size_t elem : kElems) check_transpose(shape, perm, elem, 1);
  std::swap(perm[0], perm[17]);  // identity but for dims 1..16 reversed: the last axis stays
  check_transpose(shape, perm, 4, 2);
  // Through the Transpose node (transpose_into's strides on the heap as well).
  Tensor x = iota_f(Shape(13, 2));
  TJ_RUN_OK(a, node(OpKind::Transpose, {x}));
  const int64_t n = x.numel();
  for (int64_t e = 0; e < n; ++e) {  // reversing all dims of size 2 reverses the index bits
    int64_t src = 0;
    for (int b = 0; b < 13; ++b) src |= ((e >> b) & 1) << (12 - b);
    ASSERT_EQ(a[0].data<float>()[e], x.data<float>()[src]) << e;
  }
}

// Any strides: negative (reversed slices), zero (Expand), gaps (stepped slices) in the source,
// permuted or padded destination layouts.
TEST(TransposeFastTest, ArbitraryStrides) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 400; ++trial) {
    const size_t rank = 1 + rng() % 5;
    Shape shape(rank);
    for (auto& d : shape) d = (rng() % 4 == 0) ? 1 : 1 + static_cast<int64_t>(rng() % 19);
    const size_t elem = kElems[rng() % 4];
    // Source: strides are multiples of a row-major layout of a larger box, permuted, any sign.
    std::vector<int64_t> order(rank);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<int64_t> ss(rank);
    int64_t step = 1 + static_cast<int64_t>(rng() % 2);
    for (size_t i = 0; i < rank; ++i) {
      const size_t d = static_cast<size_t>(order[i]);
      const int kind = static_cast<int>(rng() % 6);
      ss[d] = kind == 0 ? 0 : (kind == 1 ? -step : step);
      step *= shape[d] + static_cast<int64_t>(rng() % 2);
    }
    int64_t lo = 0, hi = 0;
    for (size_t d = 0; d < rank; ++d) (ss[d] < 0 ? lo : hi) += ss[d] * (shape[d] - 1);
    const std::vector<uint8_t> src = random_bytes(static_cast<size_t>(hi - lo + 1) * elem, trial);
    const uint8_t* base = src.data() + (-lo) * static_cast<int64_t>(elem);
    // Destination: row-major of a permutation of the dims, sometimes padded.
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<int64_t> ds(rank);
    int64_t dstep = 1;
    for (size_t i = rank; i-- > 0;) {
      const size_t d = static_cast<size_t>(order[i]);
      ds[d] = dstep;
      dstep *= shape[d] + (rng() % 3 == 0 ? 1 : 0);
    }
    std::vector<uint8_t> want(static_cast<size_t>(dstep) * elem, 0x5A), got = want;
    naive_copy(want.data(), ds, base, ss, shape, elem);
    interp::strided_copy_plain(got.data(), ds.data(), base, ss.data(), shape.data(), rank, elem,
                               1 + trial % 2);
    ASSERT_TRUE(want == got) << "trial " << trial << " shape " << shape_to_string(shape) << " ds "
                             << shape_to_string(ds) << " ss " << shape_to_string(ss) << " elem "
                             << elem;
  }
}

TEST(TransposeFastTest, ScalarBox) {
  const uint64_t v = 0x0123456789ABCDEFull;
  uint64_t out = 0;
  interp::strided_copy_plain(&out, nullptr, &v, nullptr, nullptr, 0, 8, 1);
  EXPECT_EQ(out, v);
  const Shape ones = {1, 1, 1};
  const std::vector<int64_t> s = {5, 7, 9};
  uint16_t h = 0x7E01, g = 0;
  interp::strided_copy_plain(&g, s.data(), &h, s.data(), ones.data(), 3, 2, 2);
  EXPECT_EQ(g, h);
}

// Through the Transpose node (transpose_into): every dtype family moves bits exactly.
TEST(TransposeFastTest, TransposeNodeDtypes) {
  const Shape shape = {3, 10, 2, 9};
  const std::vector<int64_t> perm = {0, 2, 3, 1};
  const int64_t n = numel(shape);
  Tensor f = Tensor::empty(DType::kFloat32, shape), dbl = Tensor::empty(DType::kFloat64, shape),
         i8 = Tensor::empty(DType::kInt8, shape);
  std::vector<std::string> strs(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    f.data<float>()[i] = static_cast<float>(i) * 0.5f;
    dbl.data<double>()[i] = static_cast<double>(i) * 0.25;
    i8.data<int8_t>()[i] = static_cast<int8_t>(i % 200 - 100);
    strs[static_cast<size_t>(i)] = "s" + std::to_string(i);
  }
  Tensor s = ts(shape, strs);
  for (const Tensor& x : {f, dbl, i8, s}) {
    TJ_RUN_OK(a, node(OpKind::Transpose, {x}, 1, {{"perm", attr_ints(perm)}}));
    Shape os;
    for (int64_t p : perm) os.push_back(shape[static_cast<size_t>(p)]);
    ASSERT_EQ(a[0].shape(), os);
    const std::vector<int64_t> is = row_major(shape);
    std::vector<int64_t> idx(4, 0);
    for (int64_t e = 0; e < n; ++e) {  // out[i0,i1,i2,i3] = x[i0,i3,i1,i2]
      const int64_t off = idx[0] * is[0] + idx[1] * is[2] + idx[2] * is[3] + idx[3] * is[1];
      switch (x.dtype()) {
        case DType::kFloat32: ASSERT_EQ(a[0].data<float>()[e], x.data<float>()[off]); break;
        case DType::kFloat64: ASSERT_EQ(a[0].data<double>()[e], x.data<double>()[off]); break;
        case DType::kInt8: ASSERT_EQ(a[0].data<int8_t>()[e], x.data<int8_t>()[off]); break;
        default: ASSERT_EQ(a[0].data<std::string>()[e], x.data<std::string>()[off]); break;
      }
      for (size_t d = 4; d-- > 0;) {
        if (++idx[d] < os[d]) break;
        idx[d] = 0;
      }
    }
  }
}

}  // namespace
}  // namespace tierjit::testing
