// DType names and sizes (public API, include/tierjit/dtype.h).
#include <string>

#include "tierjit/dtype.h"

namespace tierjit {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kFloat32: case DType::kInt32: case DType::kUInt32: return 4;
    case DType::kFloat64: case DType::kInt64: case DType::kUInt64: return 8;
    case DType::kFloat16: case DType::kBFloat16: case DType::kInt16: case DType::kUInt16: return 2;
    case DType::kInt8: case DType::kUInt8: case DType::kBool: return 1;
    case DType::kString: return sizeof(std::string);
    case DType::kUndefined: return 0;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kInt8: return "int8";
    case DType::kInt16: return "int16";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kUInt8: return "uint8";
    case DType::kUInt16: return "uint16";
    case DType::kUInt32: return "uint32";
    case DType::kUInt64: return "uint64";
    case DType::kBool: return "bool";
    case DType::kString: return "string";
    case DType::kUndefined: return "undefined";
  }
  return "undefined";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  static const std::pair<std::string_view, DType> kNames[] = {
      {"float32", DType::kFloat32}, {"float", DType::kFloat32},     {"FLOAT", DType::kFloat32},
      {"float64", DType::kFloat64}, {"double", DType::kFloat64},    {"DOUBLE", DType::kFloat64},
      {"float16", DType::kFloat16}, {"FLOAT16", DType::kFloat16},   {"bfloat16", DType::kBFloat16},
      {"BFLOAT16", DType::kBFloat16}, {"int8", DType::kInt8},       {"INT8", DType::kInt8},
      {"int16", DType::kInt16},     {"INT16", DType::kInt16},       {"int32", DType::kInt32},
      {"INT32", DType::kInt32},     {"int64", DType::kInt64},       {"INT64", DType::kInt64},
      {"uint8", DType::kUInt8},     {"UINT8", DType::kUInt8},       {"uint16", DType::kUInt16},
      {"UINT16", DType::kUInt16},   {"uint32", DType::kUInt32},     {"UINT32", DType::kUInt32},
      {"uint64", DType::kUInt64},   {"UINT64", DType::kUInt64},     {"bool", DType::kBool},
      {"BOOL", DType::kBool},       {"string", DType::kString},     {"STRING", DType::kString},
  };
  for (const auto& [n, t] : kNames)
    if (n == name) return t;
  return std::nullopt;
}

bool dtype_is_valid(int32_t code) {
  return (code >= 1 && code <= 13) || code == 16;
}

bool dtype_is_float(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kFloat16 ||
         t == DType::kBFloat16;
}

bool dtype_is_integer(DType t) {
  switch (t) {
    case DType::kInt8: case DType::kInt16: case DType::kInt32: case DType::kInt64:
    case DType::kUInt8: case DType::kUInt16: case DType::kUInt32: case DType::kUInt64:
      return true;
    default:
      return false;
  }
}

bool dtype_is_signed(DType t) {
  switch (t) {
    case DType::kInt8: case DType::kInt16: case DType::kInt32: case DType::kInt64:
      return true;
    default:
      return dtype_is_float(t);
  }
}

}  // namespace tierjit
