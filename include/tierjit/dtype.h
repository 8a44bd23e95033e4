// Element types of tierjit tensors: the ONNX TensorProto.DataType set that tierjit carries.
// Public API (include/tierjit/); used by the IR, the loader, the interpreter and the CLI.
// Numeric values equal ONNX's TensorProto.DataType codes, so conversion is a cast.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tierjit {

/// Element type. Values are the ONNX `TensorProto.DataType` codes (onnx.proto, IR version 8).
enum class DType : int32_t {
  kUndefined = 0,
  kFloat32 = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kBFloat16 = 16,
};

/// Bytes per element; 0 for kUndefined. kString reports sizeof(std::string) (strings are
/// stored as std::string objects, not bytes). kBool is 1 byte (0 or 1).
size_t dtype_size(DType t);

/// Lower-case name as ONNX Runtime prints it: "float32", "int64", "bool", "string", ...
std::string_view dtype_name(DType t);

/// Inverse of dtype_name; also accepts ONNX's upper-case names ("FLOAT", "INT64").
std::optional<DType> dtype_from_name(std::string_view name);

/// True if t is one of the ONNX codes listed in DType (other than kUndefined).
bool dtype_is_valid(int32_t code);

bool dtype_is_float(DType t);    ///< float16, bfloat16, float32, float64
bool dtype_is_integer(DType t);  ///< signed or unsigned integers (not bool)
bool dtype_is_signed(DType t);   ///< signed integers and floats

}  // namespace tierjit
