// PayoffTrial: the trial of newly installed code (DESIGN.md "Promotion": a version measured
// slower than what ran before is dropped after its trial calls; docs/runtime.md, "Payoff").
// Each call the new code runs is compared with the same shape at the tier it replaces:
// the sample is the call's µs over that shape's mean µs there, weighted by that mean (a batch-128
// call that got 20% slower outweighs several batch-1 calls that got 2x faster). The verdict is
// the weighted median of the ratios, taken once it is clear on which side of the eviction bound
// it lies, or at a cap on samples: one preempted call on a shared machine (2-3x its
// time) moves a mean of 8 calls by 15-25%, a median not at all, and a version near the bound is
// measured longer instead of being judged on noise.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

namespace tierjit::runtime {

struct PayoffTrialOptions {
  size_t min_samples = 8;   ///< no verdict before this many samples (unless expired)
  size_t max_samples = 32;  ///< verdict at this many quiet samples, clear or not
  /// A verdict needs |log(median) - log(bound)| > z · (standard error of the median of the
  /// log ratios: sqrt(pi / 2) · 1.4826 · MAD / sqrt(n_eff), n_eff = (Σw)² / Σw²).
  double z = 2.0;
};

class PayoffTrial {
 public:
  PayoffTrial() = default;
  explicit PayoffTrial(PayoffTrialOptions options) : options_(options) {}

  /// One call of the new code: `ratio` = its µs over its shape's mean µs at the replaced tier,
  /// `weight` = that mean (µs); samples with a ratio or weight not > 0 are ignored. `quiet`: no
  /// compile ran meanwhile (a compile thread shares the cores the call's threads run on, 2x
  /// slower calls at 2 threads): the verdict waits for min_samples quiet samples and uses them
  /// alone; all samples count only when the trial expires without them.
  void add(double ratio, double weight, bool quiet);
  size_t samples() const { return all_.size(); }
  size_t quiet_samples() const { return quiet_.size(); }

  struct Verdict {
    double ratio = 1;    ///< weighted median of new time / old time
    size_t samples = 0;  ///< the samples it is the median of
  };
  /// The verdict when the trial is over: at least min_samples quiet samples and their weighted
  /// median clear of `bound` (the ratio above which the new code is evicted; <= 0: no bound, so
  /// any median is clear), or max_samples quiet samples. `expired`: the caller stops waiting;
  /// the quiet samples when there are min_samples of them, else all of them (at least
  /// min_samples / 2), else nullopt. nullopt: keep measuring.
  std::optional<Verdict> verdict(double bound, bool expired = false) const;

  struct Sample {
    double value = 0, weight = 1;
  };
  /// Weighted median of `v`: the smallest value at which the cumulative weight (ascending) reaches
  /// half the total, averaged with the next value when it lands exactly on half; 0 when empty.
  static double weighted_median(std::vector<Sample> v);

 private:
  PayoffTrialOptions options_;
  std::vector<Sample> all_, quiet_;  // log ratios
};

}  // namespace tierjit::runtime
