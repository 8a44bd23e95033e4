// Adaptive mode of Session::Impl (session_impl.h; docs/runtime.md "The call path"): each call of
// a plan times its steps while some region is still below the top tier; each region's Profile
// records the call and the TierPolicy decides on promotion; a promotion is a CompileQueue job
// (background, or inline with synchronous_compilation) that lowers + compiles the region's new
// versions and installs them in its VersionTable. Each install bumps the code epoch; a plan whose
// epoch is older re-resolves its versions on its next call (one comparison per call otherwise).
// The policy per region (docs/runtime.md "The adaptive policy"): declined promotions are weighed
// again with geometric backoff as N_expected grows (Lindy); demotion on guard failures and of cold
// versions; exact versions for newly hot shapes at the top tier, bounded by the version cap
// (megamorphic: logged) and a compile budget of version_cap + 1 per region. The payoff of each
// install and the never-slower rule: session_payoff.cc.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/session_impl.h"
#include "support/cpu_load.h"
#include "support/hash.h"

namespace tierjit {

int Session::Impl::installed_tier(const runtime::VersionTable& table) {
  int t = 0;
  for (const auto& v : table.versions()) t = std::max(t, v->tier);
  return t;
}

bool Session::Impl::any_specialized(const runtime::VersionTable& table) {
  for (const auto& v : table.versions())
    if (v->level() != runtime::SpecLevel::kGeneric) return true;
  return false;
}

Session::Impl::AdaptiveRegion::AdaptiveRegion(const passes::Region& r,
                                              const runtime::VersionTableOptions& vt,
                                              runtime::DecisionLog* log, runtime::Metrics* metrics)
    : table(r.id, r.name, vt, log, metrics) {
  info.id = r.id;
  info.name = r.name;
  info.kind = r.kind;
  info.conv_anchor = r.anchor && r.anchor->op() == ir::OpKind::Conv;
  if (info.conv_anchor)
    info.conv_class = r.pool ? runtime::SpeedupClass::kConvPool : runtime::conv_speedup_class(*r.anchor);
  info.size = static_cast<double>(r.nodes.size());
  // The signature's flat dims are the region inputs' dims in order.
  for (const std::vector<bool>& m : kir::constant_dims_required(r).inputs)
    for (bool b : m) pinned_dims.push_back(b ? 1 : 0);
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
  po.benefit_horizon_windows = options.benefit_horizon_windows;  // checked >= 0 by Session
  po.lindy_horizon = options.lindy_horizon;
  po.epsilon = options.demotion_epsilon;
  po.cold_calls = options.demotion_cold_calls;
  runtime::CompileQueueOptions qo;
  qo.threads = options.compile_threads;
  qo.synchronous = options.synchronous_compilation;
  // Compile threads beyond the cores the intra-op team leaves free slow the serving path down
  // for as long as they run (on 2 cores, mlp's long trace took 460-490 ms with its one
  // background compile of 60-90 ms, 413-421 ms with none).
  const int cores = support::usable_cores();
  const int compile_threads = qo.synchronous ? 0
                              : qo.threads > 0 ? qo.threads
                                               : std::max(1, cores / 5);
  const int team = std::max(1, exec.intra_op_threads);
  const int displaced = std::clamp(team + compile_threads - cores, 0, team);
  po.compile_cost_factor = 1.0 + static_cast<double>(displaced) / team;
  // A slower version serves at least this many calls (its trial's quiet samples) before it goes.
  po.trial_calls = static_cast<double>(runtime::PayoffTrialOptions().min_samples);
  policy = std::make_unique<runtime::TierPolicy>(po);
  for (const SessionOptions::SpeedupSeed& seed : options.speedup_seeds)  // checked by Session
    policy->speedups().set_seed(*runtime::speedup_class_named(seed.kind), seed.from_tier, seed.speedup);
  runtime::VersionTableOptions vt;
  vt.cap = po.version_cap;
  adaptive.resize(partition.regions.size());
  for (const passes::Region& r : partition.regions) {
    if (!may_compile(r)) continue;
    adaptive[static_cast<size_t>(r.id)] = std::make_unique<AdaptiveRegion>(r, vt, &log, &metrics);
    watching.fetch_add(1, std::memory_order_relaxed);
  }
  queue = std::make_unique<runtime::CompileQueue>(qo, &metrics);
  adaptive_on = true;
}

// True when the plan step's signature describes every input of its region. plan.cc signs the
// steps of the kinds it lists (elementwise, reduction, matmul_epilogue); a step without one
// (a recurrent region's, until plan.cc lists it) is neither profiled nor dispatched adaptively:
// every shape would look alike, and an exact version found by an empty signature would serve
// any shape.
bool Session::Impl::signed_step(const runtime::PlanStep& st) const {
  return st.region_sig.num_inputs() == partition.regions[static_cast<size_t>(st.region)].inputs.size();
}

std::vector<std::shared_ptr<const runtime::CompiledRegion>> Session::Impl::resolve_versions(
    const runtime::Plan& plan) {
  std::vector<std::shared_ptr<const runtime::CompiledRegion>> v(plan.steps().size());
  for (size_t s = 0; s < plan.steps().size(); ++s) {
    const runtime::PlanStep& st = plan.steps()[s];
    AdaptiveRegion* a = adaptive[static_cast<size_t>(st.region)].get();
    if (!a || a->table.size() == 0 || !signed_step(st)) continue;
    std::shared_ptr<const runtime::Version> version = a->table.peek(st.region_sig);
    if (!version) continue;
    if (auto* e = dynamic_cast<const runtime::CompiledEntry*>(version->entry.get()))
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
                               const double* step_us, bool quiet) {
  const auto& steps = plan->steps();
  for (size_t s = 0; s < steps.size(); ++s) {
    const runtime::PlanStep& st = steps[s];
    AdaptiveRegion* a = adaptive[static_cast<size_t>(st.region)].get();
    if (!a || !signed_step(st)) continue;
    // Dispatch accounting: which version serves this call (its last use, for cold demotion), and
    // deoptimization (counted and logged by the table). A guard failure for the demotion window
    // is a deoptimization on a dim that was static when the specialized versions were chosen.
    bool exact_served = false, failed = false;
    int failed_dim = -1;
    if (a->has_specialized.load(std::memory_order_acquire)) {
      runtime::LookupResult r = a->table.lookup(st.region_sig);
      if (r.version) {
        r.version->last_used.store(a->profile.calls() + 1, std::memory_order_relaxed);
        exact_served = r.version->level() == runtime::SpecLevel::kExact;
      }
      if (r.deopt_from) {
        const int d = r.deopt_from->guard.failing_flat_dim(st.region_sig);
        if (d >= 0 && d < 64 && ((a->static_mask.load(std::memory_order_relaxed) >> d) & 1)) {
          failed = true;
          failed_dim = d;
        }
      }
    }
    const uint64_t calls = a->profile.record_model_call(st.region_sig, st.region_key, step_us[s],
                                                        st.tier, st.bytes, st.flops, failed,
                                                        failed_dim, quiet);
    observe_payoff(*a, st.region_key, st.tier, step_us[s], quiet);
    // The policy weighs this shape's smoothed time, not one call's: under load a single batch-1
    // GEMM call must have taken 127+ us (typically ~100) and bought an exact version that cannot pay.
    const double est = st.shape_us.v.load(std::memory_order_relaxed);
    const double shape_us =
        est > 0 ? est + kShapeTimeAlpha * (std::min(step_us[s], 2 * est) - est) : step_us[s];
    st.shape_us.v.store(shape_us, std::memory_order_relaxed);
    if (a->in_flight.load(std::memory_order_acquire)) continue;
    policy_step(plan, s, shape_us, exact_served, calls);
  }
}

void Session::Impl::policy_step(const std::shared_ptr<const runtime::Plan>& plan, size_t s,
                                double step_us, bool exact_served, uint64_t calls) {
  const runtime::PlanStep& st = plan->steps()[s];
  AdaptiveRegion& a = *adaptive[static_cast<size_t>(st.region)];
  // Compiled code of this region proved slower than a lower tier: it stays there (no further
  // promotion, no exact versions) until its retry is due (TierPolicy::retry_after_eviction).
  if (a.ceiling.load(std::memory_order_acquire) < adaptive_max_tier) {
    const uint64_t retry = a.retry_at.load(std::memory_order_acquire);
    if (retry == 0 || calls < retry) return;
    std::unique_lock<std::mutex> lock(a.policy_mu, std::try_to_lock);
    if (!lock.owns_lock() || a.retry_at.load(std::memory_order_acquire) != retry) return;
    // The region's state first, the ceiling last: a call that sees it lifted sees the tier
    // that runs now.
    a.declined_tier.store(-1);
    a.tier.store(installed_tier(a.table), std::memory_order_release);
    a.retrying.store(true, std::memory_order_release);  // the next decision's record says so
    a.next_consider.store(calls, std::memory_order_relaxed);
    a.retry_at.store(0, std::memory_order_release);
    a.ceiling.store(std::numeric_limits<int>::max(), std::memory_order_release);
    return;
  }
  // The last install's payoff is not in yet: the next tier is weighed on its measured time, not
  // on a promise (a promotion here compiled tier 2 while tier 1 turned out slower than tier 0).
  if (a.has_pending.load(std::memory_order_acquire)) return;
  const bool top = a.tier.load(std::memory_order_acquire) >= adaptive_max_tier;
  // A shape without an exact version at the top tier is weighed only when it is hot (cheap check
  // first, without the region's lock).
  const bool want_specialize = top && !exact_served &&
                               calls >= a.next_specialize.load(std::memory_order_relaxed) &&
                               a.profile.recent_share(st.region_key) > options.theta_spec;
  if (!want_specialize && calls < a.next_consider.load(std::memory_order_relaxed)) return;
  std::unique_lock<std::mutex> lock(a.policy_mu, std::try_to_lock);
  if (!lock.owns_lock()) return;  // another thread is deciding for this region
  if (a.in_flight.load(std::memory_order_acquire)) return;  // it queued a compile meanwhile
  if (want_specialize) specialize(a, plan, s, step_us);
  if (calls < a.next_consider.load(std::memory_order_relaxed)) return;
  if (demote(a)) {
    a.next_consider.store(calls + 1, std::memory_order_relaxed);
    return;
  }
  const int cur = a.tier.load(std::memory_order_acquire);
  if (cur >= adaptive_max_tier) {
    a.next_consider.store(calls + kTopTierCheckCalls, std::memory_order_relaxed);
    return;
  }
  runtime::PromotionDecision d = policy->consider_promotion(a.info, a.profile, cur);
  if (!d.record) {  // below the threshold: weigh it when the count gets there
    a.next_consider.store(std::max<uint64_t>(calls + 1, static_cast<uint64_t>(std::ceil(d.threshold))),
                          std::memory_order_relaxed);
    return;
  }
  if (!d.promote) {
    // Declined: weighed again with geometric backoff; N_expected grows with the session's age.
    const uint64_t next = policy->next_consideration(calls);
    a.next_consider.store(next, std::memory_order_relaxed);
    runtime::Metrics::bump(metrics.declined);
    if (a.declined_tier.exchange(cur) == cur)
      d.record->message = fmt::format("reconsidered: {}; next at call {}", d.record->message, next);
    else
      d.record->message = fmt::format("{}; weighed again at call {}", d.record->message, next);
    log_decision(a, std::move(*d.record), calls);
    return;
  }
  if (d.to_tier >= 2 && !(generic_speedup_over_tier0(a.info.speedup_class(), d.to_tier) > 1) &&
      a.profile.dims().any_dynamic()) {
    // Generic code is predicted slower than tier 0, so the promotion would compile only an exact
    // version for this call's shape (compile_promoted): its benefit is this shape's share of the
    // calls at this call's time, not the region's mean over all shapes. (mlp's long trace: the
    // region mean, 22.8 us, promised 29 ms for a batch-1 GEMM that saves ~1.3 us per call.)
    const double share = a.profile.recent_share(st.region_sig);
    const double speedup =
        policy->speedups().speedup_between(a.info.speedup_class(), cur, d.to_tier);
    const double benefit = share * d.n_expected * (step_us - step_us / speedup) - d.compile_us;
    if (!(benefit > 0)) {
      const uint64_t next = policy->next_consideration(calls);
      a.next_consider.store(next, std::memory_order_relaxed);
      runtime::Metrics::bump(metrics.declined);
      a.declined_tier.store(cur);
      d.record->kind = runtime::DecisionKind::kDeclined;
      d.record->message = fmt::format(
          "cannot pay for this shape alone (generic code predicted {:.3g}x tier 0): shape {} has "
          "{:.0f}% of recent calls; benefit N_expected {:.3g} x {:.2f} x (t {:.3g} us - t_exact "
          "{:.3g} us [speedup {:.3g}]) - C_{} {:.4g} us = {:.4g} us <= 0; weighed again at call {}",
          generic_speedup_over_tier0(a.info.speedup_class(), d.to_tier), st.region_sig.to_string(),
          100 * share, d.n_expected, share, step_us, step_us / speedup, speedup, d.to_tier,
          d.compile_us, benefit, next);
      log_decision(a, std::move(*d.record), calls);
      return;
    }
  }
  if (!budget_left(a, 1)) {
    a.next_consider.store(policy->next_consideration(calls), std::memory_order_relaxed);
    return;
  }
  runtime::Metrics::bump(metrics.promotions);
  log_decision(a, std::move(*d.record), calls);
  a.declined_tier.store(-1);
  submit_compile(a, plan, s, d.to_tier, d.density, /*exact_only=*/false);
}

void Session::Impl::log_decision(AdaptiveRegion& a, runtime::DecisionRecord r, uint64_t calls) {
  if (a.retrying.exchange(false))
    r.message = fmt::format("retry after eviction {} (at call {}): {}",
                            a.evictions.load(std::memory_order_relaxed), calls, r.message);
  log.record(std::move(r));
}

bool Session::Impl::budget_left(AdaptiveRegion& a, size_t planned) {
  const uint64_t budget = static_cast<uint64_t>(policy->options().version_cap) + 1 +
                          a.profile.calls() / kBudgetRefillCalls;
  const uint64_t used = static_cast<uint64_t>(a.compiles.load(std::memory_order_relaxed));
  if (used + planned <= budget) return true;
  if (!a.budget_logged.exchange(true)) {
    runtime::DecisionRecord r;
    r.region = a.info.id;
    r.region_name = a.info.name;
    r.kind = runtime::DecisionKind::kDeclined;
    r.tier = a.tier.load();
    r.message = fmt::format(
        "compile budget spent: {} versions compiled for this region, at most version_cap + 1 = {} "
        "(+1 per {} calls): no compile storms; calls run the installed versions",
        used, policy->options().version_cap + 1, kBudgetRefillCalls);
    log.record(std::move(r));
  }
  return false;
}

void Session::Impl::submit_compile(AdaptiveRegion& a, const std::shared_ptr<const runtime::Plan>& plan,
                                   size_t s, int to_tier, double density, bool exact_only) {
  if (a.in_flight.exchange(true)) return;  // another call promoted it meanwhile
  const runtime::PlanStep& st = plan->steps()[s];
  support::Hasher h;
  h.add_u64(static_cast<uint64_t>(st.region)).add_u64(static_cast<uint64_t>(to_tier));
  h.add_u64(exact_only ? st.region_sig.exact_key() : 0);
  AdaptiveRegion* ap = &a;
  auto sub = queue->submit(
      h.digest(), density,
      [this, plan, s, to_tier, exact_only]() {
        compile_promoted(plan, s, to_tier, exact_only);
        return Status();
      },
      [ap](runtime::JobOutcome, const Status&) { ap->in_flight.store(false); },
      fmt::format("{} tier {}{}", a.info.name, to_tier,
                  exact_only ? " exact " + st.region_sig.to_string() : std::string()));
  if (!sub.ticket) a.in_flight.store(false);  // queue shutting down
}

double Session::Impl::speedup_over_tier0(runtime::SpeedupClass cls, int tier) const {
  double s = 1;  // the product of the predicted steps 0 -> 1 -> ... -> tier
  for (int t = 0; t < tier; ++t) s *= policy->speedups().speedup(cls, t);
  return s;
}

double Session::Impl::generic_speedup_over_tier0(runtime::SpeedupClass cls, int tier) const {
  return speedup_over_tier0(cls, tier) * policy->speedups().generic_factor(cls);
}

void Session::Impl::compile_promoted(const std::shared_ptr<const runtime::Plan>& plan, size_t s,
                                     int to_tier, bool exact_only) {
  const runtime::PlanStep& st = plan->steps()[s];
  const passes::Region& r = partition.regions[static_cast<size_t>(st.region)];
  AdaptiveRegion& a = *adaptive[static_cast<size_t>(st.region)];
  const runtime::DimTracker dims = a.profile.dims();
  // Tier 1: one generic version. Tier 2 (DESIGN "Which shapes get which code"): an exact version
  // when the policy gives this plan's shape one; a shape-class version when the policy names the
  // bucket this plan's shape lies in (the varying dims read at run time within their bucket, every
  // other dim a constant); a generic version for the rest when generic compiled code is predicted
  // faster than tier 0 (the tier-1 step: matmul regions fall back to tier 0's oneDNN instead).
  std::vector<kir::ShapeLevel> levels;
  size_t specialized = 0;
  for (const auto& v : a.table.versions()) specialized += v->level() != runtime::SpecLevel::kGeneric;
  const size_t cap = policy->options().version_cap;
  // The shape-class mask: the dims that vary, less those the code needs as constants (a Conv's
  // C/H/W: exact in the guard too).
  std::vector<uint8_t> class_dims(dims.dynamic_mask().begin(), dims.dynamic_mask().end());
  for (size_t d = 0; d < class_dims.size() && d < a.pinned_dims.size(); ++d)
    if (a.pinned_dims[d]) class_dims[d] = 0;
  if (exact_only) {
    levels.push_back(kir::ShapeLevel::kExact);
  } else if (to_tier >= 2) {
    const uint64_t here = runtime::Specialization::exact(st.region_sig).key();
    const uint64_t class_here = runtime::Specialization::shape_class(st.region_sig, class_dims).key();
    bool exact_here = false, bucket_here = false, other = false;
    for (const runtime::SpecRequest& req : policy->choose_specializations(dims, to_tier)) {
      if (req.spec.level == runtime::SpecLevel::kExact) {
        exact_here = exact_here || req.spec.key() == here;
      } else if (req.spec.level == runtime::SpecLevel::kShapeClass &&
                 req.spec.key_of(st.region_sig) == req.spec.key()) {
        bucket_here = true;
      } else {
        other = true;
      }
    }
    // A shape-class version that would guard nothing beyond the exact one (no dim varies
    // within it) is not compiled twice.
    bool class_distinct = false;
    for (size_t d = 0; d < class_dims.size(); ++d)
      class_distinct = class_distinct || (class_dims[d] && runtime::bucket(st.region_sig.flat_dim(d)) > 1);
    for (const auto& v : a.table.versions()) class_distinct = class_distinct && v->key != class_here;
    const bool bucket = bucket_here && class_distinct;
    const bool generic_pays = generic_speedup_over_tier0(a.info.speedup_class(), to_tier) > 1;
    const bool generic = (other || !(exact_here || bucket)) && generic_pays;
    size_t used = specialized + (generic ? 1 : 0);
    if (exact_here && used + 1 <= cap) {
      levels.push_back(kir::ShapeLevel::kExact);
      ++used;
    }
    if (bucket && used + 1 <= cap) levels.push_back(kir::ShapeLevel::kShapeClass);
    if (generic) levels.push_back(kir::ShapeLevel::kGeneric);
  } else {
    levels.push_back(kir::ShapeLevel::kGeneric);
  }
  // The compile budget (version_cap + 1 per region): the generic level goes first when short.
  while (!levels.empty() && !budget_left(a, levels.size())) levels.erase(levels.begin());
  a.compiles.fetch_add(static_cast<int>(levels.size()), std::memory_order_relaxed);
  // The dims static now: a later call leaving the new versions on one of them is a guard failure.
  uint64_t mask = 0;
  for (size_t d = 0; d < dims.num_dims() && d < 64; ++d)
    if (!dims.is_dynamic(d)) mask |= uint64_t{1} << d;
  a.static_mask.store(mask, std::memory_order_relaxed);
  runtime::Recording rec;
  if (!levels.empty() && options.verify && !plan->sample_feeds().empty()) {
    // Verification needs the region's tier-0 inputs and outputs: rerun the plan's first call.
    Status st2 = runtime::record_call(layout, plan->sample_feeds(), /*keep_all=*/true, rec);
    if (!st2.ok()) rec = runtime::Recording();
  }
  if (rec.shapes.empty()) {
    rec.shapes = plan->shapes();
    rec.dtypes = plan->dtypes();
    // The values the plan binds (value specialization of exact versions).
    rec.bound.assign(plan->steps().size(), {});
    for (size_t i = 0; i < plan->steps().size(); ++i) rec.bound[i] = plan->steps()[i].bound;
  }
  double compile_us = 0;
  int installed = 0;
  std::vector<uint64_t> keys;
  std::vector<std::shared_ptr<const runtime::Version>> replaced;
  for (kir::ShapeLevel level : levels) {
    auto c = compile_version(r, rec, to_tier, level, class_dims);
    if (!c) continue;
    compile_us += static_cast<double>(c->kernel.compile_us + c->lower_us);
    runtime::Specialization spec =
        level == kir::ShapeLevel::kExact        ? runtime::Specialization::exact(st.region_sig)
        : level == kir::ShapeLevel::kShapeClass ? runtime::Specialization::shape_class(st.region_sig, class_dims)
                                                : runtime::Specialization::generic(st.region_sig, a.pinned_dims);
    const int64_t us = c->kernel.compile_us + c->lower_us;
    const uint64_t key = spec.key();
    auto version = runtime::Version::make(to_tier, std::move(spec),
                                          std::make_shared<runtime::CompiledEntry>(std::move(c)), us);
    // A lower tier proved faster while this compile ran (observe_payoff lowered the ceiling):
    // its code is not installed.
    if (to_tier > a.ceiling.load(std::memory_order_acquire)) continue;
    // Installed now: its idle time counts from here, not from when the compile started (a
    // 100 ms compile spans hundreds of calls, which made fresh versions look cold at once).
    version->last_used.store(a.profile.calls(), std::memory_order_relaxed);
    for (const auto& v : a.table.versions())
      if (v->key == key && v->tier < to_tier) replaced.push_back(v);
    const runtime::InstallResult ir = a.table.install(std::move(version));
    if (ir == runtime::InstallResult::kMegamorphic || ir == runtime::InstallResult::kKeptHigherTier) continue;
    ++installed;
    keys.push_back(key);
  }
  if (levels.empty() && !exact_only) {
    runtime::DecisionRecord d;
    d.region = a.info.id;
    d.region_name = a.info.name;
    d.kind = runtime::DecisionKind::kDeclined;
    d.tier = to_tier;
    d.message = fmt::format(
        "tier {}: no version worth compiling for {} (generic code predicted {:.3g}x tier 0; no "
        "exact slot or share); exact versions follow when a shape gets hot",
        to_tier, st.region_sig.to_string(),
        generic_speedup_over_tier0(a.info.speedup_class(), to_tier));
    log.record(std::move(d));
  }
  const int from_tier = a.tier.load(std::memory_order_acquire);
  if (installed > 0 && !exact_only) {
    std::lock_guard<std::mutex> lock(a.pending_mu);
    AdaptiveRegion::Pending p;
    p.pending = true;
    p.from_tier = from_tier;
    p.to_tier = to_tier;
    p.t_before_us = a.profile.mean_time_us(from_tier);
    p.compile_us = compile_us;
    p.calls_at_install = a.profile.calls_at_tier(to_tier);
    p.keys = std::move(keys);
    p.replaced = std::move(replaced);
    p.region_calls_at_install = a.profile.calls();
    a.pending = std::move(p);
    a.has_pending.store(true, std::memory_order_release);
  }
  if (!exact_only && to_tier <= a.ceiling.load(std::memory_order_acquire))
    a.tier.store(to_tier, std::memory_order_release);
  a.has_specialized.store(any_specialized(a.table), std::memory_order_release);
  code_epoch.fetch_add(1, std::memory_order_acq_rel);
}

bool Session::Impl::demote(AdaptiveRegion& a) {
  if (a.tier.load(std::memory_order_acquire) == 0) return false;
  bool changed = false;
  auto record = [&](std::string message, runtime::SpecLevel level, int tier) {
    runtime::DecisionRecord d;
    d.region = a.info.id;
    d.region_name = a.info.name;
    d.kind = runtime::DecisionKind::kDemoted;
    d.from_tier = tier;
    d.tier = tier;
    d.level = level;
    d.message = std::move(message);
    runtime::Metrics::bump(metrics.demotions);
    log.record(std::move(d));
    changed = true;
  };
  // DESIGN "Demotion": guard-failure rate over the last 64 calls > ε.
  if (auto dem = policy->consider_demotion(a.info, a.profile)) {
    const size_t removed = a.table.remove_level(runtime::SpecLevel::kExact, "demoted (guard failures)");
    uint64_t mask = a.static_mask.load(std::memory_order_relaxed);
    for (int d : dem->dims_to_mark_dynamic) {
      a.profile.mark_dynamic(static_cast<size_t>(d));
      if (d < 64) mask &= ~(uint64_t{1} << d);
    }
    a.static_mask.store(mask, std::memory_order_relaxed);
    a.profile.clear_guard_failures();
    record(fmt::format("{}; {} exact version(s) freed", dem->record.message, removed),
           runtime::SpecLevel::kExact, a.tier.load());
  }
  // Cold versions: specialized code no call of the region ran for cold_calls calls.
  const double cold = policy->options().cold_calls;
  if (cold > 0) {
    const uint64_t calls = a.profile.calls();
    for (const auto& v : a.table.versions()) {
      if (v->level() == runtime::SpecLevel::kGeneric) continue;
      const uint64_t last = v->last_used.load(std::memory_order_relaxed);
      if (static_cast<double>(calls - std::min(calls, last)) < cold) continue;
      if (!a.table.remove(v->key)) continue;
      record(fmt::format("tier {} {} not run by the last {:.0f} calls of the region (last at call {} "
                         "of {}): demoted, its code freed",
                         v->tier, v->spec.to_string(), cold, last, calls),
             v->level(), v->tier);
    }
  }
  if (!changed) return false;
  // The region falls back to the tier of what remains; the policy weighs promotion again.
  a.has_specialized.store(any_specialized(a.table), std::memory_order_release);
  const int remaining = installed_tier(a.table);
  if (remaining < a.tier.load()) {
    a.tier.store(remaining, std::memory_order_release);
    a.declined_tier.store(-1);
  }
  code_epoch.fetch_add(1, std::memory_order_acq_rel);
  return true;
}

void Session::Impl::specialize(AdaptiveRegion& a, const std::shared_ptr<const runtime::Plan>& plan,
                               size_t s, double step_us) {
  const runtime::PlanStep& st = plan->steps()[s];
  const uint64_t calls = a.profile.calls();
  const double share = a.profile.recent_share(st.region_sig);
  if (!(share > options.theta_spec)) return;  // not hot: nothing to decide
  a.next_specialize.store(calls + kTopTierCheckCalls, std::memory_order_relaxed);
  const runtime::DimTracker dims = a.profile.dims();
  if (!dims.any_dynamic()) return;  // all static: the promotion compiled the exact version
  const int tier = a.tier.load(std::memory_order_acquire);
  const std::string shape = st.region_sig.to_string();
  auto record = [&](runtime::DecisionKind kind, std::string message) {
    runtime::DecisionRecord d;
    d.region = a.info.id;
    d.region_name = a.info.name;
    d.kind = kind;
    d.from_tier = tier;
    d.tier = tier;
    d.level = runtime::SpecLevel::kExact;
    d.message = std::move(message);
    log.record(std::move(d));
  };
  const std::string hot = fmt::format("shape {} has {:.0f}% of the last {} calls (> θ_spec {:.0f}%)",
                                      shape, 100 * share, dims.window_calls(), 100 * options.theta_spec);
  if (a.table.size() >= a.table.cap()) {
    // Megamorphic: counted and logged once (VersionTable); the shape runs the generic version.
    a.table.mark_megamorphic(tier, hot + fmt::format(" and gets no exact version: {} versions installed; "
                                                     "it runs the generic version (or tier 0)",
                                                     a.table.size()));
    a.next_specialize.store(calls + 4 * kTopTierCheckCalls, std::memory_order_relaxed);
    return;
  }
  if (!budget_left(a, 1)) return;
  // Payoff: this shape's calls at this call's speed vs exact tier-`tier` code. Exact over
  // generic code (the call ran a compiled version, which serves it generically) is
  // 1 / generic_factor; over tier 0 the tiers' product.
  const runtime::SpeedupClass cls = a.info.speedup_class();
  const double speedup = st.tier >= 1 ? 1.0 / policy->speedups().generic_factor(cls)
                                      : policy->speedups().speedup_between(cls, 0, tier);
  const double n = share * policy->expected_calls(a.profile);
  const double c =
      policy->costs().predict(tier, a.info.size) * policy->options().compile_cost_factor;
  const double benefit = n * (step_us - step_us / speedup) - c;
  const std::string arithmetic = fmt::format(
      "{}; benefit N_expected {:.3g} x {:.2f} x (t {:.3g} us - t_exact {:.3g} us [speedup {:.3g}]) - "
      "C_{} {:.4g} us = {:.4g} us",
      hot, policy->expected_calls(a.profile), share, step_us, step_us / speedup, speedup, tier, c, benefit);
  if (!(benefit > 0)) {
    const uint64_t next = policy->next_consideration(calls);
    a.next_specialize.store(next, std::memory_order_relaxed);
    runtime::Metrics::bump(metrics.declined);
    record(runtime::DecisionKind::kDeclined,
           fmt::format("exact version: cannot pay: {} <= 0; weighed again at call {}", arithmetic, next));
    return;
  }
  runtime::Metrics::bump(metrics.promotions);
  record(runtime::DecisionKind::kPromoted, "exact version for a newly hot shape: " + arithmetic + " > 0");
  submit_compile(a, plan, s, tier, benefit / std::max(c, 1.0), /*exact_only=*/true);
}

bool Session::wait_for_compiles(int64_t timeout_ms) const {
  if (!impl_ || !impl_->queue) return true;
  return impl_->queue->drain_for(timeout_ms);
}

}  // namespace tierjit
