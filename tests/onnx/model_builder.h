// Test helpers for the ONNX loader tests: build ModelProto / GraphProto / NodeProto in memory
// (tests/onnx mirrors src/onnx, so it may include the ONNX protobuf headers), serialize them,
// and manage temporary folders for file-based cases (external data).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include <unistd.h>

#include <onnx/onnx_pb.h>

#include "onnx/loader.h"

namespace tierjit::onnx_test {

/// A dim of a declared shape: a number, a symbol name, or "?" for an unknown dim.
struct D {
  D(int64_t v) : value(v) {}  // NOLINT: implicit for brevity in tests
  D(const char* s) : param(s) {}  // NOLINT
  int64_t value = -1;
  std::string param;
};

inline void set_tensor_type(onnx::TypeProto* t, int32_t elem, const std::vector<D>* shape) {
  auto* tt = t->mutable_tensor_type();
  tt->set_elem_type(elem);
  if (!shape) return;
  auto* sp = tt->mutable_shape();
  for (const D& d : *shape) {
    auto* dim = sp->add_dim();
    if (d.value >= 0) dim->set_dim_value(d.value);
    else if (d.param != "?") dim->set_dim_param(d.param);
  }
}

inline void add_value_info(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list,
                           const std::string& name, int32_t elem, std::vector<D> shape) {
  auto* vi = list->Add();
  vi->set_name(name);
  set_tensor_type(vi->mutable_type(), elem, &shape);
}

/// Graph input / output / value_info with a tensor type (elem = onnx::TensorProto_DataType_*).
inline void add_input(onnx::GraphProto& g, const std::string& name, int32_t elem,
                      std::vector<D> shape) {
  add_value_info(g.mutable_input(), name, elem, std::move(shape));
}
inline void add_output(onnx::GraphProto& g, const std::string& name, int32_t elem,
                       std::vector<D> shape) {
  add_value_info(g.mutable_output(), name, elem, std::move(shape));
}
/// Input or output with no type information at all.
inline void add_untyped_input(onnx::GraphProto& g, const std::string& name) {
  g.add_input()->set_name(name);
}
inline void add_untyped_output(onnx::GraphProto& g, const std::string& name) {
  g.add_output()->set_name(name);
}

inline onnx::NodeProto* add_node(onnx::GraphProto& g, const std::string& op,
                                 std::vector<std::string> inputs, std::vector<std::string> outputs,
                                 const std::string& name = "", const std::string& domain = "") {
  auto* n = g.add_node();
  n->set_op_type(op);
  n->set_name(name);
  if (!domain.empty()) n->set_domain(domain);
  for (auto& i : inputs) n->add_input(i);
  for (auto& o : outputs) n->add_output(o);
  return n;
}

inline onnx::AttributeProto* attr_int(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
  return a;
}
inline onnx::AttributeProto* attr_float(onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
  return a;
}
inline onnx::AttributeProto* attr_ints(onnx::NodeProto* n, const std::string& name,
                                       std::vector<int64_t> v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
  return a;
}
inline onnx::AttributeProto* attr_graph(onnx::NodeProto* n, const std::string& name,
                                        const onnx::GraphProto& g) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = g;
  return a;
}

/// float32 initializer in raw_data encoding.
inline onnx::TensorProto* add_float_init(onnx::GraphProto& g, const std::string& name,
                                         std::vector<int64_t> dims, std::vector<float> values) {
  auto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto_DataType_FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * 4));
  return t;
}

/// 1-D int64 initializer of `values` (axes, shapes, starts/ends, k) in int64_data encoding.
inline onnx::TensorProto* add_int64_init(onnx::GraphProto& g, const std::string& name,
                                         const std::vector<int64_t>& values) {
  auto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto_DataType_INT64);
  t->add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t->add_int64_data(v);
  return t;
}

/// A model around `g` importing the default domain at `opset` (IR version 8).
inline onnx::ModelProto make_model(const onnx::GraphProto& g, int64_t opset = 17) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("tierjit-tests");
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  *m.mutable_graph() = g;
  return m;
}

inline std::string serialize(const onnx::ModelProto& m) {
  std::string s;
  m.SerializeToString(&s);
  return s;
}

/// Loads `m` from memory, naming it "mem.onnx", external data relative to `base_dir`.
inline Expected<ir::Model> load(const onnx::ModelProto& m, const std::string& base_dir = ".",
                                const onnx_import::LoadOptions& opts = {}) {
  return onnx_import::load_model_from_bytes(serialize(m), "mem.onnx", base_dir, opts);
}

/// A fresh, empty temporary folder removed when the object dies.
class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    path_ = std::filesystem::temp_directory_path() /
            ("tierjit_onnx_test_" + tag + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string path() const { return path_.string(); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  void write(const std::string& name, const std::string& bytes) const {
    std::filesystem::create_directories((path_ / name).parent_path());
    std::ofstream(path_ / name, std::ios::binary).write(bytes.data(),
                                                         static_cast<std::streamsize>(bytes.size()));
  }

 private:
  std::filesystem::path path_;
};

/// The first value of `g` named `name` (nullptr if none).
inline const ir::Value* find_value(const ir::Graph& g, const std::string& name) {
  for (const auto& v : g.values())
    if (v->name() == name) return v.get();
  return nullptr;
}

/// The first node of `g` whose op is `op` (nullptr if none).
inline const ir::Node* find_node(const ir::Graph& g, ir::OpKind op) {
  for (const auto& n : g.nodes())
    if (n->op() == op) return n.get();
  return nullptr;
}

}  // namespace tierjit::onnx_test
