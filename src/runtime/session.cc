// Session: load -> passes -> tier-0 execution. Owns the model; run() is const and thread-safe
// because the graph is read-only after construction and each call has its own frame.
#include "tierjit/session.h"

#include <omp.h>

#include <set>

#include "interp/evaluate_node.h"
#include "interp/executor.h"
#include "onnx/loader.h"
#include "passes/pipeline.h"
#include "support/version.h"

namespace tierjit {

struct Session::Impl {
  ir::Model model;
  SessionOptions options;
  interp::ExecOptions exec;
  std::vector<TensorInfo> inputs, outputs;
  std::vector<ir::Value*> feed_values;
};

namespace {

TensorInfo describe_value(const ir::Value& v) {
  TensorInfo info;
  info.name = v.name();
  info.dtype = v.type().dtype;
  if (v.type().shape) {
    info.has_shape = true;
    for (const ir::Dim& d : *v.type().shape) {
      info.shape.push_back(d.is_constant() ? d.value : -1);
      info.dim_names.push_back(d.is_symbol() ? d.symbol : "");
    }
  }
  return info;
}

}  // namespace

Session::Session(const std::string& model_path, SessionOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  onnx_import::LoadOptions load;
  load.memory_limit_bytes = options.memory_limit_bytes;
  impl_->model = onnx_import::load_model(model_path, load).value_or_throw();
  passes::PassContext pctx;
  pctx.memory_limit_bytes = options.memory_limit_bytes;
  // Constant folding evaluates nodes through the tier-0 kernels (passes cannot link interp).
  pctx.evaluate_node = [limit = options.memory_limit_bytes](const ir::Node& node,
                                                            const std::vector<Tensor>& inputs) {
    interp::ExecOptions fold;
    fold.memory_limit_bytes = limit;
    return interp::evaluate_node(node, inputs, fold);
  };
  passes::run_tier0_pipeline(*impl_->model.graph, pctx).with_prefix(model_path).throw_if_error();
  interp::check_kernels(*impl_->model.graph).with_prefix(model_path).throw_if_error();
  impl_->exec.intra_op_threads = options.intra_op_threads > 0 ? options.intra_op_threads : omp_get_num_procs();
  impl_->exec.memory_limit_bytes = options.memory_limit_bytes;
  impl_->feed_values = impl_->model.graph->feed_inputs();
  for (ir::Value* v : impl_->feed_values) impl_->inputs.push_back(describe_value(*v));
  for (ir::Value* v : impl_->model.graph->outputs()) impl_->outputs.push_back(describe_value(*v));
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

NamedTensors Session::run(const NamedTensors& feeds) const {
  const auto& expected = impl_->feed_values;
  std::vector<Tensor> ordered(expected.size());
  std::set<std::string> seen;
  for (const auto& [name, t] : feeds) {
    if (!seen.insert(name).second)
      throw Error(StatusCode::kInvalidArgument, impl_->model.path + ": input '" + name + "' given twice");
    size_t i = 0;
    while (i < expected.size() && expected[i]->name() != name) ++i;
    if (i == expected.size())
      throw Error(StatusCode::kInvalidArgument, impl_->model.path + ": model has no input '" + name + "'");
    ordered[i] = t;
  }
  for (size_t i = 0; i < expected.size(); ++i)
    if (!ordered[i].defined())
      throw Error(StatusCode::kInvalidArgument,
                  impl_->model.path + ": input '" + expected[i]->name() + "' is missing");
  interp::validate_feeds(*impl_->model.graph, ordered).with_prefix(impl_->model.path).throw_if_error();
  omp_set_num_threads(impl_->exec.intra_op_threads);
  auto result = interp::run_graph(*impl_->model.graph, std::move(ordered), impl_->exec);
  if (!result.ok()) result.status().with_prefix(impl_->model.path).throw_if_error();
  NamedTensors out;
  const auto& outs = impl_->model.graph->outputs();
  for (size_t i = 0; i < outs.size(); ++i) {
    // A constant output is the model's own tensor: hand out a copy so a caller writing into it
    // cannot change the model for later calls.
    Tensor& t = result.value()[i];
    out.emplace_back(outs[i]->name(), outs[i]->is_constant() ? t.clone() : std::move(t));
  }
  return out;
}

const std::vector<TensorInfo>& Session::inputs() const { return impl_->inputs; }
const std::vector<TensorInfo>& Session::outputs() const { return impl_->outputs; }
const std::string& Session::model_path() const { return impl_->model.path; }

std::string version_string() {
  std::string rev = TIERJIT_GIT_REV;
  return std::string(TIERJIT_VERSION) + (rev.empty() ? "" : " (git " + rev + ")");
}

}  // namespace tierjit
