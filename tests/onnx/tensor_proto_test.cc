// Tests of TensorProto decoding (src/onnx/tensor_proto.cc) through the loader: every initializer
// encoding (raw_data, each typed field, external data files), the path and size checks, and
// read_tensor_pb / write_tensor_pb.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "model_builder.h"

namespace tierjit::onnx_test {
namespace {

using TP = onnx::TensorProto;

// Loads a model whose only content is initializer `t` (also the graph output) and returns the
// constant tensor the loader made of it.
Expected<Tensor> decode(const TP& t, const std::string& base_dir = ".",
                        onnx_import::LoadOptions opts = {}) {
  onnx::GraphProto g;
  *g.add_initializer() = t;
  add_untyped_output(g, t.name());
  TJ_ASSIGN_OR_RETURN(ir::Model m, load(make_model(g), base_dir, opts));
  const ir::Value* v = find_value(*m.graph, t.name());
  if (!v || !v->is_constant()) return internal_error("no constant '{}'", t.name());
  EXPECT_EQ(v->type().dtype, v->constant().dtype());
  return v->constant();
}

TP tensor(int32_t dtype, std::vector<int64_t> dims, const std::string& name = "t") {
  TP t;
  t.set_name(name);
  t.set_data_type(dtype);
  for (int64_t d : dims) t.add_dims(d);
  return t;
}

template <class T>
std::vector<T> values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

TEST(TensorProto, RawDataFloatInt64Float16AndBool) {
  TP f = tensor(TP::FLOAT, {2, 3});
  float fv[6] = {1.5f, -2, 0, 3.25f, 1e30f, -0.0f};
  f.set_raw_data(std::string(reinterpret_cast<char*>(fv), sizeof fv));
  auto r = decode(f);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->shape(), (Shape{2, 3}));
  EXPECT_EQ(values<float>(*r), (std::vector<float>{1.5f, -2, 0, 3.25f, 1e30f, -0.0f}));

  TP i = tensor(TP::INT64, {2});
  int64_t iv[2] = {-5, int64_t{1} << 40};
  i.set_raw_data(std::string(reinterpret_cast<char*>(iv), sizeof iv));
  r = decode(i);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(values<int64_t>(*r), (std::vector<int64_t>{-5, int64_t{1} << 40}));

  TP h = tensor(TP::FLOAT16, {2});
  uint16_t hv[2] = {0x3C00, 0xC000};  // 1.0, -2.0
  h.set_raw_data(std::string(reinterpret_cast<char*>(hv), sizeof hv));
  r = decode(h);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->dtype(), DType::kFloat16);
  EXPECT_EQ(r->value_as_double(0), 1.0);
  EXPECT_EQ(r->value_as_double(1), -2.0);

  TP b = tensor(TP::BOOL, {3});
  b.set_raw_data(std::string("\x00\x01\x07", 3));  // any non-zero byte means true
  r = decode(b);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(values<uint8_t>(*r), (std::vector<uint8_t>{0, 1, 1}));
}

TEST(TensorProto, TypedFields) {
  TP f = tensor(TP::FLOAT, {2});
  f.add_float_data(0.5f);
  f.add_float_data(-1);
  auto r = decode(f);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(values<float>(*r), (std::vector<float>{0.5f, -1}));

  TP d = tensor(TP::DOUBLE, {1});
  d.add_double_data(1e300);
  r = decode(d);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(values<double>(*r), (std::vector<double>{1e300}));

  TP i64 = tensor(TP::INT64, {});  // rank 0
  i64.add_int64_data(-7);
  r = decode(i64);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->rank(), 0);
  EXPECT_EQ(values<int64_t>(*r), (std::vector<int64_t>{-7}));

  TP u64 = tensor(TP::UINT64, {1});
  u64.add_uint64_data(~uint64_t{0});
  r = decode(u64);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(values<uint64_t>(*r), (std::vector<uint64_t>{~uint64_t{0}}));

  TP u32 = tensor(TP::UINT32, {2});  // uint32 travels in uint64_data
  u32.add_uint64_data(4000000000u);
  u32.add_uint64_data(1);
  r = decode(u32);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(values<uint32_t>(*r), (std::vector<uint32_t>{4000000000u, 1}));

  TP s = tensor(TP::STRING, {2});
  s.add_string_data("hello");
  s.add_string_data("");
  r = decode(s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(values<std::string>(*r), (std::vector<std::string>{"hello", ""}));
}

TEST(TensorProto, Int32DataCarriesSmallIntsBoolAndHalfBitPatterns) {
  auto i32 = [](int32_t dtype, std::vector<int32_t> v) {
    TP t = tensor(dtype, {static_cast<int64_t>(v.size())});
    for (int32_t x : v) t.add_int32_data(x);
    return decode(t);
  };
  auto r = i32(TP::INT32, {-2147483647 - 1, 5});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(values<int32_t>(*r), (std::vector<int32_t>{-2147483647 - 1, 5}));
  r = i32(TP::INT16, {-32768, 300});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(values<int16_t>(*r), (std::vector<int16_t>{-32768, 300}));
  r = i32(TP::INT8, {-128, 127});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(values<int8_t>(*r), (std::vector<int8_t>{-128, 127}));
  r = i32(TP::UINT8, {255, 0});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(values<uint8_t>(*r), (std::vector<uint8_t>{255, 0}));
  r = i32(TP::UINT16, {65535, 1});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(values<uint16_t>(*r), (std::vector<uint16_t>{65535, 1}));
  r = i32(TP::BOOL, {1, 0, 1});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(values<uint8_t>(*r), (std::vector<uint8_t>{1, 0, 1}));
  r = i32(TP::FLOAT16, {0x3800, 0x7C00});  // 0.5, +inf
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->dtype(), DType::kFloat16);
  EXPECT_EQ(r->value_as_double(0), 0.5);
  EXPECT_TRUE(std::isinf(r->value_as_double(1)));
  r = i32(TP::BFLOAT16, {0x3F80, 0xC040});  // 1.0, -3.0
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->dtype(), DType::kBFloat16);
  EXPECT_EQ(r->value_as_double(0), 1.0);
  EXPECT_EQ(r->value_as_double(1), -3.0);
}

TEST(TensorProto, EmptyTensorsNeedNoData) {
  auto r = decode(tensor(TP::FLOAT, {0, 3}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->shape(), (Shape{0, 3}));
  EXPECT_EQ(r->numel(), 0);
}

TEST(TensorProto, BadEncodingsAreInvalidModel) {
  TP raw = tensor(TP::FLOAT, {3});
  raw.set_raw_data(std::string(8, '\0'));  // 2 floats for a shape of 3
  auto r = decode(raw);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidModel);
  EXPECT_NE(r.status().message().find("mem.onnx: initializer 't': raw_data has 8 bytes"),
            std::string::npos) << r.status().message();

  TP typed = tensor(TP::INT64, {2, 2});
  typed.add_int64_data(1);
  r = decode(typed);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidModel);
  EXPECT_NE(r.status().message().find("int64_data holds 1 values, the shape needs 4"),
            std::string::npos) << r.status().message();

  TP no_data = tensor(TP::FLOAT, {2});
  EXPECT_EQ(decode(no_data).status().code(), StatusCode::kInvalidModel);

  TP neg = tensor(TP::FLOAT, {-1});
  EXPECT_EQ(decode(neg).status().code(), StatusCode::kInvalidModel);

  TP bad_type = tensor(99, {1});
  bad_type.add_float_data(1);
  EXPECT_EQ(decode(bad_type).status().code(), StatusCode::kInvalidModel);

  TP complex = tensor(TP::COMPLEX64, {1});
  complex.add_float_data(1);
  complex.add_float_data(2);
  EXPECT_EQ(decode(complex).status().code(), StatusCode::kUnsupported);
}

TEST(TensorProto, OverMemoryLimitIsResourceExhausted) {
  onnx_import::LoadOptions opts;
  opts.memory_limit_bytes = 1000;
  TP t = tensor(TP::FLOAT, {251});  // 1004 bytes
  t.set_raw_data(std::string(1004, '\0'));
  auto r = decode(t, ".", opts);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("mem.onnx: initializer 't'"), std::string::npos)
      << r.status().message();
  TP fits = tensor(TP::FLOAT, {250});  // 1000 bytes: exactly the limit
  fits.set_raw_data(std::string(1000, '\0'));
  EXPECT_TRUE(decode(fits, ".", opts).ok());
  // Dims whose product overflows int64 must not wrap around to a small size.
  TP huge = tensor(TP::FLOAT, {int64_t{1} << 40, int64_t{1} << 40, 0 + 16});
  EXPECT_EQ(decode(huge).status().code(), StatusCode::kResourceExhausted);
}

// An initializer stored in external file `location` at `offset` (length given when >= 0).
TP external(const std::string& location, int64_t offset, int64_t length, std::vector<int64_t> dims) {
  TP t = tensor(TP::FLOAT, std::move(dims), "w");
  t.set_data_location(TP::EXTERNAL);
  auto kv = [&](const char* k, const std::string& v) {
    auto* e = t.add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  kv("location", location);
  if (offset >= 0) kv("offset", std::to_string(offset));
  if (length >= 0) kv("length", std::to_string(length));
  return t;
}

std::string floats_bytes(std::vector<float> v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

TEST(TensorProto, ExternalDataFromAModelFileOnDisk) {
  TempDir dir("external");
  // 8 bytes of padding, then 3 floats; a second tensor in a subfolder without offset/length.
  dir.write("weights.bin", std::string(8, 'x') + floats_bytes({1, 2, 3}));
  dir.write("sub/more.bin", floats_bytes({4, 5}));
  onnx::GraphProto g;
  *g.add_initializer() = external("weights.bin", 8, 12, {3});
  TP w2 = external("sub/../sub/more.bin", -1, -1, {2});
  w2.set_name("w2");
  *g.add_initializer() = w2;
  add_node(g, "Add", {"w", "w"}, {"y"});
  add_output(g, "y", TP::FLOAT, {3});
  add_untyped_output(g, "w2");
  dir.write("model.onnx", serialize(make_model(g)));

  auto m = onnx_import::load_model(dir.file("model.onnx"));
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->path, dir.file("model.onnx"));
  const ir::Value* w = find_value(*m->graph, "w");
  ASSERT_TRUE(w && w->is_constant());
  EXPECT_EQ(values<float>(w->constant()), (std::vector<float>{1, 2, 3}));
  const ir::Value* v2 = find_value(*m->graph, "w2");
  ASSERT_TRUE(v2 && v2->is_constant());
  EXPECT_EQ(values<float>(v2->constant()), (std::vector<float>{4, 5}));
}

TEST(TensorProto, ExternalDataErrors) {
  TempDir dir("external_err");
  dir.write("short.bin", floats_bytes({1, 2}));
  auto check = [&](const TP& t, StatusCode code, const std::string& needle) {
    onnx::GraphProto g;
    *g.add_initializer() = t;
    add_untyped_output(g, t.name());
    dir.write("model.onnx", serialize(make_model(g)));
    auto m = onnx_import::load_model(dir.file("model.onnx"));
    ASSERT_FALSE(m.ok()) << needle;
    EXPECT_EQ(m.status().code(), code) << m.status().message();
    EXPECT_EQ(m.status().message().rfind(dir.file("model.onnx") + ": initializer 'w': ", 0), 0u)
        << m.status().message();
    EXPECT_NE(m.status().message().find(needle), std::string::npos) << m.status().message();
  };
  check(external("../outside.bin", -1, -1, {1}), StatusCode::kInvalidModel, "leaves the model's folder");
  check(external("a/../../outside.bin", -1, -1, {1}), StatusCode::kInvalidModel,
        "leaves the model's folder");
  check(external("/etc/passwd", -1, -1, {1}), StatusCode::kInvalidModel, "must be relative");
  check(external("missing.bin", -1, -1, {1}), StatusCode::kNotFound, "not found");
  check(external("short.bin", -1, -1, {3}), StatusCode::kInvalidModel, "too short");
  check(external("short.bin", 4, -1, {2}), StatusCode::kInvalidModel, "too short");
  check(external("short.bin", -1, 4, {2}), StatusCode::kInvalidModel, "does not match");
}

// A TensorProto declaring more values than it stores is refused before the tensor is allocated:
// the 10 bytes of tests/fuzz/regressions/pb/strings_without_data.pb declare [536870911, 1]
// strings (just under the default 16 GiB limit) and store none; constructing them first took
// 16 GB and ended in an out-of-memory kill.
TEST(TensorProto, DeclaredValuesWithoutDataAreRefusedBeforeAllocating) {
  TempDir dir("pb");
  const std::string bytes("\x08\xff\xff\xff\xff\x01\x08\x01\x10\x08", 10);
  {
    std::ofstream out(dir.file("s.pb"), std::ios::binary);
    out << bytes;
  }
  auto r = onnx_import::read_tensor_pb(dir.file("s.pb"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidModel);
  EXPECT_NE(r.status().message().find("string_data holds 0 values, the shape needs 536870911"),
            std::string::npos)
      << r.status().message();
  // The same for raw bytes: 2^31 float32 declared, 4 bytes stored.
  onnx::TensorProto p;
  p.set_data_type(onnx::TensorProto_DataType_FLOAT);
  p.add_dims(int64_t{1} << 31);
  p.set_raw_data(std::string(4, '\0'));
  {
    std::ofstream out(dir.file("f.pb"), std::ios::binary);
    out << p.SerializeAsString();
  }
  r = onnx_import::read_tensor_pb(dir.file("f.pb"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("raw_data has 4 bytes"), std::string::npos) << r.status().message();
  // Strings in raw_data are refused before the 448,500,625 strings of the shape are built
  // (tests/fuzz/regressions/pb/strings_in_raw_data.pb).
  onnx::TensorProto sr;
  sr.set_data_type(onnx::TensorProto_DataType_STRING);
  for (int64_t d : {14975, 14975, 2}) sr.add_dims(d);
  sr.set_raw_data("x");
  {
    std::ofstream out(dir.file("sr.pb"), std::ios::binary);
    out << sr.SerializeAsString();
  }
  r = onnx_import::read_tensor_pb(dir.file("sr.pb"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("string tensors cannot use raw_data"), std::string::npos)
      << r.status().message();
  // A 0 beside huge dims is an empty tensor: the count check must not multiply the huge dims
  // (signed overflow; tests/fuzz/regressions/pb/zero_dim_beside_huge_dims.pb, seen by UBSan in the
  // sanitizer build).
  onnx::TensorProto z;
  z.set_data_type(onnx::TensorProto_DataType_INT32);
  for (int64_t d : {int64_t{1} << 40, int64_t{1} << 40, int64_t{0}}) z.add_dims(d);
  {
    std::ofstream out(dir.file("z.pb"), std::ios::binary);
    out << z.SerializeAsString();
  }
  r = onnx_import::read_tensor_pb(dir.file("z.pb"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->shape(), (Shape{int64_t{1} << 40, int64_t{1} << 40, 0}));
}

TEST(TensorProto, WriteThenReadRoundTrip) {
  TempDir dir("pb");
  Tensor f = Tensor::from_vector<float>({2, 2}, {1, -2, 3.5f, 0});
  ASSERT_TRUE(onnx_import::write_tensor_pb(dir.file("f.pb"), f, "x").ok());
  auto r = onnx_import::read_tensor_pb(dir.file("f.pb"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->shape(), (Shape{2, 2}));
  EXPECT_EQ(values<float>(*r), (std::vector<float>{1, -2, 3.5f, 0}));

  Tensor s = Tensor::from_vector<std::string>({3}, {"a", "", "ccc"});
  ASSERT_TRUE(onnx_import::write_tensor_pb(dir.file("s.pb"), s, "s").ok());
  r = onnx_import::read_tensor_pb(dir.file("s.pb"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(values<std::string>(*r), (std::vector<std::string>{"a", "", "ccc"}));

  Tensor e = Tensor::zeros(DType::kInt64, {0, 4});
  ASSERT_TRUE(onnx_import::write_tensor_pb(dir.file("e.pb"), e, "e").ok());
  r = onnx_import::read_tensor_pb(dir.file("e.pb"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->shape(), (Shape{0, 4}));
  EXPECT_EQ(r->dtype(), DType::kInt64);
}

TEST(TensorProto, ReadErrors) {
  TempDir dir("pb_err");
  auto missing = onnx_import::read_tensor_pb(dir.file("nope.pb"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("nope.pb"), std::string::npos);

  Tensor f = Tensor::from_vector<float>({64}, std::vector<float>(64, 1.0f));
  ASSERT_TRUE(onnx_import::write_tensor_pb(dir.file("f.pb"), f, "x").ok());
  std::ifstream in(dir.file("f.pb"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  dir.write("half.pb", bytes.substr(0, bytes.size() / 2));
  auto half = onnx_import::read_tensor_pb(dir.file("half.pb"));
  ASSERT_FALSE(half.ok());
  EXPECT_EQ(half.status().code(), StatusCode::kInvalidModel);
  EXPECT_EQ(half.status().message().rfind(dir.file("half.pb") + ": ", 0), 0u) << half.status().message();

  dir.write("garbage.pb", "\xff\xfe garbage \x01\x02\x03");
  auto garbage = onnx_import::read_tensor_pb(dir.file("garbage.pb"));
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.status().code(), StatusCode::kInvalidModel);
}

}  // namespace
}  // namespace tierjit::onnx_test
