// Process settings tierjit's own front ends (the `tierjit` CLI and the Python module) apply for
// serving; the library itself changes no process-wide setting, so an embedding program keeps
// its own. Measured on this 2-core machine under load (docs/performance.md, "Tier 0"):
//  - OpenMP: libgomp's default wait policy spins idle threads for ~300k iterations; on a shared
//    machine that cost mlp 2.5-19 s instead of 0.15-0.55 s over a 500-request trace at 2
//    threads. PASSIVE threads sleep at once, and then every parallel region pays a futex wake
//    (40-90 us on this 2-vCPU VM: convnet_small's batch-1 call 35 -> 124 us from Python). The
//    front ends spin GOMP_SPINCOUNT=10000 iterations (~0.3 ms; one iteration is a `pause`,
//    ~28 ns on Zen 3) before sleeping. Session 3 chose 1000 (~28 us), measured in the CLI's
//    loop; from a Python loop the gap between two requests (the interpreter's own work plus a
//    request's serial kernels, 30-60 us) outlasted it, so each request's first parallel region
//    woke a sleeping thread: convnet_small's long Zipf trace through bench/peers/run_one.py took
//    4,276 ms best of 3 at 1000 against 3,255 at 10,000 and 3,430 at 100,000 (ONNX Runtime
//    3,460 in the same alternation; batch 1 p50 99 vs 61 us), mlp and bert_tiny within noise.
//    The cost: with one foreign busy process the longer spin took mlp / convnet_small's
//    500-request traces 187 / 308 ms against 152 / 286 at 1000 (best of 3). Servers usually own
//    their cores, so the default is the 0.3 ms spin; OMP_WAIT_POLICY=passive (or
//    GOMP_SPINCOUNT=1000) is the choice for contended machines. libgomp reads these variables
//    when it loads (before main), so the CLI re-executes itself once with GOMP_SPINCOUNT set.
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
/// iterations (~0.3 ms on Zen 3) after a parallel region, then sleep. python/tierjit/__init__.py
/// sets the same value (it must do so before the extension loads libgomp).
inline constexpr const char* kServingSpinCount = "10000";

/// If openmp_wait_policy_unset(), sets GOMP_SPINCOUNT=kServingSpinCount and re-executes this
/// program (/proc/self/exe) with the same arguments; returns only when no re-exec happened
/// (already set by the user, already re-executed, or exec failed — then the program goes on).
void reexec_with_serving_openmp(char** argv);

/// mallopt(M_MMAP_THRESHOLD, 32 MiB) and mallopt(M_TRIM_THRESHOLD, 256 MiB), unless the user set
/// MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ (glibc's own variables).
void set_malloc_for_serving();

}  // namespace tierjit::support
