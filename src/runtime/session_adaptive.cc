// Adaptive mode of Session::Impl (session_impl.h; docs/runtime.md "The call path"): each call of
// a plan times its steps while some region is still below the top tier; each region's Profile
// records the call and the TierPolicy decides on promotion; a promotion is a CompileQueue job
// (background, or inline with synchronous_compilation) that lowers + compiles the region's new
// versions and installs them in its VersionTable. Each install bumps the code epoch; a plan whose
// epoch is older re-resolves its versions on its next call (one comparison per call otherwise).
#include <fmt/format.h>

#include "runtime/session_impl.h"
#include "support/hash.h"

namespace tierjit {

Session::Impl::AdaptiveRegion::AdaptiveRegion(const passes::Region& r,
                                              const runtime::VersionTableOptions& vt,
                                              runtime::DecisionLog* log, runtime::Metrics* metrics)
    : table(r.id, r.name, vt, log, metrics) {
  info.id = r.id;
  info.name = r.name;
  info.kind = r.kind;
  info.size = static_cast<double>(r.nodes.size());
}

Session::Impl::~Impl() { queue.reset(); }  // before the tables and profiles its jobs touch

void Session::Impl::init_adaptive() {
  if (!use_plans || options.mode != ExecutionMode::kAdaptive) return;
  runtime::TierPolicyOptions po;
  po.theta0 = options.theta0;
  po.gamma = options.gamma;
  po.theta_min = options.theta0;
  po.theta_spec = options.theta_spec;
  po.theta_class = options.theta_spec;
  po.version_cap = static_cast<size_t>(std::max(1, options.version_cap));
  po.max_tier = adaptive_max_tier;
  policy = std::make_unique<runtime::TierPolicy>(po);
  runtime::VersionTableOptions vt;
  vt.cap = po.version_cap;
  adaptive.resize(partition.regions.size());
  for (const passes::Region& r : partition.regions) {
    if (!may_compile(r)) continue;
    adaptive[static_cast<size_t>(r.id)] = std::make_unique<AdaptiveRegion>(r, vt, &log, &metrics);
    watching.fetch_add(1, std::memory_order_relaxed);
  }
  runtime::CompileQueueOptions qo;
  qo.threads = options.compile_threads;
  qo.synchronous = options.synchronous_compilation;
  queue = std::make_unique<runtime::CompileQueue>(qo, &metrics);
  adaptive_on = true;
}

std::vector<std::shared_ptr<const runtime::CompiledRegion>> Session::Impl::resolve_versions(
    const runtime::Plan& plan) {
  std::vector<std::shared_ptr<const runtime::CompiledRegion>> v(plan.steps().size());
  for (size_t s = 0; s < plan.steps().size(); ++s) {
    const runtime::PlanStep& st = plan.steps()[s];
    AdaptiveRegion* a = adaptive[static_cast<size_t>(st.region)].get();
    if (!a || a->table.size() == 0) continue;
    runtime::LookupResult r = a->table.lookup(st.region_sig);
    if (!r.version) continue;
    if (auto* e = dynamic_cast<const runtime::CompiledEntry*>(r.version->entry.get()))
      v[s] = e->compiled();
  }
  return v;
}

std::shared_ptr<const runtime::Plan> Session::Impl::refresh_plan(
    const std::shared_ptr<const runtime::Plan>& plan) {
  const uint64_t epoch = code_epoch.load(std::memory_order_acquire);
  auto p = runtime::Plan::remake(*plan, resolve_versions(*plan));
  p->set_epoch(epoch);
  plans->replace(p);
  return p;
}

void Session::Impl::after_call(const std::shared_ptr<const runtime::Plan>& plan,
                               const double* step_us) {
  const auto& steps = plan->steps();
  for (size_t s = 0; s < steps.size(); ++s) {
    const runtime::PlanStep& st = steps[s];
    AdaptiveRegion* a = adaptive[static_cast<size_t>(st.region)].get();
    if (!a) continue;
    const int cur = a->tier.load(std::memory_order_acquire);
    if (cur >= adaptive_max_tier && !a->has_pending.load(std::memory_order_acquire)) continue;
    a->profile.record_call(st.region_sig, step_us[s], st.tier, st.bytes, st.flops);
    a->profile.on_model_call();
    observe_payoff(*a);
    if (cur >= adaptive_max_tier) continue;
    if (a->in_flight.load(std::memory_order_acquire)) continue;
    if (a->profile.calls() < a->next_consider.load(std::memory_order_relaxed)) continue;
    runtime::PromotionDecision d = policy->consider_promotion(a->info, a->profile, cur);
    if (!d.record) continue;
    if (!d.promote) {
      a->next_consider.store(a->profile.calls() + 64, std::memory_order_relaxed);
      runtime::Metrics::bump(metrics.declined);
      if (a->declined_tier.exchange(cur) != cur) log.record(*d.record);  // once per tier
      continue;
    }
    if (a->in_flight.exchange(true)) continue;  // another call promoted it meanwhile
    runtime::Metrics::bump(metrics.promotions);
    log.record(*d.record);
    const int to_tier = d.to_tier;
    support::Hasher h;
    h.add_u64(static_cast<uint64_t>(st.region)).add_u64(static_cast<uint64_t>(to_tier));
    auto sub = queue->submit(
        h.digest(), d.density,
        [this, plan, s, to_tier]() {
          compile_promoted(plan, s, to_tier);
          return Status();
        },
        [a](runtime::JobOutcome, const Status&) { a->in_flight.store(false); },
        fmt::format("{} tier {}", a->info.name, to_tier));
    if (!sub.ticket) a->in_flight.store(false);  // queue shutting down
  }
}

void Session::Impl::compile_promoted(const std::shared_ptr<const runtime::Plan>& plan, size_t s,
                                     int to_tier) {
  const runtime::PlanStep& st = plan->steps()[s];
  const passes::Region& r = partition.regions[static_cast<size_t>(st.region)];
  AdaptiveRegion& a = *adaptive[static_cast<size_t>(st.region)];
  // Tier 1: one generic version. Tier 2 (DESIGN "Which shapes get which code"): an exact version
  // when the policy gives this plan's shape one; the generic level serves the rest (shape-class
  // requests included, until shape-class lowering is wired here).
  std::vector<kir::ShapeLevel> levels;
  if (to_tier >= 2) {
    const uint64_t here = runtime::Specialization::exact(st.region_sig).key();
    bool exact_here = false, other = false;
    for (const runtime::SpecRequest& req : policy->choose_specializations(a.profile.dims(), to_tier)) {
      if (req.spec.level == runtime::SpecLevel::kExact) exact_here = exact_here || req.spec.key() == here;
      else other = true;
    }
    if (exact_here) levels.push_back(kir::ShapeLevel::kExact);
    if (other || levels.empty()) levels.push_back(kir::ShapeLevel::kGeneric);
  } else {
    levels.push_back(kir::ShapeLevel::kGeneric);
  }
  runtime::Recording rec;
  if (options.verify && !plan->sample_feeds().empty()) {
    // Verification needs the region's tier-0 inputs and outputs: rerun the plan's first call.
    Status st2 = runtime::record_call(layout, plan->sample_feeds(), /*keep_all=*/true, rec);
    if (!st2.ok()) rec = runtime::Recording();
  }
  if (rec.shapes.empty()) {
    rec.shapes = plan->shapes();
    rec.dtypes = plan->dtypes();
  }
  double compile_us = 0;
  int installed = 0;
  std::vector<uint64_t> keys;
  for (kir::ShapeLevel level : levels) {
    auto c = compile_version(r, rec, to_tier, level);
    if (!c) continue;
    ++installed;
    compile_us += static_cast<double>(c->kernel.compile_us + c->lower_us);
    runtime::Specialization spec = level == kir::ShapeLevel::kExact
                                       ? runtime::Specialization::exact(st.region_sig)
                                       : runtime::Specialization::generic(st.region_sig);
    const int64_t us = c->kernel.compile_us + c->lower_us;
    keys.push_back(spec.key());
    a.table.install(runtime::Version::make(to_tier, std::move(spec),
                                           std::make_shared<runtime::CompiledEntry>(std::move(c)), us));
  }
  const int from_tier = a.tier.load(std::memory_order_acquire);
  if (installed > 0) {
    std::lock_guard<std::mutex> lock(a.pending_mu);
    a.pending = {true,       from_tier, to_tier, a.profile.mean_time_us(from_tier), compile_us,
                 a.profile.calls_at_tier(to_tier), std::move(keys)};
    a.has_pending.store(true, std::memory_order_release);
  }
  a.tier.store(to_tier, std::memory_order_release);
  // At the top tier the region stops being profiled once its payoff is measured.
  if (to_tier >= adaptive_max_tier && installed == 0) watching.fetch_sub(1, std::memory_order_relaxed);
  code_epoch.fetch_add(1, std::memory_order_acq_rel);
}

void Session::Impl::observe_payoff(AdaptiveRegion& a) {
  if (!a.has_pending.load(std::memory_order_acquire)) return;
  AdaptiveRegion::Pending p;
  {
    std::lock_guard<std::mutex> lock(a.pending_mu);
    if (!a.pending.pending ||
        a.profile.calls_at_tier(a.pending.to_tier) < a.pending.calls_at_install + kObserveCalls)
      return;
    p = a.pending;
    a.pending.pending = false;
    a.has_pending.store(false, std::memory_order_release);
  }
  const double t_after = a.profile.mean_time_us(p.to_tier);
  if (p.t_before_us > 0 && t_after > 0) {
    runtime::ThresholdUpdate u = policy->observe_compile(a.info, p.from_tier, p.t_before_us, t_after,
                                                         a.profile.expected_calls(), p.compile_us);
    runtime::DecisionRecord d;
    d.region = a.info.id;
    d.region_name = a.info.name;
    d.kind = runtime::DecisionKind::kCompiled;
    d.from_tier = p.from_tier;
    d.tier = p.to_tier;
    d.compile_us = static_cast<int64_t>(p.compile_us);
    d.message = fmt::format("payoff after {} calls at tier {}: {}", kObserveCalls, p.to_tier, u.message);
    log.record(std::move(d));
    // Never slower than what ran before: compare with the best lower tier measured.
    int best_tier = -1;
    double best_us = 0;
    for (int t = 0; t < p.to_tier; ++t) {
      const double m = a.profile.mean_time_us(t);
      if (m > 0 && (best_tier < 0 || m < best_us)) best_tier = t, best_us = m;
    }
    if (best_tier >= 0 && t_after > 1.1 * best_us) {
      size_t removed = 0;
      for (uint64_t k : p.keys) removed += a.table.remove(k) ? 1 : 0;
      runtime::DecisionRecord e;
      e.region = a.info.id;
      e.region_name = a.info.name;
      e.kind = runtime::DecisionKind::kEvicted;
      e.tier = p.to_tier;
      e.message = fmt::format("tier {} code is slower than tier {} ({:.4g} vs {:.4g} us per call): "
                              "{} version(s) removed, the region runs its tier-{} code",
                              p.to_tier, best_tier, t_after, best_us, removed, best_tier);
      runtime::Metrics::bump(metrics.evictions, removed);
      log.record(std::move(e));
      code_epoch.fetch_add(1, std::memory_order_acq_rel);
    }
  }
  if (p.to_tier >= adaptive_max_tier) watching.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace tierjit
