// Whole-plan compilation (plan.h WholePlan): the program of a plan whose steps are all compiled.
// Each compiled step becomes one call of a codegen::Program with the step's kernel IR, its dims,
// and its buffers bound to where the plan keeps them: arena offsets for intermediates and
// workspaces, fixed addresses for graph constants, plan-time values and prepared weights (all
// kept alive by the plan and its versions), io slots for feeds and graph outputs.
#include <unordered_map>

#include "runtime/plan.h"

namespace tierjit::runtime {

bool Plan::whole_compilable() const {
  size_t compiled = 0;
  for (const PlanStep& st : steps_) {
    if (st.kind == StepKind::kTier0) return false;
    if (st.kind != StepKind::kCompiled) continue;
    if (!st.compiled || st.compiled->level != kir::ShapeLevel::kExact || st.compiled->tier < 2 ||
        !st.compiled->ir)
      return false;
    ++compiled;
  }
  return compiled >= 2;
}

Expected<std::shared_ptr<const WholePlan>> Plan::compile_whole() const {
  if (!whole_compilable())
    return unsupported("plan {}: not every step is compiled exact at tier 2 or above", sig_.to_string());
  const ir::Graph& g = *layout_->graph;
  std::vector<const ir::Value*> value_of(g.num_value_ids(), nullptr);
  for (const auto& v : g.values()) value_of[static_cast<size_t>(v->id())] = v.get();
  std::unordered_map<uint32_t, const Tensor*> bound;
  for (size_t b : bound_steps_)
    for (const auto& [id, t] : steps_[b].bound) bound[id] = &t;

  auto w = std::make_shared<WholePlan>();
  std::unordered_map<uint32_t, int64_t> slot_of;
  auto slot = [&](uint32_t id, bool allocate) {
    auto [it, fresh] = slot_of.emplace(id, static_cast<int64_t>(w->io.size()));
    if (fresh) {
      w->io.push_back(id);
      w->allocate.push_back(allocate ? 1 : 0);
    }
    return it->second;
  };
  auto address = [](const void* p) { return reinterpret_cast<int64_t>(p); };
  using Kind = codegen::ProgramArg::Kind;
  codegen::Program program;
  program.name = "plan";
  for (const PlanStep& st : steps_) {
    if (st.kind != StepKind::kCompiled) continue;
    const CompiledRegion& c = *st.compiled;
    codegen::ProgramCall call;
    call.fn = c.ir.get();
    for (size_t j = 0; j < st.inputs.size(); ++j) {
      const PlanOperand& op = st.inputs[j];
      const ir::Value* v = value_of[op.value];
      if (j < c.prepared_inputs.size() && c.prepared_inputs[j].numel() > 0) {
        call.buffers.push_back({Kind::kAddress, address(c.prepared_inputs[j].raw_data())});
      } else if (op.arena_offset >= 0) {
        call.buffers.push_back({Kind::kArena, op.arena_offset});
      } else if (v && v->is_constant()) {
        call.buffers.push_back({Kind::kAddress, address(v->constant().raw_data())});
      } else if (auto b = bound.find(op.value); b != bound.end()) {
        call.buffers.push_back({Kind::kAddress, address(b->second->raw_data())});
      } else {
        call.buffers.push_back({Kind::kIo, slot(op.value, false)});
      }
    }
    for (const PlanOperand& op : st.outputs)
      call.buffers.push_back(op.arena_offset >= 0 ? codegen::ProgramArg{Kind::kArena, op.arena_offset}
                                                  : codegen::ProgramArg{Kind::kIo, slot(op.value, true)});
    if (st.workspace_offset >= 0) call.buffers.push_back({Kind::kArena, st.workspace_offset});
    call.dims = st.dims;
    program.calls.push_back(std::move(call));
  }
  program.num_io = static_cast<int64_t>(w->io.size());
  w->regions = program.calls.size();
  TJ_ASSIGN_OR_RETURN(w->kernel, codegen::compile_program(program, codegen::CompileOptions{}));
  return std::shared_ptr<const WholePlan>(std::move(w));
}

void Plan::set_whole(std::shared_ptr<const WholePlan> w) const {
  if (!w) return;
  std::lock_guard<std::mutex> lock(whole_mu_);
  if (whole_owner_) return;
  whole_owner_ = std::move(w);
  whole_.store(whole_owner_.get(), std::memory_order_release);
}

}  // namespace tierjit::runtime
