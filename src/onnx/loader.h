// ONNX loader: ModelProto (through Debian's libonnx/protobuf) -> ir::Model.
// First stage of the pipeline; the only folder that sees protobuf/ONNX headers.
// Guarantees on success: nodes topologically sorted, every node has a known OpKind and opset,
// initializers are constants, subgraph outer-scope reads are captures, model-local functions are
// inlined, legacy (opset < 7) broadcast attributes are rewritten to numpy broadcasting.
#pragma once

#include <cstdint>
#include <string>

#include "ir/graph.h"
#include "support/status.h"

namespace tierjit::onnx_import {

struct LoadOptions {
  /// Largest tensor (declared or stored) the loader accepts, in bytes; larger -> kResourceExhausted.
  int64_t memory_limit_bytes = int64_t{16} << 30;
};

/// Loads and validates `path` (any ONNX IR version, default-domain opsets 1..17; "ai.onnx" is
/// the default domain). Errors are one line "PATH: ..." naming the node and op where one is
/// involved ("node 'x' (op Foo, domain 'bar'): unknown operator"):
///  - kNotFound: missing model file, missing external data file;
///  - kInvalidModel: not an ONNX model (parse failure, truncated, no graph), inconsistent
///    declarations (a value declared with two dtypes/shapes, an output nothing produces, an input
///    name nothing defines, a name defined twice, a cycle), bad tensor encodings, external data
///    paths that are absolute, leave the model's folder lexically, or resolve (symbolic links
///    followed) outside both the model's folder and the folder of the model file's real path
///    (ONNX Runtime's rule, docs/runtime.md "External data"), external data files shorter than
///    the declared tensor (checked from the file's size before anything is read);
///  - kUnsupported: unknown op or domain, default-domain opset > 17, sequence/map/optional/sparse
///    types, complex dtypes, sparse tensors, legacy broadcast whose ranks are undeclared, a model
///    file over 2 GiB - 1 bytes (protobuf's limit; refused from its size, before it is read);
///  - kResourceExhausted: an initializer or fully declared tensor over memory_limit_bytes.
/// On success: initializers are constant Values (also when listed as inputs), Constant nodes
/// stay nodes with a decoded tensor attribute, omitted optional inputs/outputs are nullptr.
Expected<ir::Model> load_model(const std::string& path, const LoadOptions& options = {});

/// Same, from bytes in memory (`path` only names the source in messages). External data is
/// resolved relative to `external_data_folder` and must lie inside it after resolving symbolic
/// links; empty: the model has no folder and external data is refused (kInvalidModel).
Expected<ir::Model> load_model_from_bytes(const std::string& bytes, const std::string& path,
                                          const std::string& external_data_folder,
                                          const LoadOptions& options = {});

/// Reads a serialized onnx.TensorProto file (the backend tests' input_K.pb / output_K.pb).
Expected<Tensor> read_tensor_pb(const std::string& path, const LoadOptions& options = {});
/// Writes `t` as a serialized onnx.TensorProto named `name` (raw_data encoding; strings typed).
Status write_tensor_pb(const std::string& path, const Tensor& t, const std::string& name);

}  // namespace tierjit::onnx_import
