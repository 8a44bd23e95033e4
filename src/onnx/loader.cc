// placeholder
#include "onnx/loader.h"
namespace tierjit::onnx_import {
Expected<ir::Model> load_model(const std::string& path, const LoadOptions&) { return not_found("{}: not implemented", path); }
}  // namespace tierjit::onnx_import
