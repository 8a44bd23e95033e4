// DimTracker: static/dynamic dims and the recent-shape histogram.
#include "runtime/dim_tracker.h"

#include <algorithm>
#include <cstdint>

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

size_t DimTracker::find(uint64_t key) {
  const size_t hint = index_[key % kIndexSize];
  if (hint < shapes_ && slots_[hint].key == key) return hint;
  for (size_t i = 0; i < shapes_; ++i)
    if (slots_[i].key == key) {
      if (i <= UINT8_MAX) index_[key % kIndexSize] = static_cast<uint8_t>(i);
      return i;
    }
  return shapes_;
}

void DimTracker::remove(size_t i) {
  const size_t last = --shapes_;
  if (i == last) return;
  slots_[i] = slots_[last];
  std::swap(signatures_[i], signatures_[last]);
  if (i <= UINT8_MAX) index_[slots_[i].key % kIndexSize] = static_cast<uint8_t>(i);
  for (uint32_t& r : ring_)  // the calls of the moved shape (a shape leaving is the rarer event)
    if (r == last) r = static_cast<uint32_t>(i);
}

bool DimTracker::observe(const Signature& sig, uint64_t key) {
  bool changed = false;
  if (filled_ == window_) {  // the oldest call leaves the window, its shape too when it was the last
    const size_t old = ring_[pos_];
    if (old < shapes_ && --slots_[old].count == 0) remove(old);
  } else {
    ++filled_;
  }
  size_t i = calls_ == 0 ? shapes_ : find(key);
  if (i == shapes_) {  // a shape not in the window: its dims against the first call's
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
    if (shapes_ == slots_.size()) {
      slots_.emplace_back();
      signatures_.emplace_back();
    }
    i = shapes_++;
    slots_[i] = Slot{key, 0, 0};
    signatures_[i] = sig;  // reuses the slot's storage
    if (i <= UINT8_MAX) index_[key % kIndexSize] = static_cast<uint8_t>(i);
  }
  ++calls_;
  ++slots_[i].count;
  slots_[i].last_seen = calls_;
  ring_[pos_] = static_cast<uint32_t>(i);
  pos_ = (pos_ + 1) % window_;
  return changed;
}

void DimTracker::mark_dynamic(size_t flat) {
  if (flat < dynamic_.size()) dynamic_[flat] = 1;
}

bool DimTracker::any_dynamic() const {
  return std::any_of(dynamic_.begin(), dynamic_.end(), [](uint8_t d) { return d != 0; });
}

double DimTracker::share(uint64_t exact_key) const {
  if (filled_ == 0) return 0.0;
  for (size_t i = 0; i < shapes_; ++i)
    if (slots_[i].key == exact_key)
      return static_cast<double>(slots_[i].count) / static_cast<double>(filled_);
  return 0.0;
}

std::vector<ShapeShare> DimTracker::recent_shapes() const {
  std::vector<size_t> order(shapes_);
  for (size_t i = 0; i < shapes_; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (slots_[a].count != slots_[b].count) return slots_[a].count > slots_[b].count;
    return slots_[a].last_seen > slots_[b].last_seen;
  });
  std::vector<ShapeShare> out;
  out.reserve(shapes_);
  for (size_t i : order)
    out.push_back({signatures_[i], slots_[i].key, static_cast<size_t>(slots_[i].count),
                   static_cast<double>(slots_[i].count) / static_cast<double>(filled_)});
  return out;
}

}  // namespace tierjit::runtime
