// Tier-0 float32 Softmax over contiguous rows (the vectorized path: vec_math max, SLEEF exp, sum in
// double) against the float64 kernel (the scalar path, exact to float precision): row lengths 1,
// 7, 8, 9, 17, 1000 (tails of the 8-lane loops), large magnitudes, NaN anywhere in a row (that row
// all NaN, others unaffected), rows of -inf (NaN, as the scalar path), +inf, and the parallel path
// (many rows, 2 threads).
#include <cmath>
#include <limits>
#include <random>

#include "reduction_test_util.h"

namespace tierjit::testing {
namespace {

using namespace red;  // NOLINT
using ir::OpKind;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

Tensor softmax_last(const Tensor& x, int threads = 1) {
  interp::ExecOptions o;
  o.intra_op_threads = threads;
  auto out = run_node(spec(OpKind::Softmax, {x}, {}, 13), o);
  EXPECT_TRUE(out.ok()) << out.status().message();
  return out.ok() ? (*out)[0] : Tensor();
}

// The same values as float64, run through the double kernel, rounded back to float32.
Tensor reference(const std::vector<float>& v, const Shape& s) {
  std::vector<double> d(v.begin(), v.end());
  Tensor y = softmax_last(Tensor::from_vector<double>(s, d));
  std::vector<float> f(static_cast<size_t>(y.numel()));
  for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(y.data<double>()[i]);
  return Tensor::from_vector<float>(s, f);
}

// SLEEF exp is within 1 ulp and the row scale rounds once more: a few float ulps relative.
constexpr double kRtol = 1e-6, kAtol = 1e-12;

TEST(SoftmaxRows, LengthsAndMagnitudes) {
  std::mt19937 rng(7);
  for (int64_t len : {1, 7, 8, 9, 17, 1000}) {
    for (float scale : {1.f, 30.f, 1e4f}) {
      std::uniform_real_distribution<float> u(-scale, scale);
      std::vector<float> v(static_cast<size_t>(3 * len));
      for (float& x : v) x = u(rng);
      SCOPED_TRACE(::testing::Message() << "len " << len << " scale " << scale);
      expect_tensor_near(softmax_last(Tensor::from_vector<float>({3, len}, v)),
                         reference(v, {3, len}), kRtol, kAtol);
    }
  }
}

TEST(SoftmaxRows, NanAndInfinities) {
  for (int64_t len : {1, 9, 17}) {
    for (int64_t pos : {int64_t{0}, len / 2, len - 1}) {
      std::vector<float> v(static_cast<size_t>(2 * len), 0.5f);
      v[static_cast<size_t>(pos)] = kNaN;  // row 0 only
      Tensor y = softmax_last(Tensor::from_vector<float>({2, len}, v));
      for (int64_t i = 0; i < len; ++i)
        EXPECT_TRUE(std::isnan(y.data<float>()[i])) << len << " " << pos;
      for (int64_t i = len; i < 2 * len; ++i) EXPECT_FLOAT_EQ(y.data<float>()[i], 1.f / len);
    }
  }
  // A row of -inf: x - max = NaN everywhere; a row with one +inf: NaN too (inf - inf); a row
  // with one -inf among finite values: that element is 0.
  std::vector<float> v = {-kInf, -kInf, -kInf, 1, kInf, 2, 0, -kInf, 0};
  Tensor x = Tensor::from_vector<float>({3, 3}, v);
  expect_tensor_near(softmax_last(x), reference(v, {3, 3}), kRtol, kAtol);
  EXPECT_EQ(softmax_last(x).data<float>()[7], 0.f);
}

TEST(SoftmaxRows, ParallelRowsMatchOneThread) {
  std::mt19937 rng(3);
  std::normal_distribution<float> g(0.f, 4.f);
  std::vector<float> v(static_cast<size_t>(1100 * 129));  // above kParallelWork
  for (float& x : v) x = g(rng);
  Tensor x = Tensor::from_vector<float>({1100, 129}, v);
  Tensor one = softmax_last(x, 1), two = softmax_last(x, 2);
  expect_tensor_near(two, one, 0, 0);  // rows are independent: bitwise equal
  expect_tensor_near(one, reference(v, {1100, 129}), kRtol, kAtol);
}

}  // namespace
}  // namespace tierjit::testing
