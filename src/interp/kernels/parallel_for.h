// parallel_for_if: the tier-0 kernels' loop that runs on an OpenMP team only when the work is
// large enough. A `#pragma omp parallel for ... if (cond)` enters an OpenMP region even when
// cond is false (libgomp then allocates and frees a team of one, ~1.5 KiB, and runs the body
// through it), which costs a small node more than its arithmetic.
#pragma once

#include <cstdint>

namespace tierjit::interp {

/// Calls body(i) for every i in [0, n): split over `threads` OpenMP threads (static schedule) when
/// `parallel` and threads > 1, else a plain loop on the calling thread with no OpenMP region.
template <class F>
inline void parallel_for_if(bool parallel, int threads, int64_t n, const F& body) {
  if (!parallel || threads <= 1) {
    for (int64_t i = 0; i < n; ++i) body(i);
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < n; ++i) body(i);
}

}  // namespace tierjit::interp
