// Kernel IR: builders, printer, structural hash/equality, visitor/mutator and verifier errors.
#include "kir/kir.h"

#include <gtest/gtest.h>

#include "kir/builder.h"

namespace tierjit::kir {
namespace {

// y[i] = a[i] * x[i] + 1.0f over i in [0, n).
Function axpy_function() {
  Expr i = var("i");
  Stmt body =
      for_loop("i", imm(0), var("n"),
               store("y", i, add(mul(load(f32(), "a", i), load(f32(), "x", i)), fimm(1.0))));
  return Function{"axpy",
                  {{"a", DType::kFloat32}, {"x", DType::kFloat32}, {"y", DType::kFloat32}},
                  {"n"},
                  body};
}

TEST(KirPrinter, PrintsCLikeText) {
  EXPECT_EQ(to_string(axpy_function()),
            "kernel axpy(float32* a, float32* x, float32* y, int64 n) {\n"
            "  for (i, 0, n) {\n"
            "    y[i] = ((a[i] * x[i]) + 1f);\n"
            "  }\n"
            "}\n");
  Expr v = load(f32(8), "a", ramp(var("i"), imm(1), 8));
  EXPECT_EQ(to_string(v), "a[ramp(i, 1, 8)]");
  EXPECT_EQ(to_string(call(Intrinsic::kTanh, {fimm(0.5, f64())})), "tanh((float64)0.5)");
  EXPECT_EQ(to_string(min(imm(1, i32()), imm(2, i32()))), "min((int32)1, (int32)2)");
  Stmt s = allocate("acc", DType::kFloat32, 16,
                    if_then_else(lt(var("i"), imm(3)), store("acc", imm(0), fimm(0.0)),
                                 store("acc", imm(1), fimm(2.0))));
  EXPECT_EQ(to_string(s),
            "allocate acc[float32 * 16];\n"
            "if ((i < 3)) {\n"
            "  acc[0] = 0f;\n"
            "} else {\n"
            "  acc[1] = 2f;\n"
            "}\n");
}

TEST(KirHash, EqualStructuresHashEqualAndDifferencesShow) {
  Function a = axpy_function();
  Function b = axpy_function();  // separately built, same structure
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_EQ(structural_hash(a), structural_hash(b));

  Function c = axpy_function();
  c.body = for_loop("i", imm(0), var("n"),
                    store("y", var("i"),
                          add(mul(load(f32(), "a", var("i")), load(f32(), "x", var("i"))),
                              fimm(2.0))));  // 2.0 instead of 1.0
  EXPECT_FALSE(structural_equal(a, c));
  EXPECT_NE(structural_hash(a), structural_hash(c));

  // Type, lane count and loop kind all matter.
  EXPECT_FALSE(structural_equal(fimm(1.0, f32()), fimm(1.0, f64())));
  EXPECT_NE(structural_hash(broadcast(fimm(1.0), 8)), structural_hash(broadcast(fimm(1.0), 16)));
  Stmt s1 = for_loop("i", imm(0), imm(4), store("y", var("i"), fimm(0.0)), ForKind::kSerial);
  Stmt s2 = for_loop("i", imm(0), imm(4), store("y", var("i"), fimm(0.0)), ForKind::kVectorized);
  EXPECT_FALSE(structural_equal(s1, s2));
  EXPECT_NE(structural_hash(s1), structural_hash(s2));
  // NaN constants are equal to themselves; -0.0 and 0.0 differ.
  EXPECT_TRUE(structural_equal(fimm(std::nan("")), fimm(std::nan(""))));
  EXPECT_FALSE(structural_equal(fimm(0.0), fimm(-0.0)));
  Function d = axpy_function();
  d.name = "other";
  EXPECT_FALSE(structural_equal(a, d));
  EXPECT_NE(structural_hash(a), structural_hash(d));
}

TEST(KirVisitor, CountsLoadsAndMutatorRenamesBuffers) {
  struct CountLoads : Visitor {
    int loads = 0;
    using Visitor::visit;
    void visit(const Load& node) override {
      ++loads;
      Visitor::visit(node);
    }
  } counter;
  Function f = axpy_function();
  counter.visit(f.body);
  EXPECT_EQ(counter.loads, 2);

  struct Rename : Mutator {
    Expr visit(const Load& node, const Expr& self) override {
      if (node.buffer != "a") return Mutator::visit(node, self);
      return load(node.type, "b", mutate(node.index));
    }
  } rename;
  Stmt renamed = rename.mutate(f.body);
  EXPECT_NE(to_string(renamed).find("b[i] * x[i]"), std::string::npos) << to_string(renamed);
  // Unchanged subtrees are shared, not copied.
  struct Identity : Mutator {
  } identity;
  EXPECT_EQ(identity.mutate(f.body), f.body);
}

TEST(KirVerifier, AcceptsWellFormed) { EXPECT_TRUE(verify(axpy_function()).ok()); }

TEST(KirVerifier, RejectsMalformed) {
  Function f = axpy_function();
  auto check = [&](Stmt body, const std::string& want) {
    Function g = f;
    g.body = std::move(body);
    Status s = verify(g);
    EXPECT_FALSE(s.ok()) << to_string(g);
    EXPECT_NE(s.message().find(want), std::string::npos) << s.message();
  };
  check(store("y", var("j"), fimm(0.0)), "unbound variable 'j'");
  check(store("z", imm(0), fimm(0.0)), "unknown buffer 'z'");
  check(store("y", imm(0), fimm(0.0, f64())), "store of float64 to float32 buffer 'y'");
  check(store("y", imm(0), add(fimm(1.0), fimm(1.0, f64()))), "operand types differ");
  check(store("y", fimm(0.0), fimm(1.0)), "is not an integer");
  check(store("y", imm(0), fimm(0.0, f32(8))), "index has 1 lanes, value 8");
  check(store("y", imm(0), call(Intrinsic::kFma, {fimm(1.0), fimm(2.0)})), "fma takes 3 arguments");
  check(if_then_else(imm(1), store("y", imm(0), fimm(0.0))), "if condition must be a scalar bool");
  check(for_loop("n", imm(0), imm(1), store("y", imm(0), fimm(0.0))), "bound twice");
  check(nullptr, "no body");
  check(block({store("y", imm(0), nullptr)}), "null expression");
}

}  // namespace
}  // namespace tierjit::kir
