// Session::Impl set-up and Plan building: the partition after the tier-0 pipeline, the first
// (recording) tier-0 run of each new signature, the synchronous compiles of pinned-tier mode with
// their verification against tier 0, and the decision log entries for each (session_impl.h).
#include <fmt/format.h>

#include <algorithm>

#include "codegen/cpu_features.h"
#include "runtime/kernel_select.h"
#include "runtime/session_impl.h"

namespace tierjit {

namespace {

runtime::DecisionRecord region_record(const passes::Region& r, runtime::DecisionKind kind, int tier,
                                      std::string message) {
  runtime::DecisionRecord d;
  d.region = r.id;
  d.region_name = r.name;
  d.kind = kind;
  d.tier = tier;
  d.message = std::move(message);
  return d;
}

}  // namespace

void Session::Impl::init_runtime() {
  const codegen::CpuInfo& cpu = codegen::host_cpu();
  vector_lanes = cpu.has_avx512f ? 16 : 8;
  // Interpret-only runs the whole-graph interpreter, unless each region's time is asked for.
  if (options.mode == ExecutionMode::kInterpretOnly && !options.time_regions) return;
  auto part = passes::partition_graph(*model.graph, passes::PartitionOptions{});
  if (!part.ok()) {
    runtime::DecisionRecord d;
    d.message = "partition failed, every call runs at tier 0: " + part.status().message();
    log.record(std::move(d));
    return;
  }
  partition = std::move(part.value());
  // Every region the compiled tiers cannot take, once, with its reason (shape-only regions are
  // evaluated when a plan is made: nothing to say).
  for (const passes::Region& r : partition.regions) {
    if (r.kind == passes::RegionKind::kShapeOnly || may_compile(r)) continue;
    log.record(region_record(r, runtime::DecisionKind::kDeclined, 0,
                             "stays on tier 0: " + kir::lowering_gap(r)));
  }
  layout = runtime::make_layout(*model.graph, partition, exec);
  if (options.count_region_calls || options.time_regions)
    region_counters = std::make_unique<RegionCounters[]>(partition.regions.size());
  const size_t max_plans = static_cast<size_t>(std::max(1, options.max_plans));
  const size_t max_bytes = static_cast<size_t>(std::max<int64_t>(1, options.code_cache_bytes));
  plans = std::make_unique<runtime::PlanCache>(max_plans, max_bytes);
  // The L1 code cache gets a quarter of the byte budget of code and Plans (Plans hold their
  // code too, so code a cached Plan uses is not counted twice against the Plans' share).
  code = std::make_unique<runtime::RegionCodeStore>(partition.regions.size(), max_bytes / 4);
  use_plans = true;
  init_adaptive();
}

bool Session::Impl::may_compile(const passes::Region& r) {
  // The compiled kinds with a lowering for their ops and dtypes (lower_region may still refuse
  // an attribute: then the region stays on tier 0 with the reason logged).
  return passes::is_compiled_kind(r.kind) && kir::has_lowering(r);
}

std::shared_ptr<const runtime::CompiledRegion> Session::Impl::pinned_version(
    const passes::Region& r, runtime::Recording& rec) {
  if (!may_compile(r)) return nullptr;
  const int tier = options.pinned_tier;
  return compile_version(r, rec, tier,
                         tier == 1 ? kir::ShapeLevel::kGeneric : kir::ShapeLevel::kExact);
}

std::shared_ptr<const runtime::CompiledRegion> Session::Impl::compile_version(
    const passes::Region& r, runtime::Recording& rec, int tier, kir::ShapeLevel level,
    std::span<const uint8_t> class_dims) {
  runtime::CompileRequest req;
  req.tier = tier;
  req.level = level;
  if (level == kir::ShapeLevel::kShapeClass) req.class_dims.assign(class_dims.begin(), class_dims.end());
  if (level == kir::ShapeLevel::kExact) req.input_values = runtime::specialized_input_values(r, rec);
  req.vector_lanes = vector_lanes;
  req.threads = exec.intra_op_threads;
  kir::LowerOptions lo = runtime::lower_options(r, rec.shapes, rec.dtypes, req);
  const uint64_t key = runtime::compile_key(r, lo) ^ static_cast<uint64_t>(tier);
  bool from_l1 = false;
  if (auto c = code->find(r.id, key, &from_l1)) {
    if (from_l1) {
      runtime::Metrics::bump(metrics.cache_hits[0]);
      runtime::DecisionRecord d = region_record(r, runtime::DecisionKind::kCacheHit, tier,
                                                "version kept by the L1 code cache");
      d.cache_level = "L1";
      log.record(std::move(d));
    }
    return c;
  }
  if (code->failure(r.id, key)) return nullptr;
  std::lock_guard<std::mutex> lock(compile_mu);
  if (auto c = code->find(r.id, key)) return c;  // compiled by another call meanwhile
  if (code->failure(r.id, key)) return nullptr;
  auto fail = [&](const std::string& why) -> std::shared_ptr<const runtime::CompiledRegion> {
    compile_failures.fetch_add(1, std::memory_order_relaxed);
    runtime::Metrics::bump(metrics.compile_failures);
    log.record(region_record(r, runtime::DecisionKind::kDeclined, tier,
                             fmt::format("stays on tier 0: {}", why)));
    code->record_failure(r.id, key, why);
    return nullptr;
  };
  std::shared_ptr<const runtime::CompiledRegion> c;
  if (tier == 3) {
    // Tier 3: kernel selection on this call's data (the recording kept every value).
    auto sel = select_tier3(r, lo, key, rec);
    if (!sel.ok()) return fail(sel.status().message());
    if (!sel.value()) {
      code->record_failure(r.id, key, "library chosen");
      return nullptr;
    }
    c = std::move(sel.value());
  } else {
    auto compiled = runtime::compile_region(r, lo, tier, key);
    if (!compiled.ok()) return fail(compiled.status().message());
    c = std::move(compiled.value());
  }
  if (options.verify && !rec.frame.values.empty()) {
    // The recording kept every value: the region's tier-0 inputs and outputs of this very call.
    std::vector<const Tensor*> ins, want;
    std::vector<DType> out_dtypes;
    std::vector<Shape> out_shapes;
    for (const ir::Value* v : r.inputs) ins.push_back(&rec.frame.values[static_cast<size_t>(v->id())]);
    for (const ir::Value* v : r.outputs) {
      const size_t id = static_cast<size_t>(v->id());
      want.push_back(&rec.frame.values[id]);
      out_dtypes.push_back(rec.dtypes[id]);
      out_shapes.push_back(rec.shapes[id]);
    }
    for (const Tensor* t : ins)
      if (!t->defined()) return fail("verify: an input of the region was not kept");
    Status st = runtime::compare_outputs(runtime::run_compiled(*c, ins, out_dtypes, out_shapes), want);
    if (!st.ok()) return fail(fmt::format("verify against tier 0 failed: {}", st.message()));
  }
  compiled_regions.fetch_add(1, std::memory_order_relaxed);
  runtime::Metrics::bump(metrics.compiles[static_cast<size_t>(tier)]);
  runtime::Metrics::bump(metrics.compile_us[static_cast<size_t>(tier)],
                         static_cast<uint64_t>(c->kernel.compile_us + c->lower_us));
  runtime::DecisionRecord d = region_record(
      r, runtime::DecisionKind::kCompiled, tier,
      fmt::format("{} ({}), lower {} us{}{}", kir::shape_level_name(c->level),
                  options.verify ? "verified" : "not verified", c->lower_us,
                  c->notes.empty() ? "" : "; ", fmt::join(c->notes, "; ")));
  d.compile_us = c->kernel.compile_us + c->lower_us;
  d.level = c->level == kir::ShapeLevel::kExact        ? runtime::SpecLevel::kExact
            : c->level == kir::ShapeLevel::kShapeClass ? runtime::SpecLevel::kShapeClass
                                                       : runtime::SpecLevel::kGeneric;
  log.record(std::move(d));
  std::vector<cache::Eviction> evicted;
  auto installed = code->install(r.id, std::move(c), &evicted);
  for (const cache::Eviction& e : evicted)
    log.record(region_record(r, runtime::DecisionKind::kEvicted, tier,
                             fmt::format("L1 code cache evicted {} ({} bytes, value {:.3g} us/byte)",
                                         e.what, e.bytes, e.value)));
  return installed;
}

void Session::Impl::consider_whole_plan(const std::shared_ptr<const runtime::Plan>& plan) {
  const int64_t after = options.whole_plan_calls;
  if (after <= 0 || plan->whole() || plan->compiled_steps() < 2 || plan->interpret_only()) return;
  const uint64_t n = plan->count_call();
  // Checked at the threshold and every 64 calls after it (the versions may complete later).
  if (n < static_cast<uint64_t>(after) || (n - static_cast<uint64_t>(after)) % 64 != 0) return;
  if (!plan->whole_compilable()) return;
  double plan_us = 0;
  for (const runtime::PlanStep& st : plan->steps()) plan_us += st.shape_us.v.load(std::memory_order_relaxed);
  if (adaptive_on && plan_us > options.whole_plan_max_us) return;
  if (!plan->claim_whole()) return;
  auto work = [this, plan, plan_us]() {
    auto w = plan->compile_whole();
    runtime::DecisionRecord d;
    d.tier = 2;
    d.level = runtime::SpecLevel::kExact;
    if (!w.ok()) {
      d.kind = runtime::DecisionKind::kDeclined;
      d.message = fmt::format("whole plan {}: stays one call per region: {}",
                              plan->signature().to_string(), w.status().message());
      log.record(std::move(d));
      return Status();
    }
    d.kind = runtime::DecisionKind::kCompiled;
    d.compile_us = w.value()->compile_us();
    d.message = fmt::format("whole plan {}: {} regions in {} function{} ({:.0f} us per call at "
                            "{} calls; {} bytes of code)",
                            plan->signature().to_string(), w.value()->regions(),
                            w.value()->segments.size(), w.value()->segments.size() == 1 ? "" : "s",
                            plan_us, options.whole_plan_calls, w.value()->object_bytes());
    log.record(std::move(d));
    plan->set_whole(std::move(w).value());
    return Status();
  };
  if (adaptive_on && queue) {
    queue->submit(plan->hash() ^ 0x9e3779b97f4a7c15ULL, /*density=*/1.0, std::move(work), nullptr,
                  "whole plan " + plan->signature().to_string());
  } else {
    static_cast<void>(work());  // always OK: a failure is a decision-log record
  }
}

Expected<std::shared_ptr<const runtime::CompiledRegion>> Session::Impl::select_tier3(
    const passes::Region& r, const kir::LowerOptions& lo, uint64_t key, runtime::Recording& rec) {
  std::vector<void*> buffers;
  std::vector<int64_t> dims;
  std::vector<Tensor> outs;
  for (const ir::Value* v : r.inputs) {
    const Tensor& t = rec.frame.values[static_cast<size_t>(v->id())];
    if (!t.defined()) return internal_error("tier 3: input '{}' was not kept", v->name());
    buffers.push_back(const_cast<void*>(t.raw_data()));
    dims.insert(dims.end(), t.shape().begin(), t.shape().end());
  }
  for (const ir::Value* v : r.outputs) {
    const size_t id = static_cast<size_t>(v->id());
    outs.push_back(Tensor::empty(rec.dtypes[id], rec.shapes[id]));
    buffers.push_back(outs.back().raw_data());
    dims.insert(dims.end(), rec.shapes[id].begin(), rec.shapes[id].end());
  }
  // The library candidate: the region on tier 0 (oneDNN inside MatMul/Gemm/Conv), rerun on the
  // recording's frame (it recomputes the same outputs).
  auto run_library = [&]() { return interp::run_nodes(r.nodes, rec.frame, exec); };
  auto sel = runtime::select_kernel(r, lo, buffers, dims, run_library);
  if (!sel.ok()) return sel.status();
  runtime::KernelSelection& ks = sel.value();
  if (ks.choice().library) {
    log.record(region_record(r, runtime::DecisionKind::kDeclined, 3,
                             "stays on tier 0: tier-3 selection " + ks.summary()));
    return std::shared_ptr<const runtime::CompiledRegion>();
  }
  auto c = std::make_shared<runtime::CompiledRegion>();
  c->kernel = std::move(ks.kernel);
  c->tier = 3;
  c->level = lo.level;
  c->workspace_bytes = ks.lowered.workspace_bytes;
  c->key = key;
  c->notes = std::move(ks.lowered.notes);
  c->notes.push_back(ks.summary());
  c->set_prepared_inputs(std::move(ks.prepared_inputs));
  c->lower_us = ks.total_us - c->kernel.compile_us;
  c->ir = std::make_shared<const kir::Function>(std::move(ks.lowered.fn));
  return std::shared_ptr<const runtime::CompiledRegion>(std::move(c));
}

namespace {

// The first symbolic dim that the graph's inputs share (the same dim_param, e.g. B in x[B, T] and
// mask[B, T]) and that `feeds` give two values, as "inputs 'x' and 'm' give symbolic dim 'B' the
// values 1 and 3"; "" when every shared symbol has one value.
std::string shared_dim_conflict(const ir::Graph& g, const std::vector<Tensor>& feeds) {
  struct Seen {
    std::string symbol;
    size_t input;
    int64_t value;
  };
  std::vector<Seen> seen;
  for (size_t i = 0; i < g.inputs().size() && i < feeds.size(); ++i) {
    const auto& shape = g.inputs()[i]->type().shape;
    if (!shape || shape->size() != feeds[i].shape().size()) continue;
    for (size_t d = 0; d < shape->size(); ++d) {
      const ir::Dim& dim = (*shape)[d];
      if (!dim.is_symbol()) continue;
      const int64_t v = feeds[i].shape()[d];
      auto it = std::find_if(seen.begin(), seen.end(), [&](const Seen& s) { return s.symbol == dim.symbol; });
      if (it == seen.end()) {
        seen.push_back({dim.symbol, i, v});
      } else if (it->value != v) {
        return fmt::format("inputs '{}' and '{}' give symbolic dim '{}' the values {} and {}",
                           g.inputs()[it->input]->name(), g.inputs()[i]->name(), dim.symbol, it->value, v);
      }
    }
  }
  return {};
}

}  // namespace

std::vector<Tensor> Session::Impl::build_plan_and_run(const runtime::Signature& sig,
                                                      const std::vector<Tensor>& feeds) {
  const bool pinned = options.mode == ExecutionMode::kPinnedTier;
  runtime::Recording rec;
  // Verification and tier-3 selection run the new code on this call's region inputs: keep them.
  const bool keep_all = pinned && (options.verify || options.pinned_tier == 3);
  Status st = runtime::record_call(layout, feeds, keep_all, rec);
  if (!st.ok()) {
    // Memory limits depend on the signature: name it (the session goes on serving others).
    if (st.code() == StatusCode::kResourceExhausted) st = st.with_prefix("signature " + sig.to_string());
    st.with_prefix(model.path).throw_if_error();
  }
  // The plan's own live intermediates (its arena, compiled workspaces included) within
  // arena_limit_bytes, at whatever tier its steps run.
  auto check_arena = [&](const runtime::Plan& p) {
    if (options.arena_limit_bytes > 0 && p.peak_live_bytes() > options.arena_limit_bytes)
      throw Error(StatusCode::kResourceExhausted,
                  fmt::format("{}: signature {}: live intermediates need {} bytes (arena {} bytes), "
                              "over the arena limit of {} bytes (arena_limit_bytes)",
                              model.path, sig.to_string(), p.peak_live_bytes(), p.arena_bytes(),
                              options.arena_limit_bytes));
  };
  if (const std::string conflict = shared_dim_conflict(*model.graph, feeds); !conflict.empty()) {
    // The graph's inferred shapes (and every compiled version's loops) assume one value per
    // symbol: such a call would read past its inputs there. Tier 0 works from the real shapes
    // (broadcasting them as ONNX Runtime does), so this signature stays on it.
    auto plan = plans->insert(runtime::Plan::make(
        layout, sig, rec, std::vector<std::shared_ptr<const runtime::CompiledRegion>>(partition.regions.size())));
    if (plan->mark_interpret_only()) {
      runtime::DecisionRecord r;
      r.kind = runtime::DecisionKind::kDeclined;
      r.message = "signature " + sig.to_string() + ": " + conflict + "; this signature runs at tier 0";
      log.record(std::move(r));
    }
    return std::move(rec.outputs);
  }
  std::vector<std::shared_ptr<const runtime::CompiledRegion>> versions(partition.regions.size());
  if (pinned)
    for (const passes::Region& r : partition.regions) versions[static_cast<size_t>(r.id)] = pinned_version(r, rec);
  std::shared_ptr<runtime::Plan> made = runtime::Plan::make(layout, sig, rec, std::move(versions));
  check_arena(*made);
  if (adaptive_on) {
    const uint64_t epoch = code_epoch.load(std::memory_order_acquire);
    if (options.verify) {  // the plan's own copy: a caller may reuse or free its feeds (borrowed ones too)
      std::vector<Tensor> own;
      own.reserve(feeds.size());
      for (const Tensor& f : feeds) own.push_back(f.clone());
      made->set_sample_feeds(std::move(own));
    }
    auto resolved = resolve_versions(*made);
    if (std::any_of(resolved.begin(), resolved.end(), [](const auto& c) { return c != nullptr; }))
      made = runtime::Plan::remake(*made, std::move(resolved));
    check_arena(*made);
    made->set_epoch(epoch);
  }
  auto plan = plans->insert(std::move(made));
  if (adaptive_on) return std::move(rec.outputs);  // the recording's tier-0 result
  if (plan->compiled_steps() == 0) return std::move(rec.outputs);
  // Pinned tier: this call's result comes from the compiled code too, so a single call (e.g. an
  // ONNX backend test) exercises it. A data-dependent shape cannot show here (same feeds).
  bool shape_changed = false;
  auto result = plan->run(feeds, &shape_changed);
  if (!result.ok()) result.status().with_prefix(model.path).throw_if_error();
  if (shape_changed) {
    plan->mark_interpret_only();
    return std::move(rec.outputs);
  }
  if (region_counters) count_call(*plan, nullptr);  // this call ran the compiled code
  return std::move(result.value());
}

}  // namespace tierjit
