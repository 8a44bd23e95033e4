// Tests of the CLI's .npy reader/writer (tools/npy.cc): byte-exact agreement with numpy.save,
// round trips of every dtype, versions 2.0/3.0, and clean errors on malformed files.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "cli_util.h"
#include "support/float16.h"

namespace tierjit::cli {
namespace {

std::string header_v1(const std::string& dict) {
  // magic + version 1.0 + 2-byte length + dict padded to a multiple of 64 ending in '\n'
  std::string d = dict;
  size_t total = 10 + d.size() + 1;
  d.append((64 - total % 64) % 64, ' ');
  d.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(d.size() & 0xff));
  out.push_back(static_cast<char>(d.size() >> 8));
  return out + d;
}

// Bytes of numpy.save(np.array([[1.5, -2], [3, 4]], dtype='<f4')) (numpy 1.26).
std::string numpy_f32_2x2() {
  std::string b = header_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }");
  const float v[4] = {1.5f, -2.f, 3.f, 4.f};
  b.append(reinterpret_cast<const char*>(v), sizeof(v));
  return b;
}

TEST(Npy, MatchesNumpyBytesExactly) {
  std::string np = numpy_f32_2x2();
  ASSERT_EQ(np.size(), 128u + 16u);  // numpy pads the header to 128 bytes here
  auto t = parse_npy(np, "a.npy");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->dtype(), DType::kFloat32);
  EXPECT_EQ(t->shape(), (Shape{2, 2}));
  EXPECT_EQ(t->data<float>()[0], 1.5f);
  EXPECT_EQ(t->data<float>()[1], -2.f);
  auto bytes = serialize_npy(*t);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, np);
}

TEST(Npy, ScalarAndVersion2) {
  // numpy.save(np.float64(2.5)): shape ()
  std::string b = header_v1("{'descr': '<f8', 'fortran_order': False, 'shape': (), }");
  double v = 2.5;
  b.append(reinterpret_cast<const char*>(&v), 8);
  auto t = parse_npy(b, "s.npy");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->rank(), 0);
  EXPECT_EQ(t->data<double>()[0], 2.5);

  // write_array(version=(2, 0)) of int64 [1, 2, 3]: 4-byte header length.
  std::string dict = "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }";
  dict.append(128 - 12 - dict.size() - 1, ' ');
  dict.push_back('\n');
  for (char major : {'\x02', '\x03'}) {
    std::string v2("\x93NUMPY", 6);
    v2.push_back(major);
    v2.push_back('\0');
    uint32_t len = static_cast<uint32_t>(dict.size());
    v2.append(reinterpret_cast<const char*>(&len), 4);
    v2 += dict;
    const int64_t vals[3] = {1, 2, 3};
    v2.append(reinterpret_cast<const char*>(vals), sizeof(vals));
    auto t2 = parse_npy(v2, "v2.npy");
    ASSERT_TRUE(t2.ok()) << t2.status().message();
    EXPECT_EQ(t2->shape(), (Shape{3}));
    EXPECT_EQ(t2->data<int64_t>()[2], 3);
  }
}

template <class T>
void round_trip(DType dt, std::vector<T> values, Shape shape) {
  Tensor t = Tensor::from_bytes(dt, shape, values.data());
  auto bytes = serialize_npy(t);
  ASSERT_TRUE(bytes.ok()) << dtype_name(dt);
  auto back = parse_npy(*bytes, "rt.npy");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->dtype(), dt);
  EXPECT_EQ(back->shape(), shape);
  ASSERT_EQ(back->nbytes(), t.nbytes());
  EXPECT_EQ(std::memcmp(back->raw_data(), t.raw_data(), t.nbytes()), 0) << dtype_name(dt);
}

TEST(Npy, RoundTripEveryDtype) {
  round_trip<float>(DType::kFloat32, {1.f, -0.f, 3.25f, NAN, INFINITY, -1e-30f}, {2, 3});
  round_trip<double>(DType::kFloat64, {1.0, -2.5, 1e300}, {3});
  round_trip<uint16_t>(DType::kFloat16, {support::float_to_half(1.5f), support::float_to_half(-2.f)}, {2, 1});
  round_trip<int8_t>(DType::kInt8, {-128, 0, 127}, {3});
  round_trip<int16_t>(DType::kInt16, {-32768, 7, 32767}, {1, 3});
  round_trip<int32_t>(DType::kInt32, {INT32_MIN, 0, INT32_MAX, 5}, {2, 2});
  round_trip<int64_t>(DType::kInt64, {INT64_MIN, INT64_MAX}, {2});
  round_trip<uint8_t>(DType::kUInt8, {0, 255}, {2});
  round_trip<uint16_t>(DType::kUInt16, {0, 65535}, {2});
  round_trip<uint32_t>(DType::kUInt32, {0, 4294967295u}, {2});
  round_trip<uint64_t>(DType::kUInt64, {0, UINT64_MAX}, {1, 2});
  round_trip<uint8_t>(DType::kBool, {1, 0, 1}, {3});
  round_trip<float>(DType::kFloat32, {}, {0, 4});  // size-0 dim
  round_trip<float>(DType::kFloat32, {7.f}, {1, 1, 1});
}

TEST(Npy, BFloat16IsWidenedToFloat32) {
  std::vector<uint16_t> v = {support::float_to_bfloat16(1.5f), support::float_to_bfloat16(-3.f)};
  auto bytes = serialize_npy(Tensor::from_bytes(DType::kBFloat16, {2}, v.data()));
  ASSERT_TRUE(bytes.ok());
  auto back = parse_npy(*bytes, "bf.npy");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->dtype(), DType::kFloat32);
  EXPECT_EQ(back->data<float>()[0], 1.5f);
  EXPECT_EQ(back->data<float>()[1], -3.f);
}

TEST(Npy, StringsAreRefusedCleanly) {
  Tensor s = Tensor::from_vector<std::string>({1}, {"a"});
  auto bytes = serialize_npy(s);
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.status().message().find("use --output-format pb"), std::string::npos);
}

void expect_error(const std::string& bytes, const std::string& what) {
  auto t = parse_npy(bytes, "bad.npy");
  ASSERT_FALSE(t.ok()) << "expected an error containing: " << what;
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find(what), std::string::npos) << t.status().message();
  EXPECT_EQ(t.status().message().find('\n'), std::string::npos);
  EXPECT_EQ(t.status().message().rfind("bad.npy", 0), 0u) << "message names the file";
}

TEST(Npy, MalformedFilesGiveOneLineErrors) {
  std::string good = numpy_f32_2x2();
  expect_error("", "file too short");
  expect_error("PK\x03\x04 not numpy at all", "bad magic");
  expect_error(good.substr(0, good.size() - 1), "truncated data");
  expect_error(good.substr(0, 128), "truncated data");
  expect_error(good.substr(0, 60), "truncated header");
  expect_error(good + "xx", "trailing bytes");
  std::string v9 = good;
  v9[6] = 9;
  expect_error(v9, "unsupported format version 9.0");
  std::string f = header_v1("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }") + good.substr(128);
  expect_error(f, "fortran_order");
  std::string be = header_v1("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }") + good.substr(128);
  expect_error(be, "big-endian");
  std::string c8 = header_v1("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }") + good.substr(128);
  expect_error(c8, "unsupported dtype '<c8'");
  std::string obj = header_v1("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }");
  expect_error(obj, "'descr'");
  std::string noshape = header_v1("{'descr': '<f4', 'fortran_order': False, }") + good.substr(128);
  expect_error(noshape, "lacks");
  std::string huge = header_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (999999999999999, 999999999999999), }");
  expect_error(huge, "shape too large");
  std::string big = header_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000,), }");
  expect_error(big, "truncated data");
}

// Files that are not regular, or whose size disagrees with their header, are refused before
// their data is read: a FIFO (reading it would block until a writer came), a link to /dev/zero
// (never ends), a directory, and a valid 2 x 2 header followed by 1 GiB (sparse) where 16 bytes
// belong. The well-formed file still reads.
TEST(Npy, SpecialAndMisSizedFilesAreRefusedBeforeReading) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("tierjit_npy_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string fifo = (dir / "fifo.npy").string(), zero = (dir / "zero.npy").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_symlink("/dev/zero", zero);
  auto refused = [](const std::string& path, const std::string& why) {
    auto t = read_npy(path);
    ASSERT_FALSE(t.ok()) << path;
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument) << t.status().message();
    EXPECT_NE(t.status().message().find(path + ": " + why), std::string::npos)
        << t.status().message();
  };
  refused(fifo, "is not a regular file (a FIFO)");
  refused(zero, "is not a regular file (a character device)");
  refused(dir.string(), "is a directory");
  const std::string good = numpy_f32_2x2(), padded = (dir / "padded.npy").string();
  {
    std::ofstream(padded, std::ios::binary) << good;
  }
  fs::resize_file(padded, good.size() + (uint64_t{1} << 30));  // sparse: nothing written
  refused(padded, "not a valid .npy file: the header declares <f4 [2, 2] (16 bytes of data), the "
                  "file has 1073741840 bytes after its 128-byte header");
  fs::resize_file(padded, good.size());
  auto t = read_npy(padded);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->data<float>()[3], 4.f);
  fs::remove_all(dir);
}

TEST(Npy, ReadMissingFileIsNotFound) {
  auto t = read_npy("/nonexistent/dir/x.npy");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace tierjit::cli
