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

size_t DimTracker::find(uint64_t key) const {
  const uint64_t* k = keys_.data();
  for (size_t i = 0; i < shapes_; ++i)
    if (k[i] == key) return i;
  return shapes_;
}

bool DimTracker::observe(const Signature& sig, uint64_t key) {
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
  if (filled_ == window_) {  // the oldest call leaves the window
    const size_t i = find(ring_[pos_]);
    if (i < shapes_ && --counts_[i] == 0) {  // its shape too: the last entry takes its place
      const size_t last = --shapes_;
      if (i != last) {
        std::swap(keys_[i], keys_[last]);
        std::swap(counts_[i], counts_[last]);
        std::swap(last_seen_[i], last_seen_[last]);
        std::swap(signatures_[i], signatures_[last]);
      }
    }
  } else {
    ++filled_;
  }
  ring_[pos_] = key;
  pos_ = (pos_ + 1) % window_;
  size_t i = find(key);
  if (i == shapes_) {
    if (shapes_ == keys_.size()) {
      keys_.push_back(0);
      counts_.push_back(0);
      last_seen_.push_back(0);
      signatures_.emplace_back();
    }
    ++shapes_;
    keys_[i] = key;
    counts_[i] = 0;
    signatures_[i] = sig;  // reuses the slot's storage
  }
  ++counts_[i];
  last_seen_[i] = calls_;
  return changed;
}

void DimTracker::mark_dynamic(size_t flat) {
  if (flat < dynamic_.size()) dynamic_[flat] = 1;
}

bool DimTracker::any_dynamic() const {
  return std::any_of(dynamic_.begin(), dynamic_.end(), [](uint8_t d) { return d != 0; });
}

double DimTracker::share(uint64_t exact_key) const {
  const size_t i = find(exact_key);
  if (i == shapes_ || filled_ == 0) return 0.0;
  return static_cast<double>(counts_[i]) / static_cast<double>(filled_);
}

std::vector<ShapeShare> DimTracker::recent_shapes() const {
  std::vector<size_t> order(shapes_);
  for (size_t i = 0; i < shapes_; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (counts_[a] != counts_[b]) return counts_[a] > counts_[b];
    return last_seen_[a] > last_seen_[b];
  });
  std::vector<ShapeShare> out;
  out.reserve(shapes_);
  for (size_t i : order)
    out.push_back({signatures_[i], keys_[i], static_cast<size_t>(counts_[i]),
                   static_cast<double>(counts_[i]) / static_cast<double>(filled_)});
  return out;
}

}  // namespace tierjit::runtime
