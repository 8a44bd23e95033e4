// codegen: kir functions compiled at tier 1 and tier 2 against scalar C++ references; strided
// 2-D loops, a blocked reduction, vector gathers, errors, freeing code, concurrent compiles.
#include "codegen/codegen.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <cmath>
#include <ostream>
#include <random>
#include <sstream>
#include <thread>

#include "kir/builder.h"
#include "support/log.h"
#include "test_kernels.h"

namespace tierjit::codegen {

// gtest prints a Tier parameter with this (found by argument-dependent lookup; its raw byte
// otherwise).
[[maybe_unused]] static void PrintTo(Tier t, std::ostream* os) { *os << "tier " << static_cast<int>(t); }

namespace {

using namespace kir;  // NOLINT: the tests build IR

class CodegenTier : public ::testing::TestWithParam<Tier> {
 protected:
  CompiledKernel compile_ok(const Function& f) {
    auto k = compile(f, CompileOptions{GetParam()});
    EXPECT_TRUE(k.ok()) << k.status().message() << "\n" << to_string(f);
    if (!k.ok()) return CompiledKernel{};
    return std::move(k).value();
  }
};

// y[i] = tanh(a[i] * x[i] + b[i]) * c[i] for i in [0, dims[0]).
using test_kernels::tanh_kernel;

TEST_P(CodegenTier, TanhElementwiseMatchesReference) {
  CompiledKernel k = compile_ok(tanh_kernel());
  ASSERT_NE(k.fn, nullptr);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  for (int64_t n : {0, 1, 7, 1000003}) {
    std::vector<float> a(n + 1), x(n + 1), b(n + 1), c(n + 1), y(n + 1, -42.0f);
    for (int64_t i = 0; i < n; ++i) {
      a[i] = dist(rng);
      x[i] = dist(rng);
      b[i] = dist(rng);
      c[i] = dist(rng);
    }
    void* bufs[] = {a.data(), x.data(), b.data(), c.data(), y.data()};
    int64_t dims[] = {n};
    k(bufs, dims);
    for (int64_t i = 0; i < n; ++i) {
      double t = static_cast<double>(a[i]) * x[i] + b[i];
      double ref = std::tanh(t) * c[i];
      // tanh within 3 ulp (docs/codegen.md), one more rounding for * c, and the float rounding
      // of a*x and +b (up to half an ulp of |a*x| + |b| each; tanh' <= 1).
      double t_err = 6e-8 * (std::abs(static_cast<double>(a[i]) * x[i]) + std::abs(t));
      ASSERT_NEAR(y[i], ref, 4.8e-7 * std::abs(ref) + std::abs(c[i]) * t_err)
          << "n=" << n << " i=" << i << " t=" << t;
    }
    EXPECT_EQ(y[n], -42.0f) << "wrote past the end for n=" << n;
  }
  EXPECT_GT(k.compile_us, 0);
}

// out[i * os0 + j * os1] = in[i * is0 + j * is1] * 2 + bias[j]; all sizes and strides are dims.
TEST_P(CodegenTier, StridedLoopNest) {
  Expr i = var("i"), j = var("j");
  Expr src = add(mul(i, var("is0")), mul(j, var("is1")));
  Expr dst = add(mul(i, var("os0")), mul(j, var("os1")));
  Stmt body = for_loop(
      "i", imm(0), var("rows"),
      for_loop(
          "j", imm(0), var("cols"),
          store("out", dst, add(mul(load(f32(), "in", src), fimm(2.0)), load(f32(), "bias", j)))));
  Function f{"strided",
             {{"in", DType::kFloat32}, {"bias", DType::kFloat32}, {"out", DType::kFloat32}},
             {"rows", "cols", "is0", "is1", "os0", "os1"},
             body};
  CompiledKernel k = compile_ok(f);
  ASSERT_NE(k.fn, nullptr);
  // A 5x3 input read transposed from a 3x5 row-major array, written to a 5x3 row-major output.
  const int64_t rows = 5, cols = 3;
  std::vector<float> in(15), bias = {10, 20, 30}, out(15, 0);
  for (int v = 0; v < 15; ++v) in[v] = static_cast<float>(v);
  void* bufs[] = {in.data(), bias.data(), out.data()};
  int64_t dims[] = {rows, cols, /*is0=*/1, /*is1=*/5, /*os0=*/3, /*os1=*/1};
  k(bufs, dims);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      // in viewed transposed: element (r, c) is in[c * 5 + r].
      EXPECT_EQ(out[r * 3 + c], in[c * 5 + r] * 2 + bias[c]) << r << "," << c;
    }
  }
}

// y[r] = sum_c x[r * cols + c] with a 16-lane vector accumulator (acc) and a scalar tail.
Function row_sum_kernel(ForKind rows_kind = ForKind::kSerial) {
  const int lanes = 16;
  Expr r = var("r"), blk = var("blk"), t = var("t");
  Expr row = mul(r, var("cols"));
  Expr acc_idx = ramp(imm(0), imm(1), lanes);
  Stmt init = store("acc", acc_idx, broadcast(fimm(0.0), lanes));
  Stmt blocks = for_loop(
      "blk", imm(0), div(var("cols"), imm(lanes)),
      store("acc", acc_idx,
            add(load(f32(lanes), "acc", acc_idx),
                load(f32(lanes), "x", ramp(add(row, mul(blk, imm(lanes))), imm(1), lanes)))));
  Stmt tail = for_loop(
      "t", mul(div(var("cols"), imm(lanes)), imm(lanes)), mod(var("cols"), imm(lanes)),
      store("acc", imm(0), add(load(f32(), "acc", imm(0)), load(f32(), "x", add(row, t)))));
  // Fold the 16 partial sums pairwise: 16 -> 8 -> 4 -> 2 -> 1.
  std::vector<Stmt> fold;
  for (int w = lanes / 2; w >= 1; w /= 2) {
    fold.push_back(
        for_loop("l" + std::to_string(w), imm(0), imm(w),
                 store("acc", var("l" + std::to_string(w)),
                       add(load(f32(), "acc", var("l" + std::to_string(w))),
                           load(f32(), "acc", add(var("l" + std::to_string(w)), imm(w))))),
                 ForKind::kUnrolled));
  }
  fold.push_back(store("y", r, load(f32(), "acc", imm(0))));
  std::vector<Stmt> row_body = {init, blocks, tail};
  row_body.insert(row_body.end(), fold.begin(), fold.end());
  Stmt body = for_loop("r", imm(0), var("rows"),
                       allocate("acc", DType::kFloat32, lanes, block(row_body)), rows_kind);
  return Function{
      "row_sum", {{"x", DType::kFloat32}, {"y", DType::kFloat32}}, {"rows", "cols"}, body};
}

TEST_P(CodegenTier, BlockedRowSumIsExactOnManyOnes) {
  CompiledKernel k = compile_ok(row_sum_kernel());
  ASSERT_NE(k.fn, nullptr);
  const int64_t n = int64_t{1} << 24;
  std::vector<float> x(n, 1.0f), y(1, 0.0f);
  void* bufs[] = {x.data(), y.data()};
  int64_t dims[] = {1, n};
  k(bufs, dims);
  EXPECT_EQ(y[0], 16777216.0f);  // 2^24: each lane sums 2^20 ones exactly
  // Odd shapes (tail only, blocks and tail, empty rows) against a double reference.
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{3, 5}, {4, 37}, {2, 0}, {1, 16}}) {
    std::vector<float> m(rows * cols), out(rows, -1.0f);
    for (int64_t v = 0; v < rows * cols; ++v) m[v] = 0.25f * static_cast<float>(v % 7) - 0.5f;
    void* b2[] = {m.data(), out.data()};
    int64_t d2[] = {rows, cols};
    k(b2, d2);
    for (int64_t r = 0; r < rows; ++r) {
      double ref = 0;
      for (int64_t c = 0; c < cols; ++c) ref += m[r * cols + c];
      EXPECT_EQ(out[r], static_cast<float>(ref))
          << rows << "x" << cols << " row " << r;  // quarters: exact
    }
  }
}

// Integer arithmetic, compares, select, casts, let, if, gathers: y[i] = f(x[idx[i]]).
TEST_P(CodegenTier, GatherSelectCastLetIf) {
  const int lanes = 8;
  Expr i = var("i");
  Expr vi = ramp(mul(i, imm(lanes)), imm(1), lanes);  // the 8 elements of block i
  Expr gather_index = cast(i64(lanes), load(i32(lanes), "idx", vi));
  Expr g = load(f32(lanes), "x", gather_index);  // gather
  Expr neg = compare(CmpOp::kLt, g, broadcast(fimm(0.0), lanes));
  Stmt body = for_loop("i", imm(0), div(var("n"), imm(lanes)),
                       let("v", select(neg, mul(g, broadcast(fimm(-2.0), lanes)), g),
                           block({store("y", vi, var("v", f32(lanes))),
                                  store("k", vi, cast(i32(lanes), var("v", f32(lanes)))),
                                  if_then_else(compare(CmpOp::kEq, mod(i, imm(2)), imm(0)),
                                               store("flag", i, imm(1, boolean())),
                                               store("flag", i, imm(0, boolean())))})));
  Function f{"gather",
             {{"x", DType::kFloat32},
              {"idx", DType::kInt32},
              {"y", DType::kFloat32},
              {"k", DType::kInt32},
              {"flag", DType::kBool}},
             {"n"},
             body};
  CompiledKernel k = compile_ok(f);
  ASSERT_NE(k.fn, nullptr);
  const int64_t n = 24;
  std::vector<float> x(n), y(n);
  std::vector<int32_t> idx(n), ki(n);
  std::vector<uint8_t> flag(n / lanes, 7);
  for (int64_t v = 0; v < n; ++v) {
    x[v] = static_cast<float>(v) - 11.5f;
    idx[v] = static_cast<int32_t>((v * 5) % n);
  }
  void* bufs[] = {x.data(), idx.data(), y.data(), ki.data(), flag.data()};
  int64_t dims[] = {n};
  k(bufs, dims);
  for (int64_t v = 0; v < n; ++v) {
    float g = x[idx[v]];
    float want = g < 0 ? g * -2.0f : g;
    EXPECT_EQ(y[v], want) << v;
    EXPECT_EQ(ki[v], static_cast<int32_t>(want)) << v;
  }
  EXPECT_EQ(flag, (std::vector<uint8_t>{1, 0, 1}));
}

// Parallel loops run through libgomp (GOMP_parallel with an outlined body).
TEST_P(CodegenTier, ParallelLoops) {
  CompiledKernel k = compile_ok(tanh_kernel(ForKind::kParallel));
  ASSERT_NE(k.fn, nullptr);
  for (int64_t n : {0, 1, 3, 100003}) {
    std::vector<float> a(n, 0.5f), x(n), b(n, 0.25f), c(n, 2.0f), y(n, -1.0f);
    for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 101) * 0.02f - 1.0f;
    void* bufs[] = {a.data(), x.data(), b.data(), c.data(), y.data()};
    int64_t dims[] = {n};
    k(bufs, dims);
    for (int64_t i = 0; i < n; ++i) {
      double ref = std::tanh(0.5 * x[i] + 0.25) * 2.0;
      ASSERT_NEAR(y[i], ref, 1e-6) << "n=" << n << " i=" << i;
    }
  }
  // Parallel rows, each with its own scratch accumulator (allocated per thread).
  CompiledKernel rs = compile_ok(row_sum_kernel(ForKind::kParallel));
  ASSERT_NE(rs.fn, nullptr);
  const int64_t rows = 37, cols = 1001;
  std::vector<float> m(rows * cols), out(rows);
  for (int64_t v = 0; v < rows * cols; ++v) m[v] = static_cast<float>(v / cols);  // row r is all r
  void* bufs[] = {m.data(), out.data()};
  int64_t dims[] = {rows, cols};
  rs(bufs, dims);
  for (int64_t r = 0; r < rows; ++r) EXPECT_EQ(out[r], static_cast<float>(r * cols)) << r;
}

INSTANTIATE_TEST_SUITE_P(Tiers, CodegenTier, ::testing::Values(Tier::kTier1, Tier::kTier2),
                         [](const auto& info) {
                           return "Tier" + std::to_string(static_cast<int>(info.param));
                         });

// A loop asked to vectorize that LLVM cannot (y[i] = y[i - 1] + x[i]: each element needs the one
// before it) makes LLVM report "loop not vectorized"; the report goes to tierjit's log at debug
// level naming the kernel, not to stderr (a user saw it printed on a pinned tier-3 run), and the
// kernel still computes the prefix sum.
TEST(Codegen, LlvmDiagnosticsGoToTheLogNotStderr) {
  Expr i = var("i");
  Stmt body = for_loop("i", imm(1), sub(var("n"), imm(1)),
                       store("y", i, add(load(f32(), "y", sub(i, imm(1))), load(f32(), "x", i))),
                       ForKind::kVectorized);
  Function f{"prefix_sum", {{"x", DType::kFloat32}, {"y", DType::kFloat32}}, {"n"}, body};
  // At the default level (warn) nothing reaches stderr.
  spdlog::logger& log = support::logger();
  const spdlog::level::level_enum level = log.level();
  log.set_level(spdlog::level::warn);
  ::testing::internal::CaptureStderr();
  auto k = compile(f, CompileOptions{Tier::kTier2});
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_EQ(err.find("loop not vectorized"), std::string::npos) << err;
  // At debug (TIERJIT_LOG=debug) the log has it, naming the kernel.
  std::ostringstream captured;
  log.sinks().push_back(std::make_shared<spdlog::sinks::ostream_sink_mt>(captured));
  log.set_level(spdlog::level::debug);
  ::testing::internal::CaptureStderr();  // the logger's own stderr sink: not checked
  ASSERT_TRUE(compile(f, CompileOptions{Tier::kTier2}).ok());
  (void)::testing::internal::GetCapturedStderr();
  log.sinks().pop_back();
  log.set_level(level);
  EXPECT_NE(captured.str().find("codegen: LLVM on kernel 'prefix_sum': "), std::string::npos)
      << captured.str();
  EXPECT_NE(captured.str().find("loop not vectorized"), std::string::npos) << captured.str();
  EXPECT_EQ(captured.str().find("<unknown>:0:0"), std::string::npos) << captured.str();  // no location
  std::vector<float> x(37), y(37, 0.f);
  for (size_t v = 0; v < x.size(); ++v) x[v] = static_cast<float>(v);
  void* bufs[] = {x.data(), y.data()};
  int64_t dims[] = {37};
  k.value()(bufs, dims);
  for (size_t v = 0; v < y.size(); ++v) EXPECT_EQ(y[v], static_cast<float>(v * (v + 1) / 2)) << v;
}

TEST(Codegen, MalformedFunctionsReturnErrors) {
  Function f = tanh_kernel();
  f.body = store("y", var("nope"), fimm(1.0));
  auto k = compile(f);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(k.status().message().find("unbound variable 'nope'"), std::string::npos)
      << k.status().message();

  Function h{"half",
             {{"x", DType::kFloat16}},
             {},
             store("x", imm(0), load(Type{DType::kFloat16}, "x", imm(1)))};
  auto k2 = compile(h);
  ASSERT_FALSE(k2.ok());
  EXPECT_EQ(k2.status().code(), StatusCode::kUnsupported) << k2.status().message();

  Function empty{"empty", {}, {}, nullptr};
  EXPECT_FALSE(compile(empty).ok());
}

TEST(Codegen, FreeingAKernelThenCompilingAgainWorks) {
  for (int round = 0; round < 3; ++round) {
    auto k = compile(tanh_kernel(), CompileOptions{Tier::kTier1});
    ASSERT_TRUE(k.ok()) << k.status().message();
    std::vector<float> a = {1}, x = {0.5f}, b = {0}, c = {2}, y = {0};
    void* bufs[] = {a.data(), x.data(), b.data(), c.data(), y.data()};
    int64_t dims[] = {1};
    k->fn(bufs, dims);
    EXPECT_NEAR(y[0], 2 * std::tanh(0.5), 1e-6);
    k->code.reset();  // removes the code from the JIT
  }
}

TEST(Codegen, ObjectRelinksAfterTheCompiledCodeIsFreed) {
  auto k = compile(tanh_kernel(), CompileOptions{Tier::kTier1, /*keep_object=*/true});
  ASSERT_TRUE(k.ok()) << k.status().message();
  ASSERT_EQ(k->object.size(), k->object_bytes);
  std::string object = k->object, symbol = k->symbol;
  // While the compiled copy is loaded, the same symbol cannot be linked again: an error.
  EXPECT_FALSE(link_object(object, symbol).ok());
  k->code.reset();
  auto relinked = link_object(object, symbol);  // as from the code cache
  ASSERT_TRUE(relinked.ok()) << relinked.status().message();
  std::vector<float> a = {1, 2}, x = {0.5f, -1}, b = {0, 0.5f}, c = {2, 1}, y = {0, 0};
  void* bufs[] = {a.data(), x.data(), b.data(), c.data(), y.data()};
  int64_t dims[] = {2};
  relinked->fn(bufs, dims);
  EXPECT_NEAR(y[0], 2 * std::tanh(0.5), 1e-6);
  EXPECT_NEAR(y[1], std::tanh(-1.5), 1e-6);
  EXPECT_FALSE(link_object("not an object", "tj_x").ok());
}

TEST(Codegen, TwoThreadsCompileConcurrently) {
  std::atomic<int> failures{0};
  auto worker = [&](Tier tier) {
    for (int rep = 0; rep < 4; ++rep) {
      auto k = compile(rep % 2 ? row_sum_kernel() : tanh_kernel(), CompileOptions{tier});
      if (!k.ok()) {
        ++failures;
        continue;
      }
      if (rep % 2) {
        std::vector<float> x(100, 1.0f), y(2);
        void* bufs[] = {x.data(), y.data()};
        int64_t dims[] = {2, 50};
        k->fn(bufs, dims);
        if (y[0] != 50.0f || y[1] != 50.0f) ++failures;
      }
    }
  };
  std::thread t1(worker, Tier::kTier1), t2(worker, Tier::kTier2);
  t1.join();
  t2.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(Codegen, Tier2VectorizesForTheHostWidth) {
  auto ir = emit_llvm_ir(tanh_kernel(), CompileOptions{Tier::kTier2});
  ASSERT_TRUE(ir.ok()) << ir.status().message();
  std::string want = "<" + std::to_string(host_cpu().f32_lanes()) + " x float>";
  EXPECT_NE(ir->find(want), std::string::npos) << "no " << want << " in\n" << *ir;
  auto ir1 = emit_llvm_ir(tanh_kernel(), CompileOptions{Tier::kTier1});
  ASSERT_TRUE(ir1.ok()) << ir1.status().message();
  EXPECT_NE(ir1->find(" x float>"), std::string::npos) << "tier 1 did not vectorize:\n" << *ir1;
}

}  // namespace
}  // namespace tierjit::codegen
