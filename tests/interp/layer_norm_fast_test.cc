// tier 0's float32 LayerNormalization on AVX-512F CPUs (kernels::ln_rows::stats8 /
// normalize_row, kernels/layer_norm_rows.h) must give, bit for bit, what the AVX2 code did
// before: kept here as scalar steps in its order, NaN slots included (old_layer_norm). Y, Mean and
// InvStdDev; row lengths 1..70, 128, 1000, 100k; row counts around the 8-row block; NaN, +-inf,
// huge values; a second axis; no rows and empty rows; two threads. Skips the ln_rows checks on
// CPUs without AVX-512F (the kernel checks still run).
#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "kernels/layer_norm_rows.h"
#include "reduction_test_util.h"

namespace tierjit::testing {
namespace {

using namespace red;  // NOLINT
using ir::OpKind;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// ---- The previous code (normalization.cc, float32, AVX2) as scalar steps. ----
// Its values are plain IEEE operations; where both operands of an operation are NaN, x86 returns
// the one in the first source slot (quieted), so NaN payloads and signs follow the slots its
// compiled code used, read off its disassembly and emulated here (this file's own compiled
// operand order cannot matter): x - mean, then that times inv; t * scale + B; the double statistics accumulator first, and the finish (s0 + s1) + (s2
// + s3) with s1 first for rows that were in a full block of 4 rows, s0 first for the rows after the
// last full block.
template <class F>
F quiet(F v) {
  if constexpr (sizeof(F) == 4)
    return std::bit_cast<F>(std::bit_cast<uint32_t>(v) | 0x00400000u);
  else
    return std::bit_cast<F>(std::bit_cast<uint64_t>(v) | 0x0008000000000000ull);
}
template <class F>
F nan_of(F a, F b, bool& any) {  // the first NaN operand, quieted
  any = std::isnan(a) || std::isnan(b);
  return std::isnan(a) ? quiet(a) : quiet(b);
}
template <class F>
F add_s(F a, F b) {
  bool any;
  const F n = nan_of(a, b, any);
  return any ? n : a + b;
}
template <class F>
F mul_s(F a, F b) {
  bool any;
  const F n = nan_of(a, b, any);
  return any ? n : a * b;
}
// x86 FMA returns the first NaN of a, b, c in a * b + c (measured on this CPU: vfmadd231 gives
// a multiplicand's NaN over the accumulator's), whatever the instruction form.
double fma_acc(double acc, double d) {  // d * d + acc
  bool any;
  const double n = nan_of(d, acc, any);
  return any ? n : std::fma(d, d, acc);
}
float fma_tbs(float t, float b, float s) {  // t * s + b
  if (std::isnan(t)) return quiet(t);
  if (std::isnan(s)) return quiet(s);
  if (std::isnan(b)) return quiet(b);
  return std::fma(t, s, b);
}

void old_stats(const float* x, int64_t len, bool full_block, double& mean, double& var) {
  const double n = static_cast<double>(len);
  const int64_t body = len / 4 * 4;
  double p[4] = {0, 0, 0, 0};
  auto finish = [&] {
    const double a = full_block ? add_s(p[1], p[0]) : add_s(p[0], p[1]);
    return add_s(a, add_s(p[2], p[3])) / n;
  };
  for (int64_t i = 0; i < body; i += 4)
    for (int u = 0; u < 4; ++u) p[u] = add_s(p[u], static_cast<double>(x[i + u]));
  for (int64_t i = body; i < len; ++i) p[0] = add_s(p[0], static_cast<double>(x[i]));
  mean = finish();
  for (double& v : p) v = 0;
  for (int64_t i = 0; i < body; i += 4)
    for (int u = 0; u < 4; ++u) p[u] = fma_acc(p[u], static_cast<double>(x[i + u]) - mean);
  for (int64_t i = body; i < len; ++i) p[0] = fma_acc(p[0], static_cast<double>(x[i]) - mean);
  var = finish();
}

struct Ref {
  std::vector<float> y;
  std::vector<double> mean, inv;
};

Ref old_layer_norm(const std::vector<float>& x, int64_t outer, int64_t R,
                   const std::vector<float>& s, const std::vector<float>& b) {
  Ref r{std::vector<float>(x.size()), std::vector<double>(static_cast<size_t>(outer)),
        std::vector<double>(static_cast<size_t>(outer))};
  const double eps = 1e-5f;
  const int64_t full_rows = outer / 4 * 4;
  for (int64_t o = 0; o < outer; ++o) {
    const float* xr = x.data() + o * R;
    float* yr = r.y.data() + o * R;
    double mean, var;
    old_stats(xr, R, o < full_rows, mean, var);
    const double inv = 1.0 / std::sqrt(var + eps);
    r.mean[o] = mean;
    r.inv[o] = inv;
    const float cm = static_cast<float>(mean), ci = static_cast<float>(inv);
    for (int64_t i = 0; i < R; ++i) {
      const float t = mul_s(xr[i] - cm, ci);
      yr[i] = fma_tbs(t, b[i], s[i]);
    }
  }
  return r;
}
// ---- end of the previous code ----

std::vector<float> normal_values(size_t n, unsigned seed, double mean = 3.0, double sd = 2.0) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> d(mean, sd);
  std::vector<float> v(n);
  for (float& f : v) f = static_cast<float>(d(rng));
  return v;
}

/// Puts specials into some rows: NaN of either sign, +-inf, both infinities, huge values.
void add_specials(std::vector<float>& v, int64_t rows, int64_t R, unsigned seed) {
  const float specials[] = {kNaN,   -kNaN, std::bit_cast<float>(0x7fc01234u), kInf, -kInf, 3e38f,
                            -3e38f, 1e-40f};
  std::mt19937 rng(seed);
  for (int64_t o = 0; o < rows; o += 2) {
    const int count = 1 + static_cast<int>(rng() % 3);
    for (int c = 0; c < count; ++c)
      v[static_cast<size_t>(o * R + static_cast<int64_t>(rng() % R))] = specials[rng() % 8];
  }
}

/// The kernel with outputs Y, Mean, InvStdDev, against the old code.
void check_kernel(int64_t rows, int64_t R, bool specials, int threads) {
  const std::string what = std::to_string(rows) + " rows of " + std::to_string(R) +
                           (specials ? " with specials" : "") + ", " + std::to_string(threads) +
                           " threads";
  SCOPED_TRACE(what);
  std::vector<float> x =
      normal_values(static_cast<size_t>(rows * R), static_cast<unsigned>(rows * 7 + R));
  if (specials && R > 0) add_specials(x, rows, R, static_cast<unsigned>(R));
  const std::vector<float> s = normal_values(static_cast<size_t>(R), 1, 1.0, 0.5),
                           b = normal_values(static_cast<size_t>(R), 2, 0.0, 1.0);
  const Ref want = old_layer_norm(x, rows, R, s, b);
  interp::ExecOptions options;
  options.intra_op_threads = threads;
  const std::vector<Tensor> outs =
      run_all(spec(OpKind::LayerNormalization,
                   {Tensor::from_vector<float>({rows, R}, x), Tensor::from_vector<float>({R}, s),
                    Tensor::from_vector<float>({R}, b)},
                   {}, 17, 3),
              options);
  ASSERT_TRUE(outs[0].defined() && outs[1].defined() && outs[2].defined());
  EXPECT_EQ(bit_mismatches(outs[0].data<float>(), want.y.data(), rows * R, "Y"), 0);
  std::vector<float> m(want.mean.begin(), want.mean.end()), iv(want.inv.begin(), want.inv.end());
  EXPECT_EQ(bit_mismatches(outs[1].data<float>(), m.data(), rows, "Mean"), 0);
  EXPECT_EQ(bit_mismatches(outs[2].data<float>(), iv.data(), rows, "InvStdDev"), 0);
}

TEST(LayerNormFast, KernelMatchesTheOldCodeBitForBit) {
  for (int64_t R = 1; R <= 70; ++R)
    for (int64_t rows : {1, 8, 13}) check_kernel(rows, R, R % 3 == 0, 1);
  for (int64_t R : {128, 1000})
    for (int64_t rows : {4, 7, 8, 9, 16, 17, 256}) {
      check_kernel(rows, R, false, 1);
      check_kernel(rows, R, true, 1);
    }
  check_kernel(9, 100000, false, 1);  // 100k-element rows
  check_kernel(3, 100001, true, 1);
  check_kernel(1100, 128, true, 2);  // above kParallelWork: two threads
  check_kernel(8, 0, false, 1);      // empty rows
  check_kernel(0, 16, false, 1);     // no rows
}

// The AVX2 path (the previous code, still used on CPUs without AVX-512F) against the same
// reference: this is what shows the reference reproduces the previous code, NaN slots included.
TEST(LayerNormFast, Avx2PathMatchesTheReferenceToo) {
  kernels::ln_rows::force_avx2_for_testing(true);
  for (int64_t R : {1, 3, 4, 5, 9, 33, 70, 128})
    for (int64_t rows : {1, 4, 9, 13}) check_kernel(rows, R, true, 1);
  check_kernel(1100, 128, true, 2);
  kernels::ln_rows::force_avx2_for_testing(false);
}

TEST(LayerNormFast, SecondAxisAndNoBias) {
  const Shape shape = {6, 5, 33};
  std::vector<float> x = normal_values(6 * 5 * 33, 5);
  add_specials(x, 6, 165, 3);
  const std::vector<float> s = normal_values(165, 6, 1.0, 0.5);
  const Ref want = old_layer_norm(x, 6, 165, s, std::vector<float>(165, 0.f));
  const Tensor y =
      run1(spec(OpKind::LayerNormalization,
                {Tensor::from_vector<float>(shape, x), Tensor::from_vector<float>({5, 33}, s)},
                {{"axis", attr_int(-2)}}, 17));
  EXPECT_EQ(bit_mismatches(y.data<float>(), want.y.data(), 6 * 165, "axis -2"), 0);
}

// The AVX-512 row steps directly, every length 1..70 and row contents with specials.
TEST(LayerNormFast, RowStepsMatchTheOldLoops) {
  if (!kernels::ln_rows::has_avx512()) GTEST_SKIP() << "no AVX-512F on this CPU";
  for (int64_t R = 1; R <= 70; ++R) {
    std::vector<float> x = normal_values(static_cast<size_t>(8 * R), static_cast<unsigned>(R));
    add_specials(x, 8, R, static_cast<unsigned>(R + 1));
    double mean[8], var[8], want_mean[8], want_var[8];
    kernels::ln_rows::stats8(x.data(), R, mean, var);
    for (int k = 0; k < 8; ++k) old_stats(x.data() + k * R, R, true, want_mean[k], want_var[k]);
    for (int k = 0; k < 8; ++k) {
      EXPECT_EQ(std::bit_cast<uint64_t>(mean[k]), std::bit_cast<uint64_t>(want_mean[k]))
          << "len " << R << " row " << k << " mean " << mean[k] << " want " << want_mean[k];
      EXPECT_EQ(std::bit_cast<uint64_t>(var[k]), std::bit_cast<uint64_t>(want_var[k]))
          << "len " << R << " row " << k << " var " << var[k] << " want " << want_var[k];
    }
  }
}

}  // namespace
}  // namespace tierjit::testing
