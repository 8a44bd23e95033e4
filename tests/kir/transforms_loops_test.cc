// Loop transforms unroll, hoist_invariants and parallelize (kir/transforms.h): printed IR before
// and after, refusals, and verify() of every result. Values of compiled results:
// tests/codegen/transforms_codegen_test.cc.
#include <gtest/gtest.h>

#include "kir/builder.h"
#include "kir/transforms.h"

namespace tierjit::kir {
namespace {

Function fn(Stmt body) {
  return Function{"k",
                  {{"a", DType::kFloat32},
                   {"x", DType::kFloat32},
                   {"b", DType::kFloat32},
                   {"y", DType::kFloat32}},
                  {"n", "m"},
                  std::move(body)};
}

std::string ok_str(const Stmt& s) {
  Status v = verify(fn(s));
  EXPECT_TRUE(v.ok()) << v.message() << "\n" << to_string(s);
  return to_string(s);
}
std::string ok_str(const Expected<Stmt>& s) {
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? ok_str(s.value()) : "";
}

// y[i] = a[i] * x[i] + b[0] over i in [0, n).
Stmt axpb() {
  Expr i = var("i");
  return for_loop(
      "i", imm(0), var("n"),
      store("y", i, add(mul(load(f32(), "a", i), load(f32(), "x", i)), load(f32(), "b", imm(0)))));
}

// y[r * n + i] = b[r] * 2 + exp(a[r]) over rows r < m and columns i < n, with lets.
Stmt rows() {
  Expr r = var("r"), i = var("i");
  return for_loop(
      "r", imm(0), var("m"),
      for_loop("i", imm(0), var("n"),
               let("s", mul(load(f32(), "b", r), fimm(2.0)),
                   let("t", add(i, imm(1)),
                       store("y", add(mul(r, var("n")), i),
                             add(var("s", f32()),
                                 add(call(Intrinsic::kExp, {load(f32(), "a", r)}),
                                     cast(f32(), var("t")))))))));
}

TEST(KirUnroll, ByFactorKeepsARolledTail) {
  EXPECT_EQ(ok_str(unroll(axpb(), "i", 2)),
            "for (i.o, 0, (n / 2)) {\n"
            "  y[(i.o * 2)] = ((a[(i.o * 2)] * x[(i.o * 2)]) + b[0]);\n"
            "  y[((i.o * 2) + 1)] = ((a[((i.o * 2) + 1)] * x[((i.o * 2) + 1)]) + b[0]);\n"
            "}\n"
            "for (i, ((n / 2) * 2), (n % 2)) {\n"
            "  y[i] = ((a[i] * x[i]) + b[0]);\n"
            "}\n");
}

TEST(KirUnroll, FullUnrollOfAConstantLoop) {
  Expr i = var("i");
  Stmt c = for_loop("i", imm(2), imm(3), store("y", i, load(f32(), "a", add(i, imm(1)))));
  EXPECT_EQ(ok_str(unroll(c, "i", 0)), "y[2] = a[3];\ny[3] = a[4];\ny[4] = a[5];\n");
  // Lets inside the body are bound once per copy (sibling scopes), here folded away.
  Stmt l = for_loop("i", imm(0), imm(2), let("t", mul(i, imm(3)), store("y", var("t"), fimm(1.0))));
  EXPECT_EQ(ok_str(unroll(l, "i", 0)), "y[0] = 1f;\ny[3] = 1f;\n");
  // A constant extent smaller than the factor: only the (rolled) tail remains.
  Stmt small = for_loop("i", imm(0), imm(3), store("y", i, fimm(0.0)));
  EXPECT_EQ(ok_str(unroll(small, "i", 4)), "for (i, 0, 3) {\n  y[i] = 0f;\n}\n");
  EXPECT_EQ(unroll(axpb(), "i", 0).status().code(), StatusCode::kUnsupported);  // dynamic extent
  Stmt big = for_loop("i", imm(0), imm(kMaxFullUnroll + 1), store("y", i, fimm(0.0)));
  EXPECT_EQ(unroll(big, "i", 0).status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(unroll(axpb(), "i", -1).status().code(), StatusCode::kInvalidArgument);
}

TEST(KirHoist, InvariantLetsAndExpressionsLeaveTheLoopUnderAGuard) {
  EXPECT_EQ(ok_str(hoist_invariants(rows())),
            "for (r, 0, m) {\n"
            "  if ((n > 0)) {\n"
            "    let s = (b[r] * 2f);\n"
            "    let i.inv0 = exp(a[r]);\n"
            "    for (i, 0, n) {\n"
            "      let t = (i + 1);\n"
            "      y[((r * n) + i)] = (s + (i.inv0 + (float32)t));\n"
            "    }\n"
            "  }\n"
            "}\n");
}

TEST(KirHoist, VectorBroadcastsAndConstantExtents) {
  auto v = vectorize(for_loop("i", imm(0), imm(32),
                              store("y", var("i"),
                                    add(load(f32(), "a", var("i")), load(f32(), "b", imm(0))))),
                     "i", 8);
  ASSERT_TRUE(v.ok());
  // A positive constant extent needs no guard.
  EXPECT_EQ(ok_str(hoist_invariants(*v)),
            "let i.v.inv0 = broadcast(b[0], 8);\n"
            "for (i.v, 0, 4) {\n"
            "  let i = (i.v * 8);\n"
            "  y[ramp(i, 1, 8)] = (a[ramp(i, 1, 8)] + i.v.inv0);\n"
            "}\n");
  // Hoisting again finds nothing new, and new names never clash with bound ones.
  Stmt once = hoist_invariants(*v);
  EXPECT_EQ(ok_str(hoist_invariants(once)), to_string(once));
  Expr e = call(Intrinsic::kExp, {load(f32(), "b", imm(0))});
  Stmt again = for_loop("i", imm(0), imm(4),
                        let("i.inv0", load(f32(), "b", imm(1)),
                            store("y", var("i"), add(var("i.inv0", f32()), e))));
  EXPECT_EQ(ok_str(hoist_invariants(again)),
            "let i.inv0 = b[1];\n"
            "let i.inv1 = exp(b[0]);\n"
            "for (i, 0, 4) {\n"
            "  y[i] = (i.inv0 + i.inv1);\n"
            "}\n");
}

TEST(KirHoist, KeepsLoadsOfWrittenBuffersAndConditionalCode) {
  Expr i = var("i");
  // y[0] is written in the loop: its load is not invariant. The load under the if stays.
  Stmt s = for_loop(
      "i", imm(0), var("n"),
      block({store("y", add(i, imm(1)), load(f32(), "y", imm(0))),
             if_then_else(lt(i, imm(3)), store("y", i, load(f32(), "b", imm(0))))}));
  EXPECT_EQ(to_string(hoist_invariants(s)), to_string(s));
  EXPECT_TRUE(hoist_invariants(s) == s);  // shared, not copied
}

TEST(KirParallelize, MarksTheLoop) {
  EXPECT_EQ(ok_str(parallelize(rows(), "r")).substr(0, 40),
            "parallel for (r, 0, m) {\n  for (i, 0, n)");
  auto f = parallelize(fn(rows()), "r");
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(verify(*f).ok());
}

TEST(KirParallelize, RefusesRaces) {
  Expr i = var("i");
  Stmt acc = for_loop("i", imm(0), var("n"),
                      store("y", imm(0), add(load(f32(), "y", imm(0)), load(f32(), "x", i))));
  auto r = parallelize(acc, "i");
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find("a race"), std::string::npos) << r.status().message();
  // The store goes through a let that does not depend on the loop variable.
  Stmt via_let = for_loop("i", imm(0), var("n"), let("t", var("m"), store("y", var("t"), fimm(1))));
  EXPECT_FALSE(parallelize(via_let, "i").ok());
  Stmt scan = for_loop("i", imm(1), var("n"),
                       store("y", i, add(load(f32(), "y", sub(i, imm(1))), load(f32(), "x", i))));
  EXPECT_FALSE(parallelize(scan, "i").ok());
  Stmt nested = for_loop("r", imm(0), var("m"), *parallelize(axpb(), "i"));
  EXPECT_FALSE(parallelize(nested, "r").ok());
  // A scratch buffer allocated inside the loop is per thread: accumulating into it is fine.
  Stmt scratch = for_loop(
      "i", imm(0), var("n"),
      allocate("acc", DType::kFloat32, 1,
               block({store("acc", imm(0), load(f32(), "x", i)),
                      store("y", i, load(f32(), "acc", imm(0)))})));
  EXPECT_TRUE(parallelize(scratch, "i").ok());
}

TEST(KirParallelize, UnrolledCopiesWithDisjointFootprints) {
  // Vectorized by 8, unrolled by 2: stores at 16 * v + [0, 8) and 16 * v + [8, 16).
  auto v = vectorize(axpb(), "i", 8);
  ASSERT_TRUE(v.ok());
  auto u = unroll(*v, "i.v", 2);
  ASSERT_TRUE(u.ok());
  std::string out = ok_str(parallelize(*u, "i.v.o"));
  EXPECT_EQ(out.rfind("parallel for (i.v.o, 0, ((n / 8) / 2)) {\n", 0), 0u) << out;
  // y[2i] and y[2i + 2] overlap the next iteration's y[2i]: refused.
  Expr i = var("i");
  Stmt overlap = for_loop("i", imm(0), var("n"),
                          block({store("y", mul(i, imm(2)), fimm(1.0)),
                                 store("y", add(mul(i, imm(2)), imm(2)), fimm(2.0))}));
  auto r = parallelize(overlap, "i");
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find("may share elements of 'y'"), std::string::npos)
      << r.status().message();
  // y[2i] and y[2i + 1] do not.
  Stmt pairs = for_loop("i", imm(0), var("n"),
                        block({store("y", mul(i, imm(2)), fimm(1.0)),
                               store("y", add(mul(i, imm(2)), imm(1)), fimm(2.0))}));
  EXPECT_TRUE(parallelize(pairs, "i").ok());
}

}  // namespace
}  // namespace tierjit::kir
