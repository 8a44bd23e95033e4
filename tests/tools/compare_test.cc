// Tests of the output comparison (tools/compare.cc), which follows the ONNX backend runner:
// |got - expected| <= atol + rtol * |expected| (rtol 1e-3, atol 1e-7), NaN == NaN, exact ints.
#include <gtest/gtest.h>

#include <cmath>

#include "cli_util.h"

namespace tierjit::cli {
namespace {

Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }

TEST(Compare, EqualAndWithinTolerance) {
  Tolerance tol;
  EXPECT_FALSE(compare_tensors(f32({2}, {1.f, 2.f}), f32({2}, {1.f, 2.f}), tol));
  // 1000 * (1 + 1e-3) = 1001 is at the edge: |1001 - 1000| = 1 <= 1e-7 + 1e-3 * 1000 = 1.0000001
  EXPECT_FALSE(compare_tensors(f32({1}, {1001.f}), f32({1}, {1000.f}), tol));
  // 1001.25 is off by 1.25 > 1.0000001
  auto d = compare_tensors(f32({1}, {1001.25f}), f32({1}, {1000.f}), tol);
  ASSERT_TRUE(d);
  EXPECT_NE(d->find("max abs diff 1.25 at [0]"), std::string::npos) << *d;
  // near zero only atol counts: 5e-8 passes, 1e-6 fails
  EXPECT_FALSE(compare_tensors(f32({1}, {5e-8f}), f32({1}, {0.f}), tol));
  EXPECT_TRUE(compare_tensors(f32({1}, {1e-6f}), f32({1}, {0.f}), tol));
  // tolerance is relative to the expected value, not to got
  EXPECT_TRUE(compare_tensors(f32({1}, {0.f}), f32({1}, {1e-5f}), tol));
}

TEST(Compare, NaNAndInfinities) {
  Tolerance tol;
  EXPECT_FALSE(compare_tensors(f32({2}, {NAN, 1.f}), f32({2}, {NAN, 1.f}), tol));
  EXPECT_TRUE(compare_tensors(f32({1}, {NAN}), f32({1}, {1.f}), tol));
  EXPECT_TRUE(compare_tensors(f32({1}, {1.f}), f32({1}, {NAN}), tol));
  EXPECT_FALSE(compare_tensors(f32({1}, {INFINITY}), f32({1}, {INFINITY}), tol));
  EXPECT_TRUE(compare_tensors(f32({1}, {-INFINITY}), f32({1}, {INFINITY}), tol));
  EXPECT_TRUE(compare_tensors(f32({1}, {1e30f}), f32({1}, {INFINITY}), tol));
}

TEST(Compare, ReportsWorstElementWithIndex) {
  auto d = compare_tensors(f32({2, 3}, {0, 0, 0, 0, 0, 1.5f}), f32({2, 3}, {0, 0, 0, 0, 0, 1.2f}), Tolerance{});
  ASSERT_TRUE(d);
  EXPECT_NE(d->find("at [1, 2] (got 1.5, expected 1.2)"), std::string::npos) << *d;
  EXPECT_NE(d->find("1 of 6 elements differ"), std::string::npos) << *d;
}

TEST(Compare, IntegersAndBoolsAreExact) {
  auto a = Tensor::from_vector<int64_t>({3}, {1, 2, 1000000000001});
  auto b = Tensor::from_vector<int64_t>({3}, {1, 2, 1000000000000});  // within rtol, but ints are exact
  auto d = compare_tensors(a, b, Tolerance{});
  ASSERT_TRUE(d);
  EXPECT_NE(d->find("at [2] (got 1000000000001, expected 1000000000000)"), std::string::npos) << *d;
  EXPECT_FALSE(compare_tensors(a, a, Tolerance{}));
  auto u = Tensor::from_vector<uint64_t>({1}, {UINT64_MAX});
  auto u2 = Tensor::from_vector<uint64_t>({1}, {UINT64_MAX - 1});
  auto du = compare_tensors(u, u2, Tolerance{});
  ASSERT_TRUE(du);
  EXPECT_NE(du->find("18446744073709551615"), std::string::npos) << *du;
  auto t = Tensor::from_vector<bool>({2}, {true, false});
  auto f = Tensor::from_vector<bool>({2}, {true, true});
  EXPECT_TRUE(compare_tensors(t, f, Tolerance{}));
  EXPECT_FALSE(compare_tensors(t, t, Tolerance{}));
}

TEST(Compare, StringsShapesAndDtypes) {
  auto s1 = Tensor::from_vector<std::string>({2}, {"a", "b"});
  auto s2 = Tensor::from_vector<std::string>({2}, {"a", "c"});
  EXPECT_FALSE(compare_tensors(s1, s1, Tolerance{}));
  auto ds = compare_tensors(s1, s2, Tolerance{});
  ASSERT_TRUE(ds);
  EXPECT_NE(ds->find("\"b\""), std::string::npos);
  auto sh = compare_tensors(f32({2, 3}, std::vector<float>(6)), f32({3, 2}, std::vector<float>(6)), Tolerance{});
  ASSERT_TRUE(sh);
  EXPECT_EQ(*sh, "shape [2, 3], expected [3, 2]");
  // same numel, rank differs (a scalar vs [1])
  EXPECT_TRUE(compare_tensors(f32({}, {1.f}), f32({1}, {1.f}), Tolerance{}));
  auto dt = compare_tensors(f32({1}, {1.f}), Tensor::from_vector<double>({1}, {1.0}), Tolerance{});
  ASSERT_TRUE(dt);
  EXPECT_EQ(*dt, "dtype float32, expected float64");
  // size 0 tensors of equal shape match
  EXPECT_FALSE(compare_tensors(f32({0, 3}, {}), f32({0, 3}, {}), Tolerance{}));
  EXPECT_TRUE(compare_tensors(f32({0, 3}, {}), f32({3, 0}, {}), Tolerance{}));
}

TEST(Compare, IndexToString) {
  EXPECT_EQ(index_to_string({2, 3, 4}, 23), "[1, 2, 3]");
  EXPECT_EQ(index_to_string({}, 0), "[]");
}

// --atol / --rtol values: finite decimal numbers >= 0, nothing else.
TEST(Compare, ParseTolerance) {
  EXPECT_EQ(parse_tolerance("1e-5"), 1e-5);
  EXPECT_EQ(parse_tolerance("0.001"), 0.001);
  EXPECT_EQ(parse_tolerance("0"), 0.0);
  EXPECT_EQ(parse_tolerance("-0"), 0.0);
  EXPECT_EQ(parse_tolerance("3"), 3.0);
  for (std::string bad : {"", " 1", "1 ", "-1", "-1e-9", "nan", "NaN", "-nan", "inf", "infinity", "1e999",
                          "abc", "1e-5x", "0x", "1,5"})
    EXPECT_FALSE(parse_tolerance(bad)) << "'" << bad << "'";
}

TEST(Compare, ToleranceOptionsApply) {
  // |1.1 - 1| = 0.1: atol 0.2 passes, atol 0.05 fails; rtol 0.15 passes with atol 0.
  EXPECT_FALSE(compare_tensors(f32({1}, {1.1f}), f32({1}, {1.f}), Tolerance{0.0, 0.2}));
  EXPECT_TRUE(compare_tensors(f32({1}, {1.1f}), f32({1}, {1.f}), Tolerance{0.0, 0.05}));
  EXPECT_FALSE(compare_tensors(f32({1}, {1.1f}), f32({1}, {1.f}), Tolerance{0.15, 0.0}));
  EXPECT_TRUE(compare_tensors(f32({1}, {1.1f}), f32({1}, {1.f}), Tolerance{0.05, 0.0}));
  // NaN still matches NaN with zero tolerances.
  EXPECT_FALSE(compare_tensors(f32({2}, {NAN, 1.f}), f32({2}, {NAN, 1.f}), Tolerance{0.0, 0.0}));
}

}  // namespace
}  // namespace tierjit::cli
