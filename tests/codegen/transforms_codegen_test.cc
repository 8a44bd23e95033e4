// Loop transforms (kir/transforms.h) end to end: each kernel is compiled untransformed and after
// split / vectorize (codegen::compile, tiers 1 and 2), run on sizes 0, 1, 7, lanes-1, lanes,
// lanes+1 and 1000 with random inputs (NaN and infinities included), and the outputs must be
// bitwise equal (any NaN equal to any NaN: LLVM may commute an fadd, which changes which NaN
// payload x86 returns): the transforms only regroup work lane-wise, so every float operation
// and its rounding is the same. A sentinel past the data checks that nothing is written out of
// range.
#include "kir/transforms.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <ostream>
#include <random>

#include "codegen/codegen.h"
#include "kir/builder.h"

namespace tierjit::codegen {
namespace {

using namespace kir;  // NOLINT: the tests build IR

Function kernel(const std::string& name, Stmt body) {
  return Function{name,
                  {{"a", DType::kFloat32},
                   {"x", DType::kFloat32},
                   {"b", DType::kFloat32},
                   {"y", DType::kFloat32},
                   {"q", DType::kInt64}},
                  {"n", "m"},
                  std::move(body)};
}

// y[i] = tanh(a[i] * x[i] + b[0]) over [0, n).
Stmt tanh_loop(Expr extent) {
  Expr i = var("i");
  Expr t = add(mul(load(f32(), "a", i), load(f32(), "x", i)), load(f32(), "b", imm(0)));
  return for_loop("i", imm(0), std::move(extent), store("y", i, call(Intrinsic::kTanh, {t})));
}

// y[i] = select(x[i] < 0, x[i] * 0.1, max(x[i], a[i])) + (float)q[i] - exp(x[2i + 1] * 0.01).
Stmt mixed_loop(Expr extent) {
  Expr i = var("i");
  Expr x = load(f32(), "x", i);
  Expr leaky = select(lt(x, fimm(0.0)), mul(x, fimm(0.1)), max(x, load(f32(), "a", i)));
  Expr strided = load(f32(), "x", add(mul(i, imm(2)), imm(1)));
  Expr v = sub(add(leaky, cast(f32(), load(i64(), "q", i))),
               call(Intrinsic::kExp, {mul(strided, fimm(0.01))}));
  return for_loop("i", imm(0), std::move(extent), store("y", i, v));
}

// y[j] = sum_k x[k * n + j] (k over 5 rows) + a[q[j] & 7]: a column reduction with a gather.
Stmt column_loop(Expr extent) {
  Expr j = var("j"), k = var("k");
  Expr gathered = load(f32(), "a", mod(load(i64(), "q", j), imm(8)));
  return for_loop(
      "j", imm(0), std::move(extent),
      block({store("y", j, gathered),
             for_loop("k", imm(0), imm(5),
                      store("y", j, add(load(f32(), "y", j),
                                        load(f32(), "x", add(mul(k, var("n")), j)))))}));
}

struct Case {
  std::string name;
  std::function<Stmt(Expr)> loop;
  std::string var;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> kCases = {
      {"tanh", tanh_loop, "i"}, {"mixed", mixed_loop, "i"}, {"column", column_loop, "j"}};
  return kCases;
}

// Runs `k` on extent n and returns y (with its sentinel tail).
std::vector<float> run(const CompiledKernel& k, int64_t n) {
  size_t cap = static_cast<size_t>(5 * n + 2 * n + 16);
  std::mt19937 rng(static_cast<uint32_t>(n * 7919 + 1));
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  std::vector<float> a(cap), x(cap), b(4), y(cap, -42.0f);
  std::vector<int64_t> q(cap);
  for (size_t i = 0; i < cap; ++i) {
    a[i] = dist(rng);
    x[i] = dist(rng);
    q[i] = static_cast<int64_t>(rng() % 1000);
    if (i % 37 == 5) x[i] = std::numeric_limits<float>::quiet_NaN();
    if (i % 41 == 3) a[i] = std::numeric_limits<float>::infinity();
    if (i % 43 == 7) x[i] = -std::numeric_limits<float>::infinity();
  }
  b[0] = 0.25f;
  void* bufs[] = {a.data(), x.data(), b.data(), y.data(), q.data()};
  int64_t dims[] = {n, 0};
  k(bufs, dims);
  return y;
}

CompiledKernel compile_ok(const Function& f, Tier tier) {
  auto k = compile(f, CompileOptions{tier});
  EXPECT_TRUE(k.ok()) << k.status().message() << "\n" << to_string(f);
  return k.ok() ? std::move(k).value() : CompiledKernel{};
}

void expect_same(const std::vector<float>& want, const std::vector<float>& got,
                 const std::string& what) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i]) && std::isnan(got[i])) continue;  // LLVM keeps no NaN sign/payload
    ASSERT_EQ(std::memcmp(&want[i], &got[i], sizeof(float)), 0)
        << what << ": element " << i << " is " << got[i] << ", untransformed " << want[i];
  }
}

using Transform = std::function<Expected<Stmt>(const Stmt&, const std::string&, int)>;

struct Param {
  int lanes;
  Tier tier;
};
// gtest prints a parameter with this (its raw bytes otherwise).
void PrintTo(const Param& p, std::ostream* os) {
  *os << "lanes " << p.lanes << ", tier " << static_cast<int>(p.tier);
}

class TransformsCodegen : public ::testing::TestWithParam<Param> {
 protected:
  std::vector<int64_t> sizes() const {
    int l = GetParam().lanes;
    return {0, 1, 7, l - 1, l, l + 1, 1000};
  }

  // For every case: dynamic extent (one compile each) and constant extents (one compile per
  // size), transformed by `t`, against the untransformed kernel.
  // `expect` must appear in the printed dynamic-extent result (the transform did happen).
  void check(const std::string& label, const Transform& t, const std::string& expect = "") {
    Tier tier = GetParam().tier;
    for (const Case& c : cases()) {
      Function ref = kernel(c.name, c.loop(var("n")));
      auto body = t(ref.body, c.var, GetParam().lanes);
      ASSERT_TRUE(body.ok()) << label << " " << c.name << ": " << body.status().message();
      EXPECT_NE(to_string(*body).find(expect), std::string::npos) << to_string(*body);
      Function tf = kernel(c.name + "_t", *body);
      CompiledKernel kr = compile_ok(ref, tier), kt = compile_ok(tf, tier);
      ASSERT_NE(kt.fn, nullptr);
      for (int64_t n : sizes()) {
        expect_same(run(kr, n), run(kt, n), label + " " + c.name + " n=" + std::to_string(n));
        Function exact = kernel(c.name + "_x", c.loop(imm(n)));
        auto xb = t(exact.body, c.var, GetParam().lanes);
        ASSERT_TRUE(xb.ok()) << xb.status().message();
        CompiledKernel kx = compile_ok(kernel(c.name + "_xt", *xb), tier);
        ASSERT_NE(kx.fn, nullptr);
        expect_same(run(kr, n), run(kx, n),
                    label + " " + c.name + " exact n=" + std::to_string(n) + "\n" +
                        to_string(*xb));
      }
    }
  }
};

TEST_P(TransformsCodegen, VectorizeMatchesScalar) {
  check("vectorize", [](const Stmt& s, const std::string& v, int lanes) {
    return vectorize(s, v, lanes);
  }, "ramp(");
}

TEST_P(TransformsCodegen, SplitMatchesScalar) {
  check("split", [](const Stmt& s, const std::string& v, int lanes) {
    return split(s, v, lanes + 1);
  });
  check("split guard", [](const Stmt& s, const std::string& v, int lanes) {
    return split(s, v, lanes, TailStrategy::kGuard);
  });
}

TEST_P(TransformsCodegen, SplitThenVectorizeMatchesScalar) {
  check("split+vectorize", [](const Stmt& s, const std::string& v, int lanes) -> Expected<Stmt> {
    TJ_ASSIGN_OR_RETURN(Stmt st, split(s, v, 4 * lanes));
    // A constant extent below the factor leaves only the tail loop: nothing to vectorize.
    auto r = vectorize(st, v + ".i", lanes);
    if (!r.ok() && r.status().message().find("no loop over") != std::string::npos) return st;
    return r;
  });
}

TEST_P(TransformsCodegen, UnrollMatchesScalar) {
  check("unroll", [](const Stmt& s, const std::string& v, int lanes) {
    return unroll(s, v, lanes / 2 + 1);
  }, ".o, 0,");
}

TEST_P(TransformsCodegen, VectorizeUnrollHoistParallelizeMatchesScalar) {
  check("all", [](const Stmt& s, const std::string& v, int lanes) -> Expected<Stmt> {
    TJ_ASSIGN_OR_RETURN(Stmt st, vectorize(s, v, lanes));
    auto u = unroll(st, v + ".v", 2);
    if (u.ok()) st = *u;  // refused only when the vector loop vanished (extent < lanes)
    st = hoist_invariants(simplify(st));
    auto p = parallelize(st, v + ".v.o");
    return p.ok() ? *p : st;
  }, "parallel for");
}

INSTANTIATE_TEST_SUITE_P(Lanes, TransformsCodegen,
                         ::testing::Values(Param{8, Tier::kTier2}, Param{16, Tier::kTier2},
                                           Param{4, Tier::kTier1}),
                         [](const auto& info) {
                           return "lanes" + std::to_string(info.param.lanes) + "_tier" +
                                  std::to_string(static_cast<int>(info.param.tier));
                         });

}  // namespace
}  // namespace tierjit::codegen
