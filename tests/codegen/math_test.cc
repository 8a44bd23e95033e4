// codegen: the vectorized float32 exp/log/tanh/erf/sigmoid against glibc (double precision,
// rounded once) over a dense sweep of float bit patterns; the bounds are those in
// docs/codegen.md. Also special values (NaN, +-inf, 0, denormals, overflow).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>

#include "codegen/codegen.h"
#include "kir/builder.h"

namespace tierjit::codegen {
namespace {

using namespace kir;  // NOLINT

// y[i] = op(x[i]) over n = dims[0], compiled at tier 2.
CompiledKernel unary_kernel(Intrinsic op) {
  Expr i = var("i");
  Function f{std::string(intrinsic_name(op)),
             {{"x", DType::kFloat32}, {"y", DType::kFloat32}},
             {"n"},
             for_loop("i", imm(0), var("n"), store("y", i, call(op, {load(f32(), "x", i)})))};
  auto k = compile(f, CompileOptions{Tier::kTier2});
  EXPECT_TRUE(k.ok()) << k.status().message();
  return k.ok() ? std::move(k).value() : CompiledKernel{};
}

// Error in units of the float spacing at `exact` (2^-149 for denormals).
double ulp_error(float got, double exact) {
  if (std::isnan(exact)) return std::isnan(got) ? 0 : 1e9;
  float rounded = static_cast<float>(exact);  // inf where the result overflows float
  if (std::isinf(rounded) || std::isinf(got)) return got == rounded ? 0 : 1e9;
  double a = std::abs(exact);
  int e = a < 0x1p-126 ? -126 : std::ilogb(a);
  return std::abs(static_cast<double>(got) - exact) / std::ldexp(1.0, e - 23);
}

struct Sweep {
  double max_ulp = 0;
  double max_abs = 0;
  float worst_x = 0;
};

// Every `step`-th float bit pattern in [lo, hi] (both signs as given).
Sweep sweep(Intrinsic op, float lo, float hi, uint32_t step, double (*ref)(double)) {
  std::vector<float> xs;
  for (float v : {lo, hi}) xs.push_back(v);
  auto add_range = [&](float a, float b) {  // a <= b, same sign
    uint32_t ua = std::bit_cast<uint32_t>(a), ub = std::bit_cast<uint32_t>(b);
    if (ua > ub) std::swap(ua, ub);
    for (uint64_t u = ua; u <= ub; u += step)
      xs.push_back(std::bit_cast<float>(static_cast<uint32_t>(u)));
  };
  if (lo < 0) add_range(-0.0f, lo);
  if (hi > 0) add_range(std::max(lo, 0.0f), hi);
  CompiledKernel k = unary_kernel(op);
  std::vector<float> ys(xs.size());
  void* bufs[] = {xs.data(), ys.data()};
  int64_t dims[] = {static_cast<int64_t>(xs.size())};
  if (k.fn) k(bufs, dims);
  Sweep s;
  for (size_t i = 0; i < xs.size(); ++i) {
    double exact = ref(xs[i]);
    double u = ulp_error(ys[i], exact);
    if (u > s.max_ulp) {
      s.max_ulp = u;
      s.worst_x = xs[i];
    }
    if (std::isfinite(static_cast<float>(exact)))
      s.max_abs = std::max(s.max_abs, std::abs(ys[i] - exact));
  }
  std::printf(
      "%s on [%g, %g] (every %u-th float, %zu points): max %.3f ulp at x=%.9g, max abs %.3g\n",
      std::string(intrinsic_name(op)).c_str(), lo, hi, step, xs.size(), s.max_ulp, s.worst_x,
      s.max_abs);
  return s;
}

double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double exp_ref(double x) { return std::exp(x); }
double log_ref(double x) { return std::log(x); }
double tanh_ref(double x) { return std::tanh(x); }
double erf_ref(double x) { return std::erf(x); }

TEST(CodegenMath, ExpWithinBound) {
  Sweep s = sweep(Intrinsic::kExp, -104.0f, 89.0f, 251, exp_ref);
  RecordProperty("max_ulp", std::to_string(s.max_ulp));
  EXPECT_LE(s.max_ulp, 2.0) << "worst x=" << s.worst_x;
}
TEST(CodegenMath, LogWithinBound) {
  Sweep s = sweep(Intrinsic::kLog, 0.0f, std::numeric_limits<float>::max(), 509, log_ref);
  EXPECT_LE(s.max_ulp, 2.0) << "worst x=" << s.worst_x;
}
TEST(CodegenMath, TanhWithinBound) {
  Sweep s = sweep(Intrinsic::kTanh, -20.0f, 20.0f, 251, tanh_ref);
  EXPECT_LE(s.max_ulp, 3.0) << "worst x=" << s.worst_x;
}
TEST(CodegenMath, ErfWithinBound) {
  // Relative bound near 0, absolute bound in the tails where erf rounds toward +-1.
  Sweep s = sweep(Intrinsic::kErf, -10.0f, 10.0f, 251, erf_ref);
  EXPECT_LE(s.max_abs, 4.5e-7) << "worst x=" << s.worst_x;  // near |x| = 3.6, erf = 1 - 4e-7
  EXPECT_LE(s.max_ulp, 8.0) << "worst x=" << s.worst_x;
  Sweep small = sweep(Intrinsic::kErf, -1.0f, 1.0f, 251, erf_ref);
  EXPECT_LE(small.max_ulp, 4.0) << "worst x=" << small.worst_x;
}
TEST(CodegenMath, SigmoidWithinBound) {
  Sweep s = sweep(Intrinsic::kSigmoid, -100.0f, 100.0f, 251, sigmoid_ref);
  EXPECT_LE(s.max_ulp, 4.0) << "worst x=" << s.worst_x;
}

TEST(CodegenMath, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> xs = {nan,    inf,     -inf,  0.0f,   -0.0f, 1e-45f,
                           100.0f, -100.0f, 88.7f, -87.5f, -2.0f};
  auto run = [&](Intrinsic op) {
    CompiledKernel k = unary_kernel(op);
    std::vector<float> ys(xs.size());
    void* bufs[] = {xs.data(), ys.data()};
    int64_t dims[] = {static_cast<int64_t>(xs.size())};
    if (k.fn) k(bufs, dims);
    return ys;
  };
  std::vector<float> e = run(Intrinsic::kExp);
  EXPECT_TRUE(std::isnan(e[0]));
  EXPECT_EQ(e[1], inf);
  EXPECT_EQ(e[2], 0.0f);
  EXPECT_EQ(e[3], 1.0f);
  EXPECT_EQ(e[6], inf);                                      // exp(100) overflows
  EXPECT_LE(ulp_error(e[7], std::exp(double{xs[7]})), 1.0);  // 3.7e-44: a denormal, rounded once
  EXPECT_LE(ulp_error(e[8], std::exp(double{xs[8]})), 2.0);
  EXPECT_LE(ulp_error(e[9], std::exp(double{xs[9]})), 2.0);  // near the denormal boundary
  std::vector<float> l = run(Intrinsic::kLog);
  EXPECT_TRUE(std::isnan(l[0]));
  EXPECT_EQ(l[1], inf);
  EXPECT_TRUE(std::isnan(l[2]));
  EXPECT_EQ(l[3], -inf);
  EXPECT_EQ(l[4], -inf);
  EXPECT_LE(ulp_error(l[5], std::log(double{xs[5]})), 2.0);  // denormal input
  EXPECT_TRUE(std::isnan(l[10]));                            // log(-2)
  std::vector<float> t = run(Intrinsic::kTanh);
  EXPECT_TRUE(std::isnan(t[0]));
  EXPECT_EQ(t[1], 1.0f);
  EXPECT_EQ(t[2], -1.0f);
  EXPECT_EQ(t[3], 0.0f);
  EXPECT_TRUE(std::signbit(t[4]));
  std::vector<float> r = run(Intrinsic::kErf);
  EXPECT_TRUE(std::isnan(r[0]));
  EXPECT_EQ(r[1], 1.0f);
  EXPECT_EQ(r[2], -1.0f);
  EXPECT_EQ(r[3], 0.0f);
}

}  // namespace
}  // namespace tierjit::codegen
