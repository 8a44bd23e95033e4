// Tensor storage, views and dtype helpers.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <vector>

#include "support/float16.h"
#include "tierjit/tensor.h"

namespace tierjit {
namespace {

TEST(Tensor, AlignedAndViews) {
  Tensor t = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % kTensorAlignment, 0u);
  EXPECT_EQ(t.numel(), 6);
  Tensor r = t.reshaped({3, 2});
  EXPECT_TRUE(r.shares_storage_with(t));
  EXPECT_EQ(r.data<float>()[5], 6.0f);
  Tensor row = t.slice_rows(1, 2);
  EXPECT_EQ(row.shape(), (Shape{1, 3}));
  EXPECT_EQ(row.data<float>()[0], 4.0f);
  Tensor c = t.clone();
  EXPECT_FALSE(c.shares_storage_with(t));
}

TEST(Tensor, SizeZeroAndScalar) {
  Tensor z = Tensor::zeros(DType::kInt64, {0, 5});
  EXPECT_EQ(z.numel(), 0);
  EXPECT_EQ(z.nbytes(), 0u);
  Tensor s = Tensor::scalar<int64_t>(7);
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.value_as_int64(0), 7);
}

TEST(Tensor, Strings) {
  Tensor t = Tensor::empty(DType::kString, {2});
  t.data<std::string>()[0] = "a";
  Tensor c = t.clone();
  EXPECT_EQ(c.data<std::string>()[0], "a");
  EXPECT_EQ(c.data<std::string>()[1], "");
}

// A borrowed tensor views the caller's memory (no copy), keeps its owner alive while any view
// exists and frees nothing itself; clone() copies into tierjit's own storage. Strings, null data
// and data not aligned to the element size are refused.
TEST(Tensor, BorrowedMemoryIsViewedAndItsOwnerKeptAlive) {
  auto values = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4, 5, 6});
  std::weak_ptr<std::vector<float>> alive = values;
  Tensor t = Tensor::borrow(DType::kFloat32, {2, 3}, values->data(), values);
  float* data = values->data();
  values.reset();
  EXPECT_FALSE(alive.expired());
  EXPECT_TRUE(t.borrowed());
  EXPECT_EQ(t.raw_data(), data);
  EXPECT_EQ(t.value_as_double(4), 5.0);
  Tensor row = t.slice_rows(1, 2);
  EXPECT_TRUE(row.borrowed());
  EXPECT_EQ(row.data<float>()[2], 6.0f);
  Tensor c = t.clone();
  EXPECT_FALSE(c.borrowed());
  EXPECT_NE(c.raw_data(), data);
  t = Tensor();
  EXPECT_FALSE(alive.expired());  // the row view still holds it
  row = Tensor();
  EXPECT_TRUE(alive.expired());
  EXPECT_EQ(c.data<float>()[5], 6.0f);
  EXPECT_FALSE(Tensor::from_vector<float>({1}, {1}).borrowed());
  EXPECT_FALSE(Tensor().borrowed());

  Tensor empty = Tensor::borrow(DType::kInt64, {0, 4}, nullptr, nullptr);
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_TRUE(empty.borrowed());
  alignas(8) unsigned char bytes[16] = {};
  EXPECT_THROW(Tensor::borrow(DType::kFloat32, {2}, bytes + 1, nullptr), std::invalid_argument);
  EXPECT_NO_THROW(Tensor::borrow(DType::kUInt8, {2}, bytes + 1, nullptr));
  EXPECT_THROW(Tensor::borrow(DType::kString, {1}, bytes, nullptr), std::invalid_argument);
  EXPECT_THROW(Tensor::borrow(DType::kFloat32, {1}, nullptr, nullptr), std::invalid_argument);
}

TEST(Float16, RoundTripAndRounding) {
  using support::float_to_half;
  using support::half_to_float;
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(half_to_float(0x3c00), 1.0f);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(1e6f), 0x7c00);  // overflow to inf
  EXPECT_EQ(half_to_float(0x0001), 5.9604644775390625e-08f);  // smallest subnormal
  EXPECT_EQ(float_to_half(5.9604644775390625e-08f), 0x0001);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(NAN))));
  // 1 + 2^-11 is halfway between 1 and the next half: rounds to even (1.0)
  EXPECT_EQ(float_to_half(1.0f + 0.00048828125f), 0x3c00);
  EXPECT_EQ(support::float_to_bfloat16(1.0f), 0x3f80);
  EXPECT_EQ(support::bfloat16_to_float(0x3f80), 1.0f);
}

TEST(DType, Names) {
  EXPECT_EQ(dtype_name(DType::kFloat32), "float32");
  EXPECT_EQ(dtype_from_name("INT64"), DType::kInt64);
  EXPECT_FALSE(dtype_from_name("complex64").has_value());
  EXPECT_EQ(dtype_size(DType::kBFloat16), 2u);
}

}  // namespace
}  // namespace tierjit
