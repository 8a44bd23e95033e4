// TensorProto <-> Tensor: every encoding ONNX uses for initializers, attribute tensors and the
// backend tests' .pb files (raw_data, typed repeated fields, external data files), with size and
// path checks so a malformed or hostile file gives an error, never an over-read or a huge
// allocation. Also read_tensor_pb / write_tensor_pb of the public loader API.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>

#include "onnx/import_internal.h"
#include "support/file_io.h"

namespace tierjit::onnx_import {

namespace fs = std::filesystem;

Status read_file(const std::string& path, std::string* bytes, int64_t max_bytes,
                 const char* over_limit_hint) {
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) return not_found("{}: no such file", path);
  if (!fs::is_regular_file(st)) return invalid_model("{}: not a regular file", path);
  const auto stat_size = fs::file_size(path, ec);
  if (ec) return io_error("{}: cannot read the file size", path);
  if (stat_size > static_cast<uintmax_t>(max_bytes))
    return unsupported("{}: the file has {} bytes, over the {} bytes protobuf can parse ({})", path,
                       stat_size, max_bytes, over_limit_hint);
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return io_error("{}: cannot open for reading", path);
  const std::streamoff size = in.tellg();
  if (size < 0) return io_error("{}: cannot read the file size", path);
  if (size > max_bytes) return unsupported("{}: the file grew past {} bytes while read", path, max_bytes);
  bytes->resize(static_cast<size_t>(size));
  in.seekg(0);
  if (size > 0 && !in.read(bytes->data(), size)) return io_error("{}: read failed", path);
  return Status();
}

Status check_tensor_size(DType dtype, const Shape& shape, int64_t limit_bytes,
                         const std::string& what) {
  int64_t es = static_cast<int64_t>(dtype_size(dtype));
  if (es == 0) es = 1;
  int64_t limit_elems = limit_bytes / es;
  for (int64_t d : shape)
    if (d < 0) return invalid_model("{}: negative dim {} in shape", what, d);
  int64_t n = 1;
  bool over = false;
  for (int64_t d : shape) {
    if (d == 0) return Status();
    if (n > limit_elems / d) over = true;
    else n *= d;
  }
  if (over || n > limit_elems)
    return resource_exhausted("{}: shape {} ({}) needs more than {} bytes, the memory limit", what,
                              shape_to_string(shape), dtype_name(dtype), limit_bytes);
  return Status();
}

namespace {

Expected<DType> dtype_from_code(int32_t code, const std::string& what) {
  if (code == onnx::TensorProto_DataType_COMPLEX64 || code == onnx::TensorProto_DataType_COMPLEX128)
    return unsupported("{}: complex element types are not supported", what);
  if (code == 0 || !dtype_is_valid(code))
    return invalid_model("{}: invalid element type code {}", what, code);
  return static_cast<DType>(code);
}

// Copies a typed repeated field into `t`, converting each element with a static_cast (or a bit
// pattern copy for float16/bfloat16).
template <class Dst, class Field>
void copy_field(const Field& field, Tensor& t) {
  Dst* out = t.data<Dst>();
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<Dst>(field.Get(i));
}

template <class Field>
Status expect_count(const Field& field, int64_t numel, const char* field_name,
                    const std::string& what) {
  if (static_cast<int64_t>(field.size()) != numel)
    return invalid_model("{}: {} holds {} values, the shape needs {}", what, field_name,
                         field.size(), numel);
  return Status();
}

// The typed field decode_typed reads for `dtype`: its name and its number of values.
std::pair<const char*, int64_t> typed_field(const onnx::TensorProto& p, DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return {"float_data", p.float_data_size()};
    case DType::kFloat64: return {"double_data", p.double_data_size()};
    case DType::kInt64: return {"int64_data", p.int64_data_size()};
    case DType::kUInt64:
    case DType::kUInt32: return {"uint64_data", p.uint64_data_size()};
    case DType::kString: return {"string_data", p.string_data_size()};
    default: return {"int32_data", p.int32_data_size()};  // 8/16/32-bit ints, bool, float16, bfloat16
  }
}

Status decode_typed(const onnx::TensorProto& p, Tensor& t, const std::string& what) {
  const int64_t n = t.numel();
  switch (t.dtype()) {
    case DType::kFloat32:
      TJ_RETURN_IF_ERROR(expect_count(p.float_data(), n, "float_data", what));
      copy_field<float>(p.float_data(), t);
      return Status();
    case DType::kFloat64:
      TJ_RETURN_IF_ERROR(expect_count(p.double_data(), n, "double_data", what));
      copy_field<double>(p.double_data(), t);
      return Status();
    case DType::kInt64:
      TJ_RETURN_IF_ERROR(expect_count(p.int64_data(), n, "int64_data", what));
      copy_field<int64_t>(p.int64_data(), t);
      return Status();
    case DType::kUInt64:
      TJ_RETURN_IF_ERROR(expect_count(p.uint64_data(), n, "uint64_data", what));
      copy_field<uint64_t>(p.uint64_data(), t);
      return Status();
    case DType::kUInt32:
      TJ_RETURN_IF_ERROR(expect_count(p.uint64_data(), n, "uint64_data", what));
      copy_field<uint32_t>(p.uint64_data(), t);
      return Status();
    case DType::kInt32:
      TJ_RETURN_IF_ERROR(expect_count(p.int32_data(), n, "int32_data", what));
      copy_field<int32_t>(p.int32_data(), t);
      return Status();
    case DType::kInt16:
      TJ_RETURN_IF_ERROR(expect_count(p.int32_data(), n, "int32_data", what));
      copy_field<int16_t>(p.int32_data(), t);
      return Status();
    case DType::kInt8:
      TJ_RETURN_IF_ERROR(expect_count(p.int32_data(), n, "int32_data", what));
      copy_field<int8_t>(p.int32_data(), t);
      return Status();
    case DType::kUInt16:
    case DType::kFloat16:
    case DType::kBFloat16:  // 16-bit patterns in the low bits of int32_data
      TJ_RETURN_IF_ERROR(expect_count(p.int32_data(), n, "int32_data", what));
      copy_field<uint16_t>(p.int32_data(), t);
      return Status();
    case DType::kUInt8:
      TJ_RETURN_IF_ERROR(expect_count(p.int32_data(), n, "int32_data", what));
      copy_field<uint8_t>(p.int32_data(), t);
      return Status();
    case DType::kBool: {
      TJ_RETURN_IF_ERROR(expect_count(p.int32_data(), n, "int32_data", what));
      bool* out = t.data<bool>();
      for (int64_t i = 0; i < n; ++i) out[i] = p.int32_data(static_cast<int>(i)) != 0;
      return Status();
    }
    case DType::kString: {
      TJ_RETURN_IF_ERROR(expect_count(p.string_data(), n, "string_data", what));
      std::string* out = t.data<std::string>();
      for (int64_t i = 0; i < n; ++i) out[i] = p.string_data(static_cast<int>(i));
      return Status();
    }
    case DType::kUndefined: break;
  }
  return invalid_model("{}: undefined element type", what);
}

// Copies little-endian bytes into `t` (bool bytes are normalized to 0/1).
void copy_raw(const char* src, Tensor& t) {
  if (t.nbytes() == 0) return;
  std::memcpy(t.raw_data(), src, t.nbytes());
  if (t.dtype() == DType::kBool) {
    auto* b = static_cast<uint8_t*>(t.raw_data());
    for (int64_t i = 0; i < t.numel(); ++i) b[i] = b[i] != 0;
  }
}

}  // namespace

Expected<Tensor> tensor_from_proto(const onnx::TensorProto& p, const ExternalDataRoots& roots,
                                   int64_t limit_bytes, const std::string& what) {
  if (p.has_segment()) return unsupported("{}: segmented tensors are not supported", what);
  TJ_ASSIGN_OR_RETURN(DType dtype, dtype_from_code(p.data_type(), what));
  Shape shape(p.dims().begin(), p.dims().end());
  TJ_RETURN_IF_ERROR(check_tensor_size(dtype, shape, limit_bytes, what));
  // The number of values, without a product that overflows beside a 0 dim (check_tensor_size
  // bounds the product when no dim is 0 and accepts any other dims beside a 0).
  int64_t numel = 1;
  for (int64_t d : shape) numel = d == 0 ? 0 : numel;
  if (numel != 0)
    for (int64_t d : shape) numel *= d;
  // Stored data shorter than the shape is refused before the tensor is allocated: a 10-byte
  // TensorProto declaring 2^29 strings must not construct them first.
  if (p.data_location() != onnx::TensorProto_DataLocation_EXTERNAL) {
    if (p.has_raw_data()) {
      if (dtype == DType::kString) return invalid_model("{}: string tensors cannot use raw_data", what);
      if (p.raw_data().size() != static_cast<size_t>(numel) * dtype_size(dtype))
        return invalid_model("{}: raw_data has {} bytes, shape {} of {} needs {}", what,
                             p.raw_data().size(), shape_to_string(shape), dtype_name(dtype),
                             static_cast<size_t>(numel) * dtype_size(dtype));
    } else {
      const auto [field, stored] = typed_field(p, dtype);
      if (stored != numel)  // decode_typed's check, before the allocation
        return invalid_model("{}: {} holds {} values, the shape needs {}", what, field, stored, numel);
    }
  }
  if (p.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    if (dtype == DType::kString)
      return invalid_model("{}: string tensors cannot use external data", what);
    // Path, folder and the file's size are checked before the tensor is allocated.
    const int64_t nbytes = numel * static_cast<int64_t>(dtype_size(dtype));
    TJ_ASSIGN_OR_RETURN(ExternalData file, open_external_data(p, roots, nbytes, what));
    Tensor t = Tensor::empty(dtype, shape);
    TJ_RETURN_IF_ERROR(file.read_into(t.raw_data(), what));
    if (dtype == DType::kBool) {
      auto* b = static_cast<uint8_t*>(t.raw_data());
      for (int64_t i = 0; i < t.numel(); ++i) b[i] = b[i] != 0;
    }
    return t;
  }
  Tensor t = Tensor::empty(dtype, shape);
  if (p.has_raw_data()) {
    if (dtype == DType::kString) return invalid_model("{}: string tensors cannot use raw_data", what);
    if (p.raw_data().size() != t.nbytes())
      return invalid_model("{}: raw_data has {} bytes, shape {} of {} needs {}", what,
                           p.raw_data().size(), shape_to_string(shape), dtype_name(dtype),
                           t.nbytes());
    copy_raw(p.raw_data().data(), t);
  } else {
    TJ_RETURN_IF_ERROR(decode_typed(p, t, what));
  }
  return t;
}

void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto* p) {
  p->Clear();
  p->set_name(name);
  p->set_data_type(static_cast<int32_t>(t.dtype()));
  for (int64_t d : t.shape()) p->add_dims(d);
  if (t.dtype() == DType::kString) {
    for (const std::string& s : t.span<std::string>()) p->add_string_data(s);
  } else {
    p->set_raw_data(std::string(static_cast<const char*>(t.raw_data()), t.nbytes()));
  }
}

Expected<Tensor> read_tensor_pb(const std::string& path, const LoadOptions& options) {
  // Sizes first, from the file system and the declared dims: nothing too big is read.
  constexpr const char* kTooBigHint = "keep larger tensors in external data files or .npy";
  std::error_code size_ec;
  const uintmax_t file_bytes = fs::file_size(path, size_ec);
  if (!size_ec && file_bytes > static_cast<uintmax_t>(kMaxProtobufBytes))
    return unsupported("{}: the file has {} bytes, over the {} bytes protobuf can parse ({})", path,
                       file_bytes, kMaxProtobufBytes, kTooBigHint);
  TJ_RETURN_IF_ERROR(check_tensor_pb_size(path, options.memory_limit_bytes));
  std::string bytes;
  TJ_RETURN_IF_ERROR(read_file(path, &bytes, kMaxProtobufBytes, kTooBigHint));
  onnx::TensorProto p;
  google::protobuf::io::CodedInputStream cis(reinterpret_cast<const uint8_t*>(bytes.data()),
                                             static_cast<int>(bytes.size()));
  cis.SetTotalBytesLimit(std::numeric_limits<int>::max());
  if (!p.ParseFromCodedStream(&cis) || !cis.ConsumedEntireMessage())
    return invalid_model("{}: not a TensorProto (protobuf parse failed; truncated or corrupt)", path);
  if (!p.GetReflection()->GetUnknownFields(p).empty() || !p.has_data_type())
    return invalid_model("{}: not a TensorProto (unexpected fields or no data type)", path);
  const std::string dir = fs::path(path).parent_path().string();
  Expected<Tensor> t = tensor_from_proto(p, ExternalDataRoots{dir.empty() ? "." : dir, path},
                                         options.memory_limit_bytes,
                                         fmt::format("tensor '{}'", p.name()));
  if (!t.ok()) return t.status().with_prefix(path);
  return t;
}

Status write_tensor_pb(const std::string& path, const Tensor& t, const std::string& name) {
  if (!t.defined()) return invalid_argument("{}: cannot write an undefined tensor", path);
  onnx::TensorProto p;
  tensor_to_proto(t, name, &p);
  std::string bytes;
  if (!p.SerializeToString(&bytes)) return io_error("{}: cannot serialize tensor '{}'", path, name);
  return write_file_no_follow(path, bytes);
}

}  // namespace tierjit::onnx_import
