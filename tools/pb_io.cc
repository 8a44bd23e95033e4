// .pb tensor files (serialized onnx.TensorProto) for the CLI: thin wrappers over the ONNX
// loader's read_tensor_pb / write_tensor_pb (the CLI itself never sees protobuf).
#include "cli_util.h"
#include "onnx/loader.h"

namespace tierjit::cli {

Expected<Tensor> read_pb_file(const std::string& path, int64_t memory_limit_bytes) {
  onnx_import::LoadOptions options;
  options.memory_limit_bytes = memory_limit_bytes;
  return onnx_import::read_tensor_pb(path, options);
}

Status write_pb_file(const std::string& path, const Tensor& t, const std::string& name) {
  return onnx_import::write_tensor_pb(path, t, name);
}

}  // namespace tierjit::cli
