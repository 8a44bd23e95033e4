// Whole-plan programs (codegen::compile_program): kernels called in order from one entry with
// fixed buffer bindings (io pointers, arena offsets, fixed addresses) and constant dims. Checked
// against values computed by hand, at both tiers, with an intermediate that lives in the arena
// and a kernel reading a fixed address; malformed programs are refused with kInvalidArgument.
#include <gtest/gtest.h>

#include <vector>

#include "codegen/codegen.h"
#include "kir/builder.h"

namespace tierjit::codegen {
namespace {

using namespace kir;  // NOLINT: the tests build IR

// y[i] = x[i] * s[0] + c for i in [0, n): buffers x, s, y; dim n.
Function scale_add(const std::string& name, float c) {
  Expr i = var("i");
  Stmt body = for_loop("i", imm(0), var("n"),
                       store("y", i, add(mul(load(f32(), "x", i), load(f32(), "s", imm(0))),
                                         fimm(c, f32()))));
  return Function{name, {{"x", DType::kFloat32}, {"s", DType::kFloat32}, {"y", DType::kFloat32}},
                  {"n"}, body};
}

TEST(Program, ChainThroughTheArenaWithFixedAddresses) {
  const Function first = scale_add("first", 1.f), second = scale_add("second", -0.5f);
  const float two = 2.f, three = 3.f;
  for (Tier tier : {Tier::kTier1, Tier::kTier2}) {
    for (int64_t n : {0, 1, 7, 100}) {
      // io: 0 = x (feed), 1 = y (output); t = first(x, two) in the arena at byte 64;
      // y = second(t, three).
      Program p;
      p.name = "chain";
      p.num_io = 2;
      using K = ProgramArg::Kind;
      p.calls.push_back({&first,
                         {{K::kIo, 0}, {K::kAddress, reinterpret_cast<int64_t>(&two)}, {K::kArena, 64}},
                         {n}});
      p.calls.push_back({&second,
                         {{K::kArena, 64}, {K::kAddress, reinterpret_cast<int64_t>(&three)}, {K::kIo, 1}},
                         {n}});
      auto k = compile_program(p, CompileOptions{tier});
      ASSERT_TRUE(k.ok()) << k.status().message();
      std::vector<float> x(n + 1), y(n + 1, -99.f);
      for (int64_t i = 0; i < n; ++i) x[i] = 0.25f * static_cast<float>(i) - 3.f;
      alignas(64) static float arena[64 + 128];
      void* io[3] = {x.data(), y.data(), arena};
      (*k)(io, nullptr);
      for (int64_t i = 0; i < n; ++i)
        EXPECT_FLOAT_EQ(y[i], (x[i] * 2.f + 1.f) * 3.f - 0.5f) << "n " << n << " i " << i;
      EXPECT_EQ(y[n], -99.f) << "wrote past the end";
    }
  }
}

TEST(Program, MalformedProgramsAreRefused) {
  const Function f = scale_add("f", 0.f);
  using K = ProgramArg::Kind;
  Program too_few{"few", 1, {{&f, {{K::kIo, 0}}, {4}}}};
  EXPECT_EQ(compile_program(too_few).status().code(), StatusCode::kInvalidArgument);
  Program bad_io{"io", 1, {{&f, {{K::kIo, 0}, {K::kIo, 1}, {K::kIo, 0}}, {4}}}};
  auto r = compile_program(bad_io);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("io buffer 1 of 1"), std::string::npos) << r.status().message();
  Program no_dims{"dims", 1, {{&f, {{K::kIo, 0}, {K::kIo, 0}, {K::kIo, 0}}, {}}}};
  EXPECT_EQ(compile_program(no_dims).status().code(), StatusCode::kInvalidArgument);
  Program null_fn{"null", 0, {{nullptr, {}, {}}}};
  EXPECT_EQ(compile_program(null_fn).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tierjit::codegen
