// Whole-plan compilation (plan.h WholePlan): the programs of a plan's runs of compiled steps.
// Each compiled step becomes one call of a codegen::Program with the step's kernel IR, its dims,
// and its buffers bound to where the plan keeps them: arena offsets for intermediates and
// workspaces, fixed addresses for graph constants, plan-time values and prepared weights (all
// kept alive by the plan and its versions), io slots for values the call holds as Tensors
// (feeds, tier-0 results, graph outputs, values a later tier-0 step reads).
#include <unordered_map>

#include "runtime/plan.h"

namespace tierjit::runtime {

namespace {

// A compiled step the program may take: exact code of tier >= 2 that kept its kernel IR.
bool eligible(const PlanStep& st) {
  return st.kind == StepKind::kCompiled && st.compiled &&
         st.compiled->level == kir::ShapeLevel::kExact && st.compiled->tier >= 2 && st.compiled->ir;
}

// The segments [first, end) of `steps`: maximal runs of bound and eligible compiled steps with
// at least two compiled ones.
std::vector<std::pair<size_t, size_t>> segments_of(const std::vector<PlanStep>& steps) {
  std::vector<std::pair<size_t, size_t>> out;
  size_t first = 0, compiled = 0;
  for (size_t s = 0; s <= steps.size(); ++s) {
    const bool in = s < steps.size() && (steps[s].kind == StepKind::kBound || eligible(steps[s]));
    if (in) {
      compiled += steps[s].kind == StepKind::kCompiled;
      continue;
    }
    if (compiled >= 2) out.emplace_back(first, s);
    first = s + 1;
    compiled = 0;
  }
  return out;
}

}  // namespace

bool Plan::whole_compilable() const { return !segments_of(steps_).empty(); }

Expected<std::shared_ptr<const WholePlan>> Plan::compile_whole() const {
  const auto runs = segments_of(steps_);
  if (runs.empty())
    return unsupported("plan {}: no two consecutive regions run exact compiled code of tier 2 or "
                       "above", sig_.to_string());
  const ir::Graph& g = *layout_->graph;
  std::vector<const ir::Value*> value_of(g.num_value_ids(), nullptr);
  for (const auto& v : g.values()) value_of[static_cast<size_t>(v->id())] = v.get();
  std::unordered_map<uint32_t, const Tensor*> bound;
  for (size_t b : bound_steps_)
    for (const auto& [id, t] : steps_[b].bound) bound[id] = &t;

  auto w = std::make_shared<WholePlan>();
  w->segment_at.assign(steps_.size(), -1);
  auto address = [](const void* p) { return reinterpret_cast<int64_t>(p); };
  using Kind = codegen::ProgramArg::Kind;
  for (const auto& [first, end] : runs) {
    PlanSegment seg;
    seg.first = first;
    seg.end = end;
    std::unordered_map<uint32_t, int64_t> slot_of;
    auto slot = [&](uint32_t id, bool allocate) {
      auto [it, fresh] = slot_of.emplace(id, static_cast<int64_t>(seg.io.size()));
      if (fresh) {
        seg.io.push_back(id);
        seg.allocate.push_back(allocate ? 1 : 0);
      }
      return it->second;
    };
    codegen::Program program;
    program.name = "plan";
    for (size_t s = first; s < end; ++s) {
      const PlanStep& st = steps_[s];
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
        call.buffers.push_back(op.arena_offset >= 0
                                   ? codegen::ProgramArg{Kind::kArena, op.arena_offset}
                                   : codegen::ProgramArg{Kind::kIo, slot(op.value, true)});
      if (st.workspace_offset >= 0) call.buffers.push_back({Kind::kArena, st.workspace_offset});
      call.dims = st.dims;
      program.calls.push_back(std::move(call));
    }
    program.num_io = static_cast<int64_t>(seg.io.size());
    seg.regions = program.calls.size();
    TJ_ASSIGN_OR_RETURN(seg.kernel, codegen::compile_program(program, codegen::CompileOptions{}));
    w->segment_at[first] = static_cast<int>(w->segments.size());
    w->segments.push_back(std::move(seg));
  }
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
