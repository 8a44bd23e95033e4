// OpKind names, generated from ops.def.
#include "ir/op_kind.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <utility>

namespace tierjit::ir {

namespace {
constexpr std::array<std::string_view, static_cast<size_t>(OpKind::kNumOps)> kNames = {
#define TJ_OP(name) #name,
#include "ir/ops.def"
#undef TJ_OP
};
}  // namespace

std::string_view op_name(OpKind op) { return kNames[static_cast<size_t>(op)]; }

std::optional<OpKind> op_from_name(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == name) return static_cast<OpKind>(i);
  return std::nullopt;
}

}  // namespace tierjit::ir
