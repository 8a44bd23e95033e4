// Profile: per-region counters, guard-failure window, N_expected EWMA.
#include "runtime/profile.h"

#include <algorithm>

namespace tierjit::runtime {

namespace {
constexpr int kNoFailure = -2;
}  // namespace

Profile::Profile(ProfileOptions options)
    : options_(options),
      dims_(options.call_window),
      failed_dim_ring_(std::max<size_t>(options.call_window, 1), kNoFailure) {
  if (options_.model_window == 0) options_.model_window = 1;
}

void Profile::record_call(const Signature& sig, double time_us, int tier, double bytes,
                          double flops, bool guard_failed, int failed_flat_dim) {
  std::lock_guard lock(mu_);
  record_locked(sig, sig.exact_key(), time_us, tier, bytes, flops, guard_failed, failed_flat_dim,
                /*quiet=*/true);
}

uint64_t Profile::record_model_call(const Signature& sig, uint64_t exact_key, double time_us,
                                    int tier, double bytes, double flops, bool guard_failed,
                                    int failed_flat_dim, bool quiet) {
  std::lock_guard lock(mu_);
  record_locked(sig, exact_key, time_us, tier, bytes, flops, guard_failed, failed_flat_dim, quiet);
  model_call_locked();
  return calls_;
}

void Profile::record_locked(const Signature& sig, uint64_t exact_key, double time_us, int tier,
                            double bytes, double flops, bool guard_failed, int failed_flat_dim,
                            bool quiet) {
  ++calls_;
  ++window_calls_;
  int t = std::clamp(tier, 0, kNumTiers - 1);
  ++tier_calls_[t];
  tier_time_us_[t] += time_us;
  tier_bytes_[t] += bytes;
  total_time_us_ += time_us;
  bytes_ += bytes;
  flops_ += flops;
  dims_.observe(sig, exact_key);
  auto it = shape_times_.find(exact_key);
  if (it == shape_times_.end() && shape_times_.size() < kMaxTimedSignatures)
    it = shape_times_.emplace(exact_key, ShapeTimes{}).first;
  if (it != shape_times_.end() && it->second.seen[t]++ > 0) {
    ++it->second.timed[t];
    it->second.time_us[t] += time_us;
    if (quiet) {
      ++it->second.quiet_timed[t];
      it->second.quiet_time_us[t] += time_us;
    }
  }
  failed_dim_ring_[ring_pos_] = guard_failed ? std::max(failed_flat_dim, -1) : kNoFailure;
  ring_pos_ = (ring_pos_ + 1) % failed_dim_ring_.size();
}

std::optional<std::pair<double, double>> Profile::same_shape_times(int from, int to) const {
  std::lock_guard lock(mu_);
  const int f = std::clamp(from, 0, kNumTiers - 1), t = std::clamp(to, 0, kNumTiers - 1);
  double at_from = 0, at_to = 0;
  bool any = false;
  for (const auto& [key, st] : shape_times_) {
    if (st.timed[f] == 0 || st.timed[t] == 0) continue;
    const double n = static_cast<double>(st.timed[t]);
    at_from += n * st.time_us[f] / static_cast<double>(st.timed[f]);
    at_to += st.time_us[t];
    any = true;
  }
  if (!any || !(at_from > 0) || !(at_to > 0)) return std::nullopt;
  return std::make_pair(at_from, at_to);
}

Profile::ShapeTierTime Profile::shape_time(uint64_t exact_key, int tier) const {
  std::lock_guard lock(mu_);
  const int t = std::clamp(tier, 0, kNumTiers - 1);
  auto it = shape_times_.find(exact_key);
  if (it == shape_times_.end()) return {};
  const ShapeTimes& st = it->second;
  if (st.quiet_timed[t] >= 2)
    return {st.seen[t], st.quiet_timed[t], st.quiet_time_us[t] / static_cast<double>(st.quiet_timed[t]), true};
  return {st.seen[t], st.timed[t], st.timed[t] ? st.time_us[t] / static_cast<double>(st.timed[t]) : -1.0, false};
}

void Profile::on_model_call() {
  std::lock_guard lock(mu_);
  model_call_locked();
}

void Profile::model_call_locked() {
  ++model_calls_;
  if (++window_model_calls_ < options_.model_window) return;
  double x = static_cast<double>(window_calls_);
  n_expected_ = have_window_ ? options_.ewma_alpha * n_expected_ + (1 - options_.ewma_alpha) * x : x;
  have_window_ = true;
  window_model_calls_ = 0;
  window_calls_ = 0;
}

void Profile::mark_dynamic(size_t flat) {
  std::lock_guard lock(mu_);
  dims_.mark_dynamic(flat);
}

void Profile::clear_guard_failures() {
  std::lock_guard lock(mu_);
  std::fill(failed_dim_ring_.begin(), failed_dim_ring_.end(), kNoFailure);
}

uint64_t Profile::calls() const {
  std::lock_guard lock(mu_);
  return calls_;
}

uint64_t Profile::calls_at_tier(int tier) const {
  std::lock_guard lock(mu_);
  return tier >= 0 && tier < kNumTiers ? tier_calls_[tier] : 0;
}

double Profile::total_time_us() const {
  std::lock_guard lock(mu_);
  return total_time_us_;
}

double Profile::mean_time_us(int tier) const {
  std::lock_guard lock(mu_);
  if (tier < 0 || tier >= kNumTiers || tier_calls_[tier] == 0) return -1;
  return tier_time_us_[tier] / static_cast<double>(tier_calls_[tier]);
}

double Profile::bytes_moved() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

double Profile::bytes_at_tier(int tier) const {
  std::lock_guard lock(mu_);
  return tier >= 0 && tier < kNumTiers ? tier_bytes_[tier] : 0;
}

double Profile::us_per_byte(int tier) const {
  std::lock_guard lock(mu_);
  if (tier < 0 || tier >= kNumTiers || tier_calls_[tier] == 0 || !(tier_bytes_[tier] > 0)) return -1;
  return tier_time_us_[tier] / tier_bytes_[tier];
}

double Profile::flops() const {
  std::lock_guard lock(mu_);
  return flops_;
}

size_t Profile::recent_guard_failures() const {
  std::lock_guard lock(mu_);
  return static_cast<size_t>(std::count_if(failed_dim_ring_.begin(), failed_dim_ring_.end(),
                                           [](int d) { return d != kNoFailure; }));
}

double Profile::guard_failure_rate() const {
  return static_cast<double>(recent_guard_failures()) /
         static_cast<double>(failed_dim_ring_.size());
}

std::vector<int> Profile::drifting_dims() const {
  std::vector<int> out;
  {
    std::lock_guard lock(mu_);
    for (int d : failed_dim_ring_) {
      if (d >= 0) out.push_back(d);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

double Profile::expected_calls() const {
  std::lock_guard lock(mu_);
  if (have_window_) return n_expected_;
  if (window_model_calls_ == 0) return static_cast<double>(window_calls_);
  return static_cast<double>(window_calls_) * static_cast<double>(options_.model_window) /
         static_cast<double>(window_model_calls_);
}

uint64_t Profile::model_calls() const {
  std::lock_guard lock(mu_);
  return model_calls_;
}

double Profile::recent_share(uint64_t exact_key) const {
  std::lock_guard lock(mu_);
  return dims_.share(exact_key);
}

DimTracker Profile::dims() const {
  std::lock_guard lock(mu_);
  return dims_;
}

}  // namespace tierjit::runtime
