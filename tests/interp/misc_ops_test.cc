// Tests of the remaining misc kernels: NonMaxSuppression, GridSample, Det, StringNormalizer,
// TfIdfVectorizer, and the random generators (checked statistically: ranges, means, seeds).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "node_runner.h"

namespace tierjit {
namespace {

using testing::attr_float;
using testing::attr_int;
using testing::attr_ints;
using testing::attr_string;
using testing::expect_tensor_near;
using testing::NodeSpec;
using testing::run_node;

Tensor f(Shape s, std::vector<float> v) {
  return Tensor::from_vector<float>(s, v);
}
Tensor i64(Shape s, std::vector<int64_t> v) {
  return Tensor::from_vector<int64_t>(s, v);
}
Tensor strs(Shape s, std::vector<std::string> v) {
  return Tensor::from_vector<std::string>(s, v);
}

ir::Attribute attr_strings(std::vector<std::string> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kStrings;
  a.strings = std::move(v);
  return a;
}

// ---- NonMaxSuppression ----

TEST(NmsTest, SuppressesOverlapsPerClass) {
  // Boxes (y1, x1, y2, x2): b0 [0,0,1,1], b1 [0,0.1,1,1.1] (IoU with b0 = 0.9/1.1 = 0.818),
  // b2 [0,2,1,3] (disjoint). Scores 0.9, 0.8, 0.7 -> keep b0, drop b1 (IoU > 0.5), keep b2.
  Tensor boxes = f({1, 3, 4}, {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 2, 1, 3});
  Tensor scores = f({1, 1, 3}, {0.9f, 0.8f, 0.7f});
  auto r = run_node(NodeSpec{ir::OpKind::NonMaxSuppression,
                             {boxes, scores, i64({1}, {3}), f({1}, {0.5f}), f({1}, {0.0f})},
                             1,
                             {},
                             11});
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_tensor_near((*r)[0], i64({2, 3}, {0, 0, 0, 0, 0, 2}));
  // max_output_boxes_per_class = 1 keeps only the best box; omitted (0) keeps none.
  auto one =
      run_node(NodeSpec{ir::OpKind::NonMaxSuppression, {boxes, scores, i64({1}, {1})}, 1, {}, 11});
  ASSERT_TRUE(one.ok());
  expect_tensor_near((*one)[0], i64({1, 3}, {0, 0, 0}));
  auto none = run_node(NodeSpec{ir::OpKind::NonMaxSuppression, {boxes, scores}, 1, {}, 11});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ((*none)[0].shape(), (Shape{0, 3}));
  // score_threshold 0.75 removes b2 (and b1 by IoU).
  auto th = run_node(NodeSpec{ir::OpKind::NonMaxSuppression,
                              {boxes, scores, i64({1}, {3}), f({1}, {0.5f}), f({1}, {0.75f})},
                              1,
                              {},
                              11});
  ASSERT_TRUE(th.ok());
  expect_tensor_near((*th)[0], i64({1, 3}, {0, 0, 0}));
}

TEST(NmsTest, CenterPointFormatAndErrors) {
  // Center format (xc, yc, w, h): boxes at x = 0.5 and 0.6 overlap heavily; scores favour b1.
  Tensor boxes = f({1, 2, 4}, {0.5f, 0.5f, 1, 1, 0.6f, 0.5f, 1, 1});
  Tensor scores = f({1, 1, 2}, {0.1f, 0.9f});
  auto r = run_node(NodeSpec{ir::OpKind::NonMaxSuppression,
                             {boxes, scores, i64({1}, {5}), f({1}, {0.5f})},
                             1,
                             {{"center_point_box", attr_int(1)}},
                             11});
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_tensor_near((*r)[0], i64({1, 3}, {0, 0, 1}));
  auto bad = run_node(NodeSpec{
      ir::OpKind::NonMaxSuppression, {f({1, 2, 3}, std::vector<float>(6, 0)), scores}, 1, {}, 11});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'boxes'"), std::string::npos);
}

// ---- GridSample ----

TEST(GridSampleTest, BilinearNearestAndPadding) {
  // X 2x2 = [[1, 2], [3, 4]]. Grid points (x, y): (0, 0), (-1, -1), (1, 1).
  // align_corners = 0: (0,0) -> pixel (0.5, 0.5) -> mean 2.5; (-1,-1) -> (-0.5, -0.5): zeros
  // padding keeps 0.25 * 1 = 0.25; (1, 1) -> (1.5, 1.5) -> 0.25 * 4 = 1.
  Tensor x = f({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor grid = f({1, 1, 3, 2}, {0, 0, -1, -1, 1, 1});
  auto bil = run_node(NodeSpec{ir::OpKind::GridSample, {x, grid}, 1, {}, 16});
  ASSERT_TRUE(bil.ok()) << bil.status().message();
  expect_tensor_near((*bil)[0], f({1, 1, 1, 3}, {2.5f, 0.25f, 1.0f}));
  // border padding clamps (-0.5 -> 0, 1.5 -> 1): 1 and 4.
  auto border = run_node(NodeSpec{
      ir::OpKind::GridSample, {x, grid}, 1, {{"padding_mode", attr_string("border")}}, 16});
  ASSERT_TRUE(border.ok());
  expect_tensor_near((*border)[0], f({1, 1, 1, 3}, {2.5f, 1, 4}));
  // align_corners = 1: corners map to pixel centres exactly.
  auto ac = run_node(
      NodeSpec{ir::OpKind::GridSample, {x, grid}, 1, {{"align_corners", attr_int(1)}}, 16});
  ASSERT_TRUE(ac.ok());
  expect_tensor_near((*ac)[0], f({1, 1, 1, 3}, {2.5f, 1, 4}));
  // nearest, align_corners = 1: (0,0) -> (0.5, 0.5) rounds half to even -> (0, 0) -> 1.
  auto nn = run_node(NodeSpec{ir::OpKind::GridSample,
                              {x, grid},
                              1,
                              {{"mode", attr_string("nearest")}, {"align_corners", attr_int(1)}},
                              16});
  ASSERT_TRUE(nn.ok());
  expect_tensor_near((*nn)[0], f({1, 1, 1, 3}, {1, 1, 4}));
  auto bad = run_node(NodeSpec{ir::OpKind::GridSample, {x, f({1, 1, 1, 3}, {0, 0, 0})}, 1, {}, 16});
  ASSERT_FALSE(bad.ok());
  auto mode =
      run_node(NodeSpec{ir::OpKind::GridSample, {x, grid}, 1, {{"mode", attr_string("area")}}, 16});
  ASSERT_FALSE(mode.ok());
}

// ---- Det ----

TEST(DetTest, BatchedAndSingular) {
  // det [[1,2],[3,4]] = 4 - 6 = -2; det [[2,0],[0,3]] = 6; det [[1,2],[2,4]] = 0.
  auto r = run_node(
      NodeSpec{ir::OpKind::Det, {f({3, 2, 2}, {1, 2, 3, 4, 2, 0, 0, 3, 1, 2, 2, 4})}, 1, {}, 11});
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_tensor_near((*r)[0], f({3}, {-2, 6, 0}), 1e-5, 1e-5);
  // 3x3 needing a pivot swap: [[0,1,0],[1,0,0],[0,0,5]] -> -5. 1x1 -> the value; NaN -> NaN.
  auto p = run_node(NodeSpec{ir::OpKind::Det, {f({3, 3}, {0, 1, 0, 1, 0, 0, 0, 0, 5})}, 1, {}, 11});
  ASSERT_TRUE(p.ok());
  expect_tensor_near((*p)[0], f({}, {-5}));
  auto one = run_node(NodeSpec{ir::OpKind::Det, {f({1, 1}, {7})}, 1, {}, 11});
  ASSERT_TRUE(one.ok());
  expect_tensor_near((*one)[0], f({}, {7}));
  auto nan = run_node(NodeSpec{ir::OpKind::Det, {f({2, 2}, {NAN, 1, 1, 1})}, 1, {}, 11});
  ASSERT_TRUE(nan.ok());
  EXPECT_TRUE(std::isnan((*nan)[0].data<float>()[0]));
  auto bad = run_node(NodeSpec{ir::OpKind::Det, {f({2, 3}, {1, 2, 3, 4, 5, 6})}, 1, {}, 11});
  ASSERT_FALSE(bad.ok());
}

// ---- Strings ----

TEST(StringNormalizerTest, StopwordsAndCase) {
  Tensor x = strs({4}, {"Monday", "tuesday", "monday", "Friday"});
  auto lower = run_node(NodeSpec{ir::OpKind::StringNormalizer,
                                 {x},
                                 1,
                                 {{"case_change_action", attr_string("LOWER")},
                                  {"stopwords", attr_strings({"monday"})},
                                  {"is_case_sensitive", attr_int(1)}},
                                 10});
  ASSERT_TRUE(lower.ok()) << lower.status().message();
  expect_tensor_near((*lower)[0], strs({3}, {"monday", "tuesday", "friday"}));
  auto insens = run_node(NodeSpec{
      ir::OpKind::StringNormalizer,
      {x.reshaped({1, 4})},
      1,
      {{"case_change_action", attr_string("UPPER")}, {"stopwords", attr_strings({"monday"})}},
      10});
  ASSERT_TRUE(insens.ok());
  expect_tensor_near((*insens)[0], strs({1, 2}, {"TUESDAY", "FRIDAY"}));
  auto empty = run_node(NodeSpec{ir::OpKind::StringNormalizer,
                                 {strs({1}, {"monday"})},
                                 1,
                                 {{"stopwords", attr_strings({"monday"})}},
                                 10});
  ASSERT_TRUE(empty.ok());
  expect_tensor_near((*empty)[0], strs({1}, {""}));
  // UTF-8: Latin-1, Latin Extended-A, Greek and Cyrillic letters change case; CJK and invalid
  // bytes pass through.
  auto utf = run_node(
      NodeSpec{ir::OpKind::StringNormalizer,
               {strs({2}, {"\xC3\xA9t\xC3\xA9 \xC5\x82\xCE\xB1\xD0\xB6", "\xE4\xB8\xAD\xFFx"})},
               1,
               {{"case_change_action", attr_string("UPPER")}},
               10});
  ASSERT_TRUE(utf.ok()) << utf.status().message();
  expect_tensor_near(
      (*utf)[0], strs({2}, {"\xC3\x89T\xC3\x89 \xC5\x81\xCE\x91\xD0\x96", "\xE4\xB8\xAD\xFFX"}));
  auto bad = run_node(NodeSpec{ir::OpKind::StringNormalizer, {f({1}, {1})}, 1, {}, 10});
  ASSERT_FALSE(bad.ok());
}

TEST(TfIdfVectorizerTest, UnigramsAndBigramsWithSkip) {
  // Pool: unigrams [2, 3], bigram [2, 3] -> columns 0, 1, 2. Input [2, 7, 3, 2, 3]:
  // unigrams: 2 twice, 3 twice; bigram (2,3) contiguous once at 3..4 and with skip 1 at 0..2
  // (2 _ 3) -> max_skip_count 1 counts 2.
  std::vector<std::pair<std::string, ir::Attribute>> attrs = {
      {"mode", attr_string("TF")},
      {"min_gram_length", attr_int(1)},
      {"max_gram_length", attr_int(2)},
      {"max_skip_count", attr_int(1)},
      {"ngram_counts", attr_ints({0, 2})},
      {"ngram_indexes", attr_ints({0, 1, 2})},
      {"pool_int64s", attr_ints({2, 3, 2, 3})}};
  auto r =
      run_node(NodeSpec{ir::OpKind::TfIdfVectorizer, {i64({5}, {2, 7, 3, 2, 3})}, 1, attrs, 9});
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_tensor_near((*r)[0], f({3}, {2, 2, 2}));
  // Batched [2, 2] rows, IDF with weights: presence times weight.
  attrs[0] = {"mode", attr_string("IDF")};
  ir::Attribute w;
  w.kind = ir::Attribute::Kind::kFloats;
  w.floats = {0.5f, 2.f, 4.f};
  attrs.push_back({"weights", w});
  auto b =
      run_node(NodeSpec{ir::OpKind::TfIdfVectorizer, {i64({2, 2}, {2, 3, 7, 7})}, 1, attrs, 9});
  ASSERT_TRUE(b.ok()) << b.status().message();
  expect_tensor_near((*b)[0], f({2, 3}, {0.5f, 2, 4, 0, 0, 0}));
}

// ---- Random ----

TEST(RandomTest, UniformRangeMeanAndSeed) {
  std::vector<std::pair<std::string, ir::Attribute>> attrs = {{"shape", attr_ints({100, 100})},
                                                              {"low", attr_float(2)},
                                                              {"high", attr_float(4)},
                                                              {"seed", attr_float(7)}};
  auto a = run_node(NodeSpec{ir::OpKind::RandomUniform, {}, 1, attrs, 1});
  ASSERT_TRUE(a.ok()) << a.status().message();
  double sum = 0;
  for (float v : (*a)[0].span<float>()) {
    ASSERT_GE(v, 2.f);
    ASSERT_LE(v, 4.f);
    sum += v;
  }
  EXPECT_NEAR(sum / 10000, 3.0, 0.03);  // std of the mean = (2/sqrt(12))/100 ~ 0.006
  auto b = run_node(NodeSpec{ir::OpKind::RandomUniform, {}, 1, attrs, 1});
  ASSERT_TRUE(b.ok());
  expect_tensor_near((*b)[0], (*a)[0], 0, 0);  // same seed, same values
}

TEST(RandomTest, NormalLikeMomentsAndDtype) {
  auto r = run_node(NodeSpec{ir::OpKind::RandomNormalLike,
                             {Tensor::zeros(DType::kFloat64, {20000})},
                             1,
                             {{"mean", attr_float(1)}, {"scale", attr_float(2)}},
                             1});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ((*r)[0].dtype(), DType::kFloat64);
  double s = 0, s2 = 0;
  for (double v : (*r)[0].span<double>()) {
    s += v;
    s2 += v * v;
  }
  const double mean = s / 20000, var = s2 / 20000 - mean * mean;
  EXPECT_NEAR(mean, 1.0, 0.06);  // std of the mean 2/sqrt(20000) ~ 0.014
  EXPECT_NEAR(var, 4.0, 0.25);
  auto bad = run_node(NodeSpec{ir::OpKind::RandomNormal, {}, 1, {}, 1});
  ASSERT_FALSE(bad.ok());  // shape is required
}

TEST(RandomTest, BernoulliAndMultinomial) {
  std::vector<float> p(10000, 0.3f);
  p[0] = 0.f;
  p[1] = 1.f;
  auto r =
      run_node(NodeSpec{ir::OpKind::Bernoulli, {f({10000}, p)}, 1, {{"dtype", attr_int(9)}}, 15});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Tensor& t = (*r)[0];
  ASSERT_EQ(t.dtype(), DType::kBool);
  EXPECT_FALSE(t.data<bool>()[0]);
  EXPECT_TRUE(t.data<bool>()[1]);
  int ones = 0;
  for (int i = 0; i < 10000; ++i) ones += t.data<bool>()[i];
  EXPECT_NEAR(ones / 10000.0, 0.3, 0.03);
  auto bad = run_node(NodeSpec{ir::OpKind::Bernoulli, {f({1}, {1.5f})}, 1, {}, 15});
  ASSERT_FALSE(bad.ok());
  // Multinomial: log-probabilities [0, -inf, log 3] -> classes 0 and 2 with odds 1:3, never 1.
  auto m = run_node(
      NodeSpec{ir::OpKind::Multinomial,
               {f({1, 3}, {0, -INFINITY, std::log(3.f)})},
               1,
               {{"sample_size", attr_int(4000)}, {"dtype", attr_int(7)}, {"seed", attr_float(1)}},
               7});
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ((*m)[0].shape(), (Shape{1, 4000}));
  int c2 = 0;
  for (int64_t v : (*m)[0].span<int64_t>()) {
    ASSERT_NE(v, 1);
    c2 += v == 2;
  }
  EXPECT_NEAR(c2 / 4000.0, 0.75, 0.04);
}

}  // namespace
}  // namespace tierjit
