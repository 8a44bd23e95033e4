// .pb tensor files (serialized onnx.TensorProto) for the CLI: thin wrappers over the ONNX
// loader's read_tensor_pb / write_tensor_pb (TEMPORARY stubs until those land in src/onnx).
#include "cli_util.h"

namespace tierjit::cli {

Expected<Tensor> read_pb_file(const std::string& path) {
  return unsupported("{}: reading .pb tensors is not implemented yet", path);
}

Status write_pb_file(const std::string& path, const Tensor&, const std::string&) {
  return unsupported("{}: writing .pb tensors is not implemented yet", path);
}

}  // namespace tierjit::cli
