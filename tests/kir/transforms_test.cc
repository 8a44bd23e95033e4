// Loop transforms (kir/transforms.h): the printed IR after simplify, split and vectorize, the
// refusals of vectorize (accumulation, loop-carried dependences) and verify() of every result.
// Values of transformed kernels are checked in tests/codegen/transforms_codegen_test.cc.
#include "kir/transforms.h"

#include <gtest/gtest.h>

#include "kir/builder.h"

namespace tierjit::kir {
namespace {

// y[i] = a[i] * x[i] + b[0] over i in [min, min + extent).
Stmt axpb(Expr min, Expr extent) {
  Expr i = var("i");
  return for_loop(
      "i", std::move(min), std::move(extent),
      store("y", i, add(mul(load(f32(), "a", i), load(f32(), "x", i)), load(f32(), "b", imm(0)))));
}

Function fn(Stmt body, std::vector<std::string> dims = {"n"}) {
  return Function{"k",
                  {{"a", DType::kFloat32},
                   {"x", DType::kFloat32},
                   {"b", DType::kFloat32},
                   {"y", DType::kFloat32},
                   {"q", DType::kInt64}},
                  std::move(dims),
                  std::move(body)};
}

std::string ok_str(const Expected<Stmt>& s, std::vector<std::string> dims = {"n"}) {
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (!s.ok()) return "";
  Status v = verify(fn(s.value(), std::move(dims)));
  EXPECT_TRUE(v.ok()) << v.message() << "\n" << to_string(s.value());
  return to_string(s.value());
}

TEST(KirSimplify, FoldsIntegerConstantsAndIdentities) {
  Expr n = var("n");
  EXPECT_EQ(to_string(simplify(add(mul(imm(2), imm(3)), imm(4)))), "10");
  EXPECT_EQ(to_string(simplify(add(add(mul(imm(2), n), imm(3)), imm(-3)))), "(n * 2)");
  EXPECT_EQ(to_string(simplify(mul(mul(n, imm(4)), imm(2)))), "(n * 8)");
  EXPECT_EQ(to_string(simplify(add(mul(n, imm(1)), imm(0)))), "n");
  EXPECT_EQ(to_string(simplify(mul(n, imm(0)))), "0");
  EXPECT_EQ(to_string(simplify(div(n, imm(1)))), "n");
  EXPECT_EQ(to_string(simplify(mod(n, imm(1)))), "0");
  EXPECT_EQ(to_string(simplify(sub(n, n))), "0");
  EXPECT_EQ(to_string(simplify(min(imm(7), imm(-2)))), "-2");
  EXPECT_EQ(to_string(simplify(max(imm(7), imm(-2)))), "7");
  EXPECT_EQ(to_string(simplify(div(imm(-7), imm(2)))), "-3");  // truncates, as C
  EXPECT_EQ(to_string(simplify(mod(imm(-7), imm(2)))), "-1");
  EXPECT_EQ(to_string(simplify(lt(imm(1), imm(2)))), "(bool)1");
  EXPECT_EQ(to_string(simplify(select(lt(imm(3), imm(2)), n, imm(5)))), "5");
  // Wraps to the dtype's width; unsigned compares and divides as unsigned.
  EXPECT_EQ(to_string(simplify(add(imm(2147483647, i32()), imm(1, i32())))),
            "(int32)-2147483648");
  Type u8{DType::kUInt8, 1};
  EXPECT_EQ(to_string(simplify(add(imm(250, u8), imm(10, u8)))), "(uint8)4");
  EXPECT_EQ(to_string(simplify(cast(u8, imm(-1)))), "(uint8)255");
  Type u64{DType::kUInt64, 1};
  EXPECT_EQ(to_string(simplify(lt(imm(-1, u64), imm(1, u64)))), "(bool)0");
  // No folding of a division by zero or INT64_MIN / -1 (undefined at run time too).
  EXPECT_EQ(to_string(simplify(div(imm(1), imm(0)))), "(1 / 0)");
  EXPECT_EQ(to_string(simplify(div(imm(INT64_MIN), imm(-1)))), "(-9223372036854775808 / -1)");
  // Floats are left alone.
  EXPECT_EQ(to_string(simplify(add(fimm(1.0), fimm(0.0)))), "(1f + 0f)");
  EXPECT_EQ(to_string(simplify(mul(var("x", f32()), fimm(0.0)))), "(x * 0f)");
}

TEST(KirSimplify, StatementsDropEmptyLoopsAndConstantIfs) {
  Stmt s = block({axpb(imm(0), imm(0)), axpb(imm(5), imm(1)),
                  if_then_else(lt(imm(1), imm(2)), store("y", imm(0), fimm(1.0)),
                               store("y", imm(0), fimm(2.0)))});
  EXPECT_EQ(to_string(simplify(s)),
            "y[5] = ((a[5] * x[5]) + b[0]);\n"
            "y[0] = 1f;\n");
  // A vector loop of one iteration folds to constant ramps; non-trivial lets stay.
  auto v = vectorize(axpb(imm(0), imm(8)), "i", 8);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(to_string(simplify(*v)),
            "y[ramp(0, 1, 8)] = ((a[ramp(0, 1, 8)] * x[ramp(0, 1, 8)]) + broadcast(b[0], 8));\n");
  Stmt l = let("t", mul(var("n"), imm(2)), let("u", var("t"), store("y", var("u"), fimm(1.0))));
  EXPECT_EQ(to_string(simplify(l)), "let t = (n * 2);\ny[t] = 1f;\n");
  EXPECT_TRUE(verify(fn(simplify(s))).ok());
}

TEST(KirSplit, DynamicExtentGetsATailLoop) {
  EXPECT_EQ(ok_str(split(axpb(imm(0), var("n")), "i", 8)),
            "for (i.o, 0, (n / 8)) {\n"
            "  for (i.i, 0, 8) {\n"
            "    y[((i.o * 8) + i.i)] = ((a[((i.o * 8) + i.i)] * x[((i.o * 8) + i.i)]) + b[0]);\n"
            "  }\n"
            "}\n"
            "for (i, ((n / 8) * 8), (n % 8)) {\n"
            "  y[i] = ((a[i] * x[i]) + b[0]);\n"
            "}\n");
}

TEST(KirSplit, GuardedTail) {
  EXPECT_EQ(ok_str(split(axpb(imm(0), var("n")), "i", 8, TailStrategy::kGuard)),
            "for (i.o, 0, ((n + 7) / 8)) {\n"
            "  for (i.i, 0, 8) {\n"
            "    if ((((i.o * 8) + i.i) < n)) {\n"
            "      y[((i.o * 8) + i.i)] = ((a[((i.o * 8) + i.i)] * x[((i.o * 8) + i.i)]) + "
            "b[0]);\n"
            "    }\n"
            "  }\n"
            "}\n");
  // A constant multiple of the factor needs no guard.
  EXPECT_EQ(ok_str(split(for_loop("i", imm(0), imm(16), store("y", var("i"), fimm(0.0))), "i", 8,
                         TailStrategy::kGuard)),
            "for (i.o, 0, 2) {\n"
            "  for (i.i, 0, 8) {\n"
            "    y[((i.o * 8) + i.i)] = 0f;\n"
            "  }\n"
            "}\n");
}

TEST(KirSplit, ConstantExtentsFold) {
  Stmt s = for_loop("i", imm(3), imm(20), store("y", var("i"), load(f32(), "a", var("i"))));
  EXPECT_EQ(ok_str(split(s, "i", 8)),
            "for (i.o, 0, 2) {\n"
            "  for (i.i, 0, 8) {\n"
            "    y[(((i.o * 8) + i.i) + 3)] = a[(((i.o * 8) + i.i) + 3)];\n"
            "  }\n"
            "}\n"
            "for (i, 19, 4) {\n"
            "  y[i] = a[i];\n"
            "}\n");
  // Multiple of the factor: no tail; smaller than the factor: only the tail.
  Stmt m = for_loop("i", imm(0), imm(16), store("y", var("i"), fimm(0.0)));
  EXPECT_EQ(ok_str(split(m, "i", 8)),
            "for (i.o, 0, 2) {\n  for (i.i, 0, 8) {\n    y[((i.o * 8) + i.i)] = 0f;\n  }\n}\n");
  Stmt small = for_loop("i", imm(0), imm(5), store("y", var("i"), fimm(0.0)));
  EXPECT_EQ(ok_str(split(small, "i", 8)), "for (i, 0, 5) {\n  y[i] = 0f;\n}\n");
}

TEST(KirSplit, FindsNestedLoopsAndReportsErrors) {
  Stmt s = for_loop("r", imm(0), var("n"), axpb(imm(0), var("n")), ForKind::kParallel);
  std::string out = ok_str(split(s, "i", 4));
  EXPECT_NE(out.find("parallel for (r, 0, n) {\n  for (i.o, 0, (n / 4)) {"), std::string::npos)
      << out;
  auto missing = split(s, "z", 4);
  EXPECT_EQ(missing.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(missing.status().message().find("'z'"), std::string::npos);
  EXPECT_EQ(split(s, "i", 0).status().code(), StatusCode::kInvalidArgument);
  // The Function overload keeps name, buffers and dims.
  auto f = split(fn(s), "r", 2);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->name, "k");
  EXPECT_TRUE(verify(*f).ok());
  // The outer loop keeps the loop's kind.
  EXPECT_NE(to_string(*f).find("parallel for (r.o"), std::string::npos) << to_string(*f);
}

TEST(KirVectorize, ContiguousLoadsBroadcastInvariantsAndScalarTail) {
  EXPECT_EQ(ok_str(vectorize(axpb(imm(0), var("n")), "i", 8)),
            "for (i.v, 0, (n / 8)) {\n"
            "  let i = (i.v * 8);\n"
            "  y[ramp(i, 1, 8)] = ((a[ramp(i, 1, 8)] * x[ramp(i, 1, 8)]) + broadcast(b[0], 8));\n"
            "}\n"
            "for (i, ((n / 8) * 8), (n % 8)) {\n"
            "  y[i] = ((a[i] * x[i]) + b[0]);\n"
            "}\n");
}

TEST(KirVectorize, ConstantExtentsFold) {
  EXPECT_EQ(ok_str(vectorize(axpb(imm(3), imm(20)), "i", 8)),
            "for (i.v, 0, 2) {\n"
            "  let i = ((i.v * 8) + 3);\n"
            "  y[ramp(i, 1, 8)] = ((a[ramp(i, 1, 8)] * x[ramp(i, 1, 8)]) + broadcast(b[0], 8));\n"
            "}\n"
            "for (i, 19, 4) {\n"
            "  y[i] = ((a[i] * x[i]) + b[0]);\n"
            "}\n");
  EXPECT_EQ(ok_str(vectorize(axpb(imm(0), imm(16)), "i", 16)),
            "for (i.v, 0, 1) {\n"
            "  let i = (i.v * 16);\n"
            "  y[ramp(i, 1, 16)] = ((a[ramp(i, 1, 16)] * x[ramp(i, 1, 16)]) + "
            "broadcast(b[0], 16));\n"
            "}\n");
}

TEST(KirVectorize, InnerReductionLoopOverAVectorOfColumns) {
  // y[j] = sum_k x[k * m + j]: the vector runs over j, the k loop stays inside.
  Expr j = var("j"), k = var("k");
  Stmt col = for_loop(
      "j", imm(0), var("m"),
      block({store("y", j, fimm(0.0)),
             for_loop("k", imm(0), var("n"),
                      store("y", j, add(load(f32(), "y", j),
                                        load(f32(), "x", add(mul(k, var("m")), j)))))}));
  EXPECT_EQ(ok_str(vectorize(col, "j", 8), {"n", "m"}),
            "for (j.v, 0, (m / 8)) {\n"
            "  let j = (j.v * 8);\n"
            "  y[ramp(j, 1, 8)] = broadcast(0f, 8);\n"
            "  for (k, 0, n) {\n"
            "    y[ramp(j, 1, 8)] = (y[ramp(j, 1, 8)] + x[ramp(((k * m) + j), 1, 8)]);\n"
            "  }\n"
            "}\n"
            "for (j, ((m / 8) * 8), (m % 8)) {\n"
            "  y[j] = 0f;\n"
            "  for (k, 0, n) {\n"
            "    y[j] = (y[j] + x[((k * m) + j)]);\n"
            "  }\n"
            "}\n");
}

TEST(KirVectorize, StridedAndComputedIndicesGatherAndLetsWiden) {
  Expr j = var("j");
  Stmt s = for_loop(
      "j", imm(0), var("n"),
      let("t", add(mul(j, imm(2)), imm(1)),
          let("u", mul(load(f32(), "a", j), fimm(2.0)),
              store("y", j,
                    select(lt(load(f32(), "x", var("t")), var("u", f32())), fimm(0.0),
                           cast(f32(), load(i64(), "q", mul(j, j))))))));
  EXPECT_EQ(ok_str(vectorize(s, "j", 4)),
            "for (j.v, 0, (n / 4)) {\n"
            "  let j = (j.v * 4);\n"
            "  let t = ((j * 2) + 1);\n"
            "  let u = (a[ramp(j, 1, 4)] * broadcast(2f, 4));\n"
            "  y[ramp(j, 1, 4)] = select((x[ramp(t, 2, 4)] < u), broadcast(0f, 4), "
            "(float32x4)q[(ramp(j, 1, 4) * ramp(j, 1, 4))]);\n"
            "}\n"
            "for (j, ((n / 4) * 4), (n % 4)) {\n"
            "  let t = ((j * 2) + 1);\n"
            "  let u = (a[j] * 2f);\n"
            "  y[j] = select((x[t] < u), 0f, (float32)q[(j * j)]);\n"
            "}\n");
  // Without gathers the strided load is refused.
  VectorizeOptions no_gather;
  no_gather.allow_gather = false;
  auto r = vectorize(s, "j", 4, no_gather);
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find("gathers not allowed"), std::string::npos);
}

TEST(KirVectorize, RefusesAccumulationAndLoopCarriedDependences) {
  Expr i = var("i");
  // y[0] += x[i]: the same address every iteration.
  Stmt acc = for_loop("i", imm(0), var("n"),
                      store("y", imm(0), add(load(f32(), "y", imm(0)), load(f32(), "x", i))));
  auto r = vectorize(acc, "i", 8);
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find("scalar accumulation"), std::string::npos)
      << r.status().message();
  // y[i] = y[i - 1] + x[i]: a prefix sum.
  Stmt scan = for_loop("i", imm(1), var("n"),
                       store("y", i, add(load(f32(), "y", sub(i, imm(1))), load(f32(), "x", i))));
  r = vectorize(scan, "i", 8);
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find("loop-carried dependence on 'y'"), std::string::npos)
      << r.status().message();
  // y[i + k] += x[k]: elements shared between iterations through the inner loop.
  Stmt conv = for_loop(
      "i", imm(0), var("n"),
      for_loop("k", imm(0), imm(3),
               store("y", add(i, var("k")),
                     add(load(f32(), "y", add(i, var("k"))), load(f32(), "x", var("k"))))));
  r = vectorize(conv, "i", 8);
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find("inner loop"), std::string::npos) << r.status().message();
  // A store index that is not affine (y[i * i]) or has a dynamic stride (y[i * n]).
  EXPECT_FALSE(vectorize(for_loop("i", imm(0), var("n"), store("y", mul(i, i), fimm(1.0))), "i",
                         8)
                   .ok());
  EXPECT_FALSE(
      vectorize(for_loop("i", imm(0), var("n"), store("y", mul(i, var("n")), fimm(1.0))), "i", 8)
          .ok());
  // An if on the loop variable, and bad arguments.
  Stmt cond = for_loop("i", imm(0), var("n"),
                       if_then_else(lt(i, imm(4)), store("y", i, fimm(1.0))));
  EXPECT_EQ(vectorize(cond, "i", 8).status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(vectorize(acc, "i", 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(vectorize(acc, "nope", 8).status().code(), StatusCode::kUnsupported);
}

TEST(KirVectorize, SplitThenVectorizeInnerLoop) {
  auto s = split(axpb(imm(0), var("n")), "i", 32);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(ok_str(vectorize(*s, "i.i", 8)),
            "for (i.o, 0, (n / 32)) {\n"
            "  for (i.i.v, 0, 4) {\n"
            "    let i.i = (i.i.v * 8);\n"
            "    y[ramp(((i.o * 32) + i.i), 1, 8)] = ((a[ramp(((i.o * 32) + i.i), 1, 8)] * "
            "x[ramp(((i.o * 32) + i.i), 1, 8)]) + broadcast(b[0], 8));\n"
            "  }\n"
            "}\n"
            "for (i, ((n / 32) * 32), (n % 32)) {\n"
            "  y[i] = ((a[i] * x[i]) + b[0]);\n"
            "}\n");
}

}  // namespace
}  // namespace tierjit::kir
