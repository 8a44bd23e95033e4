// tier 0's float32 Softmax rows (kernels::softmax_rows_f32: SLEEF's exp inlined, 16 lanes on AVX-512F
// CPUs, 8 otherwise) must equal, bit for bit, the 8-lane steps they replaced, kept here as the
// reference: m = kernels::max_f32(row), sum = kernels::exp_shifted_sum_f32(row, m, y) (library SLEEF exp),
// y *= float(1.0 / sum). Row lengths 1..70, 1000, 100k; NaN (either sign, payloads), +-inf, huge
// and tiny values, signed zeros; the kernel on every axis form that reaches these rows (opset 13
// last axis, opset 11 coerced 2-D, axis == rank), size-0 dims, two threads. The inlined exp
// against the library's over a sweep of the 2^32 bit patterns (all of them were checked once).
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "kernels/vec_math.h"
#include "reduction_test_util.h"

namespace tierjit::testing {
namespace {

using namespace red;  // NOLINT
using ir::OpKind;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

/// The previous tier-0 row code. Its scale loop compiled to `vmulss (y), inv`: inv is the first
/// operand, so a NaN inv (any NaN in the row) is what every output holds (x86 returns the first
/// NaN operand); written out here so that this file's compiler cannot pick the other order.
void reference_rows(const float* x, float* y, int64_t rows, int64_t n) {
  for (int64_t o = 0; o < rows; ++o) {
    const float* xr = x + o * n;
    float* yr = y + o * n;
    const float m = kernels::max_f32(xr, n);
    const float inv = static_cast<float>(1.0 / kernels::exp_shifted_sum_f32(xr, m, yr, n));
    for (int64_t r = 0; r < n; ++r) yr[r] = std::isnan(inv) ? inv : yr[r] * inv;
  }
}

/// Runs both widths (the AVX-512 one where the CPU has it) and, in place, the dispatching one.
void check_rows(const std::vector<float>& x, int64_t rows, int64_t n, const std::string& what) {
  std::vector<float> want(x.size()), got(x.size());
  reference_rows(x.data(), want.data(), rows, n);
  kernels::softmax_rows_f32(x.data(), got.data(), rows, n);
  EXPECT_EQ(bit_mismatches(got.data(), want.data(), rows * n, what + " dispatch"), 0);
  kernels::softmax_rows_f32_avx2(x.data(), got.data(), rows, n);
  EXPECT_EQ(bit_mismatches(got.data(), want.data(), rows * n, what + " 8 lanes"), 0);
  got = x;
  kernels::softmax_rows_f32(got.data(), got.data(), rows, n);
  EXPECT_EQ(bit_mismatches(got.data(), want.data(), rows * n, what + " in place"), 0);
}

std::vector<float> random_values(size_t count, float scale, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(count);
  for (float& f : v) f = u(rng);
  return v;
}

TEST(SoftmaxFast, EveryLengthTo70And1000And100k) {
  for (int64_t n = 1; n <= 70; ++n)
    for (float scale : {1.f, 30.f, 300.f})
      check_rows(random_values(static_cast<size_t>(5 * n), scale, static_cast<unsigned>(n)), 5, n,
                 "len " + std::to_string(n) + " scale " + std::to_string(scale));
  check_rows(random_values(5000, 8.f, 1), 5, 1000, "len 1000");
  check_rows(random_values(9 * 256, 8.f, 3), 9, 256,
             "len 256");  // the longest rows done 4 at a time
  check_rows(random_values(200000, 3.f, 2), 2, 100000, "len 100000");
  check_rows(random_values(100003, 20.f, 4), 1, 100003, "len 100003");
}

TEST(SoftmaxFast, SpecialValues) {
  const float neg_nan = -kNaN;
  const float payload = std::bit_cast<float>(0xffc12345u), snan = std::bit_cast<float>(0x7f800001u);
  const float specials[] = {kNaN,   neg_nan, payload, snan, kInf,  -kInf,  3e38f, -3e38f,
                            1e-40f, -1e-40f, 0.f,     -0.f, 88.7f, -88.7f, 200.f, -200.f};
  std::mt19937 rng(5);
  for (int64_t n : {1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 64, 70}) {
    // Rows of one special among random values, at the start, middle and end of the row.
    for (float s : specials) {
      for (int64_t pos : {int64_t{0}, n / 2, n - 1}) {
        std::vector<float> v = random_values(static_cast<size_t>(n), 10.f, rng());
        v[static_cast<size_t>(pos)] = s;
        check_rows(v, 1, n, "len " + std::to_string(n) + " special " + std::to_string(s));
      }
      check_rows(std::vector<float>(static_cast<size_t>(n), s), 1, n,
                 "all " + std::to_string(s) + " len " + std::to_string(n));
    }
    // Random mixes of specials and ordinary values, several rows.
    std::vector<float> v(static_cast<size_t>(4 * n));
    std::uniform_int_distribution<int> pick(0, 31);
    for (float& f : v) {
      const int k = pick(rng);
      f = k < 16 ? specials[k] : static_cast<float>(k - 24);
    }
    check_rows(v, 4, n, "mix len " + std::to_string(n));  // 4 rows: one interleaved block
    // Signed zeros only, and spreads that underflow exp (x - max < -104).
    std::vector<float> z(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) z[static_cast<size_t>(i)] = i % 3 ? 0.f : -0.f;
    check_rows(z, 1, n, "zeros len " + std::to_string(n));
    check_rows(random_values(static_cast<size_t>(n), 150.f, rng()), 1, n, "underflow");
  }
}

Tensor run_softmax(const Tensor& x, Attrs attrs, int opset, int threads) {
  interp::ExecOptions o;
  o.intra_op_threads = threads;
  auto out = run_node(spec(OpKind::Softmax, {x}, std::move(attrs), opset), o);
  EXPECT_TRUE(out.ok()) << out.status().message();
  return out.ok() ? (*out)[0] : Tensor();
}

// The kernel: each form that normalizes contiguous rows, against the reference rows.
TEST(SoftmaxFast, KernelAxesMatchTheReference) {
  struct Case {
    Shape shape;
    Attrs attrs;
    int opset;
    int64_t row;
  };
  const Case cases[] = {
      {{4, 2, 64, 64}, {}, 13, 64},                   // bert_tiny's attention
      {{3, 5, 7}, {{"axis", attr_int(-1)}}, 13, 7},   // last axis
      {{3, 5, 7}, {{"axis", attr_int(2)}}, 13, 7},    // the same, positive
      {{3, 5, 7}, {}, 11, 35},                        // opset 11: [3, 35] rows
      {{3, 5, 7}, {{"axis", attr_int(0)}}, 11, 105},  // one row of everything
      {{3, 5, 7}, {{"axis", attr_int(3)}}, 11, 1},    // axis == rank: rows of one element
      {{1200, 129}, {}, 13, 129},                     // split over the team in many tasks
      {{67, 131}, {}, 13, 131},                       // just split: 5 tasks of 15 rows or fewer
  };
  for (const Case& c : cases) {
    const int64_t numel = shape_numel(c.shape);
    std::vector<float> v = random_values(static_cast<size_t>(numel), 12.f, 9);
    v[static_cast<size_t>(numel / 3)] = kNaN;
    std::vector<float> want(v.size());
    reference_rows(v.data(), want.data(), numel / c.row, c.row);
    for (int threads : {1, 2, 3}) {
      Tensor y = run_softmax(Tensor::from_vector<float>(c.shape, v), c.attrs, c.opset, threads);
      ASSERT_EQ(y.numel(), numel);
      EXPECT_EQ(bit_mismatches(y.data<float>(), want.data(), numel,
                               shape_to_string(c.shape) + " opset " + std::to_string(c.opset)),
                0);
    }
  }
  // The axes that are not contiguous rows keep their own (std::exp) path: equal to a transposed
  // last-axis run within float rounding; exercised in softmax_test.cc.
}

TEST(SoftmaxFast, SizeZeroDims) {
  for (Shape s : {Shape{0, 5}, Shape{3, 0}, Shape{2, 0, 4}}) {
    Tensor y = run_softmax(Tensor::from_vector<float>(s, {}), {}, 13, 2);
    EXPECT_EQ(y.shape(), s);
    EXPECT_EQ(y.numel(), 0);
  }
}

// The inlined exp against the library's, every 61st bit pattern of the 2^32 (70M inputs: every
// exponent, NaN payloads of both signs); exp_f32 is the library's, exp_f32_inline the copy.
TEST(SoftmaxFast, InlinedExpEqualsSleefOnASweepOfAllFloats) {
  constexpr int64_t kBlock = 1 << 16;
  std::vector<float> x(kBlock), lib(kBlock), mine(kBlock), mine8(kBlock);
  int64_t bad = 0;
  uint64_t bits = 0;
  while (bits < (uint64_t{1} << 32)) {
    int64_t n = 0;
    for (; n < kBlock && bits < (uint64_t{1} << 32); ++n, bits += 61)
      x[n] = std::bit_cast<float>(static_cast<uint32_t>(bits));
    kernels::exp_f32(x.data(), lib.data(), n);
    kernels::exp_f32_inline(x.data(), mine.data(), n);
    kernels::exp_f32_inline_avx2(x.data(), mine8.data(), n);
    bad += bit_mismatches(mine.data(), lib.data(), n, "exp dispatch");
    bad += bit_mismatches(mine8.data(), lib.data(), n, "exp 8 lanes");
    if (bad > 10) break;
  }
  EXPECT_EQ(bad, 0);
}

}  // namespace
}  // namespace tierjit::testing
