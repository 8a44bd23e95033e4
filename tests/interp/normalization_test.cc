// Tests of the tier-0 normalization kernels: LayerNormalization (axis -1 and 1, Mean/InvStdDev
// outputs, broadcast Scale), BatchNormalization (inference, training mode, old non-spatial
// form, wrong operand length), InstanceNormalization, LRN, MeanVarianceNormalization and
// LpNormalization. Values hand-computed with epsilon = 0 where it keeps them exact.
#include <cmath>
#include <limits>

#include "reduction_test_util.h"

namespace tierjit::testing {
namespace {

using namespace red;  // NOLINT
using ir::OpKind;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(NormLayerNorm, LastAxisWithStats) {
  // rows {1,2,3}: mean 2, var 2/3, inv = sqrt(1.5) = 1.22474487; {2,4,6}: mean 4, var 8/3,
  // inv = sqrt(3/8) = 0.61237244. Both normalize to {-1.22474487, 0, 1.22474487};
  // y = n * {1, 2, 3} + {0, 0, 1} = {-1.22474487, 0, 4.67423461}.
  Tensor x = f32({2, 3}, {1, 2, 3, 2, 4, 6});
  auto outs =
      run_all(spec(OpKind::LayerNormalization, {x, f32({3}, {1, 2, 3}), f32({3}, {0, 0, 1})},
                   {{"epsilon", attr_float(0)}}, 17, 3));
  ASSERT_EQ(outs.size(), 3u);
  expect_tensor_near(outs[0],
                     f32({2, 3}, {-1.22474487f, 0, 4.67423461f, -1.22474487f, 0, 4.67423461f}));
  expect_tensor_near(outs[1], f32({2, 1}, {2, 4}));
  expect_tensor_near(outs[2], f32({2, 1}, {1.22474487f, 0.61237244f}));
  // axis 1 of a rank-2 tensor is the same as -1; B omitted
  auto y1 = run1(spec(OpKind::LayerNormalization, {x, f32({3}, {1, 1, 1})},
                      {{"axis", attr_int(1)}, {"epsilon", attr_float(0)}}));
  expect_tensor_near(y1, f32({2, 3}, {-1.22474487f, 0, 1.22474487f, -1.22474487f, 0, 1.22474487f}));
}

TEST(NormLayerNorm, AxisOneOfRank3AndBroadcastScale) {
  // [2,2,2] iota, axis 1: groups {0,1,2,3}, {4,5,6,7}: mean 1.5 / 5.5, var 1.25,
  // inv = 0.89442719; normalized {-1.34164079, -0.44721360, 0.44721360, 1.34164079}.
  Tensor x = iota({2, 2, 2});
  auto outs =
      run_all(spec(OpKind::LayerNormalization, {x, f32({1}, {2}), f32({2, 2}, {0, 0, 0, 1})},
                   {{"axis", attr_int(1)}, {"epsilon", attr_float(0)}}, 17, 3));
  const std::vector<float> n = {-2.68328157f, -0.89442719f, 0.89442719f, 3.68328157f};  // 2*n + B
  std::vector<float> both(n);
  both.insert(both.end(), n.begin(), n.end());
  expect_tensor_near(outs[0], f32({2, 2, 2}, both));
  expect_tensor_near(outs[1], f32({2, 1, 1}, {1.5f, 5.5f}));
  expect_tensor_near(outs[2], f32({2, 1, 1}, {0.89442719f, 0.89442719f}));
  // epsilon default 1e-5: inv = 1/sqrt(1.25 + 1e-5)
  auto y = run1(
      spec(OpKind::LayerNormalization, {x, f32({2, 2}, {1, 1, 1, 1})}, {{"axis", attr_int(-2)}}));
  EXPECT_NEAR(y.data<float>()[3], 1.5 / std::sqrt(1.25 + 1e-5), 1e-6);
}

TEST(NormLayerNorm, Errors) {
  Tensor x = iota({2, 3});
  expect_fails(spec(OpKind::LayerNormalization, {x, f32({3}, {1, 1, 1})}, {{"axis", attr_int(2)}}),
               "axis 2 is out of range");
  expect_fails(spec(OpKind::LayerNormalization, {x, f32({4}, {1, 1, 1, 1})}), "does not broadcast");
  expect_fails(spec(OpKind::LayerNormalization, {x}), "input 1 is required");
}

TEST(NormBatchNorm, Inference) {
  // c0: (x - 1) / sqrt(4) * 1 + 0 on {1, 2} -> {0, 0.5}; c1: (x - 3) / 1 * 2 + 1 on {3, 4} -> {1,
  // 3}
  Tensor x = f32({1, 2, 1, 2}, {1, 2, 3, 4});
  auto y = run1(spec(OpKind::BatchNormalization,
                     {x, f32({2}, {1, 2}), f32({2}, {0, 1}), f32({2}, {1, 3}), f32({2}, {4, 1})},
                     {{"epsilon", attr_float(0)}}, 15));
  expect_tensor_near(y, f32({1, 2, 1, 2}, {0, 0.5f, 1, 3}));
  // old opset 6 attributes are_test / consumed_inputs / spatial are ignored
  auto y6 = run1(spec(OpKind::BatchNormalization,
                      {x, f32({2}, {1, 2}), f32({2}, {0, 1}), f32({2}, {1, 3}), f32({2}, {4, 1})},
                      {{"epsilon", attr_float(0)},
                       {"is_test", attr_int(1)},
                       {"spatial", attr_int(1)},
                       {"consumed_inputs", attr_ints({0, 0, 0, 1, 1})}},
                      6));
  expect_tensor_near(y6, f32({1, 2, 1, 2}, {0, 0.5f, 1, 3}));
  // rank 2 [N, C]: per-column
  expect_tensor_near(
      run1(spec(OpKind::BatchNormalization,
                {f32({2, 1}, {1, 3}), f32({1}, {1}), f32({1}, {0}), f32({1}, {1}), f32({1}, {4})},
                {{"epsilon", attr_float(0)}}, 15)),
      f32({2, 1}, {0, 1}));
}

TEST(NormBatchNorm, TrainingMode) {
  // batch stats: c0 {1,2} mean 1.5 var 0.25; c1 {3,4} mean 3.5 var 0.25
  // y: c0 (x-1.5)/0.5 -> {-1, 1}; c1 (x-3.5)/0.5*2+1 -> {-1, 3}
  // running_mean = mean*0.9 + batch*0.1: {1.05, 3.05}; running_var: {4*0.9+0.025, 0.9+0.025}
  Tensor x = f32({1, 2, 1, 2}, {1, 2, 3, 4});
  auto outs =
      run_all(spec(OpKind::BatchNormalization,
                   {x, f32({2}, {1, 2}), f32({2}, {0, 1}), f32({2}, {1, 3}), f32({2}, {4, 1})},
                   {{"epsilon", attr_float(0)}, {"training_mode", attr_int(1)}}, 15, 3));
  expect_tensor_near(outs[0], f32({1, 2, 1, 2}, {-1, 1, -1, 3}));
  expect_tensor_near(outs[1], f32({2}, {1.05f, 3.05f}));
  expect_tensor_near(outs[2], f32({2}, {3.625f, 0.925f}));
}

TEST(NormBatchNorm, NonSpatialOldOpset) {
  // opset 7, spatial = 0: per-activation statistics of C*H*W = 4 elements
  Tensor x = f32({1, 2, 1, 2}, {1, 2, 3, 4});
  auto y = run1(spec(OpKind::BatchNormalization,
                     {x, f32({2, 1, 2}, {1, 1, 1, 1}), f32({2, 1, 2}, {0, 0, 0, 0}),
                      f32({2, 1, 2}, {1, 2, 3, 4}), f32({2, 1, 2}, {1, 1, 1, 1})},
                     {{"epsilon", attr_float(0)}, {"spatial", attr_int(0)}}, 7));
  expect_tensor_near(y, f32({1, 2, 1, 2}, {0, 0, 0, 0}));
}

TEST(NormBatchNorm, Errors) {
  Tensor x = f32({1, 2, 1, 2}, {1, 2, 3, 4});
  Tensor c2 = f32({2}, {1, 1});
  expect_fails(spec(OpKind::BatchNormalization, {x, f32({3}, {1, 1, 1}), c2, c2, c2}, {}, 15),
               "input 1 'scale' must have 2 elements");
  expect_fails(spec(OpKind::BatchNormalization, {x, c2, c2, c2, f32({1}, {1})}, {}, 15),
               "input_var");
  expect_fails(spec(OpKind::BatchNormalization, {f32({2}, {1, 2}), c2, c2, c2, c2}, {}, 15),
               "rank >= 2");
}

TEST(NormInstanceNorm, PerInstanceChannel) {
  // c0 {1,3}: mean 2 var 1 -> {-1, 1}; c1 {2,6}: mean 4 var 4 -> (x-4)/2*2+1 -> {-1, 3}
  auto y = run1(spec(OpKind::InstanceNormalization,
                     {f32({1, 2, 2}, {1, 3, 2, 6}), f32({2}, {1, 2}), f32({2}, {0, 1})},
                     {{"epsilon", attr_float(0)}}));
  expect_tensor_near(y, f32({1, 2, 2}, {-1, 1, -1, 3}));
  expect_fails(spec(OpKind::InstanceNormalization,
                    {f32({1, 2, 2}, {1, 3, 2, 6}), f32({1}, {1}), f32({2}, {0, 1})}),
               "input 1 'scale' must have 2 elements");
}

TEST(NormLrn, WindowOfChannels) {
  // size 3, alpha/size = 1, beta 1, bias 1: c0 window {0,1}: 1/(1+1+4) = 1/6;
  // c1 {0,1,2}: 2/(1+14) = 2/15; c2 {1,2}: 3/(1+13) = 3/14
  Tensor x = f32({1, 3, 1, 1}, {1, 2, 3});
  Attrs a{{"size", attr_int(3)},
          {"alpha", attr_float(3)},
          {"beta", attr_float(1)},
          {"bias", attr_float(1)}};
  expect_tensor_near(run1(spec(OpKind::LRN, {x}, a)),
                     f32({1, 3, 1, 1}, {1.0f / 6, 2.0f / 15, 3.0f / 14}));
  // size 2: window [c, c+1]; alpha/size = 1: c0 1/(1+5), c1 2/(1+13), c2 3/(1+9)
  Attrs b{{"size", attr_int(2)},
          {"alpha", attr_float(2)},
          {"beta", attr_float(1)},
          {"bias", attr_float(1)}};
  expect_tensor_near(run1(spec(OpKind::LRN, {x}, b)),
                     f32({1, 3, 1, 1}, {1.0f / 6, 2.0f / 14, 3.0f / 10}));
  expect_fails(spec(OpKind::LRN, {x}), "size is required");
}

TEST(NormMvn, DefaultAxes) {
  // axes {0,2,3}: c0 {1,3}: mean 2, std 1 -> {-1, 1}; c1 {5,5}: std 0 -> 0 / 1e-9 = 0
  auto y = run1(spec(OpKind::MeanVarianceNormalization, {f32({1, 2, 1, 2}, {1, 3, 5, 5})}, {}, 13));
  expect_tensor_near(y, f32({1, 2, 1, 2}, {-1, 1, 0, 0}));
  // axes {1}: over channels per position: {1,5} -> {-1, 1}, {3,5} -> {-1, 1}
  auto y1 = run1(spec(OpKind::MeanVarianceNormalization, {f32({1, 2, 1, 2}, {1, 3, 5, 5})},
                      {{"axes", attr_ints({1})}}, 13));
  expect_tensor_near(y1, f32({1, 2, 1, 2}, {-1, -1, 1, 1}));
  expect_fails(spec(OpKind::MeanVarianceNormalization, {f32({2, 2}, {1, 2, 3, 4})}, {}, 13),
               "out of range");
}

TEST(NormLpNorm, P1P2AndZero) {
  expect_tensor_near(run1(spec(OpKind::LpNormalization, {f32({2, 2}, {3, 4, 0, 0})})),
                     f32({2, 2}, {0.6f, 0.8f, 0, 0}));
  expect_tensor_near(
      run1(spec(OpKind::LpNormalization, {f32({1, 2}, {1, -3})}, {{"p", attr_int(1)}})),
      f32({1, 2}, {0.25f, -0.75f}));
  // axis 0, inner = 2: columns {3,4} and {6,8}
  expect_tensor_near(
      run1(spec(OpKind::LpNormalization, {f32({2, 2}, {3, 6, 4, 8})}, {{"axis", attr_int(0)}})),
      f32({2, 2}, {0.6f, 0.6f, 0.8f, 0.8f}));
  expect_tensor_near(run1(spec(OpKind::LpNormalization, {f32({1, 2}, {kNaN, 1})})),
                     f32({1, 2}, {kNaN, kNaN}));
  expect_fails(spec(OpKind::LpNormalization, {f32({2}, {1, 2})}, {{"p", attr_int(3)}}),
               "p must be 1 or 2");
}

}  // namespace
}  // namespace tierjit::testing
