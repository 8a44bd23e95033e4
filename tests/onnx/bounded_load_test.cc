// Bounded load: a model whose symbolic shapes would grow exponentially loads in linear time
// (symbolic expressions are bounded: docs/passes.md "Symbolic dims"); a model file over
// protobuf's 2 GiB limit is refused from its size before it is read; a loop-carried value whose
// dtype the body changes is refused at load (ONNX Runtime refuses such models too).
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <algorithm>
#include <filesystem>

#include "model_builder.h"
#include "tierjit/session.h"

namespace tierjit::onnx_test {
namespace {

namespace fs = std::filesystem;
using TP = onnx::TensorProto;

// Peak resident set of this process so far, in bytes.
int64_t peak_rss_bytes() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;
}
constexpr int64_t kMiB = int64_t{1} << 20;

// x[N] -> k x (Unsqueeze(x, 0), Unsqueeze(x, 1), Mul, Reshape [-1]): y = the k-fold flattened
// outer square of x, N^(2^k) elements (~3 KB of model for k = 28).
onnx::ModelProto square_chain(int k) {
  onnx::GraphProto g;
  g.set_name("chain");
  add_input(g, "x", TP::FLOAT, {"N"});
  add_int64_init(g, "axis0", {0});
  add_int64_init(g, "axis1", {1});
  add_int64_init(g, "flat", {-1});
  std::string x = "x";
  for (int i = 0; i < k; ++i) {
    const std::string s = std::to_string(i);
    add_node(g, "Unsqueeze", {x, "axis0"}, {"r" + s}, "row" + s);
    add_node(g, "Unsqueeze", {x, "axis1"}, {"c" + s}, "col" + s);
    add_node(g, "Mul", {"r" + s, "c" + s}, {"m" + s}, "mul" + s);
    x = i + 1 == k ? "y" : "x" + s;
    add_node(g, "Reshape", {"m" + s, "flat"}, {x}, "flat" + s);
  }
  add_output(g, "y", TP::FLOAT, {"?"});
  return make_model(g);
}

std::vector<float> square_chain_reference(std::vector<float> v, int k) {
  for (int i = 0; i < k; ++i) {
    std::vector<float> next;
    for (float a : v)
      for (float b : v) next.push_back(b * a);  // row r holds x[r] * x[c] for c in order
    v = std::move(next);
  }
  return v;
}

std::vector<float> values(const Tensor& t) { return {t.data<float>(), t.data<float>() + t.numel()}; }

TEST(BoundedLoad, SquareChainLoadsInLinearTimeAndRuns) {
  const std::string bytes = serialize(square_chain(28));
  EXPECT_LT(bytes.size(), 4096u);
  const int64_t rss_before = peak_rss_bytes();
  SessionOptions opts;
  opts.mode = ExecutionMode::kInterpretOnly;
  Session s = Session::from_bytes(bytes, opts);  // minutes and GBs when dims grow as 2^k atoms
  ASSERT_EQ(s.outputs().size(), 1u);
  for (float v : {1.0f, -1.0f, 0.5f}) {
    NamedTensors out = s.run({{"x", Tensor::from_vector<float>({1}, {v})}});
    EXPECT_EQ(out[0].second.shape(), (Shape{1}));
    EXPECT_EQ(values(out[0].second), square_chain_reference({v}, 28)) << v;
  }
  NamedTensors empty = s.run({{"x", Tensor::from_vector<float>({0}, {})}});
  EXPECT_EQ(empty[0].second.shape(), (Shape{0}));
  EXPECT_LT(peak_rss_bytes() - rss_before, 100 * kMiB);

  // Short chains: the values of every element (N = 2, 3 steps: 256 elements).
  Session s3 = Session::from_bytes(serialize(square_chain(3)), opts);
  NamedTensors out = s3.run({{"x", Tensor::from_vector<float>({2}, {1.5f, -2.0f})}});
  EXPECT_EQ(out[0].second.shape(), (Shape{256}));
  EXPECT_EQ(values(out[0].second), square_chain_reference({1.5f, -2.0f}, 3));
}

void expect_refused_from_size(const Status& st, const std::string& path) {
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kUnsupported);
  EXPECT_EQ(st.message().rfind(path + ": the file has 3221225472 bytes, over the 2147483647 bytes "
                               "protobuf can parse", 0), 0u) << st.message();
  EXPECT_EQ(std::count(st.message().begin(), st.message().end(), '\n'), 0);
}

// A 3 GB (sparse: no disk used) model.onnx is refused from its size: nothing is read.
TEST(BoundedLoad, ModelFileOverTwoGiBRefusedBeforeReading) {
  TempDir dir("big_model");
  dir.write("model.onnx", "");
  fs::resize_file(dir.file("model.onnx"), int64_t{3} << 30);
  dir.write("t.pb", "");
  fs::resize_file(dir.file("t.pb"), int64_t{3} << 30);
  const int64_t rss_before = peak_rss_bytes();
  expect_refused_from_size(onnx_import::load_model(dir.file("model.onnx")).status(), dir.file("model.onnx"));
  expect_refused_from_size(onnx_import::read_tensor_pb(dir.file("t.pb")).status(), dir.file("t.pb"));
  try {
    Session s(dir.file("model.onnx"));
    FAIL() << "a 3 GB model loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("external data files"), std::string::npos) << e.what();
  }
  EXPECT_LT(peak_rss_bytes() - rss_before, 100 * kMiB);
}

// An external initializer's declared size is checked against its file before the tensor is
// allocated or anything read: 1 GiB declared, 12 bytes stored.
TEST(BoundedLoad, ExternalDataSizeCheckedBeforeAllocation) {
  TempDir dir("big_external");
  dir.write("w.bin", std::string(12, '\0'));
  onnx::GraphProto g;
  g.set_name("g");
  TP* w = g.add_initializer();
  w->set_name("w");
  w->set_data_type(TP::FLOAT);
  w->add_dims(int64_t{1} << 28);
  w->set_data_location(TP::EXTERNAL);
  auto* e = w->add_external_data();
  e->set_key("location");
  e->set_value("w.bin");
  add_untyped_output(g, "w");
  dir.write("model.onnx", serialize(make_model(g)));
  const int64_t rss_before = peak_rss_bytes();
  auto m = onnx_import::load_model(dir.file("model.onnx"));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidModel);
  EXPECT_NE(m.status().message().find("initializer 'w': external data file '" +
                                      fs::canonical(dir.file("w.bin")).string() +
                                      "' is too short: needs 1073741824 bytes at offset 0, file has 12"),
            std::string::npos) << m.status().message();
  EXPECT_LT(peak_rss_bytes() - rss_before, 100 * kMiB);
}

// Loop(M = 3, cond = true, x float32 [1]) whose body casts the carried value to `body_to`.
onnx::ModelProto loop_model(int32_t body_to, bool declare_body_output) {
  onnx::GraphProto body;
  body.set_name("body");
  add_input(body, "i", TP::INT64, {});
  add_input(body, "cond_in", TP::BOOL, {});
  add_input(body, "v_in", TP::FLOAT, {1});
  add_node(body, "Identity", {"cond_in"}, {"cond_out"});
  attr_int(add_node(body, "Cast", {"v_in"}, {"v_out"}, "to_int"), "to", body_to);
  add_output(body, "cond_out", TP::BOOL, {});
  if (declare_body_output) add_output(body, "v_out", body_to, {1});
  else add_untyped_output(body, "v_out");
  onnx::GraphProto g;
  g.set_name("g");
  add_input(g, "x", TP::FLOAT, {1});
  add_int64_init(g, "m", {3});
  TP* cond = g.add_initializer();
  cond->set_name("cond");
  cond->set_data_type(TP::BOOL);
  cond->add_int32_data(1);
  attr_graph(add_node(g, "Loop", {"m", "cond", "x"}, {"y"}, "loop"), "body", body);
  add_output(g, "y", TP::FLOAT, {1});
  return make_model(g);
}

// ONNX Runtime refuses at load a Loop whose body turns a float32 loop-carried value into int64
// (tierjit returned int64 for the output declared float). One line naming node and output.
TEST(BoundedLoad, LoopCarriedDtypeChangeRefusedAtLoad) {
  for (bool declared : {false, true}) {
    try {
      Session::from_bytes(serialize(loop_model(TP::INT64, declared)));
      FAIL() << "loaded a Loop whose body changes a carried dtype (body output declared: " << declared << ")";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(e.code(), StatusCode::kInvalidModel) << msg;
      EXPECT_NE(msg.find("<model bytes>: node 'loop' (Loop): output 0 'y': the body turns loop-carried "
                         "input 'x' (float32) into 'v_out' (int64)"), std::string::npos) << msg;
      EXPECT_EQ(std::count(msg.begin(), msg.end(), '\n'), 0) << msg;
    }
  }
  // The same body keeping float32 loads and runs.
  Session s = Session::from_bytes(serialize(loop_model(TP::FLOAT, true)));
  NamedTensors out = s.run({{"x", Tensor::from_vector<float>({1}, {2.5f})}});
  EXPECT_EQ(out[0].second.dtype(), DType::kFloat32);
  EXPECT_EQ(out[0].second.data<float>()[0], 2.5f);
}

// Scan carries states the same way: a state whose dtype the body changes is refused.
TEST(BoundedLoad, ScanStateDtypeChangeRefusedAtLoad) {
  onnx::GraphProto body;
  body.set_name("body");
  add_input(body, "s_in", TP::FLOAT, {1});
  add_input(body, "e", TP::FLOAT, {1});
  attr_int(add_node(body, "Cast", {"s_in"}, {"s_out"}), "to", TP::INT64);
  add_node(body, "Identity", {"e"}, {"e_out"});
  add_untyped_output(body, "s_out");
  add_output(body, "e_out", TP::FLOAT, {1});
  onnx::GraphProto g;
  g.set_name("g");
  add_input(g, "s0", TP::FLOAT, {1});
  add_input(g, "seq", TP::FLOAT, {3, 1});
  auto* scan = add_node(g, "Scan", {"s0", "seq"}, {"s_final", "ys"}, "scan");
  attr_int(scan, "num_scan_inputs", 1);
  attr_graph(scan, "body", body);
  add_output(g, "s_final", TP::FLOAT, {1});
  add_output(g, "ys", TP::FLOAT, {3, 1});
  try {
    Session::from_bytes(serialize(make_model(g)));
    FAIL() << "loaded a Scan whose body changes a state's dtype";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidModel) << e.what();
    EXPECT_NE(std::string(e.what()).find("node 'scan' (Scan): output 0 's_final': the body turns "
                                         "loop-carried input 's0' (float32) into 's_out' (int64)"),
              std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tierjit::onnx_test
