// Tests of the tier-0 NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss kernels: reductions
// none/sum/mean, class weights, ignore_index (also negative), [N, C, d] inputs, the optional
// log_prob output, and errors. Values hand-computed.
#include <cmath>

#include "reduction_test_util.h"

namespace tierjit::testing {
namespace {

using namespace red;  // NOLINT
using ir::OpKind;

// log-probabilities [2, 3]; target {2, 0} picks -(-3) = 3 and -(-0.5) = 0.5
Tensor logp() { return f32({2, 3}, {-1, -2, -3, -0.5f, -1.5f, -2.5f}); }

Tensor nll(std::vector<Tensor> ins, const std::string& reduction,
           std::optional<int64_t> ii = std::nullopt) {
  Attrs a{{"reduction", attr_string(reduction)}};
  if (ii) a.push_back({"ignore_index", attr_int(*ii)});
  return run1(spec(OpKind::NegativeLogLikelihoodLoss, std::move(ins), a, 13));
}

TEST(LossNll, Reductions) {
  Tensor t = i64({2}, {2, 0});
  expect_tensor_near(nll({logp(), t}, "none"), f32({2}, {3, 0.5f}));
  expect_tensor_near(nll({logp(), t}, "sum"), f32({}, {3.5f}));
  expect_tensor_near(nll({logp(), t}, "mean"), f32({}, {1.75f}));
  // default reduction is mean
  expect_tensor_near(run1(spec(OpKind::NegativeLogLikelihoodLoss, {logp(), t}, {}, 12)),
                     f32({}, {1.75f}));
}

TEST(LossNll, WeightsAndIgnoreIndex) {
  Tensor t = i64({2}, {2, 0});
  Tensor w = f32({3}, {1, 2, 3});
  // weighted: w[2] * 3 = 9, w[0] * 0.5 = 0.5; mean = 9.5 / (w[2] + w[0]) = 9.5 / 4
  expect_tensor_near(nll({logp(), t, w}, "none"), f32({2}, {9, 0.5f}));
  expect_tensor_near(nll({logp(), t, w}, "sum"), f32({}, {9.5f}));
  expect_tensor_near(nll({logp(), t, w}, "mean"), f32({}, {2.375f}));
  // ignore class 0: second element drops out of loss and weight sum: 9 / 3 = 3
  expect_tensor_near(nll({logp(), t, w}, "none", 0), f32({2}, {9, 0}));
  expect_tensor_near(nll({logp(), t, w}, "mean", 0), f32({}, {3}));
  // negative ignore_index, no weights: {ignored, 1.5}; mean = 1.5 / 1
  expect_tensor_near(nll({logp(), i32({2}, {-1, 1})}, "mean", -1), f32({}, {1.5f}));
  // ignore_index beyond C is allowed
  expect_tensor_near(nll({logp(), i64({2}, {10, 1})}, "sum", 10), f32({}, {1.5f}));
}

TEST(LossNll, SpatialDims) {
  // [N=1, C=2, D=2]: logp[0,c,d] c0 {-1,-2}, c1 {-3,-4}; target {1, 0}: 3 and 2
  Tensor x = f32({1, 2, 2}, {-1, -2, -3, -4});
  Tensor t = i64({1, 2}, {1, 0});
  expect_tensor_near(nll({x, t}, "none"), f32({1, 2}, {3, 2}));
  expect_tensor_near(nll({x, t}, "mean"), f32({}, {2.5f}));
  expect_tensor_near(nll({f32({0, 3}, {}), i64({0}, {})}, "none"), f32({0}, {}));
}

TEST(LossNll, Errors) {
  expect_fails(spec(OpKind::NegativeLogLikelihoodLoss, {logp(), i64({2}, {3, 0})}, {}, 13),
               "out of range [0, 3)");
  expect_fails(spec(OpKind::NegativeLogLikelihoodLoss, {logp(), i64({3}, {0, 0, 0})}, {}, 13),
               "must have shape [2]");
  expect_fails(
      spec(OpKind::NegativeLogLikelihoodLoss, {logp(), i64({2}, {0, 0}), f32({2}, {1, 1})}, {}, 13),
      "weight");
  expect_fails(spec(OpKind::NegativeLogLikelihoodLoss, {logp(), i64({2}, {0, 0})},
                    {{"reduction", attr_string("avg")}}, 13),
               "reduction");
  expect_fails(
      spec(OpKind::NegativeLogLikelihoodLoss, {f32({2}, {0, 0}), i64({2}, {0, 0})}, {}, 13),
      "rank >= 2");
}

TEST(LossSoftmaxCrossEntropy, LossAndLogProb) {
  // scores {0, ln 3}: softmax {0.25, 0.75}, log {-1.38629436, -0.28768207}; label 1 -> 0.28768207
  Tensor s = f32({1, 2}, {0, 1.09861229f});
  auto outs = run_all(spec(OpKind::SoftmaxCrossEntropyLoss, {s, i64({1}, {1})}, {}, 13, 2));
  expect_tensor_near(outs[0], f32({}, {0.28768207f}));
  expect_tensor_near(outs[1], f32({1, 2}, {-1.38629436f, -0.28768207f}));
  // equal scores: each loss ln 2 = 0.69314718; sum 1.38629436
  Tensor z = f32({2, 2}, {0, 0, 5, 5});
  Tensor lab = i64({2}, {0, 1});
  expect_tensor_near(run1(spec(OpKind::SoftmaxCrossEntropyLoss, {z, lab},
                               {{"reduction", attr_string("sum")}}, 13)),
                     f32({}, {1.38629436f}));
  expect_tensor_near(run1(spec(OpKind::SoftmaxCrossEntropyLoss, {z, lab},
                               {{"reduction", attr_string("none")}}, 13)),
                     f32({2}, {0.69314718f, 0.69314718f}));
  // weights {1, 3}: mean = (ln2 + 3 ln2) / 4 = ln 2; ignore label 1: mean = ln 2 / 1
  expect_tensor_near(
      run1(spec(OpKind::SoftmaxCrossEntropyLoss, {z, lab, f32({2}, {1, 3})}, {}, 13)),
      f32({}, {0.69314718f}));
  expect_tensor_near(
      run1(spec(OpKind::SoftmaxCrossEntropyLoss, {z, lab}, {{"ignore_index", attr_int(1)}}, 13)),
      f32({}, {0.69314718f}));
  // large scores do not overflow
  expect_tensor_near(run1(spec(OpKind::SoftmaxCrossEntropyLoss,
                               {f32({1, 2}, {1000, 1000}), i64({1}, {0})}, {}, 13)),
                     f32({}, {0.69314718f}));
}

TEST(LossSoftmaxCrossEntropy, SpatialAndErrors) {
  // [1, 2, 2]: position d0 scores {0, ln3}, d1 {ln3, 0}; labels {1, 1}: 0.28768207 and 1.38629436
  Tensor s = f32({1, 2, 2}, {0, 1.09861229f, 1.09861229f, 0});
  expect_tensor_near(run1(spec(OpKind::SoftmaxCrossEntropyLoss, {s, i64({1, 2}, {1, 1})},
                               {{"reduction", attr_string("none")}}, 13)),
                     f32({1, 2}, {0.28768207f, 1.38629436f}));
  expect_fails(spec(OpKind::SoftmaxCrossEntropyLoss, {s, i64({1, 2}, {2, 0})}, {}, 13),
               "out of range [0, 2)");
  expect_fails(spec(OpKind::SoftmaxCrossEntropyLoss, {s, f32({1, 2}, {0, 0})}, {}, 13), "integer");
}

}  // namespace
}  // namespace tierjit::testing
