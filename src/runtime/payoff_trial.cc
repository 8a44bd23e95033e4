// PayoffTrial (payoff_trial.h): weighted median of per-call log ratios, with a verdict once the
// median is clear of the eviction bound by z standard errors. The standard error of a sample
// median of n values from a normal distribution is sqrt(pi / 2) · sigma / sqrt(n); sigma is
// estimated robustly as 1.4826 · MAD (the weighted median absolute deviation), so outliers widen
// neither, and n is Kish's effective sample size of the weights.
#include "runtime/payoff_trial.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace tierjit::runtime {

void PayoffTrial::add(double ratio, double weight, bool quiet) {
  if (!(ratio > 0) || !std::isfinite(ratio) || !(weight > 0) || !std::isfinite(weight)) return;
  const Sample s{std::log(ratio), weight};
  all_.push_back(s);
  if (quiet) quiet_.push_back(s);
}

double PayoffTrial::weighted_median(std::vector<Sample> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end(), [](const Sample& a, const Sample& b) { return a.value < b.value; });
  double total = 0;
  for (const Sample& s : v) total += s.weight;
  const double half = 0.5 * total;
  double cum = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    cum += v[i].weight;
    // Exactly half (an even count of equal weights): the middle two's mean.
    if (std::fabs(cum - half) <= 1e-12 * total && i + 1 < v.size()) return 0.5 * (v[i].value + v[i + 1].value);
    if (cum > half) return v[i].value;
  }
  return v.back().value;
}

std::optional<PayoffTrial::Verdict> PayoffTrial::verdict(double bound, bool expired) const {
  if (quiet_.size() < options_.min_samples) {
    // Too few quiet samples: all of them, only when the caller stops waiting.
    if (expired && 2 * all_.size() >= options_.min_samples)
      return Verdict{std::exp(weighted_median(all_)), all_.size()};
    return std::nullopt;
  }
  const std::vector<Sample>& s = quiet_;
  const double m = weighted_median(s);
  const Verdict v{std::exp(m), s.size()};
  if (expired || s.size() >= options_.max_samples || !(bound > 0)) return v;
  std::vector<Sample> dev(s);
  double sum_w = 0, sum_w2 = 0;
  for (Sample& d : dev) {
    d.value = std::fabs(d.value - m);
    sum_w += d.weight;
    sum_w2 += d.weight * d.weight;
  }
  const double n_eff = sum_w * sum_w / sum_w2;
  const double sigma = 1.4826 * weighted_median(std::move(dev));
  const double se = std::sqrt(std::numbers::pi / 2) * sigma / std::sqrt(n_eff);
  if (std::fabs(m - std::log(bound)) > options_.z * se) return v;
  return std::nullopt;
}

}  // namespace tierjit::runtime
