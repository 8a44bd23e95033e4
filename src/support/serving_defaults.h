// Process settings tierjit's own front ends (the `tierjit` CLI and the Python module) apply for
// serving; the library itself changes no process-wide setting, so an embedding program keeps
// its own. Measured on this 2-core machine under load (docs/performance.md, "Tier 0"):
//  - OpenMP: libgomp's default wait policy spins idle threads for ~300k iterations; on a shared
//    machine that cost mlp 2.5-19 s instead of 0.15-0.55 s over a 500-request trace at 2
//    threads. PASSIVE threads sleep at once, and then every parallel region pays a futex wake:
//    on a quiet machine bert_tiny / mlp / convnet_small's Zipf traces took 868-885 / 47 /
//    207-219 ms passive and 685-713 / 39-40 / 133-164 ms with a short spin (GOMP_SPINCOUNT=1000,
//    ~ONNX Runtime's spin-then-block); with one foreign busy process the short spin cost
//    +15-35% (1228-1296 / 59-60 / 270-276 vs 920-1020 / 46-59 / 217-251 ms). Servers usually own
//    their cores, so the default is the short spin; OMP_WAIT_POLICY=passive is the choice for
//    contended machines. libgomp reads these variables when it loads (before main), so the CLI
//    re-executes itself once with GOMP_SPINCOUNT set.
//  - glibc malloc: per-request tensors above the dynamic mmap threshold page-fault fresh mmaps on
//    every call (24-31% of tier-0 samples on convnet_small and bert_tiny); a fixed 32 MiB mmap
//    threshold and 256 MiB trim threshold keep them on reused heap pages. Since tensor buffers
//    of 128 KiB and more come from tierjit's own pool (support/buffer_pool.h: reused, bounded,
//    off the heap, in every embedding of the library), this setting only covers the other large
//    temporaries (kernels' scratch vectors, oneDNN's buffers). The Session does not apply it:
//    the library changes no process-wide setting (docs/runtime.md, "Memory under shape churn").
#pragma once

namespace tierjit::support {

/// True when the user set neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT (tierjit may choose).
bool openmp_wait_policy_unset();

/// The spin count tierjit's front ends give libgomp: idle team threads spin this many
/// iterations (a few microseconds) after a parallel region, then sleep.
inline constexpr const char* kServingSpinCount = "1000";

/// If openmp_wait_policy_unset(), sets GOMP_SPINCOUNT=kServingSpinCount and re-executes this
/// program (/proc/self/exe) with the same arguments; returns only when no re-exec happened
/// (already set by the user, already re-executed, or exec failed — then the program goes on).
void reexec_with_serving_openmp(char** argv);

/// mallopt(M_MMAP_THRESHOLD, 32 MiB) and mallopt(M_TRIM_THRESHOLD, 256 MiB), unless the user set
/// MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ (glibc's own variables).
void set_malloc_for_serving();

}  // namespace tierjit::support
