// Prepared constant inputs (docs/lowering.md): a Linear layer's constant [N, K] weight is handed
// to tier-2/3 code transposed, one copy shared by every version. Constants folded from one
// initializer (Reshape, Slice) share its storage with another shape and must each get their
// own prepared copy: outputs at pinned tiers 2 and 3 equal tier 0's for every such sharing.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "onnx/model_builder.h"
#include "tierjit/session.h"

namespace tierjit {
namespace {

using namespace onnx_test;  // NOLINT

constexpr int32_t kF32 = onnx::TensorProto_DataType_FLOAT;

std::vector<float> values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

Tensor input(int64_t rows, int64_t cols, uint32_t seed) {
  Tensor t = Tensor::empty(DType::kFloat32, {rows, cols});
  std::vector<float> v = values(static_cast<size_t>(rows * cols), seed);
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

// B [19, 37] initializer; Y1 = Gemm(A1[M, 37], B, transB); B2 = Reshape(B, [37, 19]) and
// Y2 = Gemm(A2[M, 19], B2, transB); Bs = Slice(B, rows 0:10) and Y3 = Gemm(A1, Bs, transB).
std::string write_shared_storage_model(const TempDir& dir) {
  onnx::GraphProto g;
  add_input(g, "A1", kF32, {"M", 37});
  add_input(g, "A2", kF32, {"M", 19});
  add_float_init(g, "B", {19, 37}, values(19 * 37, 7));
  add_int64_init(g, "shape", {37, 19});
  add_int64_init(g, "starts", {0});
  add_int64_init(g, "ends", {10});
  add_int64_init(g, "axes", {0});
  add_node(g, "Reshape", {"B", "shape"}, {"B2"});
  add_node(g, "Slice", {"B", "starts", "ends", "axes"}, {"Bs"});
  attr_int(add_node(g, "Gemm", {"A1", "B"}, {"Y1"}), "transB", 1);
  attr_int(add_node(g, "Gemm", {"A2", "B2"}, {"Y2"}), "transB", 1);
  attr_int(add_node(g, "Gemm", {"A1", "Bs"}, {"Y3"}), "transB", 1);
  add_output(g, "Y1", kF32, {"M", 19});
  add_output(g, "Y2", kF32, {"M", 37});
  add_output(g, "Y3", kF32, {"M", 10});
  dir.write("shared.onnx", serialize(make_model(g)));
  return dir.file("shared.onnx");
}

TEST(PreparedInputs, ConstantsSharingStorageGetTheirOwnCopies) {
  TempDir dir("prepared_shared");
  const std::string model = write_shared_storage_model(dir);
  SessionOptions ref_opts;
  ref_opts.mode = ExecutionMode::kInterpretOnly;
  Session ref(model, ref_opts);
  for (int tier : {2, 3}) {
    SessionOptions o;
    o.mode = ExecutionMode::kPinnedTier;
    o.pinned_tier = tier;
    Session s(model, o);
    for (int64_t m : {2, 5, 17}) {  // one row keeps B as is (dot products): not prepared
      NamedTensors feeds = {{"A1", input(m, 37, 1)}, {"A2", input(m, 19, 2)}};
      NamedTensors want = ref.run(feeds), got = s.run(feeds);
      ASSERT_EQ(got.size(), want.size());
      for (size_t o2 = 0; o2 < want.size(); ++o2) {
        const Tensor& g = got[o2].second;
        const Tensor& w = want[o2].second;
        ASSERT_EQ(g.shape(), w.shape()) << want[o2].first;
        float worst = 0;
        for (int64_t i = 0; i < w.numel(); ++i)
          worst = std::max(worst, std::fabs(g.data<float>()[i] - w.data<float>()[i]));
        EXPECT_LE(worst, 1e-4f) << "tier " << tier << " M=" << m << " output " << want[o2].first;
      }
    }
  }
}

}  // namespace
}  // namespace tierjit
