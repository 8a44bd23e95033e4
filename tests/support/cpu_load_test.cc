// support/cpu_load: foreign load counts other processes' CPU time and not this process's.
#include "support/cpu_load.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <chrono>
#include <string>
#include <thread>

namespace tierjit::support {
namespace {

// Calls foreign_busy_cores() for `ms` milliseconds (the sample refreshes every 100 ms) and
// returns its last answer, which covers the last full period.
double foreign_after(int ms) {
  double v = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end) {
    v = foreign_busy_cores();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return foreign_busy_cores() > v ? foreign_busy_cores() : v;
}

TEST(CpuLoad, UsableCoresIsPositive) { EXPECT_GE(usable_cores(), 1); }

TEST(CpuLoad, BusyChildProcessIsForeign) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    volatile unsigned long x = 0;
    for (;;) x = x + 1;  // spins until killed
  }
  const double busy = foreign_after(350);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  // The child keeps one core busy: at least most of a core is foreign (more if others run).
  EXPECT_GE(busy, 0.6);
  EXPECT_FALSE(spare_cores_for(usable_cores() + 1));  // never more threads than cores
}

// team_for caps a request at the usable cores (more threads than cores would wait for each
// other), and gives one thread while the spare cores are taken.
TEST(CpuLoad, TeamForCapsAtTheCoresAndFollowsTheLoad) {
  const int cores = usable_cores();
  override_foreign_busy_cores(0);
  EXPECT_EQ(team_for(0), 1);
  EXPECT_EQ(team_for(1), 1);
  EXPECT_EQ(team_for(2), std::min(2, cores));
  EXPECT_EQ(team_for(cores + 3), cores);
  EXPECT_EQ(team_for(1 << 20), cores);
  override_foreign_busy_cores(cores);  // every core busy elsewhere
  EXPECT_EQ(team_for(2), 1);
  EXPECT_EQ(team_for(cores + 3), 1);
  override_foreign_busy_cores(-1);
}

// Busy seconds of all cores since boot, from /proc/stat's first line (as the library reads it).
double machine_busy_seconds() {
  std::FILE* f = std::fopen("/proc/stat", "r");
  if (!f) return -1;
  unsigned long long v[8] = {};
  const int n = std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                            &v[3], &v[4], &v[5], &v[6], &v[7]);
  std::fclose(f);
  if (n < 4) return -1;
  return static_cast<double>(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) /
         static_cast<double>(sysconf(_SC_CLK_TCK));
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Other processes' load may change between the library's sample window and the test's (CI runs
// a ThreadSanitizer test beside this one): up to 3 attempts, one within the bound passes. Were
// the spinner counted as foreign, every attempt would be ~0.5 core over it.
TEST(CpuLoad, OwnThreadsAreNotForeign) {
  std::string why;
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::atomic<bool> stop{false};
    std::thread spinner([&] {
      volatile unsigned long x = 0;
      while (!stop.load(std::memory_order_relaxed)) x = x + 1;
    });
    (void)foreign_after(150);  // a sample boundary inside the spinning window
    const double b0 = machine_busy_seconds(), c0 = process_cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    const double foreign = foreign_after(250);
    const double b1 = machine_busy_seconds(), c1 = process_cpu_seconds();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    stop = true;
    spinner.join();
    if (b0 < 0) GTEST_SKIP() << "/proc/stat unreadable";
    EXPECT_GE(foreign, 0.0);
    // The whole machine was busy `all` cores' worth, this process `own` of them (the spinner):
    // the foreign share leaves `own` out. Tolerance: the library's sample windows are not this
    // window.
    const double all = (b1 - b0) / wall, own = (c1 - c0) / wall;
    if (foreign <= all - 0.5 * own + 0.1) return;
    why += "attempt " + std::to_string(attempt) + ": foreign " + std::to_string(foreign) +
           ", machine busy " + std::to_string(all) + " cores, own " + std::to_string(own) + "; ";
  }
  ADD_FAILURE() << why;
}

// The instant counts behind a process's first load reading: the machine's running tasks include
// this process's, and a spinning thread of ours is one of its own running threads (state R while
// it runs or waits for a core), so it is subtracted from the machine's count, never foreign.
TEST(CpuLoad, InstantCountsSeeOwnRunningThreads) {
  const int alone = own_threads_running_now();
  if (alone < 0 || procs_running_now() < 0) GTEST_SKIP() << "/proc unreadable";
  EXPECT_GE(alone, 1);  // the caller
  std::atomic<bool> stop{false}, started{false};
  std::thread spinner([&] {
    started = true;
    volatile unsigned long x = 0;
    while (!stop.load(std::memory_order_relaxed)) x = x + 1;
  });
  while (!started) std::this_thread::yield();
  const int own = own_threads_running_now();
  const int machine = procs_running_now();
  stop = true;
  spinner.join();
  EXPECT_GE(own, 2);  // the caller and the spinner
  EXPECT_GE(machine, 1);
}

// BackgroundQuiet: quiet when no BackgroundBusy scope was open at the interval's start or end
// and none began in between (a compile that started and finished during a call counts).
TEST(CpuLoad, BackgroundQuietSeesAnyOverlappingBusyScope) {
  {
    const BackgroundQuiet q;
    EXPECT_TRUE(q.quiet());
  }
  {
    const BackgroundQuiet q;
    { const BackgroundBusy busy; }  // began and ended inside the interval
    EXPECT_FALSE(q.quiet());
  }
  {
    const BackgroundBusy busy;
    const BackgroundQuiet q;  // open at the start
    EXPECT_FALSE(q.quiet());
  }
  {
    const BackgroundQuiet q;
    const BackgroundBusy busy;  // open at the end
    EXPECT_FALSE(q.quiet());
  }
  EXPECT_TRUE(BackgroundQuiet().quiet());
}

}  // namespace
}  // namespace tierjit::support
