// Plan, its recording run, its memory plan and the PlanCache (see plan.h).
#include "runtime/plan.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>

#include "support/buffer_pool.h"
#include "support/check.h"

namespace tierjit::runtime {

namespace {

constexpr int64_t kAlign = 64;
int64_t align_up(int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

size_t shape_bytes(DType dtype, const Shape& shape) {
  return static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype);
}

// First-fit placement of blocks live over [begin, end] step ranges.
class ArenaPlanner {
 public:
  // Frees every block whose last step is before `step`.
  void advance(int step) {
    std::erase_if(live_, [step](const Block& b) { return b.end < step; });
  }
  int64_t place(int64_t bytes, int end) {
    bytes = std::max<int64_t>(align_up(bytes), kAlign);
    std::sort(live_.begin(), live_.end(), [](const Block& a, const Block& b) { return a.off < b.off; });
    int64_t off = 0;
    for (const Block& b : live_) {
      if (b.off - off >= bytes) break;
      off = std::max(off, b.off + b.size);
    }
    live_.push_back({off, bytes, end});
    total_ = std::max(total_, off + bytes);
    return off;
  }
  int64_t total() const { return total_; }

 private:
  struct Block {
    int64_t off, size;
    int end;
  };
  std::vector<Block> live_;
  int64_t total_ = 0;
};

}  // namespace

GraphLayout make_layout(const ir::Graph& graph, const passes::Partition& partition,
                        const interp::ExecOptions& exec) {
  GraphLayout l;
  l.graph = &graph;
  l.partition = &partition;
  l.exec = exec;
  for (const ir::Value* v : graph.feed_inputs()) l.feed_ids.push_back(static_cast<uint32_t>(v->id()));
  for (const ir::Value* v : graph.outputs()) l.output_ids.push_back(static_cast<uint32_t>(v->id()));
  for (const auto& v : graph.values())
    if (!v->is_constant()) l.dynamic_ids.push_back(static_cast<uint32_t>(v->id()));
  const int nregions = static_cast<int>(partition.regions.size());
  l.last_reader.assign(graph.num_value_ids(), -1);
  std::vector<uint8_t> keep(graph.num_value_ids(), 0);
  for (const auto& v : graph.values())
    if (v->is_constant()) keep[static_cast<size_t>(v->id())] = 1;
  for (uint32_t id : l.output_ids) {
    keep[id] = 1;
    l.last_reader[id] = nregions;
  }
  for (const passes::Region& r : partition.regions)
    for (const ir::Value* v : r.inputs)
      l.last_reader[static_cast<size_t>(v->id())] =
          std::max(l.last_reader[static_cast<size_t>(v->id())], r.id);
  l.release.resize(partition.regions.size());
  for (const passes::Region& r : partition.regions) {
    auto& rel = l.release[static_cast<size_t>(r.id)];
    for (const ir::Node* n : r.nodes)
      for (const ir::Value* v : n->outputs()) {
        if (!v) continue;
        const size_t id = static_cast<size_t>(v->id());
        if (!keep[id] && l.last_reader[id] <= r.id) rel.push_back(static_cast<uint32_t>(id));
      }
    for (const ir::Value* v : r.inputs) {
      const size_t id = static_cast<size_t>(v->id());
      if (!keep[id] && l.last_reader[id] == r.id) rel.push_back(static_cast<uint32_t>(id));
    }
  }
  return l;
}

Status record_call(const GraphLayout& layout, const std::vector<Tensor>& feeds, bool keep_all,
                   Recording& rec) {
  const ir::Graph& g = *layout.graph;
  interp::init_frame(rec.frame, g);
  rec.shapes.assign(g.num_value_ids(), Shape());
  rec.dtypes.assign(g.num_value_ids(), DType::kUndefined);
  rec.bound.assign(layout.partition->regions.size(), {});
  auto note = [&](uint32_t id) {
    const Tensor& t = rec.frame.values[id];
    if (!t.defined()) return;
    rec.shapes[id] = t.shape();
    rec.dtypes[id] = t.dtype();
  };
  for (const auto& v : g.values())
    if (v->is_constant()) note(static_cast<uint32_t>(v->id()));
  for (size_t i = 0; i < feeds.size(); ++i) {
    rec.frame.values[layout.feed_ids[i]] = feeds[i];
    note(layout.feed_ids[i]);
  }
  // Live intermediates (SessionOptions::arena_limit_bytes): the bytes of the values the regions
  // computed and a call has not released yet, counted as a call releases them (keep_all too).
  const int64_t limit = layout.exec.arena_limit_bytes;
  std::vector<int64_t> counted(g.num_value_ids(), 0);
  int64_t live = 0;
  rec.peak_live_bytes = 0;
  for (size_t ri = 0; ri < layout.partition->regions.size(); ++ri) {
    const passes::Region& r = layout.partition->regions[ri];
    TJ_RETURN_IF_ERROR(interp::run_nodes(r.nodes, rec.frame, layout.exec));
    for (const ir::Node* n : r.nodes)
      for (const ir::Value* v : n->outputs()) {
        if (!v) continue;
        const uint32_t id = static_cast<uint32_t>(v->id());
        note(id);
        counted[id] = static_cast<int64_t>(rec.frame.values[id].nbytes());
        live += counted[id];
      }
    rec.peak_live_bytes = std::max(rec.peak_live_bytes, live);
    if (limit > 0 && live > limit)
      return resource_exhausted(
          "live intermediates need at least {} bytes after region {} ({}), over the arena limit "
          "of {} bytes (arena_limit_bytes)",
          live, r.name, r.nodes.empty() ? std::string("no nodes") : r.nodes.back()->describe(),
          limit);
    for (uint32_t id : layout.release[static_cast<size_t>(r.id)]) {
      live -= counted[id];
      counted[id] = 0;
    }
    if (r.kind == passes::RegionKind::kShapeOnly)
      for (const ir::Value* v : r.outputs) {
        const uint32_t id = static_cast<uint32_t>(v->id());
        rec.bound[static_cast<size_t>(r.id)].emplace_back(id, rec.frame.values[id]);
      }
    if (!keep_all)
      for (uint32_t id : layout.release[static_cast<size_t>(r.id)]) rec.frame.values[id] = Tensor();
  }
  rec.outputs.clear();
  for (uint32_t id : layout.output_ids) {
    const Tensor& t = rec.frame.values[id];
    if (!t.defined()) return internal_error("output value {} was not computed", id);
    const bool shared = g.outputs()[rec.outputs.size()]->is_constant();
    rec.outputs.push_back(shared ? t.clone() : t);
  }
  return Status();
}

std::vector<Tensor> specialized_input_values(const passes::Region& region, const Recording& rec) {
  std::vector<Tensor> out(region.inputs.size());
  for (size_t i = 0; i < region.inputs.size(); ++i) {
    const uint32_t id = static_cast<uint32_t>(region.inputs[i]->id());
    for (const auto& per_region : rec.bound)
      for (const auto& [bid, t] : per_region)
        if (bid == id && t.defined() && t.dtype() == DType::kInt64 &&
            t.numel() <= static_cast<int64_t>(kMaxSpecializedValues))
          out[i] = t;
  }
  return out;
}

// A call's frame, buffer array and (small) arena, pooled per plan. A large arena
// (>= support::kPooledMinBytes) is not kept here: each call borrows one from the process-wide
// buffer pool, so idle plans hold no large memory and plans of other shapes reuse the same bytes.
struct Plan::CallState {
  interp::Frame frame;
  void* arena = nullptr;
  size_t arena_bytes = 0;
  std::vector<void*> buffers;
  ~CallState() { support::buffer_free(arena, arena_bytes); }
};

void Plan::CallStateDeleter::operator()(CallState* s) const { delete s; }

std::shared_ptr<Plan> Plan::make(const GraphLayout& layout, const Signature& sig,
                                 const Recording& rec,
                                 std::vector<std::shared_ptr<const CompiledRegion>> compiled,
                                 size_t pool_cap) {
  auto p = std::make_shared<Plan>();
  p->layout_ = &layout;
  p->sig_ = sig;
  p->hash_ = sig.exact_key();
  p->shapes_ = rec.shapes;
  p->dtypes_ = rec.dtypes;
  p->pool_cap_ = pool_cap;
  const auto& regions = layout.partition->regions;
  const size_t nregions = regions.size();
  compiled.resize(nregions);

  // A compiled region's output lives in the arena when no tier-0 region and no graph output
  // reads it: only kernels ever see it, so it needs no Tensor.
  std::vector<uint8_t> tier0_reads(layout.graph->num_value_ids(), 0);
  for (const passes::Region& r : regions)
    if (!compiled[static_cast<size_t>(r.id)])
      for (const ir::Value* v : r.inputs) tier0_reads[static_cast<size_t>(v->id())] = 1;
  for (uint32_t id : layout.output_ids) tier0_reads[id] = 1;

  ArenaPlanner arena;
  size_t bytes = sizeof(Plan) + p->shapes_.size() * (sizeof(Shape) + sizeof(DType));
  for (const Shape& s : p->shapes_) bytes += s.size() * sizeof(int64_t);
  p->steps_.resize(nregions);
  for (size_t ri = 0; ri < nregions; ++ri) {
    const passes::Region& r = regions[ri];
    PlanStep& st = p->steps_[ri];
    st.region = r.id;
    st.release = layout.release[ri];
    arena.advance(static_cast<int>(ri));
    if (r.kind == passes::RegionKind::kShapeOnly) {
      st.kind = StepKind::kBound;
      p->bound_steps_.push_back(ri);
      st.bound = rec.bound[ri];
      for (const auto& [id, t] : st.bound) bytes += t.nbytes() + sizeof(Tensor);
    } else if (!compiled[ri]) {
      st.kind = StepKind::kTier0;
      st.tier = 0;
      st.nodes = r.nodes;
      for (const ir::Value* v : r.outputs) {
        const auto id = static_cast<uint32_t>(v->id());
        st.check_ids.push_back(id);
        st.check_dims.push_back(static_cast<int64_t>(p->shapes_[id].size()));
        st.check_dims.insert(st.check_dims.end(), p->shapes_[id].begin(), p->shapes_[id].end());
      }
      st.check = st.check_ids;
    } else {
      st.kind = StepKind::kCompiled;
      st.compiled = std::move(compiled[ri]);
      st.fn = st.compiled->kernel.fn;
      st.tier = st.compiled->tier;
      ++p->compiled_steps_;
      bytes += st.compiled->bytes();
      for (const ir::Value* v : r.inputs) {
        const uint32_t id = static_cast<uint32_t>(v->id());
        st.inputs.push_back({id, -1});
        const Shape& s = p->shapes_[id];
        st.dims.insert(st.dims.end(), s.begin(), s.end());
      }
      for (const ir::Value* v : r.outputs) {
        const uint32_t id = static_cast<uint32_t>(v->id());
        const Shape& s = p->shapes_[id];
        st.dims.insert(st.dims.end(), s.begin(), s.end());
        int64_t off = -1;
        if (!tier0_reads[id])
          off = arena.place(static_cast<int64_t>(shape_bytes(p->dtypes_[id], s)),
                            std::max<int>(layout.last_reader[id], static_cast<int>(ri)));
        st.outputs.push_back({id, off});
      }
      if (st.compiled->workspace_bytes > 0)
        st.workspace_offset = arena.place(st.compiled->workspace_bytes, static_cast<int>(ri));
      p->max_buffers_ = std::max(p->max_buffers_, st.inputs.size() + st.outputs.size() + 1);
      bytes += st.dims.size() * sizeof(int64_t) + (st.inputs.size() + st.outputs.size()) * sizeof(PlanOperand);
    }
    if (passes::is_compiled_kind(r.kind)) {
      const std::vector<Tensor> values = specialized_input_values(r, rec);
      for (size_t i = 0; i < r.inputs.size(); ++i) {
        const ir::Value* v = r.inputs[i];
        const uint32_t id = static_cast<uint32_t>(v->id());
        if (values[i].defined())
          st.region_sig.add_input_with_values(p->dtypes_[id], p->shapes_[id], values[i].span<const int64_t>());
        else
          st.region_sig.add_input(p->dtypes_[id], p->shapes_[id]);
        st.bytes += static_cast<double>(shape_bytes(p->dtypes_[id], p->shapes_[id]));
      }
      for (const ir::Value* v : r.outputs) {
        const uint32_t id = static_cast<uint32_t>(v->id());
        st.bytes += static_cast<double>(shape_bytes(p->dtypes_[id], p->shapes_[id]));
        st.flops += static_cast<double>(shape_numel(p->shapes_[id]));
      }
      st.region_key = st.region_sig.exact_key();
    }
    bytes += sizeof(PlanStep);
  }
  // Inputs read from the arena: the producer's offset.
  std::vector<int64_t> offset_of(layout.graph->num_value_ids(), -1);
  for (PlanStep& st : p->steps_) {
    for (PlanOperand& op : st.inputs) op.arena_offset = offset_of[op.value];
    for (const PlanOperand& op : st.outputs) offset_of[op.value] = op.arena_offset;
  }
  p->arena_bytes_ = arena.total();
  // Live intermediates of a call: the arena (whole, per call) plus the peak of the values held as
  // Tensors in the frame (tier-0 steps' values, compiled outputs outside the arena).
  std::vector<int64_t> counted(layout.graph->num_value_ids(), 0);
  int64_t live = 0, frame_peak = 0;
  for (size_t ri = 0; ri < nregions; ++ri) {
    const PlanStep& st = p->steps_[ri];
    auto count = [&](uint32_t id) {
      counted[id] = static_cast<int64_t>(shape_bytes(p->dtypes_[id], p->shapes_[id]));
      live += counted[id];
    };
    if (st.kind == StepKind::kTier0) {
      for (const ir::Node* n : st.nodes)
        for (const ir::Value* v : n->outputs())
          if (v) count(static_cast<uint32_t>(v->id()));
    } else if (st.kind == StepKind::kCompiled) {
      for (const PlanOperand& op : st.outputs)
        if (op.arena_offset < 0) count(op.value);
    }
    frame_peak = std::max(frame_peak, live);
    for (uint32_t id : st.release) {
      live -= counted[id];
      counted[id] = 0;
    }
  }
  p->peak_live_bytes_ = p->arena_bytes_ + frame_peak;
  // A small arena stays with the plan's pooled call state; a large one is borrowed per call.
  if (p->arena_bytes_ < static_cast<int64_t>(support::kPooledMinBytes))
    bytes += static_cast<size_t>(p->arena_bytes_);
  p->bytes_ = bytes;
  p->clone_output_.assign(layout.output_ids.size(), 0);
  for (size_t i = 0; i < layout.output_ids.size(); ++i) {
    const uint32_t id = layout.output_ids[i];
    bool c = layout.graph->outputs()[i]->is_constant();
    for (const PlanStep& st : p->steps_)
      for (const auto& b : st.bound) c = c || b.first == id;
    p->clone_output_[i] = c;
  }
  return p;
}

std::shared_ptr<Plan> Plan::remake(const Plan& old,
                                   std::vector<std::shared_ptr<const CompiledRegion>> compiled) {
  Recording rec;
  rec.shapes = old.shapes_;
  rec.dtypes = old.dtypes_;
  rec.bound.resize(old.steps_.size());
  for (size_t i = 0; i < old.steps_.size(); ++i) rec.bound[i] = old.steps_[i].bound;
  auto p = make(*old.layout_, old.sig_, rec, std::move(compiled), old.pool_cap_);
  p->sample_feeds_ = old.sample_feeds_;
  // The same versions in every step (another region's code changed the epoch): the whole-plan
  // program stays valid, and is not compiled again.
  bool same = true;
  for (size_t i = 0; i < old.steps_.size() && same; ++i) same = old.steps_[i].compiled == p->steps_[i].compiled;
  if (same) {
    std::lock_guard<std::mutex> lock(old.whole_mu_);
    if (old.whole_owner_) {
      p->set_whole(old.whole_owner_);
      p->whole_claimed_.store(true);
    }
  }
  if (old.interpret_only()) p->interpret_only_.store(true);
  return p;
}

Plan::CallStatePtr Plan::acquire() const {
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (!pool_.empty()) {
      CallStatePtr s = std::move(pool_.back());
      pool_.pop_back();
      return s;
    }
  }
  CallStatePtr s(new CallState);
  interp::init_frame(s->frame, *layout_->graph);
  s->buffers.resize(max_buffers_);
  return s;
}

void Plan::release(CallStatePtr state) const {
  for (uint32_t id : layout_->dynamic_ids)  // most were released by their steps already
    if (state->frame.values[id].defined()) state->frame.values[id] = Tensor();
  if (state->arena_bytes >= support::kPooledMinBytes) {  // large: back to the buffer pool
    support::buffer_free(state->arena, state->arena_bytes);
    state->arena = nullptr;
    state->arena_bytes = 0;
  }
  std::lock_guard<std::mutex> lock(pool_mu_);
  if (pool_.size() < pool_cap_) pool_.push_back(std::move(state));
}

Expected<std::vector<Tensor>> Plan::run(const std::vector<Tensor>& feeds, bool* shape_changed,
                                        double* step_us) const {
  *shape_changed = false;
  CallStatePtr cs = acquire();
  struct Return {
    const Plan* p;
    CallStatePtr* s;
    ~Return() { p->release(std::move(*s)); }
  } ret{this, &cs};
  if (arena_bytes_ > 0 && !cs->arena) {
    cs->arena_bytes = static_cast<size_t>(arena_bytes_);
    cs->arena = support::buffer_alloc(cs->arena_bytes);
  }
  std::vector<Tensor>& vals = cs->frame.values;
  for (size_t i = 0; i < feeds.size(); ++i) vals[layout_->feed_ids[i]] = feeds[i];
  // Plan-time values first (every call binds them once, at its start).
  for (size_t b : bound_steps_)
    for (const auto& [id, t] : steps_[b].bound) vals[id] = t;
  char* arena = static_cast<char*>(cs->arena);
  // The thread count the load allows, decided once per call (at the first tier-0 step) rather
  // than by every step: each decision reads the clock.
  interp::ExecOptions exec = layout_->exec;
  auto t0 = step_us ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
  const WholePlan* whole_plan = whole();
  for (size_t si = 0; si < steps_.size(); ++si) {
    const PlanStep& st = steps_[si];
    if (whole_plan && whole_plan->segment_at[si] >= 0) {
      const PlanSegment& seg = whole_plan->segments[static_cast<size_t>(whole_plan->segment_at[si])];
      run_segment(seg, vals, arena, step_us);
      if (step_us) {
        step_us += seg.end - seg.first;
        t0 = std::chrono::steady_clock::now();
      }
      si = seg.end - 1;
      continue;
    }
    switch (st.kind) {
      case StepKind::kBound:  // bound at the start of the call
        break;
      case StepKind::kTier0:
        exec = interp::under_current_load(exec);
        TJ_RETURN_IF_ERROR(interp::run_nodes(st.nodes, cs->frame, exec));
        if (!st.check.empty()) {
          const int64_t* want = st.check_dims.data();  // [rank, dims...] per checked value
          for (uint32_t id : st.check) {
            const Shape& got = vals[id].shape();
            const auto rank = static_cast<size_t>(*want++);
            if (got.size() != rank || !std::equal(got.begin(), got.end(), want)) {
              *shape_changed = true;
              return std::vector<Tensor>();
            }
            want += rank;
          }
        }
        break;
      case StepKind::kCompiled: {
        void** b = cs->buffers.data();
        for (const PlanOperand& op : st.inputs)
          *b++ = op.arena_offset >= 0 ? arena + op.arena_offset
                                      : const_cast<void*>(vals[op.value].raw_data());
        for (const PlanOperand& op : st.outputs) {
          if (op.arena_offset >= 0) {
            *b++ = arena + op.arena_offset;
          } else {
            Tensor& t = vals[op.value];
            t = Tensor::empty(dtypes_[op.value], shapes_[op.value]);
            *b++ = t.raw_data();
          }
        }
        if (st.workspace_offset >= 0) *b++ = arena + st.workspace_offset;
        st.compiled->bind_prepared(cs->buffers.data());
        st.fn(cs->buffers.data(), st.dims.data());
        break;
      }
    }
    for (uint32_t id : st.release) vals[id] = Tensor();
    if (step_us) {
      auto t1 = std::chrono::steady_clock::now();
      *step_us++ = std::chrono::duration<double, std::micro>(t1 - t0).count();
      t0 = t1;
    }
  }
  return collect_outputs(vals);
}

void Plan::run_segment(const PlanSegment& seg, std::vector<Tensor>& vals, char* arena,
                       double* step_us) const {
  thread_local std::vector<void*> io;
  io.resize(seg.io.size() + 1);
  for (size_t k = 0; k < seg.io.size(); ++k) {
    Tensor& t = vals[seg.io[k]];
    if (seg.allocate[k]) t = Tensor::empty(dtypes_[seg.io[k]], shapes_[seg.io[k]]);
    io[k] = t.raw_data();
  }
  io[seg.io.size()] = arena;
  const auto t0 = step_us ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
  seg.kernel(io.data(), nullptr);
  for (size_t s = seg.first; s < seg.end; ++s)
    for (uint32_t id : steps_[s].release) vals[id] = Tensor();
  if (!step_us) return;
  // One time for the segment, split over its compiled steps by their last measured times
  // (equally while none has one): the profile keeps counting every region's calls.
  const double total =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  double weight = 0;
  size_t compiled = 0;
  for (size_t s = seg.first; s < seg.end; ++s) {
    const PlanStep& st = steps_[s];
    weight += st.kind == StepKind::kCompiled ? st.shape_us.v.load(std::memory_order_relaxed) : 0;
    compiled += st.kind == StepKind::kCompiled;
  }
  for (size_t s = seg.first; s < seg.end; ++s) {
    const PlanStep& st = steps_[s];
    const double own = st.kind == StepKind::kCompiled ? st.shape_us.v.load(std::memory_order_relaxed) : 0;
    step_us[s - seg.first] = st.kind != StepKind::kCompiled ? 0
                             : weight > 0                   ? total * own / weight
                                                            : total / static_cast<double>(compiled);
  }
}

Expected<std::vector<Tensor>> Plan::collect_outputs(const std::vector<Tensor>& vals) const {
  std::vector<Tensor> out;
  out.reserve(layout_->output_ids.size());
  for (size_t i = 0; i < layout_->output_ids.size(); ++i) {
    const Tensor& t = vals[layout_->output_ids[i]];
    if (!t.defined()) return internal_error("plan: output {} was not computed", i);
    out.push_back(clone_output_[i] ? t.clone() : t);
  }
  return out;
}

std::shared_ptr<const Plan> PlanCache::find(const Signature& sig, uint64_t hash) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto [lo, hi] = index_.equal_range(hash);
  for (auto it = lo; it != hi; ++it) {
    if (!((*it->second)->signature() == sig)) continue;
    lru_.splice(lru_.begin(), lru_, it->second);
    return *it->second;
  }
  return nullptr;
}

std::shared_ptr<const Plan> PlanCache::insert(std::shared_ptr<const Plan> plan) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [lo, hi] = index_.equal_range(plan->hash());
  for (auto it = lo; it != hi; ++it)
    if ((*it->second)->signature() == plan->signature()) return *it->second;
  lru_.push_front(plan);
  index_.emplace(plan->hash(), lru_.begin());
  bytes_ += plan->bytes();
  while (lru_.size() > 1 && (lru_.size() > max_plans_ || bytes_ > max_bytes_)) {
    auto last = std::prev(lru_.end());
    auto [a, b] = index_.equal_range((*last)->hash());
    for (auto it = a; it != b; ++it)
      if (it->second == last) {
        index_.erase(it);
        break;
      }
    bytes_ -= (*last)->bytes();
    lru_.erase(last);
    ++evictions_;
  }
  return plan;
}

void PlanCache::replace(std::shared_ptr<const Plan> plan) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto [lo, hi] = index_.equal_range(plan->hash());
    for (auto it = lo; it != hi; ++it)
      if ((*it->second)->signature() == plan->signature()) {
        bytes_ = bytes_ - (*it->second)->bytes() + plan->bytes();
        *it->second = std::move(plan);
        return;
      }
  }
  insert(std::move(plan));
}

size_t PlanCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.size();
}
size_t PlanCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}
uint64_t PlanCache::evictions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return evictions_;
}

}  // namespace tierjit::runtime
