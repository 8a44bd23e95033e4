// validate(SessionOptions): the one range check of every SessionOptions field, used by the
// Session constructor and by the Python binding (python/tierjit_py.cc), so C++ and Python accept
// and refuse the same values with the same one-line message. Ranges: docs/runtime.md, "Modes".
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "runtime/tier_policy.h"
#include "tierjit/session.h"

namespace tierjit {

namespace {

// The first field out of its range, as "<field> must be <range>, got <value>"; "" when none.
std::string first_error(const SessionOptions& o) {
  auto finite_at_least = [](double v, double lo) { return std::isfinite(v) && v >= lo; };
  if (o.intra_op_threads < 0 || o.intra_op_threads > kMaxIntraOpThreads)
    return fmt::format("intra_op_threads must be 0 (all cores) to {}, got {}", kMaxIntraOpThreads,
                       o.intra_op_threads);
  if (o.memory_limit_bytes < 1)
    return fmt::format("memory_limit_bytes must be >= 1 (bytes), got {}", o.memory_limit_bytes);
  if (o.arena_limit_bytes < 0)
    return fmt::format("arena_limit_bytes must be >= 0 (bytes; 0 = no limit), got {}",
                       o.arena_limit_bytes);
  if (o.mode != ExecutionMode::kAdaptive && o.mode != ExecutionMode::kInterpretOnly &&
      o.mode != ExecutionMode::kPinnedTier)
    return fmt::format("mode must be kAdaptive, kInterpretOnly or kPinnedTier, got {}",
                       static_cast<int>(o.mode));
  if (o.pinned_tier < 1 || o.pinned_tier > 3)
    return fmt::format("pinned_tier must be 1, 2 or 3, got {}", o.pinned_tier);
  if (o.compile_threads < 0 || o.compile_threads > kMaxCompileThreads)
    return fmt::format("compile_threads must be 0 (default) to {}, got {}", kMaxCompileThreads,
                       o.compile_threads);
  if (!finite_at_least(o.theta0, 0))
    return fmt::format("theta0 must be a finite number >= 0 (calls), got {}", o.theta0);
  if (!finite_at_least(o.gamma, 1))
    return fmt::format("gamma must be a finite number >= 1, got {}", o.gamma);
  if (o.version_cap < 1) return fmt::format("version_cap must be >= 1, got {}", o.version_cap);
  if (!(o.theta_spec >= 0 && o.theta_spec <= 1))  // NaN fails too
    return fmt::format("theta_spec must be a number in [0, 1], got {}", o.theta_spec);
  if (o.code_cache_bytes < 0)
    return fmt::format("code_cache_bytes must be >= 0 (bytes), got {}", o.code_cache_bytes);
  if (o.max_plans < 1) return fmt::format("max_plans must be >= 1, got {}", o.max_plans);
  if (!finite_at_least(o.benefit_horizon_windows, 0))
    return fmt::format("benefit_horizon_windows must be a finite number >= 0, got {}",
                       o.benefit_horizon_windows);
  if (!(o.demotion_epsilon >= 0 && o.demotion_epsilon <= 1))
    return fmt::format("demotion_epsilon must be a number in [0, 1], got {}", o.demotion_epsilon);
  if (o.demotion_cold_calls < 0)
    return fmt::format("demotion_cold_calls must be >= 0 (0 disables), got {}",
                       o.demotion_cold_calls);
  if (std::isnan(o.slower_margin))
    return fmt::format("slower_margin must be a number (negative: never remove), got {}",
                       o.slower_margin);
  if (o.whole_plan_calls < 0)
    return fmt::format("whole_plan_calls must be >= 0 (0 disables), got {}", o.whole_plan_calls);
  if (!(o.whole_plan_max_us >= 0))
    return fmt::format("whole_plan_max_us must be a number >= 0, got {}", o.whole_plan_max_us);
  for (size_t i = 0; i < o.speedup_seeds.size(); ++i) {
    const SessionOptions::SpeedupSeed& seed = o.speedup_seeds[i];
    if (!runtime::speedup_class_named(seed.kind))
      return fmt::format("speedup_seeds[{}]: kind {:?} is not elementwise, matmul_epilogue, "
                         "reduction, recurrent, conv, conv_pointwise, conv_depthwise or conv_pool",
                         i, seed.kind);
    if (seed.from_tier < 0 || seed.from_tier > 2)
      return fmt::format("speedup_seeds[{}]: from_tier must be 0, 1 or 2, got {}", i, seed.from_tier);
    if (!(seed.speedup >= 1e-6 && seed.speedup <= 1e6))
      return fmt::format("speedup_seeds[{}]: speedup must be a number in [1e-6, 1e6], got {}", i,
                         seed.speedup);
  }
  return "";
}

}  // namespace

void validate(const SessionOptions& options) {
  std::string why = first_error(options);
  if (!why.empty()) throw Error(StatusCode::kInvalidArgument, why);
}

}  // namespace tierjit
