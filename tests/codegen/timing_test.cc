// codegen compile and run time per tier for the small elementwise kernel of docs/codegen.md.
// Disabled by default (speed is not asserted in tests); run with
//   build/tests/tierjit_codegen_tests --gtest_also_run_disabled_tests --gtest_filter='*Timing*'
// It prints one line per tier: median compile µs over 20 compiles, and ns/element of
// y = tanh(a*x+b)*c over 16K floats (median of 200 runs), next to a scalar C++ loop with std::tanh.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "codegen/codegen.h"
#include "kir/builder.h"
#include "test_kernels.h"

namespace tierjit::codegen {
namespace {

using namespace kir;  // NOLINT

// y = tanh(a*x+b)*c (test_kernels.h).
Function elementwise() { return test_kernels::tanh_kernel(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

TEST(CodegenTiming, DISABLED_CompileAndRunPerTier) {
  const int64_t n = 1 << 14;  // 320 KiB over 5 arrays: in L2, so compute-bound
  std::vector<float> a(n, 0.5f), x(n), b(n, 0.1f), c(n, 2.0f), y(n);
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 1000) * 0.004f - 2.0f;
  void* bufs[] = {a.data(), x.data(), b.data(), c.data(), y.data()};
  int64_t dims[] = {n};
  auto time_ns = [](auto&& fn) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  };
  (void)compile(elementwise(), CompileOptions{Tier::kTier1});  // first compile in the process
  for (Tier tier : {Tier::kTier1, Tier::kTier2}) {
    std::vector<double> compile_us, opt_us, cg_us, link_us, run_ns;
    CompiledKernel k;
    for (int rep = 0; rep < 20; ++rep) {
      auto r = compile(elementwise(), CompileOptions{tier});
      ASSERT_TRUE(r.ok()) << r.status().message();
      compile_us.push_back(static_cast<double>(r->compile_us));
      opt_us.push_back(static_cast<double>(r->optimize_us));
      cg_us.push_back(static_cast<double>(r->codegen_us));
      link_us.push_back(static_cast<double>(r->link_us));
      k = std::move(r).value();
    }
    for (int rep = 0; rep < 200; ++rep) run_ns.push_back(time_ns([&] { k(bufs, dims); }) / n);
    std::printf(
        "tier %d: compile %.0f us (median of 20; optimize %.0f, codegen %.0f, link %.0f), run %.3f "
        "ns/element, object %zu bytes\n",
        static_cast<int>(tier), median(compile_us), median(opt_us), median(cg_us), median(link_us),
        median(run_ns), k.object_bytes);
  }
  std::vector<double> ref_ns;
  for (int rep = 0; rep < 200; ++rep) {
    ref_ns.push_back(time_ns([&] {
                       for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(a[i] * x[i] + b[i]) * c[i];
                     }) /
                     n);
  }
  std::printf("g++ -O2 scalar loop with std::tanh: %.3f ns/element\n", median(ref_ns));
  std::printf("cpu %s (host %s), vector bits %d\n", host_cpu().cpu.c_str(),
              host_cpu().host_cpu.c_str(), host_cpu().vector_bits);
}

}  // namespace
}  // namespace tierjit::codegen
