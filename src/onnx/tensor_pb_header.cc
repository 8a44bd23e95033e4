// check_tensor_pb_size: a serialized onnx.TensorProto file's declared size (dims and data_type)
// against the memory limit, read without its data (length-delimited fields are skipped with a
// seek), so read_tensor_pb refuses a tensor over the limit before reading the file.
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <limits>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/wire_format_lite.h>

#include "onnx/import_internal.h"

namespace tierjit::onnx_import {

namespace {

using google::protobuf::internal::WireFormatLite;

constexpr int kDimsField = 1;      // TensorProto.dims: repeated int64
constexpr int kDataTypeField = 2;  // TensorProto.data_type: int32

// Reads dims and data_type from `cis`; false when the stream is not a TensorProto's wire format
// (the full parse reports that).
bool scan(google::protobuf::io::CodedInputStream& cis, std::vector<int64_t>& dims, int32_t& dtype) {
  while (true) {
    const uint32_t tag = cis.ReadTag();
    if (tag == 0) return true;  // end of the message (or an error, which the full parse reports)
    const int field = static_cast<int>(WireFormatLite::GetTagFieldNumber(tag));
    const auto wire = WireFormatLite::GetTagWireType(tag);
    if (field == kDimsField && wire == WireFormatLite::WIRETYPE_VARINT) {
      uint64_t v = 0;
      if (!cis.ReadVarint64(&v)) return false;
      dims.push_back(static_cast<int64_t>(v));
    } else if (field == kDimsField && wire == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      uint32_t len = 0;
      if (!cis.ReadVarint32(&len)) return false;
      const auto limit = cis.PushLimit(static_cast<int>(len));
      while (cis.BytesUntilLimit() > 0) {
        uint64_t v = 0;
        if (!cis.ReadVarint64(&v)) return false;
        dims.push_back(static_cast<int64_t>(v));
      }
      cis.PopLimit(limit);
    } else if (field == kDataTypeField && wire == WireFormatLite::WIRETYPE_VARINT) {
      uint32_t v = 0;
      if (!cis.ReadVarint32(&v)) return false;
      dtype = static_cast<int32_t>(v);
    } else if (!WireFormatLite::SkipField(&cis, tag)) {
      return false;
    }
  }
}

}  // namespace

Status check_tensor_pb_size(const std::string& path, int64_t limit_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status();  // read_file names the problem
  std::vector<int64_t> dims;
  int32_t dtype = 0;
  bool ok = false;
  {
    google::protobuf::io::FileInputStream in(fd);
    google::protobuf::io::CodedInputStream cis(&in);
    cis.SetTotalBytesLimit(std::numeric_limits<int>::max());
    ok = scan(cis, dims, dtype);
  }
  ::close(fd);
  if (!ok || dtype <= 0 || !dtype_is_valid(dtype)) return Status();  // the full parse says why
  for (int64_t d : dims)
    if (d < 0) return Status();
  return check_tensor_size(static_cast<DType>(dtype), dims, limit_bytes,
                           path + ": tensor");
}

}  // namespace tierjit::onnx_import
