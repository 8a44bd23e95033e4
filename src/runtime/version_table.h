// VersionTable: per Region, the versions of its code (tier, Specialization, Guard, entry) and the
// dispatch of one call to the most specialized version whose guard passes (DESIGN.md
// "VersionTable"): the version the same signature resolved to last time first (monomorphic inline
// cache), then a hash of the signature per specialization pattern, exact before shape class before
// generic (polymorphic); past the cap (default 8) the region is megamorphic — new specializations
// are refused and calls outside the installed ones use the generic version, counted and logged.
// Concurrency: lookups read an immutable snapshot whose shared_ptr they copy under a shared
// (reader) lock held for that copy only — readers never wait for each other; install/remove build
// the next snapshot outside any reader's way and swap the pointer (copy-on-write). (Not
// std::atomic<std::shared_ptr>: libstdc++ 12's load unlocks with relaxed order, a data race that
// ThreadSanitizer reports.) A call holds a shared_ptr to its Version, so code is freed only when
// no call can still be running it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/decision_log.h"
#include "runtime/guard.h"
#include "runtime/metrics.h"
#include "support/status.h"
#include "tierjit/tensor.h"

namespace tierjit::runtime {

/// Arguments of one region call. `context` is for the caller's executor frame (the Plan's arena).
struct RegionCall {
  std::span<const Tensor* const> inputs;
  std::span<Tensor* const> outputs;
  void* context = nullptr;
};

/// The runnable part of a version: compiled code, or the tier-0 interpreter over the region.
class VersionEntry {
 public:
  virtual ~VersionEntry() = default;
  /// Runs the region on `call`. Must be safe to call from many threads at once.
  virtual Status run(const RegionCall& call) const = 0;
  /// Bytes of code and data this entry holds (for the cache budget); 0 if unknown.
  virtual size_t code_bytes() const { return 0; }
};

/// One version of a region's code. Immutable after make() except the hit counter.
struct Version {
  int tier = 0;
  Specialization spec;
  Guard guard;
  uint64_t key = 0;  ///< spec.key()
  std::shared_ptr<const VersionEntry> entry;
  int64_t compile_us = 0;  ///< measured compile time (0 for tier 0)
  mutable std::atomic<uint64_t> hits{0};
  /// The caller's clock of last use (the adaptive Session: the region's call count when a call
  /// last ran this version, or when it was installed); cold versions are demoted by it.
  mutable std::atomic<uint64_t> last_used{0};

  static std::shared_ptr<const Version> make(int tier, Specialization spec,
                                             std::shared_ptr<const VersionEntry> entry,
                                             int64_t compile_us = 0);
  SpecLevel level() const { return spec.level; }
};

struct LookupResult {
  std::shared_ptr<const Version> version;  ///< null: nothing matched (run tier 0 outside the table)
  bool inline_cache_hit = false;
  bool megamorphic = false;  ///< generic because the region is past its cap
  /// Deoptimization: set when the call runs generic code (or nothing) although the table holds
  /// specialized versions — the specialized version whose guard failed (the last one this table
  /// dispatched to, else the first). Its guard's check(sig) gives the reason text.
  std::shared_ptr<const Version> deopt_from;
};

enum class InstallResult {
  kInstalled,       ///< new key
  kReplaced,        ///< same key, tier >= the installed one: replaced (in-flight calls finish)
  kKeptHigherTier,  ///< same key already installed at a higher tier: not installed
  kMegamorphic,     ///< cap reached: a non-generic version refused
};
const char* install_result_name(InstallResult r);

struct VersionTableOptions {
  size_t cap = 8;  ///< versions per region (generic included); at most 65534
};

class VersionTable {
 public:
  /// `log` and `metrics` may be null; when given they must outlive the table.
  VersionTable(int region_id, std::string region_name, VersionTableOptions options = {},
               DecisionLog* log = nullptr, Metrics* metrics = nullptr);
  ~VersionTable();

  /// The version to run for `sig`. Readers never wait for each other; thread-safe against
  /// installs. A deoptimization is counted in Metrics and, when a DecisionLog is attached, logged
  /// as deoptimized with the failing guard's reason (rate-limited; the text is only formatted
  /// when the log would keep it).
  LookupResult lookup(const Signature& sig) const;
  /// The version lookup(sig) would return, without counting, logging or touching the inline
  /// cache (plan resolution: the per-call accounting happens per call).
  std::shared_ptr<const Version> peek(const Signature& sig) const;
  /// Marks the region megamorphic without an install attempt (the caller knows the cap is
  /// reached and does not compile): counted in Metrics::megamorphic_regions and logged once with
  /// `reason`, until a removal frees a slot.
  void mark_megamorphic(int tier, const std::string& reason);
  /// The cap this table enforces.
  size_t cap() const { return options_.cap; }
  /// Installs `version` (copy-on-write). Generic versions are always accepted; others only while
  /// the table holds fewer than cap versions.
  InstallResult install(std::shared_ptr<const Version> version);
  /// Removes the version with spec key `key`; false when absent.
  bool remove(uint64_t key);
  /// Removes every version of `level` (demotion drops kExact); returns how many. Each is logged
  /// as evicted with `reason`.
  size_t remove_level(SpecLevel level, const std::string& reason);

  size_t size() const;
  bool megamorphic() const { return megamorphic_.load(std::memory_order_relaxed); }
  /// The installed versions (most specialized first).
  std::vector<std::shared_ptr<const Version>> versions() const;
  int region_id() const { return region_id_; }
  const std::string& region_name() const { return region_name_; }

 private:
  struct Snapshot;
  std::shared_ptr<const Snapshot> build(std::vector<std::shared_ptr<const Version>> versions) const;
  std::shared_ptr<const Snapshot> load() const;
  void publish(std::shared_ptr<const Snapshot> next);
  void log(DecisionRecord r) const;

  int region_id_;
  std::string region_name_;
  VersionTableOptions options_;
  DecisionLog* log_;
  Metrics* metrics_;
  mutable std::shared_mutex snapshot_mu_;  // guards the pointer snapshot_ only
  std::shared_ptr<const Snapshot> snapshot_;
  std::mutex write_mu_;                     // serializes install/remove
  std::atomic<bool> megamorphic_{false};
};

}  // namespace tierjit::runtime
