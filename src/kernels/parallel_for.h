// parallel_for_if: the tier-0 kernels' loop that runs on an OpenMP team only when the work is
// large enough. A `#pragma omp parallel for ... if (cond)` enters an OpenMP region even when
// cond is false (libgomp then allocates and frees a team of one, ~1.5 KiB, and runs the body
// through it), which costs a small node more than its arithmetic.
//
// parallel_for_stealing: the same loop for the heavy kernels, where one thread's share of a
// static split can be late (a virtual CPU shared with another guest, a core running another
// process): each thread starts on its static share and then takes the untouched items of the
// others' shares, so a late thread holds the call up by at most one item.
#pragma once

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>

namespace tierjit::kernels {

/// One thread's work (ns) from which a kernel that knows its cost per element splits it over
/// the team: a parallel region costs 1-3 us on this 2-core machine when the team is still
/// spinning from the last one (GOMP_SPINCOUNT, support/serving_defaults.h), more when it
/// must be woken (parallel_for_stealing lets the calling thread take a late thread's items).
inline constexpr double kParallelMinNs = 8000;

/// True when `threads` > 1 and `elements` at `ns_per_element` on one thread (measured per
/// kernel on AVX2, the slower of the two instruction sets; AVX-512 splits a little early) take
/// at least kParallelMinNs.
inline bool worth_parallel(int threads, int64_t elements, double ns_per_element) {
  return threads > 1 && static_cast<double>(elements) * ns_per_element >= kParallelMinNs;
}

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

/// Calls body(i) exactly once for every i in [0, n), on min(threads, n) OpenMP threads (on the
/// calling thread alone when that is 1). Thread t first runs its contiguous share
/// [n*t/T, n*(t+1)/T) in order (the same share every call, so its data stays in that core's
/// cache), then items not yet started from the other shares, each claimed by one atomic add.
/// A team smaller than asked (nested parallelism, OMP_THREAD_LIMIT) still runs every item.
/// Items must be independent; `body` must not throw.
template <class F>
inline void parallel_for_stealing(int threads, int64_t n, const F& body) {
  const int used = static_cast<int>(std::min<int64_t>(std::max(threads, 1), n));
  if (used <= 1) {
    for (int64_t i = 0; i < n; ++i) body(i);
    return;
  }
  struct alignas(64) Share {  // one cache line each: the owner's adds do not slow the others
    std::atomic<int64_t> next{0};
    int64_t end = 0;
  };
  // Teams of up to kStackShares threads (every usual one) keep their shares on the stack.
  constexpr int kStackShares = 16;
  Share stack_shares[kStackShares];
  const std::unique_ptr<Share[]> heap_shares(used > kStackShares ? new Share[used] : nullptr);
  Share* const shares = heap_shares ? heap_shares.get() : stack_shares;
  for (int s = 0; s < used; ++s) {
    shares[s].next.store(n * s / used, std::memory_order_relaxed);
    shares[s].end = n * (s + 1) / used;
  }
#pragma omp parallel num_threads(used)
  {
    const int t = omp_get_thread_num();
    for (int v = 0; v < used; ++v) {
      Share& share = shares[(t + v) % used];
      for (int64_t i = share.next.fetch_add(1, std::memory_order_relaxed); i < share.end;
           i = share.next.fetch_add(1, std::memory_order_relaxed))
        body(i);
    }
  }
}

}  // namespace tierjit::kernels
