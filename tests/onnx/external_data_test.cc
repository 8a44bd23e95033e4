// External data confined to the model's folder (src/onnx/external_data.cc): a location whose
// symbolic links lead out of the folder is refused; a Hugging Face-style cache, whose model and
// data files are links into a blobs folder, loads (ONNX Runtime's dual rule); a model given as
// bytes has no folder and reads external data only from the folder its caller names.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "model_builder.h"
#include "tierjit/session.h"

namespace tierjit::onnx_test {
namespace {

namespace fs = std::filesystem;
using TP = onnx::TensorProto;

// Model: y = w + w, w a float32 [n] initializer stored in external file `location`.
onnx::ModelProto external_model(const std::string& location, int64_t n) {
  onnx::GraphProto g;
  g.set_name("g");
  TP* w = g.add_initializer();
  w->set_name("w");
  w->set_data_type(TP::FLOAT);
  w->add_dims(n);
  w->set_data_location(TP::EXTERNAL);
  auto* e = w->add_external_data();
  e->set_key("location");
  e->set_value(location);
  add_node(g, "Add", {"w", "w"}, {"y"});
  add_output(g, "y", TP::FLOAT, {n});
  return make_model(g);
}

std::string floats_bytes(std::vector<float> v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

std::vector<float> run_y(Session& s) {
  NamedTensors out = s.run({});
  EXPECT_EQ(out.size(), 1u);
  const Tensor& y = out[0].second;
  return std::vector<float>(y.data<float>(), y.data<float>() + y.numel());
}

void expect_one_line(const std::string& message) {
  EXPECT_EQ(std::count(message.begin(), message.end(), '\n'), 0) << message;
}

// A link beside the model into /etc: "etc_link/passwd" lexically stays in the folder, yet names
// /etc/passwd. Refused with one line naming the model file, the initializer and the path.
TEST(ExternalData, SymlinkLeavingTheFolderIsRefused) {
  TempDir dir("ext_symlink");
  fs::create_symlink("/etc", dir.file("etc_link"));
  dir.write("model.onnx", serialize(external_model("etc_link/passwd", 4)));
  auto m = onnx_import::load_model(dir.file("model.onnx"));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidModel);
  const std::string& msg = m.status().message();
  EXPECT_EQ(msg.rfind(dir.file("model.onnx") + ": initializer 'w': external data path 'etc_link/passwd' "
                      "resolves to '/etc/passwd', outside the model's folder", 0), 0u) << msg;
  expect_one_line(msg);

  // A link to a single file outside, and the same through the public API.
  TempDir outside("ext_symlink_outside");
  outside.write("secret.bin", floats_bytes({1, 2, 3, 4}));
  fs::create_symlink(outside.file("secret.bin"), dir.file("leak.bin"));
  dir.write("leak.onnx", serialize(external_model("leak.bin", 4)));
  try {
    Session s(dir.file("leak.onnx"));
    FAIL() << "loaded data from outside the model's folder";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidModel);
    EXPECT_NE(std::string(e.what()).find("leak.onnx: initializer 'w': external data path 'leak.bin' "
                                         "resolves to '" + fs::canonical(outside.file("secret.bin")).string()),
              std::string::npos) << e.what();
  }
  // Absolute paths and ".." escapes stay refused.
  for (const char* loc : {"/etc/passwd", "../x.bin", "a/../../x.bin"}) {
    dir.write("bad.onnx", serialize(external_model(loc, 4)));
    auto b = onnx_import::load_model(dir.file("bad.onnx"));
    ASSERT_FALSE(b.ok()) << loc;
    EXPECT_EQ(b.status().code(), StatusCode::kInvalidModel) << b.status().message();
    EXPECT_NE(b.status().message().find(std::string("'") + loc + "'"), std::string::npos) << b.status().message();
  }
}

// Links that stay inside the folder are fine: a subfolder link and a file link.
TEST(ExternalData, SymlinksInsideTheFolderLoad) {
  TempDir dir("ext_inside");
  dir.write("data/w.bin", floats_bytes({1, 2, 3}));
  fs::create_symlink("data", dir.file("data_link"));
  fs::create_symlink("data/w.bin", dir.file("w_link.bin"));
  for (const char* loc : {"data_link/w.bin", "w_link.bin"}) {
    dir.write("model.onnx", serialize(external_model(loc, 3)));
    Session s(dir.file("model.onnx"));
    EXPECT_EQ(run_y(s), (std::vector<float>{2, 4, 6})) << loc;
  }
}

// Hugging Face cache: snapshot/model.onnx -> ../blobs/abc, snapshot/model.onnx.data ->
// ../blobs/def. The data lies outside the folder the model was named in (snapshot) but inside
// the folder of the model file's real path (blobs): it loads, as in ONNX Runtime.
TEST(ExternalData, HuggingFaceCacheLayoutLoads) {
  TempDir root("ext_hf_cache");
  root.write("blobs/abc", serialize(external_model("model.onnx.data", 3)));
  root.write("blobs/def", floats_bytes({0.5f, -1, 4}));
  fs::create_directories(root.file("snapshot"));
  fs::create_symlink("../blobs/abc", root.file("snapshot/model.onnx"));
  fs::create_symlink("../blobs/def", root.file("snapshot/model.onnx.data"));
  Session s(root.file("snapshot/model.onnx"));
  EXPECT_EQ(run_y(s), (std::vector<float>{1, -2, 8}));

  // The blobs folder is allowed only because the model file's real path lies there: a model
  // that is not a link in the same snapshot folder cannot reach ../blobs through a link.
  root.write("snapshot/plain.onnx", serialize(external_model("model.onnx.data", 3)));
  auto m = onnx_import::load_model(root.file("snapshot/plain.onnx"));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("outside the model's folder"), std::string::npos) << m.status().message();
}

// A model given as bytes has no folder: its external data is refused unless the caller names
// one, and the named folder confines it like a model's own folder.
TEST(ExternalData, ModelFromBytesNeedsANamedFolder) {
  TempDir dir("ext_bytes");
  dir.write("w.bin", floats_bytes({1, 2, 3}));
  const std::string bytes = serialize(external_model("w.bin", 3));

  auto none = onnx_import::load_model_from_bytes(bytes, "<model bytes>", "");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidModel);
  EXPECT_EQ(none.status().message().rfind("<model bytes>: initializer 'w': external data file 'w.bin' needs "
                                          "a folder", 0), 0u) << none.status().message();
  try {
    Session::from_bytes(bytes);
    FAIL() << "external data of a bytes model read without a folder";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidModel);
    EXPECT_NE(std::string(e.what()).find("external_data_folder"), std::string::npos) << e.what();
  }

  SessionOptions opts;
  opts.external_data_folder = dir.path();
  Session s = Session::from_bytes(bytes, opts);
  EXPECT_EQ(s.model_path(), "<model bytes>");
  EXPECT_EQ(run_y(s), (std::vector<float>{2, 4, 6}));

  fs::create_symlink("/etc", dir.file("etc_link"));
  try {
    Session::from_bytes(serialize(external_model("etc_link/passwd", 4)), opts);
    FAIL() << "a link out of the named folder was followed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidModel);
    EXPECT_NE(std::string(e.what()).find("resolves to '/etc/passwd', outside"), std::string::npos) << e.what();
  }
}

// A model without external data loads from bytes with no folder.
TEST(ExternalData, ModelFromBytesWithoutExternalDataLoads) {
  onnx::GraphProto g;
  g.set_name("g");
  add_input(g, "x", TP::FLOAT, {2});
  add_float_init(g, "w", {2}, {1.5f, -2});
  add_node(g, "Mul", {"x", "w"}, {"y"});
  add_output(g, "y", TP::FLOAT, {2});
  Session s = Session::from_bytes(serialize(make_model(g)));
  NamedTensors out = s.run({{"x", Tensor::from_vector<float>({2}, {2, 3})}});
  EXPECT_EQ(out[0].second.data<float>()[0], 3.0f);
  EXPECT_EQ(out[0].second.data<float>()[1], -6.0f);
}

}  // namespace
}  // namespace tierjit::onnx_test
