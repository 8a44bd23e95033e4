// Lookups in the schema table generated from libonnx at build time (schema_facts.h).
#include "onnx/schema_facts.h"

#include <algorithm>
#include <type_traits>
#include <utility>

namespace tierjit::onnx_import {

namespace {

#include "onnx/schema_table.inc"

// The versions of `op` in `domain`: one range of kSchemas, which is sorted by (domain, name,
// since_version).
std::pair<const SchemaRecord*, const SchemaRecord*> versions(std::string_view domain,
                                                             std::string_view op) {
  if (domain == "ai.onnx") domain = {};
  auto key = [](const SchemaRecord& r) {
    return std::pair<std::string_view, std::string_view>(r.domain, r.name);
  };
  const std::pair<std::string_view, std::string_view> want(domain, op);
  return std::equal_range(std::begin(kSchemas), std::end(kSchemas), want,
                          [&](const auto& a, const auto& b) {
                            if constexpr (std::is_same_v<std::decay_t<decltype(a)>, SchemaRecord>)
                              return key(a) < b;
                            else
                              return a < key(b);
                          });
}

}  // namespace

std::span<const SchemaInput> SchemaFacts::inputs() const {
  return {kInputs + r_->input_begin, r_->input_count};
}

const SchemaAttribute* SchemaFacts::attribute(std::string_view name) const {
  const SchemaAttribute* first = kAttributes + r_->attr_begin;
  const SchemaAttribute* last = first + r_->attr_count;
  const SchemaAttribute* it = std::lower_bound(
      first, last, name, [](const SchemaAttribute& a, std::string_view n) { return a.name < n; });
  return it != last && it->name == name ? it : nullptr;
}

std::optional<SchemaFacts> find_schema(std::string_view domain, std::string_view op, int opset) {
  auto [lo, hi] = versions(domain, op);
  const SchemaRecord* best = nullptr;
  for (auto it = lo; it != hi && it->since_version <= opset; ++it) best = &*it;
  if (!best) return std::nullopt;
  return SchemaFacts(*best);
}

std::optional<int> first_opset(std::string_view domain, std::string_view op) {
  auto [lo, hi] = versions(domain, op);
  if (lo == hi) return std::nullopt;
  return lo->since_version;
}

}  // namespace tierjit::onnx_import
