// load_model / load_model_from_bytes: file and protobuf handling, model-level checks (IR
// version, graph present, opset imports 1..17 for the default domain), model-local functions,
// then graph_import.cc converts the main graph. Every error is prefixed by the file path.
#include <filesystem>
#include <limits>

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>

#include "onnx/import_internal.h"

namespace tierjit::onnx_import {

namespace fs = std::filesystem;

namespace {

// Highest IR version a real ONNX release writes is 10 or so; larger values mean bytes that
// happened to parse as a ModelProto but are no model.
constexpr int64_t kMaxPlausibleIrVersion = 100;

Status check_opsets(const OpsetMap& opsets, const std::string& where) {
  for (const auto& [domain, version] : opsets) {
    if (version < 1)
      return invalid_model("{}imports opset {} for domain '{}'", where, version, domain);
    if (domain.empty() && version > kMaxDefaultOpset)
      return unsupported("{}default-domain opset {} is not supported (tierjit supports opsets 1 "
                         "to {})", where, version, kMaxDefaultOpset);
  }
  return Status();
}

Expected<ir::Model> load_parsed(const onnx::ModelProto& mp, const ExternalDataRoots& roots,
                                const LoadOptions& options) {
  ImportContext ctx;
  ctx.roots = roots;
  ctx.options = options;
  for (const auto& op : mp.opset_import()) {
    auto [it, fresh] = ctx.opsets.emplace(normalize_domain(op.domain()), op.version());
    if (!fresh && it->second != op.version())
      return invalid_model("opset for domain '{}' imported twice ({} and {})", op.domain(),
                           it->second, op.version());
  }
  // IR version < 3 models predate opset_import: they use opset 1.
  if (mp.opset_import_size() == 0 && mp.ir_version() < 3) ctx.opsets[""] = 1;
  TJ_RETURN_IF_ERROR(check_opsets(ctx.opsets, ""));

  for (const auto& f : mp.functions()) {
    ImportContext::Function fn;
    fn.proto = &f;
    fn.opsets = ctx.opsets;
    for (const auto& op : f.opset_import()) fn.opsets[normalize_domain(op.domain())] = op.version();
    TJ_RETURN_IF_ERROR(check_opsets(fn.opsets, fmt::format("function '{}' ", f.name())));
    if (!ctx.functions.emplace(std::make_pair(normalize_domain(f.domain()), f.name()), fn).second)
      return invalid_model("function '{}' (domain '{}') is defined twice", f.name(), f.domain());
  }

  ir::Model model;
  model.ir_version = mp.ir_version();
  model.opset_imports = ctx.opsets;
  model.producer_name = mp.producer_name();
  model.graph = std::make_unique<ir::Graph>(mp.graph().name());
  TJ_RETURN_IF_ERROR(import_graph(ctx, mp.graph(), ctx.opsets, nullptr, *model.graph));
  return model;
}

Expected<ir::Model> load_serialized(const std::string& bytes, const std::string& path,
                                    const ExternalDataRoots& roots, const LoadOptions& options) {
  if (bytes.size() > static_cast<size_t>(kMaxProtobufBytes))
    return unsupported("{}: models over 2 GiB must keep their weights in external data files",
                       path);
  onnx::ModelProto mp;
  google::protobuf::io::CodedInputStream cis(reinterpret_cast<const uint8_t*>(bytes.data()),
                                             static_cast<int>(bytes.size()));
  cis.SetTotalBytesLimit(std::numeric_limits<int>::max());
  if (!mp.ParseFromCodedStream(&cis) || !cis.ConsumedEntireMessage())
    return invalid_model("{}: not a valid ONNX model (protobuf parse failed: truncated or corrupt "
                         "file)", path);
  if (!mp.has_graph() || mp.ir_version() < 1 || mp.ir_version() > kMaxPlausibleIrVersion)
    return invalid_model("{}: not an ONNX model (no graph or no valid IR version)", path);
  Expected<ir::Model> model = load_parsed(mp, roots, options);
  if (!model.ok()) return model.status().with_prefix(path);
  model->path = path;
  return model;
}

}  // namespace

Expected<ir::Model> load_model_from_bytes(const std::string& bytes, const std::string& path,
                                          const std::string& external_data_folder,
                                          const LoadOptions& options) {
  return load_serialized(bytes, path, ExternalDataRoots{external_data_folder, ""}, options);
}

Expected<ir::Model> load_model(const std::string& path, const LoadOptions& options) {
  std::string bytes;
  // Refused from its size before it is read: protobuf cannot parse more.
  TJ_RETURN_IF_ERROR(read_file(path, &bytes, kMaxProtobufBytes,
                               "models over 2 GiB must keep their weights in external data files"));
  const std::string dir = fs::path(path).parent_path().string();
  return load_serialized(bytes, path, ExternalDataRoots{dir.empty() ? "." : dir, path}, options);
}

}  // namespace tierjit::onnx_import
