// TierPolicy: promotion rule, threshold adaptation, hotness, demotion, speedup and compile-cost
// models.
#include "runtime/tier_policy.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kernels/cpu_features.h"
#include "runtime/speedup_seeds_data.h"
#include "support/log.h"

namespace tierjit::runtime {

namespace {

// Seed speedups t_i / t_{i+1} per kind for steps 0->1, 1->2, 2->3: measured by the micro-
// benchmarks on a mixed list of layer shapes per kind (bench/micro/bench_seeds.cc) and committed
// per instruction set as data (speedup_seeds/avx512.json, avx2.json, written by
// scripts/measure_speedup_seeds.py, embedded at build time); the data of the CPU's instruction set
// is used (measured_seeds()). These constants serve only a kind the data does not list: no
// measured step, so 1.0 (a step predicted no faster is never compiled for itself); shape_only
// and opaque regions are never compiled. Every compile's measured payoff is folded in (geometric
// mean with the seed).
constexpr double kSeedSpeedup[kNumSpeedupClasses][kNumTiers - 1] = {
    {1.0, 1.0, 1.0},  // elementwise
    {1.0, 1.0, 1.0},  // matmul_epilogue (MatMul, Gemm)
    {1.0, 1.0, 1.0},  // reduction
    {1.0, 1.0, 1.0},  // shape_only: never compiled
    {1.0, 1.0, 1.0},  // opaque: no lowering
    {1.0, 1.0, 1.0},  // conv
    // recurrent (LSTM, GRU): not in the measured data yet. Tier 2 against tier 0's oneDNN RNN
    // primitives on an LSTM (I 64, H 128) and a bidirectional GRU (I 128, H 128) cell at
    // sequence 8 / 32 x batch 1 / 8 / 64, one thread (`tierjit_micro_bench
    // --benchmark_filter='recurrent\.' --benchmark_repetitions=5`, median CPU time): LSTM
    // 1.02-1.38x, GRU 1.10-1.31x; tier 1 is the same code at the light pipeline.
    {1.1, 1.05, 1.0},
    {1.0, 1.0, 1.0},  // conv_pointwise
    {1.0, 1.0, 1.0},  // conv_depthwise
    {1.0, 1.0, 1.0},  // conv_pool
};
// t_exact / t_generic at one tier per kind (SpeedupModel::generic_factor):
//  - matmul_epilogue and conv: 1.0. Their generated code loops around the kernel layer's
//    microkernels (kir/lower/gemm_panels.cc, lower_conv_tiles.cc); a run-time M or batch changes
//    the trip count of the loop over items, not the code that does the work (a Conv's generic
//    version keeps its C/H/W exact: kir::constant_dims_required);
//  - elementwise and reduction: run-time extents cost index arithmetic and loop tails; not
//    measured yet, assumed 0.8 (exact code 1.25x generic);
//  - shape_only, opaque: never compiled.
//  - recurrent: 1.0 (S and N read at run time in the same loops);
//  - conv_pointwise, conv_depthwise, conv_pool: 1.0, as conv.
// (One entry per class: a missing one would be 0 and make exact code infinitely faster.)
constexpr double kGenericFactor[] = {0.8, 1.0, 0.8, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0};
static_assert(std::size(kGenericFactor) == kNumSpeedupClasses);
static_assert(std::size(kSeedSpeedup) == kNumSpeedupClasses);
// Prior compile cost a + b·nodes in µs per tier (DESIGN targets: tier 1 < 10 ms, tier 2 10–100
// ms, tier 3 > 100 ms).
constexpr double kPriorCost[kNumTiers][2] = {{0, 0}, {2000, 300}, {8000, 1500}, {100000, 20000}};

// The least expected gain (fraction of the current time) a step with a spread must offer to be
// weighed at all (without a spread: any gain, a speedup > 1).
constexpr double kMinExpectedGain = 1e-3;

int class_index(SpeedupClass cls) {
  return std::clamp(static_cast<int>(cls), 0, kNumSpeedupClasses - 1);
}
bool compilable(RegionKind kind) {
  return kind != RegionKind::kShapeOnly && kind != RegionKind::kOpaque;
}

}  // namespace

SpeedupClass speedup_class(RegionKind kind, bool conv_anchor) {
  if (kind == RegionKind::kMatMulEpilogue && conv_anchor) return SpeedupClass::kConv;
  switch (kind) {
    case RegionKind::kElementwise: return SpeedupClass::kElementwise;
    case RegionKind::kMatMulEpilogue: return SpeedupClass::kMatMulEpilogue;
    case RegionKind::kReduction: return SpeedupClass::kReduction;
    case RegionKind::kShapeOnly: return SpeedupClass::kShapeOnly;
    case RegionKind::kOpaque: return SpeedupClass::kOpaque;
    case RegionKind::kRecurrent: return SpeedupClass::kRecurrent;
  }
  return SpeedupClass::kOpaque;
}

std::optional<SpeedupClass> speedup_class_named(std::string_view name) {
  // The compilable region kinds by their partition names (passes::region_kind_name), and the
  // three convolution families.
  for (RegionKind kind : {RegionKind::kElementwise, RegionKind::kMatMulEpilogue, RegionKind::kReduction,
                          RegionKind::kRecurrent})
    if (name == passes::region_kind_name(kind)) return speedup_class(kind);
  if (name == "conv") return SpeedupClass::kConv;
  if (name == "conv_pointwise") return SpeedupClass::kConvPointwise;
  if (name == "conv_depthwise") return SpeedupClass::kConvDepthwise;
  if (name == "conv_pool") return SpeedupClass::kConvPool;
  return std::nullopt;
}

SpeedupClass conv_speedup_class(const ir::Node& conv) {
  const int64_t group = conv.attr_int("group", 1);
  const ir::Value* w = conv.inputs().size() > 1 ? conv.input(1) : nullptr;
  int64_t per_group = -1, kh = -1, kw = -1;
  if (w && w->is_constant() && w->constant().rank() == 4) {
    per_group = w->constant().dim(1);
    kh = w->constant().dim(2);
    kw = w->constant().dim(3);
  } else {
    const std::vector<int64_t> k = conv.attr_ints("kernel_shape");
    if (k.size() == 2) {
      kh = k[0];
      kw = k[1];
    }
  }
  if (group > 1 && per_group == 1) return SpeedupClass::kConvDepthwise;
  if (group == 1 && kh == 1 && kw == 1) return SpeedupClass::kConvPointwise;
  return SpeedupClass::kConv;
}

const MeasuredSeeds& measured_seeds() {
  static const MeasuredSeeds seeds = [] {
    const bool avx512 = kernels::cpu_has_avx512f();
    const char* text = avx512 ? kSpeedupSeeds_avx512 : kSpeedupSeeds_avx2;
    MeasuredSeeds m;
    m.isa = avx512 ? "avx512" : "avx2";
    for (int k = 0; k < kNumSpeedupClasses; ++k)
      for (int t = 0; t < kNumTiers - 1; ++t) m.steps[k][t] = kSeedSpeedup[k][t];
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.contains("steps")) {
      TJ_LOG_WARN("speedup seeds: no measured data for {} in this build; every step seeded 1.0",
                  m.isa);
      return m;
    }
    m.cpu = j.value("cpu", "");
    for (const auto& [kind, steps] : j["steps"].items()) {
      std::optional<SpeedupClass> cls = speedup_class_named(kind);
      if (!cls || !steps.is_array() || steps.size() != kNumTiers - 1) continue;
      for (int t = 0; t < kNumTiers - 1; ++t)
        if (steps[t].is_number() && steps[t].get<double>() > 0)
          m.steps[class_index(*cls)][t] = steps[t].get<double>();
      m.measured[class_index(*cls)] = true;
    }
    if (j.contains("spread_from_tier0") && j["spread_from_tier0"].is_object()) {
      for (const auto& [kind, sd] : j["spread_from_tier0"].items()) {
        std::optional<SpeedupClass> cls = speedup_class_named(kind);
        if (!cls || !sd.is_array() || sd.size() != kNumTiers - 1) continue;
        for (int t = 0; t < kNumTiers - 1; ++t)
          if (sd[t].is_number() && sd[t].get<double>() >= 0)
            m.spread[class_index(*cls)][t] = sd[t].get<double>();
      }
    }
    return m;
  }();
  return seeds;
}

SpeedupModel::SpeedupModel() {
  const MeasuredSeeds& seeds = measured_seeds();
  for (int k = 0; k < kNumSpeedupClasses; ++k) {
    for (int t = 0; t < kNumTiers - 1; ++t) {
      log_sum_[k][t] = std::log(seeds.steps[k][t]);
      n_[k][t] = 1;
      spread_[k][t] = seeds.spread[k][t];
    }
  }
}

double SpeedupModel::speedup(SpeedupClass cls, int from_tier) const {
  if (from_tier < 0 || from_tier >= kNumTiers - 1) return 1.0;
  std::lock_guard lock(mu_);
  int k = class_index(cls);
  return std::exp(log_sum_[k][from_tier] / n_[k][from_tier]);
}

void SpeedupModel::set_seed(SpeedupClass cls, int from_tier, double speedup) {
  if (from_tier < 0 || from_tier >= kNumTiers - 1 || !(speedup > 0)) return;
  std::lock_guard lock(mu_);
  int k = class_index(cls);
  log_sum_[k][from_tier] = std::log(speedup);
  n_[k][from_tier] = 1;
}

void SpeedupModel::observe(SpeedupClass cls, int from_tier, double t_before_us, double t_after_us) {
  if (from_tier < 0 || from_tier >= kNumTiers - 1 || !(t_before_us > 0) || !(t_after_us > 0))
    return;
  std::lock_guard lock(mu_);
  int k = class_index(cls);
  log_sum_[k][from_tier] += std::log(t_before_us / t_after_us);
  n_[k][from_tier] += 1;
}

double SpeedupModel::speedup_between(SpeedupClass cls, int from_tier, int to_tier) const {
  double s = 1;
  for (int t = std::max(from_tier, 0); t < to_tier && t < kNumTiers - 1; ++t) s *= speedup(cls, t);
  return s;
}

void SpeedupModel::observe_span(SpeedupClass cls, int from_tier, int to_tier, double t_before_us,
                                double t_after_us) {
  if (to_tier <= from_tier + 1) return observe(cls, from_tier, t_before_us, t_after_us);
  if (!(t_before_us > 0) || !(t_after_us > 0)) return;
  // Attribute the ratio to the last step: divide out the estimates of the steps below it.
  const double below = speedup_between(cls, from_tier, to_tier - 1);
  observe(cls, to_tier - 1, t_before_us, t_after_us * below);
}

double SpeedupModel::spread_from_tier0(SpeedupClass cls, int to_tier) const {
  if (to_tier < 1 || to_tier >= kNumTiers) return 0;
  std::lock_guard lock(mu_);
  return spread_[class_index(cls)][to_tier - 1];
}

void SpeedupModel::set_spread(SpeedupClass cls, int to_tier, double sigma) {
  if (to_tier < 1 || to_tier >= kNumTiers || !(sigma >= 0)) return;
  std::lock_guard lock(mu_);
  spread_[class_index(cls)][to_tier - 1] = sigma;
}

ExpectedGain expected_gain(double mu, double sigma) {
  ExpectedGain g;
  if (!(sigma > 0)) {
    const double r = std::exp(-mu);  // t_next / t
    g.gain = std::max(0.0, 1 - r);
    g.loss = std::max(0.0, r - 1);
    return g;
  }
  // X = log S ~ N(mu, sigma^2); 1/S = e^-X. E[max(0, 1 - e^-X)] = P(X > 0) - E[e^-X; X > 0]
  // = Phi(mu/s) - e^(-mu + s^2/2) Phi(mu/s - s); E[max(0, e^-X - 1)] = e^(-mu + s^2/2)
  // Phi(s - mu/s) - Phi(-mu/s).
  auto phi = [](double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); };
  const double z = mu / sigma, m = std::exp(-mu + 0.5 * sigma * sigma);
  g.gain = std::max(0.0, phi(z) - m * phi(z - sigma));
  g.loss = std::max(0.0, m * phi(sigma - z) - phi(-z));
  return g;
}

double SpeedupModel::generic_factor(SpeedupClass cls) const {
  return kGenericFactor[class_index(cls)];
}

CompileCostModel::CompileCostModel() {
  for (int t = 1; t < kNumTiers; ++t) set_prior(t, kPriorCost[t][0], kPriorCost[t][1]);
}

void CompileCostModel::set_prior(int tier, double a_us, double b_us_per_node) {
  if (tier < 0 || tier >= kNumTiers) return;
  std::lock_guard lock(mu_);
  sums_[tier] = {};
  for (double x : {1.0, 10.0}) {
    double y = a_us + b_us_per_node * x;
    Sums& s = sums_[tier];
    s.n += 1, s.x += x, s.y += y, s.xx += x * x, s.xy += x * y;
  }
}

void CompileCostModel::observe(int tier, double size, double compile_us) {
  if (tier < 0 || tier >= kNumTiers || !(compile_us >= 0)) return;
  std::lock_guard lock(mu_);
  Sums& s = sums_[tier];
  s.n += 1, s.x += size, s.y += compile_us, s.xx += size * size, s.xy += size * compile_us;
}

double CompileCostModel::predict(int tier, double size) const {
  if (tier < 0 || tier >= kNumTiers) return 0;
  std::lock_guard lock(mu_);
  const Sums& s = sums_[tier];
  if (s.n == 0) return 0;
  double den = s.n * s.xx - s.x * s.x;
  double b = std::fabs(den) < 1e-12 ? 0 : (s.n * s.xy - s.x * s.y) / den;
  double a = (s.y - b * s.x) / s.n;
  return std::max(0.0, a + b * size);
}

TierPolicy::TierPolicy(TierPolicyOptions options) : options_(options) {
  for (int t = 0; t < kNumTiers; ++t) theta_[t] = options_.theta0 * std::pow(options_.gamma, t);
}

double TierPolicy::threshold(int tier) const {
  if (tier < 0 || tier >= kNumTiers) return INFINITY;
  std::lock_guard lock(mu_);
  return theta_[tier];
}

double TierPolicy::expected_calls(const Profile& profile) const {
  double horizon = options_.benefit_horizon_windows;
  if (options_.lindy_horizon) {
    horizon = std::max(horizon, static_cast<double>(profile.model_calls()) /
                                    static_cast<double>(std::max<size_t>(profile.model_window(), 1)));
  }
  return profile.expected_calls() * horizon;
}

uint64_t TierPolicy::next_consideration(uint64_t calls) const {
  const double step = std::max(options_.reconsider_min_calls,
                               options_.reconsider_growth * static_cast<double>(calls));
  return calls + static_cast<uint64_t>(std::max(1.0, std::ceil(step)));
}

uint64_t TierPolicy::retry_after_eviction(uint64_t calls, int evictions) {
  uint64_t at = std::max<uint64_t>(calls, 1);
  for (int i = 0; i < evictions; ++i) {
    if (at > std::numeric_limits<uint64_t>::max() / kRetryBackoff) return std::numeric_limits<uint64_t>::max();
    at *= kRetryBackoff;
  }
  return at;
}

PromotionDecision TierPolicy::consider_promotion(const RegionInfo& region, const Profile& profile,
                                                 int current_tier) const {
  PromotionDecision d;
  d.from_tier = current_tier;
  d.to_tier = current_tier + 1;
  d.calls = static_cast<double>(profile.calls());
  d.threshold = threshold(current_tier);
  // The decision with its log record (kind and message); returned as the result.
  auto with_record = [&](DecisionKind kind, std::string message) {
    DecisionRecord r;
    r.region = region.id;
    r.region_name = region.name;
    r.kind = kind;
    r.from_tier = d.from_tier;
    r.tier = d.to_tier;
    r.message = std::move(message);
    d.record = std::move(r);
    return d;
  };
  auto decline = [&](std::string why) { return with_record(DecisionKind::kDeclined, std::move(why)); };
  const int top = std::min(options_.max_tier, kNumTiers - 1);
  if (current_tier >= top) return d;
  // Skip steps with nothing to gain: the speedup of current -> to_tier is <= 1 and, from tier 0,
  // its spread over regions of the kind gives no chance of more (expected_gain).
  std::string skipped;
  const SpeedupClass cls = region.speedup_class();
  auto gain_to = [&](int to_tier) {
    const double sigma = options_.weigh_spread && current_tier == 0
                             ? speedups_.spread_from_tier0(cls, to_tier) : 0.0;
    return std::pair{expected_gain(std::log(speedups_.speedup_between(cls, current_tier, to_tier)),
                                   sigma),
                     sigma};
  };
  auto worth_weighing = [&](int to_tier) {
    const auto [g, sigma] = gain_to(to_tier);
    return g.gain > (sigma > 0 ? kMinExpectedGain : 0.0);
  };
  while (d.to_tier < top && !worth_weighing(d.to_tier)) {
    skipped += fmt::format("tier {} skipped (predicted speedup {:.3g} over tier {}); ", d.to_tier,
                           speedups_.speedup_between(cls, current_tier, d.to_tier),
                           current_tier);
    ++d.to_tier;
  }
  d.threshold = threshold(d.to_tier - 1);
  if (d.calls < d.threshold) return d;
  if (!compilable(region.kind)) {
    return decline(fmt::format("{} regions are not compiled", passes::region_kind_name(region.kind)));
  }
  d.t_now_us = profile.mean_time_us(current_tier);
  if (d.t_now_us < 0) return decline(fmt::format("no time measured at tier {}", current_tier));
  d.n_expected = expected_calls(profile);
  double speedup = speedups_.speedup_between(cls, current_tier, d.to_tier);
  d.t_next_us = d.t_now_us / speedup;
  d.compile_us = costs_.predict(d.to_tier, region.size) * options_.compile_cost_factor;
  const auto [g, sigma] = gain_to(d.to_tier);
  std::string arithmetic;
  if (sigma > 0) {
    // A spread: the expected saving while a faster version serves, less the trial calls of a
    // slower one before it is dropped.
    d.benefit_us = d.n_expected * d.t_now_us * g.gain -
                   options_.trial_calls * d.t_now_us * g.loss - d.compile_us;
    arithmetic = fmt::format(
        "{}calls {:.0f} >= θ_{} {:.3g}; benefit N_expected {:.3g} x t_{} {:.3g} us x gain {:.3g} - "
        "{:.3g} trial calls x t_{} x loss {:.3g} - C_{} {:.4g} us = {:.4g} us [speedup {:.3g}, "
        "spread {:.3g} in log over the kind's regions; a slower version is dropped]",
        skipped, d.calls, d.to_tier - 1, d.threshold, d.n_expected, current_tier, d.t_now_us,
        g.gain, options_.trial_calls, current_tier, g.loss, d.to_tier, d.compile_us,
        d.benefit_us, speedup, sigma);
  } else {
    d.benefit_us = d.n_expected * (d.t_now_us - d.t_next_us) - d.compile_us;
    arithmetic = fmt::format(
        "{}calls {:.0f} >= θ_{} {:.3g}; benefit N_expected {:.3g} x (t_{} {:.3g} us - t_{} {:.3g} "
        "us [speedup {:.3g}]) - C_{} {:.4g} us = {:.4g} us",
        skipped, d.calls, d.to_tier - 1, d.threshold, d.n_expected, current_tier, d.t_now_us,
        d.to_tier, d.t_next_us, speedup, d.to_tier, d.compile_us, d.benefit_us);
  }
  d.density = d.benefit_us / std::max(d.compile_us, 1.0);
  if (d.benefit_us <= 0) return decline("cannot pay: " + arithmetic + " <= 0");
  d.promote = true;
  return with_record(DecisionKind::kPromoted, arithmetic + " > 0");
}

ThresholdUpdate TierPolicy::observe_compile(const RegionInfo& region, int from_tier,
                                            double t_before_us, double t_after_us, double calls,
                                            double compile_us) {
  return observe_compile(region, from_tier, from_tier + 1, t_before_us, t_after_us, calls,
                         compile_us);
}

ThresholdUpdate TierPolicy::observe_compile(const RegionInfo& region, int from_tier, int to_tier,
                                            double t_before_us, double t_after_us, double calls,
                                            double compile_us) {
  ThresholdUpdate u;
  to_tier = std::max(to_tier, from_tier + 1);
  u.tier = to_tier - 1;
  speedups_.observe_span(region.speedup_class(), from_tier, to_tier, t_before_us, t_after_us);
  costs_.observe(to_tier, region.size, compile_us);
  from_tier = u.tier;  // the threshold that gated this compile
  if (from_tier < 0 || from_tier >= kNumTiers) return u;
  u.r_actual = (t_before_us - t_after_us) * calls / std::max(compile_us, 1.0);
  std::lock_guard lock(mu_);
  double& theta = theta_[from_tier];
  u.old_theta = theta;
  double eta = options_.eta_fraction * theta;
  theta = std::max(options_.theta_min, theta - eta * (u.r_actual - options_.r_target));
  u.new_theta = theta;
  u.message = fmt::format(
      "R = ({:.4g} - {:.4g}) us x {:.4g} calls / {:.4g} us = {:.4g} vs R_target {:.3g}: θ_{} "
      "{:.4g} -> {:.4g}",
      t_before_us, t_after_us, calls, compile_us, u.r_actual, options_.r_target, from_tier,
      u.old_theta, u.new_theta);
  return u;
}

double TierPolicy::hotness(const HotnessInputs& in) const {
  const auto& w = options_.hotness_weights;
  return w[0] * in.count + w[1] * in.time_share + w[2] * in.bandwidth_share +
         w[3] * in.arithmetic_intensity;
}

HotnessInputs hotness_inputs(const Profile& profile, double model_time_us, double model_bytes) {
  auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  double bytes = profile.bytes_moved();
  return {static_cast<double>(profile.calls()), ratio(profile.total_time_us(), model_time_us),
          ratio(bytes, model_bytes), ratio(profile.flops(), bytes)};
}

std::optional<DemotionDecision> TierPolicy::consider_demotion(const RegionInfo& region,
                                                              const Profile& profile) const {
  double rate = profile.guard_failure_rate();
  if (!(rate > options_.epsilon)) return std::nullopt;
  DemotionDecision d;
  d.failure_rate = rate;
  d.dims_to_mark_dynamic = profile.drifting_dims();
  d.record.region = region.id;
  d.record.region_name = region.name;
  d.record.kind = DecisionKind::kDemoted;
  d.record.level = SpecLevel::kExact;
  d.record.message = fmt::format(
      "guard-failure rate {:.3g} over the last {} calls > ε {:.3g}: exact versions dropped, "
      "flat dims [{}] marked dynamic",
      rate, kShapeWindow, options_.epsilon, fmt::join(d.dims_to_mark_dynamic, ","));
  return d;
}

std::vector<SpecRequest> TierPolicy::choose_specializations(const DimTracker& dims, int tier) const {
  std::vector<SpecRequest> out;
  if (dims.calls() == 0) return out;
  std::vector<ShapeShare> shapes = dims.recent_shapes();
  const Signature& latest = shapes.empty() ? dims.layout() : shapes.front().signature;
  auto generic = [&](std::string why) {
    out.push_back({Specialization::generic(latest), latest, 1.0, std::move(why)});
  };
  if (tier <= 1) {
    generic("tier 1 compiles generic dims");
    return out;
  }
  if (!dims.any_dynamic()) {
    out.push_back({Specialization::exact(latest), latest, 1.0,
                   fmt::format("all dims static: exact {}", latest.to_string())});
    return out;
  }
  std::span<const uint8_t> dyn = dims.dynamic_mask();
  generic("dynamic dims: the generic version serves every shape");
  struct Candidate {
    SpecRequest request;
    bool exact;
  };
  std::vector<Candidate> candidates;
  // Exact versions: shapes whose share exceeds θ_spec.
  std::unordered_map<uint64_t, double> exact_share_by_class;
  for (const ShapeShare& s : shapes) {
    if (!(s.share > options_.theta_spec)) continue;
    exact_share_by_class[s.signature.class_key(dyn)] += s.share;
    candidates.push_back(
        {{Specialization::exact(s.signature), s.signature, s.share,
          fmt::format("shape {} has {:.0f}% of the last {} calls (> θ_spec {:.0f}%)",
                      s.signature.to_string(), 100 * s.share, dims.window_calls(),
                      100 * options_.theta_spec)},
         true});
  }
  // Shape-class versions: buckets whose share beyond those exact shapes exceeds θ_class.
  struct Bucket {
    const Signature* representative = nullptr;  // its most frequent shape
    double share = 0;
  };
  std::vector<std::pair<uint64_t, Bucket>> buckets;
  for (const ShapeShare& s : shapes) {
    uint64_t key = s.signature.class_key(dyn);
    auto it = std::find_if(buckets.begin(), buckets.end(), [&](auto& b) { return b.first == key; });
    if (it == buckets.end()) {
      buckets.push_back({key, {&s.signature, 0}});
      it = buckets.end() - 1;
    }
    it->second.share += s.share;
  }
  for (const auto& [key, b] : buckets) {
    double residual = b.share - exact_share_by_class[key];
    if (!(residual > options_.theta_class)) continue;
    Specialization spec = Specialization::shape_class(*b.representative, dyn);
    std::string name = spec.to_string();
    candidates.push_back(
        {{std::move(spec), *b.representative, b.share,
          fmt::format("bucket {} has {:.0f}% of the last {} calls ({:.0f}% beyond exact versions, "
                      "> {:.0f}%)",
                      name, 100 * b.share, dims.window_calls(), 100 * residual,
                      100 * options_.theta_class)},
         false});
  }
  std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    if (a.request.share != b.request.share) return a.request.share > b.request.share;
    return a.exact && !b.exact;
  });
  for (Candidate& c : candidates) {
    if (out.size() >= options_.version_cap) break;
    out.push_back(std::move(c.request));
  }
  return out;
}

}  // namespace tierjit::runtime
