// Tests of the CLI's feed handling (tools/feeds.cc): --input / --int-range / --dim parsing,
// default symbolic dims, random inputs (ranges, masks, dtypes) and the check of fed tensors.
#include <gtest/gtest.h>

#include "cli_util.h"

namespace tierjit::cli {
namespace {

TEST(FeedSpec, ParsesFilesAndRandomShapes) {
  auto a = parse_feed_spec("x=data/in.npy");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->name, "x");
  EXPECT_EQ(a->path, "data/in.npy");
  EXPECT_FALSE(a->random_shape);

  auto b = parse_feed_spec("input_ids=random:2x256");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->name, "input_ids");
  ASSERT_TRUE(b->random_shape);
  EXPECT_EQ(*b->random_shape, (Shape{2, 256}));

  auto c = parse_feed_spec("y=random:0x1x7");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c->random_shape, (Shape{0, 1, 7}));

  auto s = parse_feed_spec("s=random:scalar");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s->random_shape, Shape{});

  auto pb = parse_feed_spec("a/b:0=t.PB");  // names may hold '/' and ':'
  ASSERT_TRUE(pb.ok());
  EXPECT_EQ(pb->name, "a/b:0");
  EXPECT_EQ(pb->path, "t.PB");
}

TEST(FeedSpec, RejectsBadSpecsWithOneLine) {
  for (const char* bad : {"x", "=a.npy", "x=", "x=random", "x=random:2xx3", "x=random:-1",
                          "x=random:2x", "x=random:abc", "x=data.txt", "x=random:2x99999999999999"}) {
    auto r = parse_feed_spec(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find(bad), std::string::npos) << r.status().message();
  }
}

TEST(IntRange, Parses) {
  auto r = parse_int_range("ids=-5:10");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->first, "ids");
  EXPECT_EQ(r->second.lo, -5);
  EXPECT_EQ(r->second.hi, 10);
  for (const char* bad : {"ids", "ids=5", "ids=5:5", "ids=7:3", "=1:2", "ids=a:b"})
    EXPECT_FALSE(parse_int_range(bad).ok()) << bad;
}

TEST(DimBinding, Parses) {
  auto d = parse_dim_binding("S=128");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->first, "S");
  EXPECT_EQ(d->second, 128);
  for (const char* bad : {"S", "S=", "=3", "S=-1", "S=x"}) EXPECT_FALSE(parse_dim_binding(bad).ok()) << bad;
  const auto huge = parse_dim_binding("N=99999999999999");  // too large, not "non-negative"
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("at most 2^40"), std::string::npos) << huge.status().message();
}

TEST(Dims, DefaultsAndResolution) {
  EXPECT_EQ(default_dim_value("N"), 1);
  EXPECT_EQ(default_dim_value("batch_size"), 1);
  EXPECT_EQ(default_dim_value("Batch"), 1);
  EXPECT_EQ(default_dim_value("S"), 8);
  EXPECT_EQ(default_dim_value("sequence"), 8);
  EXPECT_EQ(default_dim_value(""), 8);

  TensorInfo info{"x", DType::kFloat32, {-1, 3, -1, -1}, {"N", "", "S", ""}, true};
  auto s = resolve_shape(info, {});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, (Shape{1, 3, 8, 8}));
  s = resolve_shape(info, {{"S", 5}, {"N", 2}});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, (Shape{2, 3, 5, 8}));

  TensorInfo noshape{"y", DType::kFloat32, {}, {}, false};
  auto bad = resolve_shape(noshape, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--input y=random:"), std::string::npos);
}

TEST(Random, FloatsIntsMasksBools) {
  std::mt19937_64 rng(1);
  Tensor f = random_tensor(DType::kFloat32, {1000}, "x", std::nullopt, rng);
  for (float v : f.span<float>()) {
    EXPECT_GE(v, -1.f);
    EXPECT_LT(v, 1.f);
  }
  Tensor i = random_tensor(DType::kInt64, {1000}, "ids", std::nullopt, rng);
  int64_t mx = 0;
  for (int64_t v : i.span<int64_t>()) {
    EXPECT_GE(v, 0);
    EXPECT_LT(v, 1000);
    mx = std::max(mx, v);
  }
  EXPECT_GT(mx, 900);  // uniform over [0, 1000): 1000 draws reach past 900 (p of failure ~1e-46)
  Tensor m = random_tensor(DType::kInt64, {2, 7}, "attention_mask", std::nullopt, rng);
  for (int64_t v : m.span<int64_t>()) EXPECT_EQ(v, 1);
  Tensor r = random_tensor(DType::kInt32, {500}, "attention_mask", IntRange{-3, -1}, rng);
  for (int32_t v : r.span<int32_t>()) EXPECT_TRUE(v == -3 || v == -2);
  Tensor u8 = random_tensor(DType::kUInt8, {100}, "q", IntRange{-50, 5000}, rng);  // clamped to [0, 255]
  EXPECT_EQ(u8.numel(), 100);
  Tensor b = random_tensor(DType::kBool, {1000}, "flag", std::nullopt, rng);
  int ones = 0;
  for (int64_t k = 0; k < 1000; ++k) {
    uint8_t v = b.data<uint8_t>()[k];
    EXPECT_LE(v, 1);
    ones += v;
  }
  EXPECT_GT(ones, 100);
  EXPECT_LT(ones, 900);
  Tensor z = random_tensor(DType::kFloat16, {0, 3}, "x", std::nullopt, rng);
  EXPECT_EQ(z.numel(), 0);
}

TEST(Random, SeedIsDeterministic) {
  std::mt19937_64 a(42), b(42);
  Tensor x = random_tensor(DType::kFloat64, {16}, "x", std::nullopt, a);
  Tensor y = random_tensor(DType::kFloat64, {16}, "x", std::nullopt, b);
  for (int k = 0; k < 16; ++k) EXPECT_EQ(x.data<double>()[k], y.data<double>()[k]);
}

TEST(CheckFeed, DtypeRankAndConstantDims) {
  TensorInfo info{"x", DType::kFloat32, {-1, 64}, {"N", ""}, true};
  EXPECT_TRUE(check_feed(info, Tensor::zeros(DType::kFloat32, {5, 64}), "a.npy").ok());
  auto dt = check_feed(info, Tensor::zeros(DType::kInt64, {5, 64}), "a.npy");
  ASSERT_FALSE(dt.ok());
  EXPECT_EQ(dt.message(), "input 'x': a.npy has dtype int64, the model expects float32");
  auto rank = check_feed(info, Tensor::zeros(DType::kFloat32, {64}), "a.npy");
  ASSERT_FALSE(rank.ok());
  EXPECT_NE(rank.message().find("rank 1"), std::string::npos);
  auto dim = check_feed(info, Tensor::zeros(DType::kFloat32, {2, 63}), "a.npy");
  ASSERT_FALSE(dim.ok());
  EXPECT_NE(dim.message().find("dim 1 = 64"), std::string::npos);
}

TEST(Files, UnknownExtensionAndMissingFile) {
  auto a = read_tensor_file("x.txt");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument);
  auto b = read_tensor_file("/nonexistent/x.npy");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace tierjit::cli
