// Loop transforms on random kernels: each seed builds a loop with random float expression trees
// (contiguous, strided, computed and invariant loads, lets, selects, casts, math calls), applies
// a random chain of vectorize, unroll, parallelize, split (of the tail), hoist_invariants and
// simplify, compiles both (codegen::compile, tier 1) and runs them on several extents: outputs
// must be bitwise equal (NaN equal to any NaN; see transforms_codegen_test.cc).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "codegen/codegen.h"
#include "kir/builder.h"
#include "kir/transforms.h"

namespace tierjit::codegen {
namespace {

using namespace kir;  // NOLINT: the tests build IR

class RandomKernel {
 public:
  explicit RandomKernel(uint32_t seed) : rng_(seed) {}

  Function build() {
    Expr i = var("i");
    // An affine integer let (stride 1..3) used as an index.
    Expr t_value = add(mul(i, imm(pick(1, 3))), imm(pick(0, 3)));
    Expr u = float_expr(3);
    Expr value = add(float_expr(3), var("u", f32()));
    Expr out_index = add(mul(i, imm(pick(1, 2))), imm(pick(0, 2)));
    Stmt body = let("t", t_value, let("u", u, store("y", out_index, value)));
    Expr min = pick(0, 1) ? imm(pick(0, 3)) : var("m");
    return Function{"rnd",
                    {{"a", DType::kFloat32},
                     {"x", DType::kFloat32},
                     {"y", DType::kFloat32},
                     {"q", DType::kInt32}},
                    {"n", "m"},
                    for_loop("i", min, var("n"), body)};
  }

  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

 private:
  // Indices stay within [0, 4 * (n + m) + 8).
  Expr index() {
    Expr i = var("i");
    switch (pick(0, 4)) {
      case 0:
        return i;
      case 1:
        return add(i, imm(pick(1, 3)));
      case 2:
        return var("t");
      case 3:
        return imm(pick(0, 5));
      default:  // computed: (i * i) % 7 + i
        return add(mod(mul(i, i), imm(7)), i);
    }
  }

  Expr float_expr(int depth) {
    int k = depth == 0 ? pick(0, 2) : pick(0, 9);
    switch (k) {
      case 0:
        return load(f32(), pick(0, 1) ? "a" : "x", index());
      case 1:
        return fimm(pick(-3, 3) * 0.75);
      case 2:
        return cast(f32(), load(i32(), "q", index()));
      case 3:
        return add(float_expr(depth - 1), float_expr(depth - 1));
      case 4:
        return mul(float_expr(depth - 1), float_expr(depth - 1));
      case 5:
        return pick(0, 1) ? min(float_expr(depth - 1), float_expr(depth - 1))
                          : max(float_expr(depth - 1), float_expr(depth - 1));
      case 6:
        return select(lt(float_expr(depth - 1), float_expr(depth - 1)),
                      float_expr(depth - 1), float_expr(depth - 1));
      case 7: {
        static constexpr Intrinsic kOps[] = {Intrinsic::kExp, Intrinsic::kTanh, Intrinsic::kAbs,
                                             Intrinsic::kSigmoid, Intrinsic::kFloor};
        return call(kOps[pick(0, 4)], {float_expr(depth - 1)});
      }
      case 8:
        return cast(f32(), var("i"));
      default:
        return sub(float_expr(depth - 1), float_expr(depth - 1));
    }
  }

  std::mt19937 rng_;
};

std::vector<float> run(const CompiledKernel& k, int64_t n, int64_t m) {
  size_t cap = static_cast<size_t>(4 * (n + m) + 16);
  std::mt19937 rng(static_cast<uint32_t>(n * 31 + m));
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  std::vector<float> a(cap), x(cap), y(cap, -42.0f);
  std::vector<int32_t> q(cap);
  for (size_t i = 0; i < cap; ++i) {
    a[i] = dist(rng);
    x[i] = i % 29 == 3 ? std::nanf("") : dist(rng);
    q[i] = static_cast<int32_t>(rng() % 200) - 100;
  }
  void* bufs[] = {a.data(), x.data(), y.data(), q.data()};
  int64_t dims[] = {n, m};
  k(bufs, dims);
  return y;
}

TEST(TransformsRandom, TransformedKernelsMatchTheScalarLoop) {
  int vectorized = 0, parallel = 0;
  constexpr int kSeeds = 24;  // 200 passed too (21 s)
  for (uint32_t seed = 1; seed <= kSeeds; ++seed) {
    RandomKernel gen(seed);
    Function ref = gen.build();
    ASSERT_TRUE(verify(ref).ok()) << to_string(ref);
    int lanes = 4 << gen.pick(0, 2);
    Stmt s = ref.body;
    std::string chain;
    auto v = vectorize(s, "i", lanes);
    ASSERT_TRUE(v.ok()) << v.status().message() << "\n" << to_string(ref);
    s = *v;
    chain += "vectorize " + std::to_string(lanes);
    ++vectorized;
    if (gen.pick(0, 1)) {
      auto u = unroll(s, "i.v", gen.pick(2, 3));
      ASSERT_TRUE(u.ok()) << u.status().message();
      s = *u;
      chain += ", unroll";
      if (gen.pick(0, 1)) {
        auto p = parallelize(s, "i.v.o");
        ASSERT_TRUE(p.ok()) << p.status().message() << "\n" << to_string(s);
        s = *p;
        chain += ", parallelize";
        ++parallel;
      }
    }
    if (gen.pick(0, 2) == 0) {
      auto sp = split(s, "i", gen.pick(2, 5), TailStrategy::kGuard);  // the scalar tail loop
      ASSERT_TRUE(sp.ok()) << sp.status().message();
      s = *sp;
      chain += ", split tail";
    }
    if (gen.pick(0, 1)) {
      s = hoist_invariants(s);
      chain += ", hoist";
    }
    s = simplify(s);
    Function tf = ref;
    tf.name = "rnd_t";
    tf.body = s;
    auto kr = compile(ref, CompileOptions{Tier::kTier1});
    auto kt = compile(tf, CompileOptions{Tier::kTier1});
    ASSERT_TRUE(kr.ok()) << kr.status().message();
    ASSERT_TRUE(kt.ok()) << kt.status().message() << "\n" << to_string(tf);
    for (int64_t n : {0, 1, 7, lanes - 1, lanes + 1, 3 * lanes + 5, 333}) {
      for (int64_t m : {0, 2}) {
        std::vector<float> want = run(*kr, n, m), got = run(*kt, n, m);
        for (size_t e = 0; e < want.size(); ++e) {
          if (std::isnan(want[e]) && std::isnan(got[e])) continue;
          ASSERT_EQ(std::memcmp(&want[e], &got[e], sizeof(float)), 0)
              << "seed " << seed << " (" << chain << ") n=" << n << " m=" << m << " element " << e
              << ": " << got[e] << " vs " << want[e] << "\n"
              << to_string(tf);
        }
      }
    }
  }
  EXPECT_EQ(vectorized, kSeeds);
  EXPECT_GT(parallel, 0);
}

}  // namespace
}  // namespace tierjit::codegen
