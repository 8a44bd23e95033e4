// CompiledProgram: partition -> lower -> compile each region once; run = a flat walk over the
// regions' kernels (tier-0 nodes for regions without a lowering).
#include "compiled.h"

#include <cmath>

#include "interp/evaluate_node.h"
#include "passes/shape_inference.h"
#include "runtime/kernel_select.h"
#include "runtime/region_exec.h"

namespace tierjit::bench {

struct CompiledProgram::Step {
  const passes::Region* region = nullptr;
  codegen::CompiledKernel kernel;  ///< fn == nullptr: run the nodes on tier 0
  std::vector<void*> buffers;
  std::vector<int64_t> dims;
  Tensor workspace;
  std::vector<Tensor> prepared;  // constant inputs in prepared layouts
};

CompiledProgram::~CompiledProgram() = default;

namespace {

kir::TensorSpec spec_of(const ir::Value& v, const Tensor& t, kir::ShapeLevel level) {
  kir::TensorSpec s;
  s.dtype = t.dtype();
  for (size_t d = 0; d < t.shape().size(); ++d) {
    bool fixed = v.is_constant() || level == kir::ShapeLevel::kExact ||
                 (v.type().shape && d < v.type().shape->size() && (*v.type().shape)[d].is_constant());
    s.dims.push_back(fixed ? t.shape()[d] : -1);
    s.bounds.push_back(-1);
  }
  return s;
}

Status run_node_tier0(const ir::Node& n, std::vector<Tensor>& values) {
  std::vector<Tensor> ins;
  for (const ir::Value* v : n.inputs()) ins.push_back(v ? values[v->id()] : Tensor());
  interp::ExecOptions o;
  o.intra_op_threads = 1;
  TJ_ASSIGN_OR_RETURN(auto outs, interp::evaluate_node(n, ins, o));
  for (size_t i = 0; i < n.outputs().size(); ++i)
    if (n.output(i)) values[n.output(i)->id()] = std::move(outs[i]);
  return Status();
}

Status run_region_tier0(const passes::Region& r, std::vector<Tensor>& values) {
  for (const ir::Node* n : r.nodes) TJ_RETURN_IF_ERROR(run_node_tier0(*n, values));
  return Status();
}

}  // namespace

Status run_all_tier0(const ir::Graph& g, const std::vector<Tensor>& feeds, std::vector<Tensor>& values) {
  values.assign(g.values().size(), Tensor());
  auto fi = g.feed_inputs();
  if (fi.size() != feeds.size()) return invalid_argument("{} feeds for {} inputs", feeds.size(), fi.size());
  for (size_t i = 0; i < fi.size(); ++i) values[fi[i]->id()] = feeds[i];
  for (const auto& v : g.values())
    if (v->is_constant()) values[v->id()] = v->constant();
  for (const auto& n : g.nodes()) TJ_RETURN_IF_ERROR(run_node_tier0(*n, values));
  return Status();
}

kir::LowerOptions lower_options(const passes::Region& r, const std::vector<Tensor>& values, int tier,
                                kir::ShapeLevel level) {
  kir::LowerOptions lo;
  lo.level = level;
  lo.tier = tier;
  lo.vector_lanes = codegen::host_cpu().f32_lanes();
  for (const ir::Value* v : r.inputs) lo.inputs.push_back(spec_of(*v, values[v->id()], level));
  for (const ir::Value* v : r.outputs) lo.outputs.push_back(spec_of(*v, values[v->id()], level));
  return lo;
}

Expected<std::unique_ptr<CompiledProgram>> CompiledProgram::make(Tier0Program program,
                                                                 const CompiledProgramOptions& options) {
  std::unique_ptr<CompiledProgram> p(new CompiledProgram());
  p->threads_ = options.threads;
  std::vector<Tensor> feeds = program.feeds();
  p->graph_ = program.take_graph();
  ir::Graph& g = *p->graph_;
  TJ_RETURN_IF_ERROR(passes::infer_shapes(g, passes::PassContext{}));
  // Tier 0 once: every value's shape, and the reference outputs.
  TJ_RETURN_IF_ERROR(run_all_tier0(g, feeds, p->values_));
  for (const ir::Value* v : g.outputs()) p->reference_.push_back(p->values_[v->id()].clone());

  TJ_ASSIGN_OR_RETURN(auto part, passes::partition_graph(g, {}));
  p->partition_ = std::make_unique<passes::Partition>(std::move(part));
  for (const passes::Region& r : p->partition_->regions) {
    Step step;
    step.region = &r;
    bool compiled_kind = passes::is_compiled_kind(r.kind);
    if (compiled_kind) {
      kir::LowerOptions lo = lower_options(r, p->values_, options.tier, options.level);
      lo.tuning = options.tuning;
      lo.threads = options.threads;
      lo.prepare_constant_inputs = true;  // as the runtime compiles (region_exec.cc)
      // Compiled outputs get their own buffers, so the reference values are not overwritten.
      std::vector<int> ids;
      for (const ir::Value* v : r.inputs) ids.push_back(v->id());
      for (const ir::Value* v : r.outputs) ids.push_back(v->id());
      std::vector<Tensor> saved;
      for (const ir::Value* v : r.outputs) {
        Tensor& t = p->values_[v->id()];
        saved.push_back(t);
        t = Tensor::empty(t.dtype(), t.shape());
      }
      std::vector<void*> buffers;
      std::vector<int64_t> dims;
      for (int id : ids) {
        buffers.push_back(p->values_[id].raw_data());
        for (int64_t d : p->values_[id].shape()) dims.push_back(d);
      }
      kir::LoweredRegion lowered;
      bool ok = false;
      if (options.tier >= 3) {
        // Tier 3: kernel selection among the tuning candidates and the library (tier 0).
        // The library writes its outputs into a copy of the value slots: the generated
        // candidates' output buffers (in `buffers`) must stay alive.
        std::vector<Tensor> library_values = p->values_;
        auto sel = runtime::select_kernel(r, lo, buffers, dims, [&] {
          return run_region_tier0(r, library_values);
        });
        if (!sel.ok() && sel.status().code() != StatusCode::kUnsupported) return sel.status();
        if (sel.ok()) {
          double fastest = 0;
          for (const auto& c : sel->candidates)
            if (c.status.ok() && (fastest == 0 || c.best_us < fastest)) fastest = c.best_us;
          p->fastest_candidate_us_ += fastest;
          p->chosen_candidate_us_ += sel->choice().best_us;
          p->notes_.push_back("region '" + r.name + "': " + sel->summary());
          if (!sel->choice().library) {
            step.kernel = sel->kernel;
            lowered = std::move(sel->lowered);
            p->compile_us_.push_back(sel->total_us);
            ok = true;
          }
        } else {
          p->notes_.push_back(sel.status().message());
        }
      } else {
        auto l = kir::lower_region(r, lo);
        if (!l.ok() && l.status().code() != StatusCode::kUnsupported) return l.status();
        if (l.ok()) {
          codegen::CompileOptions co;
          co.tier = options.tier >= 2 ? codegen::Tier::kTier2 : codegen::Tier::kTier1;
          TJ_ASSIGN_OR_RETURN(step.kernel, codegen::compile(l->fn, co));
          p->compile_us_.push_back(step.kernel.compile_us);
          lowered = std::move(l).value();
          ok = true;
        } else {
          p->notes_.push_back(l.status().message());
        }
      }
      if (ok) {
        // Constant inputs in the layouts the lowering asked for, made once (as the runtime's
        // prepare_inputs does); the step keeps them alive.
        auto prepared = runtime::prepare_inputs(r, lowered.input_layouts);
        if (!prepared.ok()) return prepared.status();
        for (size_t i = 0; i < prepared->size(); ++i)
          if ((*prepared)[i].defined()) {
            step.prepared.push_back((*prepared)[i]);
            buffers[i] = step.prepared.back().raw_data();
          }
        step.buffers = std::move(buffers);
        step.dims = std::move(dims);
        if (lowered.workspace_bytes > 0) {
          step.workspace = Tensor::empty(DType::kUInt8, {lowered.workspace_bytes});
          step.buffers.push_back(step.workspace.raw_data());
        }
      } else {
        // The region runs on tier 0: it writes its outputs into the value slots again.
        for (size_t i = 0; i < r.outputs.size(); ++i) p->values_[r.outputs[i]->id()] = saved[i];
      }
    }
    p->steps_.push_back(std::move(step));
  }
  return p;
}

void CompiledProgram::run() {
  for (Step& s : steps_) {
    if (s.kernel.fn) {
      s.kernel(s.buffers.data(), s.dims.data());
      continue;
    }
    (void)run_region_tier0(*s.region, values_);
  }
}

double CompiledProgram::max_abs_error() const {
  double err = 0;
  const auto& outs = graph_->outputs();
  for (size_t i = 0; i < outs.size(); ++i) {
    const Tensor& got = values_[outs[i]->id()];
    if (got.dtype() != DType::kFloat32) continue;
    auto g = got.span<const float>();
    auto w = reference_[i].span<const float>();
    for (size_t k = 0; k < w.size(); ++k) err = std::max(err, std::fabs(double(g[k]) - double(w[k])));
  }
  return err;
}

void CompiledProgram::time(benchmark::State& state) {
  run();
  state.counters["max_abs_err"] = max_abs_error();
  if (fastest_candidate_us_ > 0) {
    // Tier 3: what kernel selection measured (sums over the regions), to compare this case's
    // time with the fastest candidate it saw.
    state.counters["fastest_candidate_us"] = fastest_candidate_us_;
    state.counters["chosen_candidate_us"] = chosen_candidate_us_;
  }
  for (auto _ : state) run();
}

}  // namespace tierjit::bench
