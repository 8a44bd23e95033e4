// Session::region_reports(): what each region of a Session runs now — its ops, the highest tier
// installed, every version (tier, specialization, guard) and whether it is megamorphic. Read-only
// over Session::Impl (session_impl.h): the VersionTables of the adaptive runtime, or, for pinned
// tiers (no tables), the compiles the decision log still holds; with the measuring options
// (SessionOptions::count_region_calls, time_regions) the per-region counters and the measured
// payoff. Used by `tierjit explain --trace` and `tierjit bench --json`.
#include <fmt/format.h>

#include <algorithm>

#include "ir/op_kind.h"
#include "runtime/session_impl.h"

namespace tierjit {
namespace {

/// The checks of the guard built from `spec`: one item per constrained dim ("input 0 dim 1 ==
/// 256", "input 0 dim 0 in 65..128") and per value-specialized input; "dtypes and ranks only"
/// when no dim or value is checked (generic).
std::string guard_text(const runtime::Specialization& spec) {
  std::vector<std::string> items;
  size_t flat = 0;
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    const auto& in = spec.inputs[i];
    for (int32_t d = 0; d < in.rank && flat < spec.dims.size(); ++d, ++flat) {
      const runtime::DimConstraint& c = spec.dims[flat];
      if (c.kind == runtime::DimKind::kExact)
        items.push_back(fmt::format("input {} dim {} == {}", i, d, c.value));
      else if (c.kind == runtime::DimKind::kClass)
        items.push_back(fmt::format("input {} dim {} in {}..{}", i, d, runtime::bucket_low(c.value), c.value));
    }
    if (in.has_values) items.push_back(fmt::format("input {} values == {{{}}}", i, fmt::join(in.values, ",")));
  }
  if (items.empty()) return "dtypes and ranks only";
  return fmt::format("{}", fmt::join(items, ", "));
}

}  // namespace

std::vector<RegionReport> Session::region_reports() const {
  std::vector<RegionReport> out;
  if (!impl_ || !impl_->use_plans) return out;
  const Impl& im = *impl_;
  const uint64_t calls = im.calls.load(std::memory_order_relaxed);
  // Pinned tiers keep no VersionTable: take their versions from the decision log (compiles).
  std::vector<runtime::DecisionRecord> compiled;
  if (!im.adaptive_on) {
    for (runtime::DecisionRecord& r : im.log.records())
      if (r.kind == runtime::DecisionKind::kCompiled && r.from_tier < 0 && r.region >= 0)
        compiled.push_back(std::move(r));
  }
  out.reserve(im.partition.regions.size());
  for (const passes::Region& r : im.partition.regions) {
    RegionReport rep;
    rep.id = r.id;
    rep.name = r.name;
    rep.kind = std::string(passes::region_kind_name(r.kind));
    for (const ir::Node* n : r.nodes) rep.ops.emplace_back(ir::op_name(n->op()));
    rep.calls = calls;
    const size_t idx = static_cast<size_t>(r.id);
    const Impl::AdaptiveRegion* a =
        im.adaptive_on && idx < im.adaptive.size() ? im.adaptive[idx].get() : nullptr;
    if (a) {
      for (const auto& v : a->table.versions()) {
        std::string g = guard_text(v->spec);
        rep.tier = std::max(rep.tier, v->tier);
        rep.versions.push_back(fmt::format("tier {} {} guard: {}", v->tier, v->spec.to_string(), g));
        rep.guards.push_back(std::move(g));
      }
      rep.megamorphic = a->table.megamorphic();
      if (rep.tier > 0) {
        const double p = a->payoff_over_tier0[static_cast<size_t>(rep.tier)].load(std::memory_order_relaxed);
        if (p > 0) rep.payoff = p;
      }
    }
    for (const runtime::DecisionRecord& d : compiled) {
      if (d.region != r.id) continue;
      rep.tier = std::max(rep.tier, d.tier);
      rep.versions.push_back(fmt::format("tier {} {} (pinned; one per input signature)", d.tier,
                                         runtime::spec_level_name(d.level)));
      rep.guards.push_back(d.level == runtime::SpecLevel::kExact ? "the plan's exact shapes"
                                                                 : "dtypes and ranks only");
    }
    if (im.region_counters) {
      const Impl::RegionCounters& c = im.region_counters[idx];
      rep.compiled_calls = c.compiled_calls.load(std::memory_order_relaxed);
      rep.timed_calls = c.timed_calls.load(std::memory_order_relaxed);
      rep.time_us = c.time_us.load(std::memory_order_relaxed);
    }
    out.push_back(std::move(rep));
  }
  return out;
}

std::vector<uint64_t> Session::region_compiled_calls() const {
  std::vector<uint64_t> out;
  if (!impl_ || !impl_->region_counters || !impl_->options.count_region_calls) return out;
  out.resize(impl_->partition.regions.size());
  for (size_t r = 0; r < out.size(); ++r)
    out[r] = impl_->region_counters[r].compiled_calls.load(std::memory_order_relaxed);
  return out;
}

}  // namespace tierjit
