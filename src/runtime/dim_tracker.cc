// DimTracker: static/dynamic dims and the recent-shape histogram.
#include "runtime/dim_tracker.h"

#include <algorithm>

namespace tierjit::runtime {

namespace {
bool same_ranks(const Signature& a, const Signature& b) {
  if (a.num_inputs() != b.num_inputs()) return false;
  for (size_t i = 0; i < a.num_inputs(); ++i) {
    if (a.rank(i) != b.rank(i)) return false;
  }
  return true;
}
}  // namespace

DimTracker::DimTracker(size_t window) : window_(std::max<size_t>(window, 1)), ring_(window_, 0) {}

bool DimTracker::observe(const Signature& sig) {
  bool changed = false;
  if (calls_ == 0) {
    first_ = sig;
    dynamic_.assign(sig.num_dims(), 0);
  } else if (!same_ranks(first_, sig)) {
    for (uint8_t& d : dynamic_) {
      changed |= d == 0;
      d = 1;
    }
  } else {
    for (size_t f = 0; f < dynamic_.size(); ++f) {
      if (dynamic_[f] == 0 && sig.flat_dim(f) != first_.flat_dim(f)) {
        dynamic_[f] = 1;
        changed = true;
      }
    }
  }
  ++calls_;
  uint64_t key = sig.exact_key();
  if (filled_ == window_) {
    auto it = histogram_.find(ring_[pos_]);
    if (it != histogram_.end() && --it->second.count == 0) histogram_.erase(it);
  } else {
    ++filled_;
  }
  ring_[pos_] = key;
  pos_ = (pos_ + 1) % window_;
  auto [it, inserted] = histogram_.try_emplace(key);
  if (inserted) it->second.signature = sig;
  ++it->second.count;
  it->second.last_seen = calls_;
  return changed;
}

void DimTracker::mark_dynamic(size_t flat) {
  if (flat < dynamic_.size()) dynamic_[flat] = 1;
}

bool DimTracker::any_dynamic() const {
  return std::any_of(dynamic_.begin(), dynamic_.end(), [](uint8_t d) { return d != 0; });
}

double DimTracker::share(uint64_t exact_key) const {
  auto it = histogram_.find(exact_key);
  if (it == histogram_.end() || filled_ == 0) return 0.0;
  return static_cast<double>(it->second.count) / static_cast<double>(filled_);
}

std::vector<ShapeShare> DimTracker::recent_shapes() const {
  std::vector<std::pair<uint64_t, const Entry*>> entries;
  for (const auto& [key, e] : histogram_) entries.emplace_back(key, &e);
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    if (a.second->count != b.second->count) return a.second->count > b.second->count;
    return a.second->last_seen > b.second->last_seen;
  });
  std::vector<ShapeShare> out;
  for (const auto& [key, e] : entries) {
    out.push_back({e->signature, key, e->count,
                   static_cast<double>(e->count) / static_cast<double>(filled_)});
  }
  return out;
}

}  // namespace tierjit::runtime
