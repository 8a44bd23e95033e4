// Session outputs that are model constants (an initializer listed as a graph output, or an
// output folded to a constant) are handed out as copies: writing into them must not change the
// model for later calls. An initializer listed among the inputs is a constant: a feed for it is
// refused with an error that says so, and the session goes on serving.
#include <gtest/gtest.h>

#include "model_builder.h"
#include "tierjit/session.h"

namespace tierjit::onnx_test {
namespace {

TEST(SessionOutputs, ConstantOutputsAreCopies) {
  onnx::GraphProto g;
  g.set_name("g");
  add_input(g, "x", onnx::TensorProto_DataType_FLOAT, {2});
  add_float_init(g, "w", {2}, {1.5f, -2.0f});
  add_float_init(g, "b", {2}, {1.0f, 1.0f});
  add_node(g, "Add", {"w", "b"}, {"folded"});  // all-constant: folded at load
  add_node(g, "Add", {"x", "w"}, {"y"});
  add_output(g, "w", onnx::TensorProto_DataType_FLOAT, {2});
  add_output(g, "folded", onnx::TensorProto_DataType_FLOAT, {2});
  add_output(g, "y", onnx::TensorProto_DataType_FLOAT, {2});
  TempDir dir("session_outputs");
  dir.write("m.onnx", serialize(make_model(g)));
  Session s(dir.file("m.onnx"));
  Tensor x = Tensor::from_vector<float>({2}, {10.0f, 20.0f});
  auto first = s.run({{"x", x}});
  ASSERT_EQ(first.size(), 3u);
  first[0].second.data<float>()[0] = 99.0f;  // scribble over both constant outputs
  first[1].second.data<float>()[1] = 99.0f;
  auto second = s.run({{"x", x}});
  EXPECT_EQ(second[0].second.data<float>()[0], 1.5f);
  EXPECT_EQ(second[1].second.data<float>()[1], -1.0f);   // -2 + 1
  EXPECT_EQ(second[2].second.data<float>()[0], 11.5f);   // 10 + 1.5
  EXPECT_EQ(second[2].second.data<float>()[1], 18.0f);   // 20 - 2
}

TEST(SessionOutputs, FeedForAnInitializerListedAsInputIsRefusedClearly) {
  onnx::GraphProto g;
  g.set_name("g");
  add_input(g, "x", onnx::TensorProto_DataType_FLOAT, {2});
  add_input(g, "w0", onnx::TensorProto_DataType_FLOAT, {2});
  add_float_init(g, "w0", {2}, {1.5f, -2.0f});
  add_node(g, "Add", {"x", "w0"}, {"y"});
  add_output(g, "y", onnx::TensorProto_DataType_FLOAT, {2});
  TempDir dir("session_init_input");
  dir.write("m.onnx", serialize(make_model(g)));
  Session s(dir.file("m.onnx"));
  ASSERT_EQ(s.inputs().size(), 1u);  // only x is a feed
  Tensor x = Tensor::from_vector<float>({2}, {10.0f, 20.0f});
  try {
    s.run({{"x", x}, {"w0", Tensor::from_vector<float>({2}, {0.f, 0.f})}});
    ADD_FAILURE() << "a feed for the initializer w0 was accepted";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("m.onnx: input 'w0' is an initializer"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  try {
    s.run({{"x", x}, {"nope", x}});
    ADD_FAILURE() << "a feed for an unknown input was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model has no input 'nope'"), std::string::npos) << e.what();
  }
  auto out = s.run({{"x", x}});  // still serving, with the model's w0
  EXPECT_EQ(out[0].second.data<float>()[0], 11.5f);
  EXPECT_EQ(out[0].second.data<float>()[1], 18.0f);
}

}  // namespace
}  // namespace tierjit::onnx_test
