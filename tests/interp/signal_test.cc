// Tests of the signal kernels: DFT (forward, one-sided, inverse, axis, dft_length padding), STFT,
// the three windows and MelWeightMatrix. Values computed by hand (arithmetic in the comments).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "node_runner.h"

namespace tierjit {
namespace {

using testing::attr_int;
using testing::expect_tensor_near;
using testing::NodeSpec;
using testing::run_node;

Tensor f(Shape s, std::vector<float> v) {
  return Tensor::from_vector<float>(s, v);
}

TEST(DftTest, RealSignalFullAndOneSided) {
  // x = [1, 2, 3, 4]: X0 = 10; X1 = 1 - 2i - 3 + 4i = -2 + 2i; X2 = 1 - 2 + 3 - 4 = -2;
  // X3 = 1 + 2i - 3 - 4i = -2 - 2i.
  Tensor x = f({1, 4, 1}, {1, 2, 3, 4});
  auto full = run_node(NodeSpec{ir::OpKind::DFT, {x}, 1, {}, 17});
  ASSERT_TRUE(full.ok()) << full.status().message();
  expect_tensor_near((*full)[0], f({1, 4, 2}, {10, 0, -2, 2, -2, 0, -2, -2}), 1e-5, 1e-5);
  auto half = run_node(NodeSpec{ir::OpKind::DFT, {x}, 1, {{"onesided", attr_int(1)}}, 17});
  ASSERT_TRUE(half.ok());
  expect_tensor_near((*half)[0], f({1, 3, 2}, {10, 0, -2, 2, -2, 0}), 1e-5, 1e-5);
}

TEST(DftTest, InverseRecoversSignal) {
  // IDFT of the spectrum above, divided by n = 4, gives back 1, 2, 3, 4 (imaginary 0).
  Tensor spec = f({1, 4, 2}, {10, 0, -2, 2, -2, 0, -2, -2});
  auto r = run_node(NodeSpec{ir::OpKind::DFT, {spec}, 1, {{"inverse", attr_int(1)}}, 17});
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_tensor_near((*r)[0], f({1, 4, 2}, {1, 0, 2, 0, 3, 0, 4, 0}), 1e-5, 1e-5);
}

TEST(DftTest, DftLengthPadsAndAxisTwo) {
  // Signal [1, 1] along axis 2 padded to length 4: X_k = 1 + e^{-i pi k / 2}:
  // k0 = 2; k1 = 1 - i; k2 = 0; k3 = 1 + i.
  Tensor x = f({1, 1, 2, 1}, {1, 1});
  auto r = run_node(
      NodeSpec{ir::OpKind::DFT, {x, Tensor::scalar<int64_t>(4)}, 1, {{"axis", attr_int(2)}}, 17});
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_tensor_near((*r)[0], f({1, 1, 4, 2}, {2, 0, 1, -1, 0, 0, 1, 1}), 1e-5, 1e-5);
}

TEST(DftTest, PowerOfTwoFftMatchesDirectSum) {
  // n = 64 takes the radix-2 path, n = 63 (dft_length, truncating) the direct one; both against
  // a long-double direct sum computed here. Inverse of the forward result recovers the signal.
  std::vector<float> x(64);
  for (int t = 0; t < 64; ++t) x[t] = std::sin(0.3f * t) + 0.01f * (t % 7);
  for (int64_t n : {64, 63}) {
    auto r = run_node(
        NodeSpec{ir::OpKind::DFT, {f({1, 64, 1}, x), Tensor::scalar<int64_t>(n)}, 1, {}, 17});
    ASSERT_TRUE(r.ok()) << r.status().message();
    std::vector<float> e;
    for (int64_t k = 0; k < n; ++k) {
      long double sr = 0, si = 0;
      for (int64_t t = 0; t < n; ++t) {
        long double a = -2.0L * std::numbers::pi_v<long double> * k * t / n;
        sr += x[t] * std::cos(a);
        si += x[t] * std::sin(a);
      }
      e.push_back(static_cast<float>(sr));
      e.push_back(static_cast<float>(si));
    }
    expect_tensor_near((*r)[0], f({1, n, 2}, e), 1e-4, 1e-4);
    auto back = run_node(NodeSpec{ir::OpKind::DFT, {(*r)[0]}, 1, {{"inverse", attr_int(1)}}, 17});
    ASSERT_TRUE(back.ok());
    for (int64_t t = 0; t < n; ++t) EXPECT_NEAR((*back)[0].data<float>()[2 * t], x[t], 1e-4);
  }
}

TEST(DftTest, BadInputsAreErrors) {
  auto last =
      run_node(NodeSpec{ir::OpKind::DFT, {f({1, 4, 3}, std::vector<float>(12, 0))}, 1, {}, 17});
  ASSERT_FALSE(last.ok());
  EXPECT_NE(last.status().message().find("1 (real) or 2 (complex)"), std::string::npos);
  auto axis = run_node(
      NodeSpec{ir::OpKind::DFT, {f({1, 4, 1}, {1, 2, 3, 4})}, 1, {{"axis", attr_int(2)}}, 17});
  ASSERT_FALSE(axis.ok());
  auto len = run_node(NodeSpec{
      ir::OpKind::DFT, {f({1, 4, 1}, {1, 2, 3, 4}), Tensor::scalar<int64_t>(0)}, 1, {}, 17});
  ASSERT_FALSE(len.ok());
}

TEST(StftTest, FramesWithRectangularWindow) {
  // Signal [1, 2, 3, 4], frame_length 2, step 2: frames [1, 2] and [3, 4]; onesided bins 2:
  // [1+2, 1-2] = [3, -1] and [7, -1].
  auto r = run_node(NodeSpec{ir::OpKind::STFT,
                             {f({1, 4, 1}, {1, 2, 3, 4}), Tensor::scalar<int64_t>(2), Tensor(),
                              Tensor::scalar<int64_t>(2)},
                             1,
                             {},
                             17});
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_tensor_near((*r)[0], f({1, 2, 2, 2}, {3, 0, -1, 0, 7, 0, -1, 0}), 1e-5, 1e-5);
}

TEST(StftTest, WindowWeightsFramesAndStepOne) {
  // Window [1, 0]: each frame keeps its first sample only -> both bins equal that sample.
  // Step 1 over length 3 with frame 2: frames start at 0 and 1.
  auto r = run_node(NodeSpec{ir::OpKind::STFT,
                             {f({1, 3, 1}, {5, 6, 7}), Tensor::scalar<int64_t>(1), f({2}, {1, 0})},
                             1,
                             {},
                             17});
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_tensor_near((*r)[0], f({1, 2, 2, 2}, {5, 0, 5, 0, 6, 0, 6, 0}), 1e-5, 1e-5);
  auto bad =
      run_node(NodeSpec{ir::OpKind::STFT,
                        {f({1, 3, 1}, {5, 6, 7}), Tensor::scalar<int64_t>(0), f({2}, {1, 0})},
                        1,
                        {},
                        17});
  ASSERT_FALSE(bad.ok());
}

TEST(WindowTest, HannHammingBlackman) {
  // Periodic size 4 (N = 4): cos(2 pi n / 4) = 1, 0, -1, 0.
  //   Hann 0.5 - 0.5 c: 0, 0.5, 1, 0.5. Hamming 25/46 - 21/46 c: 4/46, 25/46, 1, 25/46.
  //   Blackman 0.42 - 0.5 c + 0.08 cos(2a): 0, 0.34, 1, 0.34.
  auto size = Tensor::scalar<int64_t>(4);
  auto hann = run_node(NodeSpec{ir::OpKind::HannWindow, {size}, 1, {}, 17});
  ASSERT_TRUE(hann.ok()) << hann.status().message();
  expect_tensor_near((*hann)[0], f({4}, {0, 0.5, 1, 0.5}), 1e-6, 1e-6);
  auto ham = run_node(NodeSpec{ir::OpKind::HammingWindow, {size}, 1, {}, 17});
  ASSERT_TRUE(ham.ok());
  expect_tensor_near((*ham)[0], f({4}, {4.0f / 46, 25.0f / 46, 1, 25.0f / 46}), 1e-6, 1e-6);
  auto bl = run_node(
      NodeSpec{ir::OpKind::BlackmanWindow, {size}, 1, {{"output_datatype", attr_int(11)}}, 17});
  ASSERT_TRUE(bl.ok());
  expect_tensor_near((*bl)[0], Tensor::from_vector<double>({4}, {0, 0.34, 1, 0.34}), 1e-9, 1e-9);
  // Symmetric size 4 (N = 3): Hann 0, 0.75, 0.75, 0 (cos(2 pi / 3) = -0.5).
  auto sym = run_node(NodeSpec{ir::OpKind::HannWindow, {size}, 1, {{"periodic", attr_int(0)}}, 17});
  ASSERT_TRUE(sym.ok());
  expect_tensor_near((*sym)[0], f({4}, {0, 0.75, 0.75, 0}), 1e-6, 1e-6);
  // Size 1 and 0.
  auto one = run_node(NodeSpec{ir::OpKind::HannWindow, {Tensor::scalar<int64_t>(1)}, 1, {}, 17});
  ASSERT_TRUE(one.ok());
  expect_tensor_near((*one)[0], f({1}, {0}));
  auto zero = run_node(NodeSpec{ir::OpKind::HannWindow, {Tensor::scalar<int64_t>(0)}, 1, {}, 17});
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ((*zero)[0].shape(), (Shape{0}));
  auto neg = run_node(NodeSpec{ir::OpKind::HannWindow, {Tensor::scalar<int64_t>(-1)}, 1, {}, 17});
  ASSERT_FALSE(neg.ok());
}

TEST(MelWeightMatrixTest, ShapeAndTriangles) {
  // 2 mel bins, dft_length 8 (5 spectrogram bins), rate 8000, 0..4000 Hz. Every filter is a
  // triangle: entries in [0, 1], each column peaks at exactly 1.
  auto r = run_node(NodeSpec{
      ir::OpKind::MelWeightMatrix,
      {Tensor::scalar<int64_t>(2), Tensor::scalar<int64_t>(8), Tensor::scalar<int64_t>(8000),
       Tensor::scalar<float>(0.f), Tensor::scalar<float>(4000.f)},
      1,
      {},
      17});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Tensor& m = (*r)[0];
  ASSERT_EQ(m.shape(), (Shape{5, 2}));
  for (int c = 0; c < 2; ++c) {
    float mx = 0;
    for (int b = 0; b < 5; ++b) {
      float v = m.data<float>()[b * 2 + c];
      EXPECT_GE(v, 0.f);
      EXPECT_LE(v, 1.f);
      mx = std::max(mx, v);
    }
    EXPECT_EQ(mx, 1.f);
  }
}

}  // namespace
}  // namespace tierjit
