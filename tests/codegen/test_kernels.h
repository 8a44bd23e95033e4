// kir kernels shared by the codegen tests (codegen_test.cc, timing_test.cc).
#pragma once

#include "kir/builder.h"

namespace tierjit::codegen::test_kernels {

/// y[i] = tanh(a[i] * x[i] + b[i]) * c[i] for i in [0, n); buffers a, x, b, c, y (float32) and
/// the one dim n. `kind` is the loop kind (serial or parallel).
inline kir::Function tanh_kernel(kir::ForKind kind = kir::ForKind::kSerial) {
  using namespace kir;  // NOLINT: builds IR
  Expr i = var("i");
  auto ld = [&](const char* buf) { return load(f32(), buf, i); };
  Expr t = add(mul(ld("a"), ld("x")), ld("b"));
  Stmt body = for_loop("i", imm(0), var("n"),
                       store("y", i, mul(call(Intrinsic::kTanh, {t}), ld("c"))), kind);
  return Function{"tanh_fma",
                  {{"a", DType::kFloat32},
                   {"x", DType::kFloat32},
                   {"b", DType::kFloat32},
                   {"c", DType::kFloat32},
                   {"y", DType::kFloat32}},
                  {"n"},
                  body};
}

}  // namespace tierjit::codegen::test_kernels
