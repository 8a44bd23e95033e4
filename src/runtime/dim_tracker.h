// DimTracker: per Region, which input dims are static and which dynamic (DESIGN.md "Which shapes
// get which code": a dim is static until it takes a second distinct value, then dynamic), and the
// shape histogram of the recent calls (a window of 64) that gives each shape's share for θ_spec.
// Not thread-safe by itself: Profile owns one under its mutex.
#pragma once

#include <array>
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
  // The window's distinct shapes, entries [0, shapes_) of slots_/signatures_ in use, found by a
  // one-line direct-mapped index (key % 64 -> entry) with a linear scan behind it; the ring
  // holds each recent call's entry index. A call whose shape is already in the window reads
  // ~4 cache lines here (the runtime records every region of every call, and after a large call
  // they are cold: with an unordered_map and a Signature copied per shape entering the window,
  // bert_tiny's small calls spent more time here than in some of their kernels), allocates
  // nothing, and skips the dims comparison (done when the shape entered). Windows above 256
  // calls stay correct, their entries past 255 found by the scan.
  struct Slot {
    uint64_t key = 0;
    uint64_t last_seen = 0;
    uint32_t count = 0;
  };
  static constexpr size_t kIndexSize = 64;
  size_t find(uint64_t key);  // entry index, or shapes_; refreshes the index on a scan hit
  void remove(size_t i);      // entry i left the window: the last entry takes its place
  size_t window_;
  uint64_t calls_ = 0;
  Signature first_;
  std::vector<uint8_t> dynamic_;
  std::vector<uint32_t> ring_;  // entry index of each of the last `window_` calls
  size_t pos_ = 0, filled_ = 0;
  size_t shapes_ = 0;
  std::vector<Slot> slots_;
  std::vector<Signature> signatures_;
  std::array<uint8_t, kIndexSize> index_{};
};

}  // namespace tierjit::runtime
