// The generated schema table (onnx/schema_facts.h) against libonnx's registry, which it was made
// from: for every op of every domain and every opset 1..(newest + 1), the same schema is found
// (or none), with the same input counts, formal inputs and attribute types.
#include "onnx/schema_facts.h"

#include <gtest/gtest.h>
#include <onnx/defs/schema.h>

#include <set>
#include <string>
#include <utility>

namespace tierjit::onnx_import {
namespace {

TEST(SchemaFacts, EveryLookupAgreesWithTheOnnxRegistry) {
  std::set<std::pair<std::string, std::string>> ops;
  int newest = 1;
  for (const onnx::OpSchema& s : onnx::OpSchemaRegistry::get_all_schemas_with_history()) {
    ops.emplace(s.domain(), s.Name());
    newest = std::max(newest, s.since_version());
  }
  ASSERT_GT(ops.size(), 150u);
  size_t found = 0;
  for (const auto& [domain, op] : ops) {
    for (int opset = 1; opset <= newest + 1; ++opset) {
      SCOPED_TRACE(domain + "::" + op + " opset " + std::to_string(opset));
      const onnx::OpSchema* want = onnx::OpSchemaRegistry::Schema(op, opset, domain);
      const std::optional<SchemaFacts> got = find_schema(domain, op, opset);
      ASSERT_EQ(want != nullptr, got.has_value());
      if (!want) continue;
      ++found;
      EXPECT_EQ(got->since_version(), want->since_version());
      EXPECT_EQ(got->min_input(), want->min_input());
      EXPECT_EQ(got->max_input(), want->max_input());
      ASSERT_EQ(got->inputs().size(), want->inputs().size());
      for (size_t i = 0; i < want->inputs().size(); ++i) {
        EXPECT_EQ(got->inputs()[i].name, want->inputs()[i].GetName());
        EXPECT_EQ(got->inputs()[i].option, static_cast<int>(want->inputs()[i].GetOption()));
      }
      for (const auto& [name, a] : want->attributes()) {
        const SchemaAttribute* g = got->attribute(name);
        ASSERT_NE(g, nullptr) << name;
        EXPECT_EQ(g->type, static_cast<int>(a.type)) << name;
      }
      EXPECT_EQ(got->attribute("no_such_attribute"), nullptr);
    }
  }
  EXPECT_GT(found, 1000u);
}

TEST(SchemaFacts, DefaultDomainSpellingsAndUnknownOps) {
  // "ai.onnx" is the default domain's other spelling (ONNX IR spec, "Operator sets").
  const std::optional<SchemaFacts> relu = find_schema("ai.onnx", "Relu", 13);
  ASSERT_TRUE(relu.has_value());
  EXPECT_EQ(relu->since_version(), 13);
  EXPECT_EQ(relu->min_input(), 1);
  EXPECT_EQ(relu->max_input(), 1);
  ASSERT_TRUE(find_schema("", "Relu", 12).has_value());
  EXPECT_EQ(find_schema("", "Relu", 12)->since_version(), 6);
  EXPECT_FALSE(find_schema("", "NoSuchOp", 13).has_value());
  EXPECT_FALSE(find_schema("com.example", "Relu", 13).has_value());
  EXPECT_FALSE(find_schema("", "Relu", 0).has_value());  // older than Relu's first version
  const std::optional<SchemaFacts> gemm = find_schema("", "Gemm", 13);
  ASSERT_TRUE(gemm.has_value());
  ASSERT_NE(gemm->attribute("alpha"), nullptr);
  EXPECT_EQ(gemm->attribute("alpha")->type, onnx::AttributeProto::FLOAT);
  EXPECT_EQ(gemm->min_input(), 2);
  EXPECT_EQ(gemm->max_input(), 3);
}

}  // namespace
}  // namespace tierjit::onnx_import
