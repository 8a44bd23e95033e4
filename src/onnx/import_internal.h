// Internal interfaces of the ONNX loader, shared by its files (loader.cc, tensor_proto.cc,
// graph_import.cc, functions.cc, legacy_broadcast.cc). Not a public header: it includes the ONNX
// protobuf classes, which must not leak outside src/onnx. Messages produced here carry no file
// prefix; load_model adds "PATH: " once at the top.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <onnx/onnx_pb.h>

#include "ir/graph.h"
#include "onnx/loader.h"
#include "support/status.h"

namespace tierjit::onnx_import {

/// Highest default-domain opset tierjit implements (ONNX 1.12).
inline constexpr int64_t kMaxDefaultOpset = 17;

/// Domain -> imported version; the default domain is "" ("ai.onnx" is normalized to "").
using OpsetMap = std::map<std::string, int64_t>;

/// "ai.onnx" -> "", anything else unchanged.
std::string normalize_domain(const std::string& domain);

/// Where a model's external data files may be (docs/runtime.md "External data"): a location is
/// relative to `base_dir` and, after resolving symbolic links, must lie inside `base_dir` or inside
/// the folder of `model_file`'s real path (ONNX Runtime's rule: a Hugging Face cache's
/// snapshot/model.onnx and snapshot/model.onnx.data are links into ../blobs).
struct ExternalDataRoots {
  std::string base_dir;    ///< empty: no folder (a model given as bytes): external data refused
  std::string model_file;  ///< the model's path; empty for a model given as bytes
};

/// State of one load: where the model lives, limits, opsets and model-local functions.
struct ImportContext {
  ExternalDataRoots roots;  ///< where external data files may be
  LoadOptions options;
  OpsetMap opsets;       ///< the model's opset imports
  /// Model-local functions by (normalized domain, name), with the opsets their bodies use
  /// (the model's, overridden by the function's own opset_import).
  struct Function {
    const onnx::FunctionProto* proto = nullptr;
    OpsetMap opsets;
  };
  std::map<std::pair<std::string, std::string>, Function> functions;
  int inline_counter = 0;  ///< makes inlined value names unique
};

// ---- tensor_proto.cc ----------------------------------------------------------------------

/// Largest serialized ModelProto / TensorProto protobuf parses (2 GiB - 1 bytes).
inline constexpr int64_t kMaxProtobufBytes = 0x7fffffff;

/// Reads the whole regular file `path` into `bytes` in one read, after checking its size (stat)
/// against `max_bytes`. Errors (prefixed by the path): kNotFound (missing), kInvalidModel (not a
/// regular file), kUnsupported (over max_bytes: nothing read; the message names the size, the
/// limit and `over_limit_hint`), kIoError (open or read failure).
Status read_file(const std::string& path, std::string* bytes, int64_t max_bytes,
                 const char* over_limit_hint);

/// The dims and data_type a serialized TensorProto file declares, read without its data, against
/// `limit_bytes` (check_tensor_size's kResourceExhausted, naming the file). OK when the file
/// cannot be read or parsed: the full read reports that.
Status check_tensor_pb_size(const std::string& path, int64_t limit_bytes);

/// Checks that a tensor of `dtype` and `shape` fits `limit_bytes`: kInvalidModel for negative
/// dims, kResourceExhausted "WHAT: shape [..] (float32) needs N bytes, over the memory limit of L
/// bytes" otherwise.
Status check_tensor_size(DType dtype, const Shape& shape, int64_t limit_bytes,
                         const std::string& what);

/// Decodes a TensorProto in any encoding: raw_data (little endian), the typed repeated fields
/// (float_data, double_data, int32_data for int8/int16/uint8/uint16/bool/float16/bfloat16 bit
/// patterns, int64_data, uint64_data for uint32/uint64, string_data) or external data (a file
/// under `roots`, see ExternalDataRoots; checked against the declared size before any byte is
/// read or the tensor allocated). `what` names the tensor in messages ("initializer 'w'").
/// Errors: kInvalidModel (bad encoding, sizes, paths, external data outside the roots or with no
/// folder, short external file), kNotFound (missing external file), kUnsupported
/// (complex/unknown dtypes, segments), kResourceExhausted (over limit).
Expected<Tensor> tensor_from_proto(const onnx::TensorProto& proto, const ExternalDataRoots& roots,
                                   int64_t limit_bytes, const std::string& what);

// ---- external_data.cc ---------------------------------------------------------------------

/// An external data file opened for one tensor, its range checked (closes on destruction).
class ExternalData {
 public:
  ExternalData() = default;
  ExternalData(int fd, std::string path, int64_t offset, int64_t nbytes)
      : fd_(fd), path_(std::move(path)), offset_(offset), nbytes_(nbytes) {}
  ExternalData(ExternalData&& o) noexcept { *this = std::move(o); }
  ExternalData& operator=(ExternalData&& o) noexcept;
  ~ExternalData();
  /// Reads the checked range into `dst` (nbytes bytes). kInvalidModel on a short read.
  Status read_into(void* dst, const std::string& what) const;

 private:
  int fd_ = -1;
  std::string path_;
  int64_t offset_ = 0, nbytes_ = 0;
};

/// Resolves and opens the external data of `proto` (data_location EXTERNAL) for a tensor of
/// `nbytes` bytes: the location is relative, stays below its folder lexically and, after
/// resolving symbolic links, lies inside one of `roots`' folders; the file is regular and holds
/// `nbytes` bytes at `offset` (and `length`, when given, equals nbytes). Nothing is read.
/// Errors as tensor_from_proto's, naming `what`, the location and the resolved path.
Expected<ExternalData> open_external_data(const onnx::TensorProto& proto,
                                          const ExternalDataRoots& roots, int64_t nbytes,
                                          const std::string& what);

/// Encodes `t` (raw_data for numbers, string_data for strings) with `name`.
void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto* proto);

// ---- graph_import.cc ---------------------------------------------------------------------

class Scope;

/// Converts `proto` into `out` (empty graph owned by the caller). `parent` is the scope of the
/// enclosing graph for subgraphs (outer-scope reads become captures), nullptr at the top.
/// `opsets` are those of the nodes' origin (the model, or an inlined function's).
Status import_graph(ImportContext& ctx, const onnx::GraphProto& proto, const OpsetMap& opsets,
                    Scope* parent, ir::Graph& out);

/// Static type from a TypeProto. `what` names the value ("input 'x'"). kUnsupported for
/// sequence/map/optional/sparse types and complex element types.
Expected<ir::ValueType> type_from_proto(const onnx::TypeProto& type, const std::string& what);

/// "node 'name' (op Foo)", "node 'name' (op Foo, domain 'bar')", or for unnamed nodes
/// "node with output 'y' (op Foo)".
std::string describe_node(const onnx::NodeProto& node);

// ---- functions.cc ------------------------------------------------------------------------

/// A node after inlining model-local functions: the original proto or a renamed copy of a
/// function body node, with the opsets its domain resolves against.
struct ExpandedNode {
  const onnx::NodeProto* node = nullptr;
  std::shared_ptr<onnx::NodeProto> owned;  ///< holds `node` when it is a rewritten copy
  const OpsetMap* opsets = nullptr;
};

/// Appends `node` to `out`, or — when it calls a model-local function — the function's body,
/// inlined recursively: internal values renamed uniquely, formal inputs/outputs bound to the
/// call's names, attribute references (ref_attr_name) bound to the call's attributes.
/// Errors: kInvalidModel for recursion deeper than 64 calls.
Status expand_node(ImportContext& ctx, const onnx::NodeProto& node, const OpsetMap& opsets,
                   std::vector<ExpandedNode>& out, int depth = 0);

// ---- legacy_broadcast.cc -----------------------------------------------------------------

/// Rewrites opset < 7 broadcast=1 [axis=k] binary ops of `graph` (not its subgraphs) into numpy
/// broadcasting (Unsqueeze of B, or a reshaped constant B) and drops the attributes; likewise
/// the per-channel 1-D slope of PRelu-1/6. Drops Gemm-1/6's `broadcast`.
/// Errors: kUnsupported when the ranks it needs are unknown; kInvalidModel for a bad axis.
Status rewrite_legacy_broadcast(ir::Graph& graph);

}  // namespace tierjit::onnx_import
