// region_exec: compare_outputs (the verify check: rtol/atol for floats, NaN matches NaN, ±inf
// must be equal, other dtypes exact, dtype/shape mismatches named), RegionCodeStore (code shared
// while a holder lives, failures remembered) and run_compiled over a hand-written C++ kernel in
// the kernel ABI (inputs, outputs, workspace; dims of inputs then outputs).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "runtime/region_exec.h"

namespace tierjit::runtime {
namespace {

std::vector<const Tensor*> ptrs(const std::vector<Tensor>& v) {
  std::vector<const Tensor*> p;
  for (const Tensor& t : v) p.push_back(&t);
  return p;
}

TEST(CompareOutputs, FloatToleranceNanInfAndExactInts) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<Tensor> want = {Tensor::from_vector<float>({4}, {1.f, 1000.f, nan, inf})};
  // |diff| <= 1e-4 + 1e-3 * |want|: 1.0009 (diff 9e-4 <= 1.1e-3) and 1000.9 pass.
  std::vector<Tensor> ok = {Tensor::from_vector<float>({4}, {1.0009f, 1000.9f, nan, inf})};
  EXPECT_TRUE(compare_outputs(ok, ptrs(want)).ok());
  std::vector<Tensor> off = {Tensor::from_vector<float>({4}, {1.002f, 1000.f, nan, inf})};
  Status s = compare_outputs(off, ptrs(want));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("output 0 [0]"), std::string::npos) << s.message();
  std::vector<Tensor> nan_for_value = {Tensor::from_vector<float>({4}, {nan, 1000.f, nan, inf})};
  EXPECT_FALSE(compare_outputs(nan_for_value, ptrs(want)).ok());
  std::vector<Tensor> value_for_nan = {Tensor::from_vector<float>({4}, {1.f, 1000.f, 0.f, inf})};
  EXPECT_FALSE(compare_outputs(value_for_nan, ptrs(want)).ok());
  std::vector<Tensor> neg_inf = {Tensor::from_vector<float>({4}, {1.f, 1000.f, nan, -inf})};
  EXPECT_FALSE(compare_outputs(neg_inf, ptrs(want)).ok());

  std::vector<Tensor> iw = {Tensor::from_vector<int64_t>({2}, {5, -7})};
  std::vector<Tensor> ig = {Tensor::from_vector<int64_t>({2}, {5, -6})};
  Status si = compare_outputs(ig, ptrs(iw));
  ASSERT_FALSE(si.ok());
  EXPECT_NE(si.message().find("output 0 [1]: -6 vs tier 0 -7"), std::string::npos) << si.message();
}

TEST(CompareOutputs, ShapeDtypeAndCountMismatches) {
  std::vector<Tensor> want = {Tensor::zeros(DType::kFloat32, {2, 3})};
  std::vector<Tensor> shape = {Tensor::zeros(DType::kFloat32, {3, 2})};
  std::vector<Tensor> dtype = {Tensor::zeros(DType::kFloat64, {2, 3})};
  EXPECT_FALSE(compare_outputs(shape, ptrs(want)).ok());
  EXPECT_FALSE(compare_outputs(dtype, ptrs(want)).ok());
  EXPECT_FALSE(compare_outputs({}, ptrs(want)).ok());
  std::vector<Tensor> empty_want = {Tensor::zeros(DType::kFloat32, {0, 3})};
  std::vector<Tensor> empty_got = {Tensor::zeros(DType::kFloat32, {0, 3})};
  EXPECT_TRUE(compare_outputs(empty_got, ptrs(empty_want)).ok());
}

// out0[i] = in0[i] * in1[0] + workspace check; dims = in0 dims, in1 dims, out0 dims.
void scale_kernel(void* const* buffers, const int64_t* dims) {
  const float* x = static_cast<const float*>(buffers[0]);
  const float* s = static_cast<const float*>(buffers[1]);
  float* y = static_cast<float*>(buffers[2]);
  float* ws = static_cast<float*>(buffers[3]);
  const int64_t n = dims[0];  // in0 is rank 1, in1 rank 1 (dims[1] == 1), out0 dims[2] == n
  ws[0] = s[0];
  for (int64_t i = 0; i < n && i < dims[2]; ++i) y[i] = x[i] * ws[0];
}

TEST(RunCompiled, CallsTheKernelWithTheAbi) {
  CompiledRegion c;
  c.kernel.fn = &scale_kernel;
  c.workspace_bytes = 64;
  Tensor x = Tensor::from_vector<float>({5}, {1, 2, 3, 4, 5});
  Tensor s = Tensor::from_vector<float>({1}, {2});
  auto outs = run_compiled(c, {&x, &s}, {DType::kFloat32}, {{5}});
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].shape(), (Shape{5}));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(outs[0].data<float>()[i], 2.f * static_cast<float>(i + 1));
  // The same through the VersionEntry interface, outputs allocated by the caller.
  CompiledEntry entry(std::make_shared<CompiledRegion>(c));
  Tensor y = Tensor::zeros(DType::kFloat32, {5});
  const Tensor* in[] = {&x, &s};
  Tensor* out[] = {&y};
  ASSERT_TRUE(entry.run(RegionCall{in, out}).ok());
  EXPECT_EQ(y.data<float>()[4], 10.f);
  Tensor undefined;
  Tensor* bad[] = {&undefined};
  EXPECT_FALSE(entry.run(RegionCall{in, bad}).ok());
}

TEST(RegionCodeStore, SharesLiveCodeAndRemembersFailures) {
  RegionCodeStore store(2);
  auto a = std::make_shared<CompiledRegion>();
  a->key = 7;
  EXPECT_EQ(store.find(0, 7), nullptr);
  EXPECT_EQ(store.install(0, a), a);
  EXPECT_EQ(store.find(0, 7), a);
  EXPECT_EQ(store.find(1, 7), nullptr);  // per region
  auto b = std::make_shared<CompiledRegion>();
  b->key = 7;
  EXPECT_EQ(store.install(0, b), a);  // the live one wins
  a.reset();
  EXPECT_EQ(store.find(0, 7), nullptr);  // no holder left: the code is gone
  EXPECT_EQ(store.install(0, b), b);
  EXPECT_FALSE(store.failure(1, 9).has_value());
  store.record_failure(1, 9, "lowering: no");
  ASSERT_TRUE(store.failure(1, 9).has_value());
  EXPECT_EQ(*store.failure(1, 9), "lowering: no");
}

TEST(RegionCodeStore, L1CacheKeepsCodeAfterItsHoldersWithinBudget) {
  // CompiledRegion::bytes() = object bytes + sizeof(CompiledRegion); three fit, the fourth evicts.
  const size_t entry = sizeof(CompiledRegion) + 1000;
  RegionCodeStore store(1, 3 * entry);
  std::vector<cache::Eviction> evicted;
  for (uint64_t key = 1; key <= 3; ++key) {
    auto c = std::make_shared<CompiledRegion>();
    c->key = key;
    c->kernel.object_bytes = 1000;
    c->kernel.compile_us = static_cast<int64_t>(key) * 1000;  // key 1 is the cheapest to rebuild
    store.install(0, c, &evicted);
  }  // no holder left: only L1 keeps them
  EXPECT_TRUE(evicted.empty());
  bool from_l1 = false;
  auto two = store.find(0, 2, &from_l1);
  ASSERT_NE(two, nullptr);
  EXPECT_TRUE(from_l1);
  auto d = std::make_shared<CompiledRegion>();
  d->key = 4;
  d->kernel.object_bytes = 1000;
  d->kernel.compile_us = 4000;
  store.install(0, d, &evicted);
  ASSERT_EQ(evicted.size(), 1u);  // lowest (hits x saved + compile µs) / bytes: key 1
  EXPECT_EQ(store.find(0, 1), nullptr);
  EXPECT_NE(store.find(0, 3), nullptr);
  EXPECT_EQ(store.l1_stats().evictions, 1u);
  RegionCodeStore none(1, 0);  // no L1: code lives only while held
  auto e = std::make_shared<CompiledRegion>();
  e->key = 5;
  none.install(0, e);
  e.reset();
  EXPECT_EQ(none.find(0, 5), nullptr);
}

}  // namespace
}  // namespace tierjit::runtime
