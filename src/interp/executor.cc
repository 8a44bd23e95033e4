// Tier-0 executor (see executor.h).
#include "interp/executor.h"

#include <algorithm>
#include <atomic>
#include <mutex>

#include <fmt/format.h>

#include "interp/registry.h"
#include "support/check.h"
#include "support/cpu_load.h"

namespace tierjit::interp {

Expected<const Tensor*> KernelContext::required_input(size_t i) const {
  if (const Tensor* t = input(i)) return t;
  return fail("input {} is required but missing", i);
}

Status KernelContext::check_size(DType dtype, const Shape& shape) const {
  for (int64_t d : shape)
    if (d < 0) return fail("computed a negative dim in output shape {}", shape_to_string(shape));
  int64_t n = shape_numel(shape);
  int64_t es = static_cast<int64_t>(dtype_size(dtype));
  if (es != 0 && n > options_.memory_limit_bytes / es)
    return resource_exhausted("{}: output of shape {} ({}) exceeds the memory limit of {} bytes",
                              node_.describe(), shape_to_string(shape), dtype_name(dtype),
                              options_.memory_limit_bytes);
  // One output over the arena limit is refused before it is allocated (the total of the live
  // ones is checked after each node, run_prepared: so the peak stays under twice the limit).
  const int64_t arena = options_.arena_limit_bytes;
  if (arena > 0 && es != 0 && n > arena / es)
    return resource_exhausted(
        "{}: output of shape {} ({}) is {} bytes alone, over the arena limit of {} bytes "
        "(arena_limit_bytes)",
        node_.describe(), shape_to_string(shape), dtype_name(dtype), n * es, arena);
  return Status();
}

Expected<Tensor*> KernelContext::output(size_t i, DType dtype, Shape shape) {
  TJ_CHECK(i < outputs_.size());
  TJ_RETURN_IF_ERROR(check_size(dtype, shape));
  outputs_[i] = Tensor::empty(dtype, std::move(shape));
  return &outputs_[i];
}

Expected<std::vector<Tensor>> KernelContext::run_subgraph(const ir::Graph& g,
                                                          std::vector<Tensor> inputs) const {
  if (!run_subgraph_) return internal_error("{}: no subgraph runner", node_.describe());
  return (*run_subgraph_)(g, std::move(inputs));
}

Status check_kernels(const ir::Graph& graph) {
  const KernelRegistry& reg = KernelRegistry::global();
  for (const auto& n : graph.nodes()) {
    if (!reg.find(n->op()))
      return unsupported("{}: no tier-0 kernel for op {} (opset {})", n->describe(),
                         ir::op_name(n->op()), n->opset());
    for (const auto& [name, a] : n->attributes()) {
      if (a.g) TJ_RETURN_IF_ERROR(check_kernels(*a.g));
      for (const auto& sg : a.graphs)
        if (sg) TJ_RETURN_IF_ERROR(check_kernels(*sg));
    }
  }
  return Status();
}

Status validate_feeds(const ir::Graph& graph, const std::vector<Tensor>& feeds) {
  std::vector<ir::Value*> expected = graph.feed_inputs();
  if (feeds.size() != expected.size())
    return invalid_argument("expected {} inputs, got {}", expected.size(), feeds.size());
  for (size_t i = 0; i < feeds.size(); ++i) {
    const ir::Value* v = expected[i];
    const Tensor& t = feeds[i];
    if (!t.defined()) return invalid_argument("input '{}': missing", v->name());
    const ir::ValueType& ty = v->type();
    if (ty.dtype != DType::kUndefined && t.dtype() != ty.dtype)
      return invalid_argument("input '{}': expected dtype {}, got {}", v->name(),
                              dtype_name(ty.dtype), dtype_name(t.dtype()));
    if (!ty.shape) continue;
    if (static_cast<size_t>(t.rank()) != ty.shape->size())
      return invalid_argument("input '{}': expected rank {} {}, got rank {} {}", v->name(),
                              ty.shape->size(), ir::sym_shape_to_string(*ty.shape), t.rank(),
                              shape_to_string(t.shape()));
    for (size_t d = 0; d < ty.shape->size(); ++d) {
      const ir::Dim& dim = (*ty.shape)[d];
      if (dim.is_constant() && dim.value != t.dim(static_cast<int64_t>(d)))
        return invalid_argument("input '{}': dim {} must be {}, got {} (shape {})", v->name(), d,
                                dim.value, t.dim(static_cast<int64_t>(d)),
                                shape_to_string(t.shape()));
    }
  }
  return Status();
}

namespace {

std::atomic<KernelObserver> g_kernel_observer{nullptr};

// Runs one node on `frame` through its kernel: its inputs from frame.values, its outputs stored
// there.
Status run_node(const ir::Node& node, Frame& frame, const ExecOptions& options,
                const SubgraphRunner& runner, std::vector<const Tensor*>& in_ptrs,
                std::vector<Tensor>& outs) {
  KernelFn fn = KernelRegistry::global().find(node.op());
  if (!fn) return unsupported("{}: no tier-0 kernel", node.describe());
  in_ptrs.clear();
  for (ir::Value* v : node.inputs()) in_ptrs.push_back(v ? &frame.values[v->id()] : nullptr);
  outs.assign(node.num_outputs(), Tensor());
  KernelContext ctx(node, in_ptrs, outs, options, &runner);
  TJ_RETURN_IF_ERROR(fn(ctx));
  for (size_t oi = 0; oi < node.num_outputs(); ++oi) {
    ir::Value* v = node.output(oi);
    if (!v) continue;
    if (!outs[oi].defined())
      return internal_error("{}: kernel produced no output {}", node.describe(), oi);
    frame.values[v->id()] = std::move(outs[oi]);
  }
  if (KernelObserver observe = g_kernel_observer.load(std::memory_order_relaxed)) observe(node);
  return Status();
}

}  // namespace

void set_kernel_observer_for_testing(KernelObserver observer) {
  g_kernel_observer.store(observer, std::memory_order_relaxed);
}

void init_frame(Frame& frame, const ir::Graph& graph) {
  frame.graph = &graph;
  frame.parent = nullptr;
  frame.values.assign(graph.num_value_ids(), Tensor());
  for (const auto& v : graph.values())
    if (v->is_constant()) frame.values[v->id()] = v->constant();
}

ExecOptions under_current_load(const ExecOptions& options) {
  ExecOptions o = options;
  if (o.load_applied) return o;
  o.intra_op_threads = support::team_for(o.intra_op_threads);
  o.load_applied = true;
  return o;
}

Status run_nodes(std::span<const ir::Node* const> nodes, Frame& frame,
                 const ExecOptions& requested) {
  const ExecOptions options = under_current_load(requested);
  // One pointer captured: fits std::function's small buffer (no allocation per call).
  struct Ctx {
    Frame* frame;
    const ExecOptions* options;
  } c{&frame, &options};
  SubgraphRunner runner = [p = &c](const ir::Graph& g, std::vector<Tensor> in) {
    return run_graph(g, std::move(in), *p->options, p->frame);
  };
  std::vector<const Tensor*>& in_ptrs = frame.in_scratch;
  std::vector<Tensor>& outs = frame.out_scratch;
  struct Clear {  // a pooled frame keeps no tensor (e.g. an unused optional output) alive
    std::vector<Tensor>& outs;
    ~Clear() { outs.clear(); }
  } clear{outs};
  for (const ir::Node* n : nodes) TJ_RETURN_IF_ERROR(run_node(*n, frame, options, runner, in_ptrs, outs));
  return Status();
}

namespace {

// What run_graph works out about a graph before running it: the last node reading each value
// (intermediates are freed after it).
struct GraphPrep {
  std::vector<int> last_use;
};

void prepare_graph(const ir::Graph& graph, GraphPrep& p) {
  // Last use of each value, so intermediates are freed early.
  const auto& nodes = graph.nodes();
  std::vector<int>& last_use = p.last_use;
  last_use.assign(graph.num_value_ids(), -1);
  for (size_t ni = 0; ni < nodes.size(); ++ni)
    for (ir::Value* v : nodes[ni]->inputs())
      if (v) last_use[v->id()] = static_cast<int>(ni);
  for (ir::Value* v : graph.outputs()) last_use[v->id()] = static_cast<int>(nodes.size());
  // A value a subgraph captures (If/Loop/Scan bodies reading outer values) lives until that node.
  for (size_t ni = 0; ni < nodes.size(); ++ni)
    for (const auto& [name, a] : nodes[ni]->attributes()) {
      std::vector<const ir::Graph*> subs;
      if (a.g) subs.push_back(a.g.get());
      for (const auto& sg : a.graphs) if (sg) subs.push_back(sg.get());
      for (size_t k = 0; k < subs.size(); ++k) {
        for (const ir::Value* src : subs[k]->capture_sources())
          if (src->owner() == &graph) last_use[src->id()] = std::max(last_use[src->id()], static_cast<int>(ni));
        for (const auto& sn : subs[k]->nodes())  // nested subgraphs may capture from us too
          for (const auto& [n2, a2] : sn->attributes()) {
            if (a2.g) subs.push_back(a2.g.get());
            for (const auto& sg : a2.graphs) if (sg) subs.push_back(sg.get());
          }
      }
    }
}

// Runs every node of frame.graph (constants, feeds and captures bound) and returns its outputs.
Expected<std::vector<Tensor>> run_prepared(const GraphPrep& p, Frame& frame, const ExecOptions& options) {
  const ir::Graph& graph = *frame.graph;
  const auto& nodes = graph.nodes();
  SubgraphRunner runner = [&](const ir::Graph& g, std::vector<Tensor> in) {
    return run_graph(g, std::move(in), options, &frame);
  };
  std::vector<const Tensor*>& in_ptrs = frame.in_scratch;
  std::vector<Tensor>& outs = frame.out_scratch;
  struct Clear {  // a pooled frame keeps no tensor alive (GraphRunner)
    std::vector<Tensor>& outs;
    ~Clear() { outs.clear(); }
  } clear{outs};
  // Live intermediates (ExecOptions::arena_limit_bytes): bytes of the node outputs not freed yet.
  const int64_t limit = options.arena_limit_bytes;
  std::vector<int64_t> counted(limit > 0 ? graph.num_value_ids() : 0, 0);
  int64_t live = 0;
  auto release = [&](const ir::Node& n, size_t ni) {
    for (ir::Value* v : n.inputs())
      if (v && p.last_use[v->id()] == static_cast<int>(ni) && !v->is_constant()) {
        frame.values[v->id()] = Tensor();
        if (limit > 0) {
          live -= counted[v->id()];
          counted[v->id()] = 0;
        }
      }
  };
  for (size_t ni = 0; ni < nodes.size(); ++ni) {
    TJ_RETURN_IF_ERROR(run_node(*nodes[ni], frame, options, runner, in_ptrs, outs));
    if (limit > 0) {
      for (const ir::Value* v : nodes[ni]->outputs())
        if (v) {
          counted[v->id()] = static_cast<int64_t>(frame.values[v->id()].nbytes());
          live += counted[v->id()];
        }
      if (live > limit)
        return resource_exhausted(
            "{}: live intermediates need at least {} bytes after this node, over the arena limit "
            "of {} bytes (arena_limit_bytes)",
            nodes[ni]->describe(), live, limit);
    }
    release(*nodes[ni], ni);
  }

  std::vector<Tensor> results;
  results.reserve(graph.outputs().size());
  for (ir::Value* v : graph.outputs()) {
    if (!frame.values[v->id()].defined())
      return internal_error("graph '{}': output '{}' was not computed", graph.name(), v->name());
    results.push_back(frame.values[v->id()]);
  }
  return results;
}

// Binds graph.inputs() that are not constants to `inputs`, in order.
Status bind_feeds(const ir::Graph& graph, std::vector<Tensor>& inputs, Frame& frame) {
  size_t k = 0;
  for (ir::Value* v : graph.inputs()) {
    if (v->is_constant()) continue;
    if (k >= inputs.size())
      return invalid_argument("graph '{}': input '{}' not given", graph.name(), v->name());
    frame.values[v->id()] = std::move(inputs[k++]);
  }
  return Status();
}

}  // namespace

Expected<std::vector<Tensor>> run_graph(const ir::Graph& graph, std::vector<Tensor> inputs,
                                        const ExecOptions& requested, const Frame* parent) {
  const ExecOptions options = under_current_load(requested);
  Frame frame;
  frame.graph = &graph;
  frame.parent = parent;
  frame.values.resize(graph.num_value_ids());

  // Bind constants, feeds and captures.
  for (const auto& v : graph.values())
    if (v->is_constant()) frame.values[v->id()] = v->constant();
  TJ_RETURN_IF_ERROR(bind_feeds(graph, inputs, frame));
  for (size_t i = 0; i < graph.captures().size(); ++i) {
    const ir::Value* src = graph.capture_sources()[i];
    const Frame* f = parent;
    while (f && f->graph != src->owner()) f = f->parent;
    if (!f) return internal_error("graph '{}': capture '{}' has no enclosing frame", graph.name(), src->name());
    frame.values[graph.captures()[i]->id()] = f->values[src->id()];
  }
  GraphPrep prep;
  prepare_graph(graph, prep);
  return run_prepared(prep, frame, options);
}

// ---- GraphRunner -------------------------------------------------------------------------------

struct GraphRunner::Prepared : GraphPrep {};

GraphRunner::GraphRunner(const ir::Graph& graph, size_t pool_cap)
    : graph_(&graph), prep_(std::make_unique<Prepared>()), pool_cap_(pool_cap) {
  prepare_graph(graph, *prep_);
  for (const auto& v : graph.values())
    if (!v->is_constant()) dynamic_ids_.push_back(static_cast<uint32_t>(v->id()));
}

GraphRunner::~GraphRunner() = default;

Expected<std::vector<Tensor>> GraphRunner::run(std::vector<Tensor> inputs,
                                               const ExecOptions& options) const {
  std::unique_ptr<Frame> frame;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!pool_.empty()) {
      frame = std::move(pool_.back());
      pool_.pop_back();
    }
  }
  if (!frame) {
    frame = std::make_unique<Frame>();
    init_frame(*frame, *graph_);
  }
  struct Return {  // every value but the constants reset, the frame back to the pool
    const GraphRunner* r;
    std::unique_ptr<Frame>& f;
    ~Return() {
      for (uint32_t id : r->dynamic_ids_)
        if (f->values[id].defined()) f->values[id] = Tensor();
      std::lock_guard<std::mutex> lock(r->mu_);
      if (r->pool_.size() < r->pool_cap_) r->pool_.push_back(std::move(f));
    }
  } ret{this, frame};
  TJ_RETURN_IF_ERROR(bind_feeds(*graph_, inputs, *frame));
  return run_prepared(*prep_, *frame, under_current_load(options));
}

}  // namespace tierjit::interp
