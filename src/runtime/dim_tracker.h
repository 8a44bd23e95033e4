// DimTracker: per Region, which input dims are static and which dynamic (DESIGN.md "Which shapes
// get which code": a dim is static until it takes a second distinct value, then dynamic), and the
// shape histogram of the recent calls (a window of 64) that gives each shape's share for θ_spec.
// Not thread-safe by itself: Profile owns one under its mutex.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runtime/signature.h"

namespace tierjit::runtime {

/// Calls in the shape histogram window (DESIGN.md: "the last 64 calls").
inline constexpr size_t kShapeWindow = 64;

/// One shape of the recent calls and its share.
struct ShapeShare {
  Signature signature;
  uint64_t key = 0;  ///< exact key
  size_t count = 0;  ///< calls with this shape in the window
  double share = 0;  ///< count / calls in the window
};

class DimTracker {
 public:
  explicit DimTracker(size_t window = kShapeWindow);

  /// Records one call's signature. The first call fixes the layout (inputs and ranks) and every
  /// dim's static value; a later call with another value turns that dim dynamic; a call with
  /// another layout turns every dim dynamic. Returns true when some dim turned dynamic.
  bool observe(const Signature& sig) { return observe(sig, sig.exact_key()); }
  /// The same with sig.exact_key() already computed (a Plan keeps each region's key).
  bool observe(const Signature& sig, uint64_t exact_key);
  /// Marks a dim dynamic (demotion: a drifting dim). Out-of-range indices are ignored.
  void mark_dynamic(size_t flat);

  uint64_t calls() const { return calls_; }
  size_t num_dims() const { return dynamic_.size(); }
  bool is_dynamic(size_t flat) const { return flat < dynamic_.size() && dynamic_[flat] != 0; }
  /// One byte per flat dim (1 = dynamic): the `dynamic` argument of Signature::class_key and
  /// Specialization::shape_class.
  std::span<const uint8_t> dynamic_mask() const { return dynamic_; }
  bool any_dynamic() const;
  /// The value every call so far had for a static dim (the first call's value for a dynamic one).
  int64_t first_value(size_t flat) const { return first_.flat_dim(flat); }
  /// The first call's signature (the layout), empty before any call.
  const Signature& layout() const { return first_; }

  /// Calls in the window (min(calls, window)).
  size_t window_calls() const { return filled_; }
  /// Share of the window's calls with exact key `exact_key` (0 when none).
  double share(uint64_t exact_key) const;
  /// The window's shapes, most frequent first (ties: most recent first).
  std::vector<ShapeShare> recent_shapes() const;

 private:
  // The window's distinct shapes as parallel arrays, entries [0, shapes_) in use: a linear scan
  // of at most `window_` keys, and no allocation per call once the arrays have grown (a call
  // with a new shape copies its signature into a slot whose storage an evicted shape left).
  // An unordered_map here allocated and freed a node and a Signature per shape entering and
  // leaving the window: with bert_tiny's 40 shapes that was most calls of every region.
  size_t find(uint64_t key) const;  // index in keys_, or shapes_
  size_t window_;
  uint64_t calls_ = 0;
  Signature first_;
  std::vector<uint8_t> dynamic_;
  std::vector<uint64_t> ring_;  // exact keys of the last `window_` calls
  size_t pos_ = 0, filled_ = 0;
  size_t shapes_ = 0;
  std::vector<uint64_t> keys_, counts_, last_seen_;
  std::vector<Signature> signatures_;
};

}  // namespace tierjit::runtime
