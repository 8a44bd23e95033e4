// The kernels' parallel loops (kernels/parallel_for.h): kernels::parallel_for_if visits every index
// once on both of its paths; kernels::parallel_for_stealing runs every
// item exactly once for any item and thread count (more threads than items, none, a team
// smaller than asked inside another parallel region), and a late thread's share is taken over
// by the others; kernels::worth_parallel compares one thread's estimated time with kernels::kParallelMinNs.
#include "kernels/parallel_for.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace tierjit::kernels {
namespace {

TEST(ParallelForIf, VisitsEveryIndexOnceOnEitherPath) {
  for (bool parallel : {false, true})
    for (int threads : {1, 2, 3})
      for (int64_t n : {0, 1, 7, 1000}) {
        std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
        kernels::parallel_for_if(parallel, threads, n, [&](int64_t i) { seen[static_cast<size_t>(i)]++; });
        int wrong = 0;
        for (auto& s : seen) wrong += s.load() != 1;
        EXPECT_EQ(wrong, 0) << "parallel " << parallel << ", " << threads << " threads, n " << n;
      }
}

TEST(ParallelForStealing, RunsEveryItemOnce) {
  for (int64_t n : {0, 1, 2, 3, 7, 64, 1001})
    for (int threads : {0, 1, 2, 3, 8, 16, 17, 40}) {  // above 16: shares on the heap
      SCOPED_TRACE(::testing::Message() << "n=" << n << " threads=" << threads);
      std::vector<std::atomic<int>> runs(static_cast<size_t>(n));
      kernels::parallel_for_stealing(threads, n, [&](int64_t i) { runs[static_cast<size_t>(i)]++; });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(runs[static_cast<size_t>(i)].load(), 1) << "item " << i;
    }
}

TEST(ParallelForStealing, ATeamOfOneInsideAParallelRegionRunsEveryItem) {
  const int nested = omp_get_max_active_levels();
  omp_set_max_active_levels(1);  // the inner region gets one thread
  constexpr int64_t kItems = 50;
  std::vector<std::atomic<int>> runs(2 * kItems);
#pragma omp parallel num_threads(2)
  {
    const int64_t base = omp_get_thread_num() * kItems;
    kernels::parallel_for_stealing(4, kItems, [&](int64_t i) { runs[static_cast<size_t>(base + i)]++; });
  }
  omp_set_max_active_levels(nested);
  for (size_t i = 0; i < runs.size(); ++i) ASSERT_EQ(runs[i].load(), 1) << "item " << i;
}

TEST(ParallelForStealing, ALateThreadsShareIsTakenOver) {
  // Shares of 500. Thread 0 waits on its first item until thread 1 has started (so thread 0
  // cannot simply run everything before thread 1 wakes); thread 1 is then held on its first
  // item until thread 0 has run 7/8 of all items (its own share and most of thread 1's: only
  // stealing gets it there). Both waits spin on atomics, not sleeps, so the result does not
  // depend on the scheduler; each is bounded (10 s) so a broken loop fails instead of hanging.
  constexpr int64_t kItems = 1000;
  constexpr int64_t kHoldUntil = kItems - kItems / 8;
  std::vector<int> by(kItems, -1);
  std::atomic<int> team{1};
  std::atomic<bool> first0{false}, held{false}, timed_out{false};
  std::atomic<int64_t> by_first{0};
  auto spin_until = [&](auto done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done()) {
      if (std::chrono::steady_clock::now() >= deadline) {
        timed_out = true;
        return;
      }
      std::this_thread::yield();
    }
  };
  kernels::parallel_for_stealing(2, kItems, [&](int64_t i) {
    const int t = omp_get_thread_num();
    team = omp_get_num_threads();
    if (team.load() > 1 && t == 0 && !first0.exchange(true))
      spin_until([&] { return held.load(); });
    if (t == 1 && !held.exchange(true)) spin_until([&] { return by_first.load() >= kHoldUntil; });
    by[static_cast<size_t>(i)] = t;
    if (t == 0) ++by_first;
  });
  int64_t by_late = 0;
  for (int t : by) {
    ASSERT_GE(t, 0);
    by_late += t == 1;
  }
  if (team.load() < 2) GTEST_SKIP() << "the OpenMP team had one thread";
  EXPECT_FALSE(timed_out.load()) << "thread 0 did not take over thread 1's share";
  // Thread 1 runs its held item and at most the kItems / 8 - 1 left after it resumes.
  EXPECT_LT(by_late, kItems / 4) << "thread 0 should have run most of thread 1's share";
}

TEST(WorthParallel, ComparesOneThreadsTimeWithTheMinimum) {
  EXPECT_FALSE(kernels::worth_parallel(1, int64_t{1} << 30, 1.0));  // one thread: never
  EXPECT_FALSE(kernels::worth_parallel(2, 7999, 1.0));
  EXPECT_TRUE(kernels::worth_parallel(2, 8000, 1.0));
  EXPECT_TRUE(kernels::worth_parallel(2, 30000, 0.32));
  EXPECT_FALSE(kernels::worth_parallel(2, 0, 1.0));
}

}  // namespace
}  // namespace tierjit::kernels
