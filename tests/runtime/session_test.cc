// Public Session API: results against the demo model's reference, feed validation errors
// (each a thrown tierjit::Error with a one-line message), and concurrent run() from 8 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "cli_util.h"
#include "tierjit/session.h"

namespace tierjit {
namespace {

const std::string kModelDir = std::string(TIERJIT_SOURCE_DIR) + "/models";
const std::string kDemo = kModelDir + "/demo_mlp.onnx";

Tensor load_npy(const std::string& path) { return cli::read_npy(path).value_or_throw(); }

// Reference: torch 1.13 eager on the same weights (scripts/make_demo_model.py).
void expect_close(const Tensor& got, const Tensor& ref) {
  ASSERT_EQ(got.shape(), ref.shape());
  for (int64_t i = 0; i < ref.numel(); ++i) {
    double r = ref.value_as_double(i), g = got.value_as_double(i);
    EXPECT_LE(std::fabs(g - r), 1e-4 + 1e-3 * std::fabs(r)) << "at " << i;
  }
}

TEST(Session, DemoMatchesReferenceAndMetadata) {
  Session s(kDemo);
  ASSERT_EQ(s.inputs().size(), 1u);
  EXPECT_EQ(s.inputs()[0].name, "x");
  EXPECT_EQ(s.inputs()[0].dtype, DType::kFloat32);
  ASSERT_EQ(s.inputs()[0].shape.size(), 2u);
  EXPECT_EQ(s.inputs()[0].shape[0], -1);  // symbolic batch
  EXPECT_FALSE(s.inputs()[0].dim_names[0].empty());
  EXPECT_EQ(s.inputs()[0].shape[1], 64);
  ASSERT_EQ(s.outputs().size(), 1u);
  auto out = s.run({{"x", load_npy(kModelDir + "/demo_ref/input_x.npy")}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first, s.outputs()[0].name);
  expect_close(out[0].second, load_npy(kModelDir + "/demo_ref/output_0.npy"));
}

TEST(Session, BatchSizesZeroAndOne) {
  Session s(kDemo);
  auto zero = s.run({{"x", Tensor::zeros(DType::kFloat32, {0, 64})}});
  EXPECT_EQ(zero[0].second.shape(), (Shape{0, 10}));
  // Row i of a batch equals the same row run alone (batch 1).
  Tensor x = load_npy(kModelDir + "/demo_ref/input_x.npy");
  auto full = s.run({{"x", x}});
  auto one = s.run({{"x", x.slice_rows(1, 2).clone()}});
  ASSERT_EQ(one[0].second.shape(), (Shape{1, 10}));
  for (int j = 0; j < 10; ++j)
    EXPECT_NEAR(one[0].second.data<float>()[j], full[0].second.data<float>()[10 + j], 1e-5);
}

StatusCode code_of(const Session& s, const NamedTensors& feeds, std::string* message) {
  try {
    s.run(feeds);
  } catch (const Error& e) {
    *message = e.what();
    return e.code();
  }
  return StatusCode::kOk;
}

TEST(Session, BadFeedsThrowOneLineErrors) {
  Session s(kDemo);
  std::string msg;
  Tensor good = Tensor::zeros(DType::kFloat32, {2, 64});
  EXPECT_EQ(code_of(s, {}, &msg), StatusCode::kInvalidArgument);
  EXPECT_NE(msg.find("'x' is missing"), std::string::npos) << msg;
  EXPECT_EQ(code_of(s, {{"x", good}, {"y", good}}, &msg), StatusCode::kInvalidArgument);
  EXPECT_NE(msg.find("no input 'y'"), std::string::npos) << msg;
  EXPECT_EQ(code_of(s, {{"x", good}, {"x", good}}, &msg), StatusCode::kInvalidArgument);
  EXPECT_EQ(code_of(s, {{"x", Tensor::zeros(DType::kInt64, {2, 64})}}, &msg),
            StatusCode::kInvalidArgument);
  EXPECT_NE(msg.find("dtype"), std::string::npos) << msg;
  EXPECT_EQ(code_of(s, {{"x", Tensor::zeros(DType::kFloat32, {64})}}, &msg),
            StatusCode::kInvalidArgument);
  EXPECT_NE(msg.find("rank"), std::string::npos) << msg;
  EXPECT_EQ(code_of(s, {{"x", Tensor::zeros(DType::kFloat32, {2, 63})}}, &msg),
            StatusCode::kInvalidArgument);
  EXPECT_NE(msg.find("dim 1 must be 64"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_NE(msg.find("demo_mlp.onnx"), std::string::npos) << msg;
  // The session still serves after bad input.
  EXPECT_EQ(s.run({{"x", good}})[0].second.shape(), (Shape{2, 10}));
}

TEST(Session, MissingModelThrowsNotFound) {
  try {
    Session s(kModelDir + "/no_such_model.onnx");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("no_such_model.onnx"), std::string::npos);
  }
}

// Thread counts and horizons out of range are one-line InvalidArgument errors naming the option
// (a huge compile_threads used to abort the process starting threads); the largest accepted work.
TEST(Session, ThreadCountsOutOfRangeAreErrors) {
  auto code_for = [](SessionOptions o, std::string* msg) {
    try {
      Session s(kDemo, o);
      return StatusCode::kOk;
    } catch (const Error& e) {
      *msg = e.what();
      return e.code();
    }
  };
  std::string msg;
  for (int bad : {-1, kMaxIntraOpThreads + 1}) {
    SessionOptions o;
    o.intra_op_threads = bad;
    EXPECT_EQ(code_for(o, &msg), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(msg.find("intra_op_threads must be 0 (all cores) to 1024, got " + std::to_string(bad)),
              std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  for (int bad : {-2, kMaxCompileThreads + 1, 100000}) {
    SessionOptions o;
    o.compile_threads = bad;
    EXPECT_EQ(code_for(o, &msg), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(msg.find("compile_threads must be 0 (default) to 256, got " + std::to_string(bad)),
              std::string::npos) << msg;
  }
  for (double bad : {-1.0, std::nan(""), static_cast<double>(INFINITY)}) {
    SessionOptions o;
    o.benefit_horizon_windows = bad;
    EXPECT_EQ(code_for(o, &msg), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(msg.find("benefit_horizon_windows must be a finite number >= 0, got "), std::string::npos)
        << msg;
  }
  // Speedup seeds: the kind, the step and the value are checked, the seed named by its index.
  const std::pair<SessionOptions::SpeedupSeed, std::string> bad_seeds[] = {
      {{"MatMul", 1, 2.0}, "speedup_seeds[1]: kind \"MatMul\" is not elementwise, matmul_epilogue"},
      {{"opaque", 0, 2.0}, "speedup_seeds[1]: kind \"opaque\" is not"},
      {{std::string("conv\0x", 6), 0, 2.0}, "kind \"conv\\x00x\" is not elementwise"},
      {{"reduction", 3, 2.0}, "speedup_seeds[1]: from_tier must be 0, 1 or 2, got 3"},
      {{"reduction", -1, 2.0}, "from_tier must be 0, 1 or 2, got -1"},
      {{"conv", 0, 0.0}, "speedup_seeds[1]: speedup must be a number in [1e-6, 1e6], got 0"},
      {{"conv", 0, 1e-320}, "speedup must be a number in [1e-6, 1e6], got 1e-320"},
      {{"conv", 0, 2e6}, "speedup must be a number in [1e-6, 1e6], got 2000000"},
      {{"conv", 0, std::nan("")}, "speedup must be a number in [1e-6, 1e6], got nan"},
      {{"conv", 0, static_cast<double>(INFINITY)}, "speedup must be a number in [1e-6, 1e6], got inf"},
  };
  for (const auto& [seed, expected] : bad_seeds) {
    SessionOptions o;
    o.speedup_seeds = {{"elementwise", 0, 4.0}, seed};
    EXPECT_EQ(code_for(o, &msg), StatusCode::kInvalidArgument) << expected;
    EXPECT_NE(msg.find(expected), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  SessionOptions seeded;
  seeded.speedup_seeds = {{"matmul_epilogue", 1, 117.0}, {"conv", 2, 0.5}};
  EXPECT_EQ(code_for(seeded, &msg), StatusCode::kOk) << msg;
  SessionOptions zero;
  zero.benefit_horizon_windows = 0;  // accepted: no compile pays until the Lindy horizon grows
  EXPECT_EQ(code_for(zero, &msg), StatusCode::kOk) << msg;
  SessionOptions most;
  most.intra_op_threads = kMaxIntraOpThreads;  // runs min(1024, cores) threads
  most.compile_threads = 8;
  EXPECT_EQ(code_for(most, &msg), StatusCode::kOk) << msg;
}

TEST(Session, ConcurrentRunsWithMixedShapes) {
  Session s(kDemo);
  // Reference outputs per batch size, computed serially.
  std::vector<Tensor> inputs, refs;
  for (int64_t b : {1, 3, 7, 16}) {
    Tensor x = Tensor::empty(DType::kFloat32, {b, 64});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::sin(0.1f * static_cast<float>(i + b));
    inputs.push_back(x);
    refs.push_back(s.run({{"x", x}})[0].second);
  }
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int it = 0; it < 50; ++it) {
        size_t k = static_cast<size_t>(t + it) % inputs.size();
        Tensor y = s.run({{"x", inputs[k]}})[0].second;
        // Within tolerance, not bitwise: the default (adaptive) mode may install compiled code
        // mid-test (it does under ThreadSanitizer's slowdown), whose GEMM sums in another order.
        bool same = y.shape() == refs[k].shape();
        for (int64_t i = 0; same && i < y.numel(); ++i) {
          const float a = y.data<float>()[i], b = refs[k].data<float>()[i];
          same = std::fabs(a - b) <= 1e-5f + 1e-4f * std::fabs(b);
        }
        if (!same) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace tierjit
