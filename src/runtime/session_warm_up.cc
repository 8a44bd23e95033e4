// Warm-up at session creation (SessionOptions::warm_up; docs/runtime.md "Warm-up at session
// creation"): one tier-0 run of the whole graph on zeros, every symbolic or unknown input dim 1,
// before the first request. It does the first call's work that no request dim changes — constant
// weights packed into the panels and layouts the kernels read (kernels/packed_gemm.h, oneDNN's
// reorders), the OpenMP team started, oneDNN and the load sampler initialized — without caching
// anything for its own signature (no Plan, no profile, no stats). A run that fails is skipped
// with its reason in the decision log; the session is the same without it.
#include <omp.h>

#include <chrono>
#include <exception>

#include <fmt/format.h>

#include "runtime/session_impl.h"
#include "support/log.h"

namespace tierjit {

namespace {

// The warm-up feeds: zeros of each input's dtype and declared shape, symbolic and unknown dims
// 1; an error naming the input when it has no declared rank or is not numeric.
Expected<std::vector<Tensor>> warm_up_feeds(const std::vector<ir::Value*>& feed_values) {
  std::vector<Tensor> feeds;
  for (const ir::Value* v : feed_values) {
    const ir::ValueType& type = v->type();
    if (!type.shape) return invalid_argument("input '{}' has no declared shape", v->name());
    if (type.dtype == DType::kString || type.dtype == DType::kUndefined)
      return invalid_argument("input '{}' is not numeric ({})", v->name(), dtype_name(type.dtype));
    Shape shape;
    for (const ir::Dim& d : *type.shape) shape.push_back(d.is_constant() ? d.value : 1);
    feeds.push_back(Tensor::zeros(type.dtype, shape));
  }
  return feeds;
}

}  // namespace

void Session::Impl::warm_up() {
  const auto t0 = std::chrono::steady_clock::now();
  auto skip = [&](const std::string& why) {
    runtime::DecisionRecord d;
    d.kind = runtime::DecisionKind::kDeclined;
    d.message = "warm-up skipped: " + why;
    log.record(std::move(d));
  };
  auto feeds = warm_up_feeds(feed_values);
  if (!feeds.ok()) return skip(feeds.status().message());
  Status st;
  try {
    // As Session::run does for every call (the kernels' OpenMP teams follow it).
    omp_set_num_threads(exec.intra_op_threads);
    interp::ExecOptions warm = exec;
    warm.warm_up = true;  // kernels skip work for dims of 1 that stand for symbolic ones
    auto out = interpreter ? interpreter->run(std::move(feeds.value()), warm)
                           : interp::run_graph(*model.graph, std::move(feeds.value()), warm);
    st = out.status();
  } catch (const std::exception& e) {
    st = internal_error("{}", e.what());
  }
  if (!st.ok()) return skip(st.message());
  warm_up_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  TJ_LOG_INFO("{}: warm-up: one tier-0 run on zeros (symbolic dims 1) in {:.3f} ms", model.path,
              warm_up_ms);
}

}  // namespace tierjit
