// Signature: bucket values, keys (exact / class / generic) and their agreement with
// Specialization keys, equality, text form.
#include <gtest/gtest.h>

#include <vector>

#include "runtime/guard.h"
#include "runtime/signature.h"

namespace tierjit::runtime {
namespace {

Signature sig2(int64_t a, int64_t b, DType t = DType::kFloat32) {
  Signature s;
  std::vector<int64_t> d{a, b};
  s.add_input(t, d);
  return s;
}

TEST(Bucket, DesignValues) {
  // bucket(0) = 0, bucket(1) = 1, else 2^ceil(log2 s).
  EXPECT_EQ(bucket(0), 0);
  EXPECT_EQ(bucket(1), 1);
  EXPECT_EQ(bucket(2), 2);
  EXPECT_EQ(bucket(3), 4);    // log2 3 = 1.58 -> 2^2
  EXPECT_EQ(bucket(5), 8);    // log2 5 = 2.32 -> 2^3
  EXPECT_EQ(bucket(128), 128);
  EXPECT_EQ(bucket(129), 256);
  EXPECT_EQ(bucket_low(0), 0);
  EXPECT_EQ(bucket_low(1), 1);
  EXPECT_EQ(bucket_low(2), 2);
  EXPECT_EQ(bucket_low(4), 3);
  EXPECT_EQ(bucket_low(128), 65);
  EXPECT_EQ(bucket(int64_t{1} << 62), int64_t{1} << 62);
  EXPECT_EQ(bucket((int64_t{1} << 62) + 1), (int64_t{1} << 62) + 1);  // own class, no overflow
}

TEST(Signature, AccessorsAndFlatIndex) {
  Signature s;
  std::vector<int64_t> a{8, 64}, b{3}, v{1, 2, 3};
  s.add_input(DType::kFloat32, a);
  EXPECT_TRUE(s.add_input_with_values(DType::kInt64, b, v));
  EXPECT_EQ(s.num_inputs(), 2u);
  EXPECT_EQ(s.num_dims(), 3u);
  EXPECT_EQ(s.input(1).dim_offset, 2u);
  EXPECT_EQ(s.input_of_flat(2), 1u);
  EXPECT_TRUE(s.has_values(1));
  EXPECT_FALSE(s.has_values(0));
  EXPECT_EQ(s.to_string(), "(float32[8,64], int64[3]={1,2,3})");
  std::vector<int64_t> many(kMaxSpecializedValues + 1, 0), dm{static_cast<int64_t>(many.size())};
  Signature t;
  EXPECT_FALSE(t.add_input_with_values(DType::kInt64, dm, many));
  EXPECT_FALSE(t.has_values(0));
}

TEST(Signature, OfTensorsCapturesSmallInt64Values) {
  Tensor x = Tensor::zeros(DType::kFloat32, {2, 3});
  Tensor shape = Tensor::from_vector<int64_t>({4}, {2, 3, 1, 1});
  std::vector<const Tensor*> in{&x, &shape, nullptr};
  std::vector<uint8_t> capture{1, 1, 0};
  Signature s = Signature::of_tensors(in, capture);
  EXPECT_EQ(s.to_string(), "(float32[2,3], int64[4]={2,3,1,1}, undefined[])");
  EXPECT_FALSE(s.has_values(0));  // float input: never captured
}

TEST(Signature, KeysAndEquality) {
  Signature a = sig2(8, 64), b = sig2(8, 64), c = sig2(7, 64), d = sig2(8, 64, DType::kFloat16);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_FALSE(a == c);
  EXPECT_NE(a.exact_key(), c.exact_key());
  EXPECT_NE(a.exact_key(), d.exact_key());
  // Class key buckets only the dynamic dims: 7 and 8 share bucket 8; 64 stays exact.
  std::vector<uint8_t> dyn0{1, 0};
  EXPECT_EQ(a.class_key(dyn0), c.class_key(dyn0));
  EXPECT_NE(a.class_key(dyn0), sig2(9, 64).class_key(dyn0));   // bucket 16
  EXPECT_NE(a.class_key(dyn0), sig2(8, 63).class_key(dyn0));   // static dim differs
  EXPECT_NE(a.class_key({}), c.class_key({}));                 // nothing dynamic: exact dims
  EXPECT_EQ(a.generic_key(), sig2(1000, 1).generic_key());
  EXPECT_NE(a.generic_key(), d.generic_key());                 // dtype stays in the key
  EXPECT_NE(a.exact_key(), a.class_key({}));                   // levels never collide
}

TEST(Signature, SpecializationKeysMatchSignatureKeys) {
  Signature s;
  std::vector<int64_t> a{8, 64}, b{2}, v{5, 6};
  s.add_input(DType::kFloat32, a);
  s.add_input_with_values(DType::kInt64, b, v);
  std::vector<uint8_t> dyn{1, 0, 0};
  EXPECT_EQ(Specialization::exact(s).key(), s.exact_key());
  EXPECT_EQ(Specialization::shape_class(s, dyn).key(), s.class_key(dyn));
  EXPECT_EQ(Specialization::generic(s).key(), s.generic_key());
  // key_of: another signature has the spec's key exactly when it meets the spec.
  Specialization cls = Specialization::shape_class(s, dyn);
  Signature t;
  std::vector<int64_t> a2{7, 64};
  t.add_input(DType::kFloat32, a2);
  t.add_input_with_values(DType::kInt64, b, v);
  EXPECT_EQ(cls.key_of(t), cls.key());
  EXPECT_EQ(cls.key_of(sig2(7, 64)), 0u);  // other layout
}

}  // namespace
}  // namespace tierjit::runtime
