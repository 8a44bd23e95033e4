// The payoff trial of newly installed code and the never-slower rule (docs/runtime.md, "Payoff",
// "Never slower", "Ceiling and retry"), part of Session::Impl's adaptive mode
// (session_adaptive.cc): each call of a region with a pending install feeds the trial
// (runtime/payoff_trial.h); its verdict, or the fallback, goes to TierPolicy::observe_compile,
// and code slower than the best lower tier is evicted, the region held at that tier until its
// retry (TierPolicy::retry_after_eviction).
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>

#include "runtime/session_impl.h"

namespace tierjit {

namespace {

/// µs per byte `per_byte` at the profile's mean bytes per call; `per_call` when either is unknown.
double at_mean_bytes(const runtime::Profile& prof, double per_byte, double per_call) {
  const double calls = static_cast<double>(prof.calls());
  const double mean_bytes = calls > 0 ? prof.bytes_moved() / calls : 0;
  return per_byte > 0 && mean_bytes > 0 ? per_byte * mean_bytes : per_call;
}

}  // namespace

double Session::Impl::same_work_us(const AdaptiveRegion& a, int tier, double per_call) const {
  return at_mean_bytes(a.profile, a.profile.us_per_byte(tier), per_call);
}

std::pair<int, double> Session::Impl::best_lower_tier(const AdaptiveRegion& a, int to_tier) const {
  int best_tier = -1;
  double best_us = 0;
  for (int t = 0; t < to_tier; ++t) {
    const double m = same_work_us(a, t, a.profile.mean_time_us(t));
    if (m > 0 && (best_tier < 0 || m < best_us)) best_tier = t, best_us = m;
  }
  return {best_tier, best_us};
}

void Session::Impl::observe_payoff(AdaptiveRegion& a, uint64_t key, int tier, double us,
                                   bool quiet) {
  if (!a.has_pending.load(std::memory_order_acquire)) return;
  AdaptiveRegion::Pending p;
  double t_after_call = -1, us_per_byte_after = -1;
  std::optional<runtime::PayoffTrial::Verdict> verdict;
  {
    std::lock_guard<std::mutex> lock(a.pending_mu);
    if (!a.pending.pending) return;
    // A trial sample: a call of the new code on a shape timed at least twice at the replaced
    // tier, after the shape's first call since the install (first touch of its code and data;
    // one such call measured 4 ms against 5 us).
    bool sampled = false;
    if (tier == a.pending.to_tier) {
      const bool first = a.pending.first_calls.insert(key).second;
      const runtime::Profile::ShapeTierTime before = a.profile.shape_time(key, a.pending.from_tier);
      if (before.timed >= 2 && before.mean_us > 0) {
        a.pending.sampleable = true;
        if (!first) {
          a.pending.trial.add(us / before.mean_us, before.mean_us, quiet && before.quiet);
          a.pending.last_sample_call = a.profile.calls();
          sampled = true;
        }
      }
    }
    // The fallback's mean: the new tier's calls after its first (the warm-up).
    const uint64_t n = a.profile.calls_at_tier(a.pending.to_tier);
    const double total = std::max(0.0, a.profile.mean_time_us(a.pending.to_tier)) * static_cast<double>(n);
    const double bytes = a.profile.bytes_at_tier(a.pending.to_tier);
    const uint64_t now = a.profile.calls();
    const uint64_t since = now - a.pending.region_calls_at_install;
    if (a.pending.warm_calls == 0 && n >= a.pending.calls_at_install + 1) {
      a.pending.warm_calls = n;
      a.pending.warm_time_us = total;
      a.pending.warm_bytes = bytes;
    }
    const bool measured = a.pending.warm_calls > 0 && n >= a.pending.warm_calls + kObserveCalls;
    // The trial ends with a verdict (PayoffTrial), or expires: kPayoffExpiryCalls region calls
    // without a sample (its shapes are gone), or kTrialExpiryCalls since the install. An expired
    // trial is judged on its samples when it has enough, else on the mean of the new tier's
    // calls at the same work (the fallback), else not at all. When none of the shapes the new
    // code ran was timed twice at the replaced tier (a promotion after a handful of calls), no
    // sample can come: the fallback judges as soon as it has its calls.
    const uint64_t quiet_for = now - std::max(a.pending.region_calls_at_install, a.pending.last_sample_call);
    const bool expired = quiet_for >= kPayoffExpiryCalls || since >= kTrialExpiryCalls;
    const bool fallback_now = measured && !a.pending.sampleable;
    // The verdict can change only with a new sample or at the end: no median per call otherwise.
    if (!sampled && !expired && !fallback_now) return;
    verdict = a.pending.trial.verdict(eviction_bound(a, a.pending.from_tier, a.pending.to_tier), expired);
    if (!verdict) {
      if (!expired && !fallback_now) return;
      if (!measured) {
        runtime::DecisionRecord d;
        d.region = a.info.id;
        d.region_name = a.info.name;
        d.kind = runtime::DecisionKind::kCompiled;
        d.from_tier = a.pending.from_tier;
        d.tier = a.pending.to_tier;
        d.message = fmt::format(
            "payoff not measured: tier {} ran {} of the region's {} calls since its install (its "
            "versions serve other shapes than the region gets now); the policy goes on without it",
            a.pending.to_tier, n - a.pending.calls_at_install, since);
        a.pending.pending = false;
        a.has_pending.store(false, std::memory_order_release);
        log.record(std::move(d));
        return;
      }
      t_after_call = (total - a.pending.warm_time_us) / static_cast<double>(n - a.pending.warm_calls);
      if (bytes > a.pending.warm_bytes)
        us_per_byte_after = (total - a.pending.warm_time_us) / (bytes - a.pending.warm_bytes);
    }
    p = std::move(a.pending);
    a.pending = AdaptiveRegion::Pending();
    a.has_pending.store(false, std::memory_order_release);
  }
  // Tiers compared at the same work (same_work_us). The old tier's time is its same-work time;
  // the new tier's that times the trial's verdict (the same shapes at both tiers), else the
  // fallback: the new tier's own same-work time, or scaled by the ratio over the shapes both
  // tiers ran (Profile::same_shape_times).
  const double t_before = same_work_us(a, p.from_tier, p.t_before_us);
  double t_after = at_mean_bytes(a.profile, us_per_byte_after, t_after_call);
  std::string how;
  if (verdict && t_before > 0) {
    t_after = t_before * verdict->ratio;
    how = fmt::format("time-weighted median of {} calls against their shapes at tier {}",
                      verdict->samples, p.from_tier);
  } else if (auto same = a.profile.same_shape_times(p.from_tier, p.to_tier); same && t_before > 0) {
    t_after = t_before * same->second / same->first;
    how = fmt::format("trial expired: the calls since its install against the same shapes at tier {}",
                      p.from_tier);
  } else {
    how = "trial expired: the calls since its install at the same work";
  }
  // The new code's speedup over tier 0 at the same work (RegionReport::payoff).
  const double t_tier0 = same_work_us(a, 0, a.profile.mean_time_us(0));
  if (t_tier0 > 0 && t_after > 0)
    a.payoff_over_tier0[static_cast<size_t>(p.to_tier)].store(t_tier0 / t_after, std::memory_order_relaxed);
  if (!(t_before > 0 && t_after > 0)) return;
  runtime::ThresholdUpdate u = policy->observe_compile(a.info, p.from_tier, p.to_tier, t_before,
                                                       t_after, policy->expected_calls(a.profile),
                                                       p.compile_us);
  runtime::DecisionRecord d;
  d.region = a.info.id;
  d.region_name = a.info.name;
  d.kind = runtime::DecisionKind::kCompiled;
  d.from_tier = p.from_tier;
  d.tier = p.to_tier;
  d.compile_us = static_cast<int64_t>(p.compile_us);
  d.message = fmt::format("payoff at tier {} ({}): {}", p.to_tier, how, u.message);
  log.record(std::move(d));
  // Never slower than what ran before: compare with the best lower tier measured.
  const auto [best_tier, best_us] = best_lower_tier(a, p.to_tier);
  if (best_tier < 0 || options.slower_margin < 0 || !(t_after > (1 + options.slower_margin) * best_us))
    return;
  size_t removed = 0;
  for (uint64_t k : p.keys) removed += a.table.remove(k) ? 1 : 0;
  for (const auto& v : p.replaced)  // the best lower tier's code serves again
    if (v->tier >= best_tier) a.table.install(v);
  a.has_specialized.store(any_specialized(a.table), std::memory_order_release);
  const int k = a.evictions.fetch_add(1, std::memory_order_relaxed) + 1;
  const uint64_t retry = runtime::TierPolicy::retry_after_eviction(a.profile.calls(), k);
  a.retry_at.store(retry, std::memory_order_release);
  a.ceiling.store(best_tier, std::memory_order_release);
  runtime::DecisionRecord e;
  e.region = a.info.id;
  e.region_name = a.info.name;
  e.kind = runtime::DecisionKind::kEvicted;
  e.tier = p.to_tier;
  e.message = fmt::format("tier {} code is slower than tier {} ({:.4g} vs {:.4g} us per mean call, {}): "
                          "{} version(s) removed, the region runs its tier-{} code and is not "
                          "promoted again before call {}",
                          p.to_tier, best_tier, t_after, best_us, how, removed, best_tier, retry);
  runtime::Metrics::bump(metrics.evictions, removed);
  log.record(std::move(e));
  code_epoch.fetch_add(1, std::memory_order_acq_rel);
}

double Session::Impl::eviction_bound(const AdaptiveRegion& a, int from_tier, int to_tier) const {
  if (options.slower_margin < 0) return 0;
  const double t_before = same_work_us(a, from_tier, a.profile.mean_time_us(from_tier));
  const auto [best_tier, best_us] = best_lower_tier(a, to_tier);
  if (best_tier < 0 || !(t_before > 0)) return 1 + options.slower_margin;
  return (1 + options.slower_margin) * best_us / t_before;
}

}  // namespace tierjit
