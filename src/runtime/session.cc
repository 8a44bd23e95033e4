// Session: load -> passes -> partition; run() finds the Plan of the call's input signature and
// walks its regions (runtime/plan.h), or runs the interpreter alone (interpret-only mode). Owns
// the model; run() is const and thread-safe: the graph is read-only after construction, each call
// has its own frame and arena, the caches lock.
#include "tierjit/session.h"

#include <omp.h>

#include <cmath>
#include <set>

#include <fmt/format.h>

#include "interp/evaluate_node.h"
#include "passes/pipeline.h"
#include "runtime/session_impl.h"
#include "support/cpu_load.h"
#include "support/version.h"

namespace tierjit {

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

/// The name a model given as bytes goes by in messages and Session::model_path().
constexpr const char* kBytesModelName = "<model bytes>";

Session::Session() : impl_(std::make_unique<Impl>()) {}

Session::Session(const std::string& model_path, SessionOptions options) : Session() {
  init(model_path, nullptr, std::move(options));
}

Session Session::from_bytes(const std::string& model_bytes, SessionOptions options) {
  Session s;
  s.init(kBytesModelName, &model_bytes, std::move(options));
  return s;
}

void Session::init(const std::string& model_path, const std::string* model_bytes,
                   SessionOptions options) {
  try {
    validate(options);
  } catch (const Error& e) {
    throw Error(e.code(), model_path + ": " + e.what());
  }
  impl_->options = options;
  onnx_import::LoadOptions load;
  load.memory_limit_bytes = options.memory_limit_bytes;
  impl_->model = (model_bytes ? onnx_import::load_model_from_bytes(*model_bytes, model_path,
                                                                    options.external_data_folder, load)
                              : onnx_import::load_model(model_path, load))
                     .value_or_throw();
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
  impl_->exec.arena_limit_bytes = options.arena_limit_bytes;
  impl_->feed_values = impl_->model.graph->feed_inputs();
  for (ir::Value* v : impl_->feed_values) impl_->inputs.push_back(describe_value(*v));
  for (ir::Value* v : impl_->model.graph->outputs()) impl_->outputs.push_back(describe_value(*v));
  impl_->init_runtime();
  if (!impl_->use_plans) impl_->interpreter = std::make_unique<interp::GraphRunner>(*impl_->model.graph);
  if (options.warm_up) impl_->warm_up();
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

namespace {

// The feeds in feed order. Fast path: given in the model's order (no set, no search).
void order_feeds(const Session::Impl& impl, const NamedTensors& feeds, std::vector<Tensor>& ordered) {
  const auto& expected = impl.feed_values;
  ordered.assign(expected.size(), Tensor());
  bool in_order = feeds.size() == expected.size();
  for (size_t i = 0; in_order && i < feeds.size(); ++i) in_order = feeds[i].first == expected[i]->name();
  if (in_order) {
    for (size_t i = 0; i < feeds.size(); ++i) ordered[i] = feeds[i].second;
    return;
  }
  std::set<std::string> seen;
  for (const auto& [name, t] : feeds) {
    if (!seen.insert(name).second)
      throw Error(StatusCode::kInvalidArgument, impl.model.path + ": input '" + name + "' given twice");
    size_t i = 0;
    while (i < expected.size() && expected[i]->name() != name) ++i;
    if (i == expected.size()) {
      // An initializer the model also lists among its inputs (ONNX IR < 4 style) is a constant
      // here: say so rather than "no input" (ONNX Runtime lets a feed override it).
      for (const ir::Value* v : impl.model.graph->inputs())
        if (v->name() == name && v->is_constant())
          throw Error(StatusCode::kInvalidArgument,
                      impl.model.path + ": input '" + name +
                          "' is an initializer of the model (a constant listed among its "
                          "inputs); tierjit does not replace initializers with feeds");
      throw Error(StatusCode::kInvalidArgument, impl.model.path + ": model has no input '" + name + "'");
    }
    ordered[i] = t;
  }
  for (size_t i = 0; i < expected.size(); ++i)
    if (!ordered[i].defined())
      throw Error(StatusCode::kInvalidArgument,
                  impl.model.path + ": input '" + expected[i]->name() + "' is missing");
}

// Every feed against memory_limit_bytes (checked with validate_feeds: once per signature).
void check_feed_sizes(const Session::Impl& impl, const std::vector<Tensor>& ordered) {
  const int64_t limit = impl.options.memory_limit_bytes;
  for (size_t i = 0; i < ordered.size(); ++i) {
    const Tensor& t = ordered[i];
    if (!t.defined() || static_cast<int64_t>(t.nbytes()) <= limit) continue;
    throw Error(StatusCode::kResourceExhausted,
                fmt::format("{}: input '{}': {}{} is {} bytes, over the memory limit of {} bytes "
                            "(memory_limit_bytes)",
                            impl.model.path, impl.feed_values[i]->name(), dtype_name(t.dtype()),
                            shape_to_string(t.shape()), t.nbytes(), limit));
  }
}

}  // namespace

NamedTensors Session::run(const NamedTensors& feeds) const {
  Impl& impl = *impl_;
  thread_local std::vector<Tensor> ordered;
  thread_local runtime::Signature sig;
  struct Clear {  // the thread-local feeds must not keep the caller's tensors alive
    ~Clear() { ordered.clear(); }
  } clear;
  order_feeds(impl, feeds, ordered);
  omp_set_num_threads(impl.exec.intra_op_threads);
  std::vector<Tensor> result;
  if (!impl.use_plans) {
    interp::validate_feeds(*impl.model.graph, ordered).with_prefix(impl.model.path).throw_if_error();
    check_feed_sizes(impl, ordered);
    result = impl.run_interpreted(ordered);
  } else {
    sig.clear();
    for (const Tensor& t : ordered) sig.add_input(t.dtype(), t.shape());
    const uint64_t hash = sig.exact_key();
    std::shared_ptr<const runtime::Plan> plan = impl.plans->find(sig, hash);
    if (plan) {
      impl.plan_hits.fetch_add(1, std::memory_order_relaxed);
      thread_local std::vector<double> step_us;
      double* su = nullptr;
      if (!impl.adaptive_on) {
        if (impl.options.time_regions && !plan->interpret_only()) {
          step_us.resize(plan->steps().size());
          su = step_us.data();
        }
        result = impl.run_plan(*plan, ordered, su);
        impl.consider_whole_plan(plan);
      } else {
        // Adaptive: re-resolve after an install; time the steps while a region can still move up.
        if (plan->epoch() != impl.code_epoch.load(std::memory_order_acquire)) plan = impl.refresh_plan(plan);
        if ((impl.watching.load(std::memory_order_relaxed) > 0 || impl.options.time_regions) &&
            !plan->interpret_only()) {
          step_us.resize(plan->steps().size());
          su = step_us.data();
        }
        const support::BackgroundQuiet quiet;  // no compile overlapped the call (payoff trials)
        result = impl.run_plan(*plan, ordered, su);
        if (su && !plan->interpret_only()) impl.after_call(plan, su, quiet.quiet());
        impl.consider_whole_plan(plan);
      }
      if (impl.region_counters) impl.count_call(*plan, impl.options.time_regions ? su : nullptr);
    } else {
      // A new signature: validated once, then every call with it is known good.
      interp::validate_feeds(*impl.model.graph, ordered).with_prefix(impl.model.path).throw_if_error();
      check_feed_sizes(impl, ordered);
      impl.plan_misses.fetch_add(1, std::memory_order_relaxed);
      result = impl.build_plan_and_run(sig, ordered);
    }
  }
  impl.calls.fetch_add(1, std::memory_order_relaxed);
  NamedTensors out;
  out.reserve(result.size());
  const auto& outs = impl.model.graph->outputs();
  for (size_t i = 0; i < outs.size(); ++i) out.emplace_back(outs[i]->name(), std::move(result[i]));
  return out;
}

std::vector<Tensor> Session::Impl::run_interpreted(const std::vector<Tensor>& feeds) {
  interpreted_calls.fetch_add(1, std::memory_order_relaxed);
  std::call_once(interpreter_once, [this] {
    if (!interpreter) interpreter = std::make_unique<interp::GraphRunner>(*model.graph);
  });
  auto result = interpreter->run(feeds, exec);
  if (!result.ok()) {
    Status st = result.status();
    if (st.code() == StatusCode::kResourceExhausted) {  // memory limits: name the signature
      runtime::Signature sig;
      for (const Tensor& t : feeds) sig.add_input(t.dtype(), t.shape());
      st = st.with_prefix("signature " + sig.to_string());
    }
    st.with_prefix(model.path).throw_if_error();
  }
  const auto& outs = model.graph->outputs();
  for (size_t i = 0; i < outs.size(); ++i)
    // A constant output is the model's own tensor: hand out a copy so a caller writing into it
    // cannot change the model for later calls.
    if (outs[i]->is_constant()) result.value()[i] = result.value()[i].clone();
  return std::move(result.value());
}

std::vector<Tensor> Session::Impl::run_plan(const runtime::Plan& plan,
                                            const std::vector<Tensor>& feeds, double* step_us) {
  if (plan.interpret_only()) return run_interpreted(feeds);
  bool shape_changed = false;
  auto result = plan.run(feeds, &shape_changed, step_us);
  if (!result.ok()) result.status().with_prefix(model.path).throw_if_error();
  if (!shape_changed) return std::move(result.value());
  if (plan.mark_interpret_only()) {
    runtime::DecisionRecord r;
    r.kind = runtime::DecisionKind::kDeclined;
    r.message = "signature " + plan.signature().to_string() +
                ": a tier-0 region produced a shape its plan did not record (data-dependent "
                "shapes); this signature runs at tier 0 from now on";
    log.record(std::move(r));
  }
  return run_interpreted(feeds);
}

void Session::Impl::count_call(const runtime::Plan& plan, const double* step_us) {
  if (plan.interpret_only()) return;  // this call ran the whole-graph interpreter (tier 0)
  const auto& steps = plan.steps();
  for (size_t s = 0; s < steps.size(); ++s) {
    if (steps[s].region < 0) continue;
    RegionCounters& c = region_counters[static_cast<size_t>(steps[s].region)];
    if (options.count_region_calls && steps[s].kind == runtime::StepKind::kCompiled)
      c.compiled_calls.fetch_add(1, std::memory_order_relaxed);
    if (step_us) {
      c.timed_calls.fetch_add(1, std::memory_order_relaxed);
      c.time_us.fetch_add(step_us[s], std::memory_order_relaxed);
    }
  }
}

SessionStats Session::stats() const {
  const Impl& i = *impl_;
  SessionStats s;
  s.calls = i.calls.load();
  s.plan_hits = i.plan_hits.load();
  s.plan_misses = i.plan_misses.load();
  s.interpreted_calls = i.interpreted_calls.load();
  s.compiled_regions = i.compiled_regions.load();
  s.compile_failures = i.compile_failures.load();
  s.regions = i.partition.regions.size();
  s.warm_up_ms = i.warm_up_ms;
  if (i.plans) {
    s.plans_evicted = i.plans->evictions();
    s.plans_cached = i.plans->size();
    s.plan_bytes = i.plans->bytes();
  }
  return s;
}

std::string Session::decision_log_json() const { return impl_->log.to_json(); }
std::string Session::metrics_json() const { return impl_->metrics.to_json(); }

const std::vector<TensorInfo>& Session::inputs() const { return impl_->inputs; }
const std::vector<TensorInfo>& Session::outputs() const { return impl_->outputs; }
const std::string& Session::model_path() const { return impl_->model.path; }

std::string version_string() {
  std::string rev = TIERJIT_GIT_REV;
  return std::string(TIERJIT_VERSION) + (rev.empty() ? "" : " (git " + rev + ")");
}

}  // namespace tierjit
