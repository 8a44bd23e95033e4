// The facts of the ONNX operator schemas the importer checks nodes against (input and output counts,
// formal inputs' options, attribute types), looked up by domain, op type and opset as
// onnx::OpSchemaRegistry::Schema(op, opset, domain) does, from a table generated at build time
// from libonnx (gen/schema_table_gen.cc): no schema registry is built at run time (it costs
// 5.3-5.5 ms on the first lookup of a process).
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace tierjit::onnx_import {

/// A formal input: its name and onnx::OpSchema::FormalParameterOption (0 single, 1 optional,
/// 2 variadic).
struct SchemaInput {
  const char* name;
  int option;
};
/// SchemaInput::option of a required single input (onnx::OpSchema::Single).
inline constexpr int kSingleInput = 0;

/// A declared attribute: its name and onnx::AttributeProto::AttributeType.
struct SchemaAttribute {
  const char* name;
  int type;
};

/// One schema (one operator version): as generated; read through SchemaFacts.
struct SchemaRecord {
  const char* domain;  ///< "" for the default ONNX domain ("ai.onnx")
  const char* name;
  int since_version;
  int min_input, max_input;
  int min_output, max_output;
  unsigned input_begin, input_count;
  unsigned attr_begin, attr_count;
  bool deprecated;  ///< the op is deprecated from since_version on (e.g. Upsample at 10)
};

/// The facts of one operator version.
class SchemaFacts {
 public:
  explicit SchemaFacts(const SchemaRecord& r) : r_(&r) {}
  int since_version() const { return r_->since_version; }
  int min_input() const { return r_->min_input; }
  int max_input() const { return r_->max_input; }
  int min_output() const { return r_->min_output; }
  int max_output() const { return r_->max_output; }
  bool deprecated() const { return r_->deprecated; }
  /// The formal inputs in order (the last one may be variadic).
  std::span<const SchemaInput> inputs() const;
  /// The declared attribute named `name`, or nullptr.
  const SchemaAttribute* attribute(std::string_view name) const;

 private:
  const SchemaRecord* r_;
};

/// The schema of `op` in `domain` ("" or "ai.onnx" for ONNX) with the largest since-version
/// <= `opset`; nullopt when libonnx has none (an unknown op, a custom domain, or an opset older
/// than the op's first version).
std::optional<SchemaFacts> find_schema(std::string_view domain, std::string_view op, int opset);

/// The opset in which `op` of `domain` first appears; nullopt when libonnx does not define it.
std::optional<int> first_opset(std::string_view domain, std::string_view op);

}  // namespace tierjit::onnx_import
