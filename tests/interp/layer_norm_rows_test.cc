// LayerNormalization's row statistics (kernels/normalization.cc computes 4 rows at a time, with
// an AVX2 path for float32) against a plain per-row reference of the documented order: 4 partial
// sums in double (element i into sum i % 4, the tail into sum 0), combined (s0 + s1) + (s2 + s3),
// two passes, the second accumulating fma(d, d, s) where the target has FMA. Mean and InvStdDev
// must match bit for bit (they are tier 0's reference values); Y within 2 float ulps (its affine
// step is the kernel's own). Row counts that are and are not multiples of the block, lengths
// around the vector width, one thread and two (split over the team from ~25K elements).
#include <cmath>
#include <random>
#include <vector>

#include "reduction_test_util.h"

namespace tierjit::testing {
namespace {

using namespace red;  // NOLINT
using ir::OpKind;

double mul_add(double a, double b, double c) {
#ifdef __FMA__
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}

/// Mean and population variance of one row, in the documented order.
template <class T>
void reference_stats(const T* x, int64_t len, double& mean, double& var) {
  double p[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= len; i += 4)
    for (int u = 0; u < 4; ++u) p[u] += static_cast<double>(x[i + u]);
  for (; i < len; ++i) p[0] += static_cast<double>(x[i]);
  mean = ((p[0] + p[1]) + (p[2] + p[3])) / static_cast<double>(len);
  double q[4] = {0, 0, 0, 0};
  for (i = 0; i + 4 <= len; i += 4)
    for (int u = 0; u < 4; ++u) {
      const double d = static_cast<double>(x[i + u]) - mean;
      q[u] = mul_add(d, d, q[u]);
    }
  for (; i < len; ++i) {
    const double d = static_cast<double>(x[i]) - mean;
    q[0] = mul_add(d, d, q[0]);
  }
  var = ((q[0] + q[1]) + (q[2] + q[3])) / static_cast<double>(len);
}

template <class T>
void check_rows(int64_t rows, int64_t len, int threads) {
  SCOPED_TRACE(::testing::Message() << rows << " rows of " << len << ", " << threads << " threads, "
                                    << (sizeof(T) == 4 ? "float32" : "float64"));
  std::mt19937 rng(static_cast<unsigned>(rows * 1000 + len));
  std::normal_distribution<double> dist(3.0, 2.0);  // an offset mean: the two passes matter
  std::vector<T> xv(static_cast<size_t>(rows * len)), sv(static_cast<size_t>(len)),
      bv(static_cast<size_t>(len));
  for (T& v : xv) v = static_cast<T>(dist(rng));
  for (T& v : sv) v = static_cast<T>(dist(rng));
  for (T& v : bv) v = static_cast<T>(dist(rng));
  const double eps = 1e-5f;  // the attribute is a float
  interp::ExecOptions options;
  options.intra_op_threads = threads;
  Tensor x = Tensor::from_vector<T>({rows, len}, xv), s = Tensor::from_vector<T>({len}, sv),
         b = Tensor::from_vector<T>({1, len}, bv);
  const std::vector<Tensor> outs =
      run_all(spec(OpKind::LayerNormalization, {x, s, b}, {}, 17, 3), options);
  ASSERT_EQ(outs.size(), 3u);
  ASSERT_TRUE(outs[0].defined() && outs[1].defined() && outs[2].defined());
  int bad_stats = 0, bad_y = 0;
  for (int64_t o = 0; o < rows; ++o) {
    double mean, var;
    reference_stats(xv.data() + o * len, len, mean, var);
    const double inv = 1.0 / std::sqrt(var + eps);
    const T* mean_out = outs[1].data<T>();
    const T* inv_out = outs[2].data<T>();
    if (mean_out[o] != static_cast<T>(mean) || inv_out[o] != static_cast<T>(inv)) ++bad_stats;
    const T cm = static_cast<T>(mean), ci = static_cast<T>(inv);
    for (int64_t r = 0; r < len; ++r) {
      const T want = (xv[o * len + r] - cm) * ci * sv[r] + bv[r];
      const T got = outs[0].data<T>()[o * len + r];
      const T tol = 2 * std::numeric_limits<float>::epsilon() * (std::abs(want) + 1);
      if (!(std::abs(got - want) <= tol)) ++bad_y;
    }
  }
  EXPECT_EQ(bad_stats, 0) << "rows whose Mean or InvStdDev differ from the reference order";
  EXPECT_EQ(bad_y, 0) << "elements of Y off by more than 2 ulps";
}

TEST(LayerNormRows, StatisticsMatchThePerRowOrderBitForBit) {
  for (int64_t rows : {1, 3, 4, 5, 9})
    for (int64_t len : {1, 3, 4, 5, 7, 8, 9, 17, 128, 300}) {
      check_rows<float>(rows, len, 1);
      check_rows<double>(rows, len, 1);
    }
}

TEST(LayerNormRows, ParallelRowsMatchToo) {
  // 1,101 x 128 and 61 x 513 elements (> 25K): row blocks split over two and three threads, the
  // last block partial.
  check_rows<float>(1101, 128, 2);
  check_rows<float>(61, 513, 3);
  check_rows<double>(1101, 128, 2);
  check_rows<float>(1101, 128, 1);
}

}  // namespace
}  // namespace tierjit::testing
