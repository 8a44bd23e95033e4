// VersionTable: snapshot build (copy-on-write), lookup (inline cache, per-pattern hash, generic),
// install with the version cap, removal.
#include "runtime/version_table.h"

#include <algorithm>

#include <fmt/format.h>

namespace tierjit::runtime {

namespace {
constexpr uint64_t kIndexMask = 0xFFFF;  // inline cache word: signature hash bits | (index + 1)
}  // namespace

const char* install_result_name(InstallResult r) {
  switch (r) {
    case InstallResult::kInstalled: return "installed";
    case InstallResult::kReplaced: return "replaced";
    case InstallResult::kKeptHigherTier: return "kept_higher_tier";
    case InstallResult::kMegamorphic: return "megamorphic";
  }
  return "?";
}

std::shared_ptr<const Version> Version::make(int tier, Specialization spec,
                                             std::shared_ptr<const VersionEntry> entry,
                                             int64_t compile_us) {
  auto v = std::make_shared<Version>();
  v->tier = tier;
  v->guard = Guard(spec);
  v->key = spec.key();
  v->spec = std::move(spec);
  v->entry = std::move(entry);
  v->compile_us = compile_us;
  return v;
}

struct VersionTable::Snapshot {
  struct Pattern {
    uint64_t id = 0;
    const Specialization* spec = nullptr;  // any member's; owned by `versions`
    std::unordered_map<uint64_t, uint32_t> by_key;  // spec key -> index into versions
  };
  std::vector<std::shared_ptr<const Version>> versions;  // exact, class, generic; tier desc
  std::vector<Pattern> patterns;                         // in the same level order
  bool has_specialized = false;
  mutable std::atomic<uint64_t> inline_cache{0};
  mutable std::atomic<uint32_t> last_specialized{0};  // index + 1; 0 = none yet
};

VersionTable::VersionTable(int region_id, std::string region_name, VersionTableOptions options,
                           DecisionLog* log, Metrics* metrics)
    : region_id_(region_id),
      region_name_(std::move(region_name)),
      options_(options),
      log_(log),
      metrics_(metrics) {
  options_.cap = std::clamp<size_t>(options_.cap, 1, kIndexMask - 1);
  snapshot_ = build({});
}

VersionTable::~VersionTable() = default;

std::shared_ptr<const VersionTable::Snapshot> VersionTable::build(
    std::vector<std::shared_ptr<const Version>> versions) const {
  std::stable_sort(versions.begin(), versions.end(), [](const auto& a, const auto& b) {
    if (a->level() != b->level()) return a->level() < b->level();
    return a->tier > b->tier;
  });
  auto snap = std::make_shared<Snapshot>();
  snap->versions = std::move(versions);
  for (uint32_t i = 0; i < snap->versions.size(); ++i) {
    const Version& v = *snap->versions[i];
    if (v.level() != SpecLevel::kGeneric) snap->has_specialized = true;
    uint64_t id = v.spec.pattern_id();
    auto it = std::find_if(snap->patterns.begin(), snap->patterns.end(),
                           [&](const Snapshot::Pattern& p) { return p.id == id; });
    if (it == snap->patterns.end()) {
      snap->patterns.push_back({id, &v.spec, {}});
      it = snap->patterns.end() - 1;
    }
    it->by_key.emplace(v.key, i);
  }
  return snap;
}

std::shared_ptr<const VersionTable::Snapshot> VersionTable::load() const {
  std::shared_lock lock(snapshot_mu_);
  return snapshot_;
}

void VersionTable::publish(std::shared_ptr<const Snapshot> next) {
  {
    std::unique_lock lock(snapshot_mu_);
    snapshot_.swap(next);
  }
  // `next` now holds the previous snapshot; it is released here, outside the lock.
}

void VersionTable::log(DecisionRecord r) const {
  if (log_ == nullptr) return;
  r.region = region_id_;
  r.region_name = region_name_;
  log_->record(std::move(r));
}

LookupResult VersionTable::lookup(const Signature& sig) const {
  LookupResult r;
  std::shared_ptr<const Snapshot> snap = load();
  if (metrics_) Metrics::bump(metrics_->region_calls);
  const auto& versions = snap->versions;
  uint64_t h = sig.exact_key();
  int64_t idx = -1;
  uint64_t ic = snap->inline_cache.load(std::memory_order_relaxed);
  if (ic != 0 && ((ic ^ h) & ~kIndexMask) == 0) {
    size_t i = (ic & kIndexMask) - 1;
    if (i < versions.size() && versions[i]->guard.passes(sig)) {
      idx = static_cast<int64_t>(i);
      r.inline_cache_hit = true;
    }
  }
  if (idx < 0) {
    for (const Snapshot::Pattern& p : snap->patterns) {
      uint64_t k = p.spec->key_of(sig);
      if (k == 0) continue;
      auto it = p.by_key.find(k);
      if (it == p.by_key.end() || !versions[it->second]->guard.passes(sig)) continue;
      idx = it->second;
      break;
    }
    if (idx >= 0) {
      snap->inline_cache.store((h & ~kIndexMask) | static_cast<uint64_t>(idx + 1),
                               std::memory_order_relaxed);
    }
  }
  if (idx >= 0) {
    r.version = versions[static_cast<size_t>(idx)];
    r.version->hits.fetch_add(1, std::memory_order_relaxed);
  }
  SpecLevel level = r.version ? r.version->level() : SpecLevel::kGeneric;
  if (level != SpecLevel::kGeneric) {
    uint32_t mark = static_cast<uint32_t>(idx + 1);
    if (snap->last_specialized.load(std::memory_order_relaxed) != mark)
      snap->last_specialized.store(mark, std::memory_order_relaxed);
  } else {
    r.megamorphic = r.version != nullptr && megamorphic();
    if (snap->has_specialized) {
      uint32_t last = snap->last_specialized.load(std::memory_order_relaxed);
      r.deopt_from = last > 0 && last <= versions.size() ? versions[last - 1] : versions.front();
    }
  }
  if (r.deopt_from && log_ && log_->would_keep(DecisionKind::kDeoptimized)) {
    DecisionRecord d;
    d.kind = DecisionKind::kDeoptimized;
    d.tier = r.deopt_from->tier;
    d.level = r.deopt_from->level();
    auto failure = r.deopt_from->guard.check(sig);
    d.message = fmt::format("{}; ran {}", failure ? failure->reason : "guard failed",
                            r.version ? fmt::format("generic tier {}", r.version->tier)
                                      : std::string("no version (tier 0 outside the table)"));
    log(std::move(d));
  }
  if (metrics_) {
    if (r.inline_cache_hit) Metrics::bump(metrics_->inline_cache_hits);
    if (!r.version) {
      Metrics::bump(metrics_->misses);
    } else if (level == SpecLevel::kExact) {
      Metrics::bump(metrics_->exact_hits);
    } else if (level == SpecLevel::kShapeClass) {
      Metrics::bump(metrics_->class_hits);
    } else {
      Metrics::bump(metrics_->generic_hits);
    }
    if (r.megamorphic) Metrics::bump(metrics_->megamorphic_calls);
    if (r.deopt_from) Metrics::bump(metrics_->deoptimizations);
  }
  return r;
}

std::shared_ptr<const Version> VersionTable::peek(const Signature& sig) const {
  std::shared_ptr<const Snapshot> snap = load();
  for (const Snapshot::Pattern& p : snap->patterns) {
    uint64_t k = p.spec->key_of(sig);
    if (k == 0) continue;
    auto it = p.by_key.find(k);
    if (it == p.by_key.end() || !snap->versions[it->second]->guard.passes(sig)) continue;
    return snap->versions[it->second];
  }
  return nullptr;
}

void VersionTable::mark_megamorphic(int tier, const std::string& reason) {
  if (megamorphic_.exchange(true)) return;
  if (metrics_) Metrics::bump(metrics_->megamorphic_regions);
  DecisionRecord r;
  r.kind = DecisionKind::kMegamorphic;
  r.tier = tier;
  r.message = fmt::format("version cap {} reached: {}", options_.cap, reason);
  log(std::move(r));
}

InstallResult VersionTable::install(std::shared_ptr<const Version> version) {
  std::lock_guard lock(write_mu_);
  std::shared_ptr<const Snapshot> cur = load();
  std::vector<std::shared_ptr<const Version>> next = cur->versions;
  auto same = std::find_if(next.begin(), next.end(),
                           [&](const auto& v) { return v->key == version->key; });
  InstallResult result = InstallResult::kInstalled;
  if (same != next.end()) {
    if ((*same)->tier > version->tier) return InstallResult::kKeptHigherTier;
    *same = std::move(version);
    result = InstallResult::kReplaced;
  } else if (version->level() != SpecLevel::kGeneric && next.size() >= options_.cap) {
    if (!megamorphic_.exchange(true)) {
      if (metrics_) Metrics::bump(metrics_->megamorphic_regions);
      DecisionRecord r;
      r.kind = DecisionKind::kMegamorphic;
      r.tier = version->tier;
      r.level = version->level();
      r.message = fmt::format(
          "version cap {} reached, {} not installed; calls outside the installed versions run "
          "the generic version",
          options_.cap, version->spec.to_string());
      log(std::move(r));
    }
    return InstallResult::kMegamorphic;
  } else {
    next.push_back(std::move(version));
  }
  publish(build(std::move(next)));
  return result;
}

bool VersionTable::remove(uint64_t key) {
  std::lock_guard lock(write_mu_);
  std::shared_ptr<const Snapshot> cur = load();
  std::vector<std::shared_ptr<const Version>> next = cur->versions;
  auto it = std::find_if(next.begin(), next.end(), [&](const auto& v) { return v->key == key; });
  if (it == next.end()) return false;
  next.erase(it);
  if (next.size() < options_.cap) megamorphic_.store(false);
  if (metrics_) Metrics::bump(metrics_->evictions);
  publish(build(std::move(next)));
  return true;
}

size_t VersionTable::remove_level(SpecLevel level, const std::string& reason) {
  std::vector<std::shared_ptr<const Version>> removed;
  {
    std::lock_guard lock(write_mu_);
    std::shared_ptr<const Snapshot> cur = load();
    std::vector<std::shared_ptr<const Version>> next;
    for (const auto& v : cur->versions) (v->level() == level ? removed : next).push_back(v);
    if (removed.empty()) return 0;
    if (next.size() < options_.cap) megamorphic_.store(false);
    publish(build(std::move(next)));
  }
  for (const auto& v : removed) {
    if (metrics_) Metrics::bump(metrics_->evictions);
    DecisionRecord r;
    r.kind = DecisionKind::kEvicted;
    r.tier = v->tier;
    r.level = v->level();
    r.message = fmt::format("{}: {}", v->spec.to_string(), reason);
    log(std::move(r));
  }
  return removed.size();
}

size_t VersionTable::size() const { return load()->versions.size(); }

std::vector<std::shared_ptr<const Version>> VersionTable::versions() const {
  return load()->versions;
}

}  // namespace tierjit::runtime
