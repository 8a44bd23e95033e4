// Tests of the tier-0 vectorized math (src/kernels/vec_math.h): max ulp error of exp, erf
// and tanh over a dense sweep of float32 inputs against the double-precision libm result; special
// values (NaN, +-inf, signed zeros, overflow / underflow); lengths 0, 1, 7, 8, 9, 17 (tails),
// in place; and the Softmax helpers (max with NaN, exp of the shifted row with its sum).
#include "kernels/vec_math.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace tierjit::kernels {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Error of `got` in units of the float spacing at the exact value `ref` (the spacing of the
// binade of |ref|, 2^-149 for subnormals).
double ulp_error(float got, double ref) {
  if (std::isinf(static_cast<float>(ref)))  // rounds past FLT_MAX: the float result is inf
    return got == static_cast<float>(ref) ? 0 : 1e9;
  const double a = std::fabs(ref);
  int e = 0;
  std::frexp(a, &e);  // a in [2^(e-1), 2^e)
  const double ulp = std::ldexp(1.0, std::max(e - 24, -149));
  return std::fabs(static_cast<double>(got) - ref) / ulp;
}

// Max ulp error of f over every `step`-th float bit pattern in [lo, hi] (both signs handled by
// walking the ordered bit patterns), evaluated in blocks of odd length to exercise the tails.
template <class F, class R>
double max_ulp(F f, R ref, float lo, float hi, uint32_t step, float* worst_x) {
  std::vector<float> xs;
  auto ordered = [](float v) {  // monotonic int key of a float
    const int32_t b = std::bit_cast<int32_t>(v);
    return b < 0 ? -(b & 0x7fffffff) : b;
  };
  auto from_key = [](int64_t k) {
    return std::bit_cast<float>(static_cast<int32_t>(k < 0 ? (-k) | 0x80000000 : k));
  };
  for (int64_t k = ordered(lo); k <= ordered(hi); k += step) xs.push_back(from_key(k));
  xs.push_back(hi);
  std::vector<float> ys(xs.size());
  for (size_t b = 0; b < xs.size(); b += 1001) {
    const size_t n = std::min<size_t>(1001, xs.size() - b);
    f(xs.data() + b, ys.data() + b, static_cast<int64_t>(n));
  }
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double e = ulp_error(ys[i], ref(static_cast<double>(xs[i])));
    if (e > worst) {
      worst = e;
      *worst_x = xs[i];
    }
  }
  return worst;
}

// exp and tanh are SLEEF's u10 functions, documented at max 1.0 ulp; measured here (step 97):
// exp 0.97 ulp, tanh 1.00 ulp (at x = -7.45e-8). Bound 1.1 ulp (the double reference itself is
// off by < 1e-8 ulp). erf is the compiled tiers' rational approximation: bounds of docs/codegen.md
// (4 ulp on [-1, 1]; 8 ulp and 4.5e-7 absolute on [-10, 10]).
constexpr double kMaxUlp = 1.1;

TEST(VecMath, ExpUlpSweep) {
  float wx = 0;
  const double e = max_ulp(exp_f32, [](double x) { return std::exp(x); }, -104.f, 89.f, 97, &wx);
  EXPECT_LE(e, kMaxUlp) << "at x = " << wx;
  RecordProperty("max_ulp", std::to_string(e));
}

TEST(VecMath, ErfUlpSweep) {
  float wx = 0;
  auto ref = [](double x) { return std::erf(x); };
  const double e1 = max_ulp(erf_f32, ref, -1.f, 1.f, 97, &wx);
  EXPECT_LE(e1, 4.0) << "on [-1, 1] at x = " << wx;
  const double e10 = max_ulp(erf_f32, ref, -10.f, 10.f, 97, &wx);
  EXPECT_LE(e10, 8.0) << "on [-10, 10] at x = " << wx;
  double abs_err = 0;
  for (float x = -10.f; x <= 10.f; x += 1.0f / 4096) {
    float y;
    erf_f32(&x, &y, 1);
    abs_err = std::max(abs_err, std::fabs(static_cast<double>(y) - std::erf(double{x})));
  }
  EXPECT_LE(abs_err, 4.5e-7);
  RecordProperty("max_ulp_1", std::to_string(e1));
  RecordProperty("max_ulp_10", std::to_string(e10));
  RecordProperty("max_abs", std::to_string(abs_err));
}

TEST(VecMath, TanhUlpSweep) {
  float wx = 0;
  const double e = max_ulp(tanh_f32, [](double x) { return std::tanh(x); }, -20.f, 20.f, 97, &wx);
  EXPECT_LE(e, kMaxUlp) << "at x = " << wx;
  RecordProperty("max_ulp", std::to_string(e));
}

// sigmoid = exp(-|x|) (1 ulp) then a division: bound 2.5 ulp over [-100, 100] (relative to the
// double result; tiny results near -100 are ~1e-44, subnormal, where ulp_error uses 2^-149).
TEST(VecMath, SigmoidUlpSweep) {
  float wx = 0;
  const double e = max_ulp(sigmoid_f32, [](double x) { return 1.0 / (1.0 + std::exp(-x)); },
                           -100.f, 100.f, 97, &wx);
  EXPECT_LE(e, 2.5) << "at x = " << wx;
  RecordProperty("max_ulp", std::to_string(e));
  std::vector<float> x = {kNaN, kInf, -kInf, 0.f, -0.f, 1000.f, -1000.f, 2.f, -2.f};
  std::vector<float> y(x.size());
  sigmoid_f32(x.data(), y.data(), static_cast<int64_t>(x.size()));
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], 1.f);
  EXPECT_EQ(y[2], 0.f);
  EXPECT_EQ(y[3], 0.5f);
  EXPECT_EQ(y[4], 0.5f);
  EXPECT_EQ(y[5], 1.f);
  EXPECT_EQ(y[6], 0.f);
  EXPECT_NEAR(y[7], 0.880797077977882f, 2e-7f);
  EXPECT_NEAR(y[8], 0.119202922022118f, 2e-8f);
}

TEST(VecMath, SpecialValues) {
  std::vector<float> x = {kNaN, kInf, -kInf, 0.f, -0.f, 100.f, -200.f, 1e-30f, -1e-30f};
  std::vector<float> y(x.size());
  exp_f32(x.data(), y.data(), static_cast<int64_t>(x.size()));
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], kInf);
  EXPECT_EQ(y[2], 0.f);
  EXPECT_EQ(y[3], 1.f);
  EXPECT_EQ(y[4], 1.f);
  EXPECT_EQ(y[5], kInf);  // overflow
  EXPECT_EQ(y[6], 0.f);   // underflow
  EXPECT_EQ(y[7], 1.f);
  erf_f32(x.data(), y.data(), static_cast<int64_t>(x.size()));
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], 1.f);
  EXPECT_EQ(y[2], -1.f);
  EXPECT_TRUE(y[3] == 0.f && !std::signbit(y[3]));
  EXPECT_TRUE(y[4] == 0.f && std::signbit(y[4]));
  EXPECT_EQ(y[5], 1.f);
  EXPECT_EQ(y[6], -1.f);
  EXPECT_NEAR(y[7], 1.1283792e-30f, 1e-36f);  // 2/sqrt(pi) x for tiny x
  tanh_f32(x.data(), y.data(), static_cast<int64_t>(x.size()));
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], 1.f);
  EXPECT_EQ(y[2], -1.f);
  EXPECT_TRUE(y[4] == 0.f && std::signbit(y[4]));
  EXPECT_EQ(y[5], 1.f);
  EXPECT_EQ(y[8], -1e-30f);
}

TEST(VecMath, LengthsAndInPlace) {
  for (int64_t n : {0, 1, 7, 8, 9, 17}) {
    std::vector<float> x(static_cast<size_t>(n) + 1, 123.f);  // sentinel past the end
    for (int64_t i = 0; i < n; ++i) x[i] = 0.25f * static_cast<float>(i) - 1.f;
    std::vector<float> y(x.size(), -7.f);
    erf_f32(x.data(), y.data(), n);
    for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(y[i], std::erf(x[i]), 2e-7f) << n << " " << i;
    EXPECT_EQ(y[n], -7.f) << "wrote past the end, n = " << n;
    std::vector<float> z = x;
    tanh_f32(z.data(), z.data(), n);  // in place
    for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(z[i], std::tanh(x[i]), 2e-7f) << n << " " << i;
    EXPECT_EQ(z[n], 123.f);
  }
}

// erf_f32 (16 lanes on AVX-512F CPUs) and the 8-lane erf_f32_avx2 give the same bits: a dense
// sweep of float32 values, specials, every tail length 0..33 (masked tail vs padded buffer),
// nothing written past the end.
TEST(VecMath, ErfWidthsAgreeBitForBit) {
  std::vector<float> x;
  for (uint32_t b = 0; b < 0xffffffffu - 9973u; b += 9973u) x.push_back(std::bit_cast<float>(b));
  for (float v : {kNaN, -kNaN, kInf, -kInf, 0.f, -0.f, 4.f, -4.f, 3.9999998f, 1e-40f, -1e-40f})
    x.push_back(v);
  std::vector<float> a(x.size()), b(x.size());
  erf_f32(x.data(), a.data(), static_cast<int64_t>(x.size()));
  erf_f32_avx2(x.data(), b.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(a[i]), std::bit_cast<uint32_t>(b[i])) << "x = " << x[i];
  for (int64_t n = 0; n <= 33; ++n) {
    std::vector<float> ya(static_cast<size_t>(n) + 1, -7.f), yb(ya);
    erf_f32(x.data() + 1000, ya.data(), n);
    erf_f32_avx2(x.data() + 1000, yb.data(), n);
    EXPECT_EQ(std::memcmp(ya.data(), yb.data(), ya.size() * sizeof(float)), 0) << "n = " << n;
    EXPECT_EQ(ya[static_cast<size_t>(n)], -7.f) << "wrote past the end, n = " << n;
  }
}

TEST(VecMath, MaxAndShiftedExpSum) {
  for (int64_t n : {1, 7, 8, 9, 17, 100}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[i] = std::sin(static_cast<float>(i)) * 3.f;
    float ref_max = x[0];
    for (float v : x) ref_max = std::max(ref_max, v);
    EXPECT_EQ(max_f32(x.data(), n), ref_max) << n;
    std::vector<float> y(x.size());
    const double s = exp_shifted_sum_f32(x.data(), ref_max, y.data(), n);
    double ref_s = 0;
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_NEAR(y[i], std::exp(x[i] - ref_max), 2e-7f * std::exp(x[i] - ref_max) + 1e-30f);
      ref_s += y[i];
    }
    EXPECT_NEAR(s, ref_s, 1e-12 * ref_s);
    for (int64_t pos : {int64_t{0}, n / 2, n - 1}) {  // NaN anywhere: max is NaN
      std::vector<float> w = x;
      w[pos] = kNaN;
      EXPECT_TRUE(std::isnan(max_f32(w.data(), n))) << n << " " << pos;
    }
  }
  const float neg[3] = {-kInf, -kInf, -kInf};
  EXPECT_EQ(max_f32(neg, 3), -kInf);
}

}  // namespace
}  // namespace tierjit::kernels
