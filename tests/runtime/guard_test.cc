// Guard: pass/fail per specialization level over only the dims the code depends on, and the exact
// reason texts of DESIGN.md ("input 0 dim 1: specialized 128, got 77").
#include <gtest/gtest.h>

#include <vector>

#include "runtime/guard.h"

namespace tierjit::runtime {
namespace {

Signature sig(std::vector<int64_t> dims, DType t = DType::kFloat32) {
  Signature s;
  s.add_input(t, dims);
  return s;
}

std::string reason(const Guard& g, const Signature& s) {
  auto f = g.check(s);
  return f ? f->reason : "ok";
}

TEST(Guard, ExactReasons) {
  Guard g(Specialization::exact(sig({8, 128})));
  EXPECT_TRUE(g.passes(sig({8, 128})));
  EXPECT_EQ(g.check(sig({8, 128})), std::nullopt);
  EXPECT_EQ(reason(g, sig({8, 77})), "input 0 dim 1: specialized 128, got 77");
  auto f = g.check(sig({8, 77}));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->input, 0);
  EXPECT_EQ(f->dim, 1);
  EXPECT_EQ(f->flat_dim, 1);
  EXPECT_EQ(g.failing_flat_dim(sig({8, 77})), 1);
  EXPECT_EQ(g.failing_flat_dim(sig({8, 128})), -1);
  EXPECT_EQ(reason(g, sig({8, 128}, DType::kInt64)), "input 0: specialized float32, got int64");
  EXPECT_EQ(reason(g, sig({8, 128, 1})), "input 0: specialized rank 2, got 3");
  Signature two = sig({8, 128});
  std::vector<int64_t> d{1};
  two.add_input(DType::kFloat32, d);
  EXPECT_EQ(reason(g, two), "signature has 2 inputs, specialized for 1");
}

TEST(Guard, ShapeClassReasons) {
  std::vector<uint8_t> dyn{0, 1};
  Guard g(Specialization::shape_class(sig({8, 100}), dyn));  // dim 1 in class 128 = 65..128
  EXPECT_TRUE(g.passes(sig({8, 65})));
  EXPECT_TRUE(g.passes(sig({8, 128})));
  EXPECT_FALSE(g.passes(sig({8, 64})));
  EXPECT_EQ(reason(g, sig({8, 300})), "input 0 dim 1: class 128 (65..128), got 300");
  EXPECT_EQ(reason(g, sig({8, 64})), "input 0 dim 1: class 128 (65..128), got 64");
  EXPECT_EQ(reason(g, sig({9, 100})), "input 0 dim 0: specialized 8, got 9");  // static dim exact
  // Sizes 0 and 1 are their own classes.
  Guard zero(Specialization::shape_class(sig({8, 0}), dyn));
  EXPECT_TRUE(zero.passes(sig({8, 0})));
  EXPECT_EQ(reason(zero, sig({8, 1})), "input 0 dim 1: class 0 (0..0), got 1");
  Guard one(Specialization::shape_class(sig({8, 1}), dyn));
  EXPECT_EQ(reason(one, sig({8, 2})), "input 0 dim 1: class 1 (1..1), got 2");
}

TEST(Guard, ChecksOnlyDependedDims) {
  std::vector<uint8_t> depends{0, 1};  // code reads dim 1 only (dim 0 passes through)
  Guard g(Specialization::exact(sig({8, 128}), depends));
  EXPECT_EQ(g.num_dim_checks(), 1u);
  EXPECT_TRUE(g.passes(sig({9999, 128})));
  EXPECT_FALSE(g.passes(sig({8, 127})));
}

TEST(Guard, GenericChecksDtypeAndRankOnly) {
  Guard g(Specialization::generic(sig({8, 128})));
  EXPECT_EQ(g.num_dim_checks(), 0u);
  EXPECT_TRUE(g.passes(sig({0, 1})));
  EXPECT_EQ(reason(g, sig({8})), "input 0: specialized rank 2, got 1");
}

TEST(Guard, ValueSpecialization) {
  Signature s;
  std::vector<int64_t> d{2}, v{4, 16}, w{4, 17};
  s.add_input_with_values(DType::kInt64, d, v);
  Guard g(Specialization::exact(s));
  Signature same, other, none;
  same.add_input_with_values(DType::kInt64, d, v);
  other.add_input_with_values(DType::kInt64, d, w);
  none.add_input(DType::kInt64, d);
  EXPECT_TRUE(g.passes(same));
  EXPECT_EQ(reason(g, other), "input 0 values: specialized {4,16}, got {4,17}");
  EXPECT_EQ(reason(g, none), "input 0 values: specialized {4,16}, got none");
}

}  // namespace
}  // namespace tierjit::runtime
