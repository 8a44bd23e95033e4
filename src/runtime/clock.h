// Clock: the time source of the adaptive runtime (profile, tier policy, decision log), in
// microseconds. SteadyClock reads std::chrono::steady_clock; FakeClock is set by tests so that
// policy decisions and logs are deterministic (STYLE.md: "runtime tests with a fake clock").
#pragma once

#include <atomic>
#include <cstdint>

namespace tierjit::runtime {

/// A monotonic time source. now_us() is thread-safe and never decreases.
class Clock {
 public:
  virtual ~Clock() = default;
  /// Microseconds since an arbitrary epoch fixed for the clock's lifetime.
  virtual int64_t now_us() const = 0;
};

/// std::chrono::steady_clock in µs.
class SteadyClock final : public Clock {
 public:
  int64_t now_us() const override;
};

/// The process-wide SteadyClock (the default clock of every runtime component).
const Clock& steady_clock();

/// A clock that only moves when told to; starts at `start_us`. Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t start_us = 0) : now_(start_us) {}
  int64_t now_us() const override { return now_.load(std::memory_order_acquire); }
  /// Moves the clock forward by `delta_us` µs (negative values are ignored: time never goes back).
  void advance_us(int64_t delta_us) {
    if (delta_us > 0) now_.fetch_add(delta_us, std::memory_order_acq_rel);
  }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace tierjit::runtime
