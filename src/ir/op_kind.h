// OpKind: the enum of operator kinds, generated from ops.def (one IR node type with an op enum).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tierjit::ir {

enum class OpKind : uint16_t {
#define TJ_OP(name) name,
#include "ir/ops.def"
#undef TJ_OP
  kNumOps
};

/// ONNX op_type spelling ("MatMul").
std::string_view op_name(OpKind op);
/// Inverse of op_name for the default ONNX domain; nullopt for unknown op types.
std::optional<OpKind> op_from_name(std::string_view name);

}  // namespace tierjit::ir
