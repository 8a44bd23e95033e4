// SteadyClock and the process-wide default clock.
#include "runtime/clock.h"

#include <chrono>

namespace tierjit::runtime {

int64_t SteadyClock::now_us() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const Clock& steady_clock() {
  static const SteadyClock clock;
  return clock;
}

}  // namespace tierjit::runtime
