// How busy the machine's other processes keep its cores, sampled from /proc/stat at most every
// 100 ms: kernels use it to decide whether a mid-sized product may wake a second thread. On an
// idle 2-core machine two threads made mlp's 1x256 layers 25% faster (0.025 -> 0.019 ms per
// call); with one foreign busy process the same calls took 4x longer (the team waits for a
// descheduled thread). Measuring each kernel's two choices instead did not work: a parallel call
// after serial ones pays a sleeping thread's wake-up (40-70 us, vs 6-11 us serial), so only a
// steady choice shows its real cost (docs/performance.md, "Thread choice").
#pragma once

#include <cstdint>

namespace tierjit::support {

/// Cores' worth of CPU time used by processes other than this one over the last sampling period
/// (>= 100 ms, refreshed lazily by the calls themselves). E.g. 1.0 when another process keeps one
/// core busy. The first call of a process, which has no period to measure over, answers the
/// tasks of other processes running on the machine at that instant (/proc/stat's procs_running
/// minus this process's threads in state R), until the first period ends. 0 when /proc/stat
/// cannot be read.
/// Thread-safe and cheap (one relaxed atomic load, plus a /proc/stat read every 100 ms).
/// The environment variable TIERJIT_FOREIGN_LOAD=<cores>, a finite decimal number >= 0, replaces
/// the measurement (e.g. 0 on a machine whose cores are the server's alone); another value is
/// ignored with a warning.
double foreign_busy_cores();

/// Tasks running or runnable on the whole machine at this instant (/proc/stat's procs_running,
/// the caller included), or -1 when it cannot be read.
int procs_running_now();

/// Threads of this process running or runnable at this instant (state R in
/// /proc/self/task/*/stat, the caller included), or -1 when they cannot be read.
int own_threads_running_now();

/// Makes foreign_busy_cores() answer `cores` from now on (tests: to force the parallel or the
/// serial path of a kernel); a negative value returns to TIERJIT_FOREIGN_LOAD or measuring.
void override_foreign_busy_cores(double cores);

/// Cores this process may run on (its CPU affinity mask; at least 1).
int usable_cores();

/// Marks the calling thread busy with background work of this process (a CompileQueue worker
/// compiling) for the object's lifetime: such a thread occupies a core that an intra-op team
/// would otherwise get, so spare_cores_for counts it. (On 2 cores, mlp's long trace at 2 threads
/// spent 40% of its wall time in team threads waiting for a core held by a compile.)
class BackgroundBusy {
 public:
  BackgroundBusy();
  ~BackgroundBusy();
  BackgroundBusy(const BackgroundBusy&) = delete;
  BackgroundBusy& operator=(const BackgroundBusy&) = delete;
};

/// Threads of this process inside a BackgroundBusy scope now.
int background_busy_threads();
/// BackgroundBusy scopes entered so far (process lifetime): with background_busy_threads() read
/// before and after a piece of work, tells whether any background work overlapped it.
uint64_t background_busy_starts();

/// Whether background work of this process overlapped an interval: constructed at its start,
/// quiet() at its end is true when no BackgroundBusy scope was open at either end and none
/// began in between.
class BackgroundQuiet {
 public:
  BackgroundQuiet() : starts_(background_busy_starts()), idle_(background_busy_threads() == 0) {}
  bool quiet() const { return idle_ && background_busy_threads() == 0 && background_busy_starts() == starts_; }

 private:
  uint64_t starts_;
  bool idle_;
};

/// True when `threads` threads of this process can run at once without displacing other
/// processes' work or this process's background compiles: foreign_busy_cores() +
/// background_busy_threads() <= usable_cores() - threads + 0.5 (half a core of foreign work is
/// tolerated, e.g. a shell, a monitoring daemon).
bool spare_cores_for(int threads);

/// The team a kernel asking for `requested` threads gets now: min(requested, usable_cores())
/// when spare_cores_for that many, else 1 (also for requested <= 1). More threads than cores
/// only make a team wait for its own members.
int team_for(int requested);

}  // namespace tierjit::support
