// Compiled code calling the kernel layer's microkernels (kir::CallKernel): a
// kernel that packs a weight into panels and multiplies rows by each panel,
// against a float64 reference; the verifier's checks of a call's signature.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "kernels/line_buffer.h"
#include "kernels/packed_gemm.h"
#include "kir/builder.h"

namespace tierjit::codegen {
namespace {

using namespace kir;  // NOLINT: the tests build IR
using kernels::Microkernel;

// y[M, N] = a[M, K] * b[K, N]: b packed into the workspace, then each panel
// over all rows, in a loop over panels; N, K constants, M a dim. Buffers: a, b,
// y, workspace.
Function gemm_by_panels(int64_t n, int64_t k) {
  const int64_t width = kernels::gemm_panel_width(n), panels = (n + width - 1) / width;
  Expr m = var("m");
  Expr p = var("p");
  Stmt body = block({
      call_kernel(Microkernel::kGemmPackBF32, {{"b", imm(0)}, {"ws", imm(0)}},
                  {imm(n), imm(k), imm(0)}),
      for_loop(
          "p", imm(0), imm(panels),
          call_kernel(Microkernel::kGemmPanelRowsF32,
                      {{"a", imm(0)}, {"ws", mul(p, imm(k * width))}, {"y", mul(p, imm(width))}},
                      {m, imm(k), imm(k), imm(width),
                       min(imm(width), sub(imm(n), mul(p, imm(width)))), imm(n), imm(0)})),
  });
  Function f;
  f.name = "gemm_by_panels";
  f.buffers = {{"a", DType::kFloat32},
               {"b", DType::kFloat32},
               {"y", DType::kFloat32},
               {"ws", DType::kFloat32}};
  f.dims = {"m"};
  f.body = body;
  return f;
}

TEST(MicrokernelCall, PackedPanelsMatchReference) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (bool avx2 : {false, true}) {  // the AVX2 tiles on an AVX-512 CPU too
    kernels::set_packed_matmul_force_avx2(avx2);
    for (Tier tier : {Tier::kTier1, Tier::kTier2}) {
      for (auto [n, k] :
           {std::pair<int64_t, int64_t>{10, 7}, {64, 1}, {130, 300}, {512, 256}, {1, 0}}) {
        auto compiled = compile(gemm_by_panels(n, k), CompileOptions{tier});
        ASSERT_TRUE(compiled.ok()) << compiled.status().message();
        for (int64_t m : {0, 1, 5, 6, 7, 13}) {
          std::vector<float> a(m * k + 1), b(k * n + 1), y(m * n + 1, -7.f);
          for (float& v : a) v = dist(rng);
          for (float& v : b) v = dist(rng);
          kernels::LineBuffer ws;
          ws.resize(static_cast<size_t>(kernels::gemm_packed_floats(n, k)) + 1);
          void* bufs[] = {a.data(), b.data(), y.data(), ws.data()};
          int64_t dims[] = {m};
          compiled.value()(bufs, dims);
          for (int64_t r = 0; r < m; ++r)
            for (int64_t c = 0; c < n; ++c) {
              double want = 0;
              for (int64_t kk = 0; kk < k; ++kk) want += double{a[r * k + kk]} * b[kk * n + c];
              ASSERT_NEAR(y[r * n + c], want, 1e-4 * (1 + std::abs(want)))
                  << "n " << n << " k " << k << " m " << m << " at " << r << ", " << c;
            }
          EXPECT_EQ(y[m * n], -7.f) << "wrote past y";
        }
      }
    }
  }
  kernels::set_packed_matmul_force_avx2(false);
}

TEST(MicrokernelCall, VerifierChecksTheSignature) {
  Function f = gemm_by_panels(16, 4);
  f.body = call_kernel(Microkernel::kGemmPackBF32, {{"b", imm(0)}}, {imm(16), imm(4), imm(0)});
  auto r = compile(f);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("gemm_pack_b_f32"), std::string::npos)
      << r.status().message();
  f.body = call_kernel(Microkernel::kGemmPackBF32, {{"b", imm(0)}, {"nope", imm(0)}},
                       {imm(16), imm(4), imm(0)});
  r = compile(f);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nope"), std::string::npos) << r.status().message();
  f.buffers[0].dtype = DType::kInt32;
  f.body = call_kernel(Microkernel::kGemmPackBF32, {{"a", imm(0)}, {"ws", imm(0)}},
                       {imm(16), imm(4), imm(0)});
  r = compile(f);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("int32"), std::string::npos) << r.status().message();
}

// TIERJIT_PERF_MAP=1 (the perf_map ctest entry sets it for this test alone): the compiled entry
// function is in /tmp/perf-<pid>.map at the address the kernel runs, with a non-zero size.
TEST(PerfMap, CompiledFunctionIsListedAtItsAddress) {
  const char* env = std::getenv("TIERJIT_PERF_MAP");
  if (env == nullptr || env[0] == '\0' || env[0] == '0') GTEST_SKIP() << "TIERJIT_PERF_MAP not set";
  auto compiled = compile(gemm_by_panels(10, 7), CompileOptions{Tier::kTier1});
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  std::ifstream map("/tmp/perf-" + std::to_string(getpid()) + ".map");
  ASSERT_TRUE(map.good());
  bool found = false;
  for (std::string line; std::getline(map, line);) {
    std::istringstream fields(line);
    std::string address, size, name;
    fields >> address >> size >> name;
    if (name != compiled->symbol) continue;
    found = true;
    EXPECT_EQ(std::stoull(address, nullptr, 16), reinterpret_cast<uintptr_t>(compiled->fn)) << line;
    EXPECT_GT(std::stoull(size, nullptr, 16), 0u) << line;
  }
  EXPECT_TRUE(found) << compiled->symbol << " is not in the map";
}

}  // namespace
}  // namespace tierjit::codegen
