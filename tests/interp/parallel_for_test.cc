// The kernels' parallel loops (interp/kernels/parallel_for.h): parallel_for_if visits every index
// once on both of its paths; parallel_for_stealing runs every
// item exactly once for any item and thread count (more threads than items, none, a team
// smaller than asked inside another parallel region), and a late thread's share is taken over
// by the others; worth_parallel compares one thread's estimated time with kParallelMinNs.
#include "interp/kernels/parallel_for.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace tierjit::interp {
namespace {

TEST(ParallelForIf, VisitsEveryIndexOnceOnEitherPath) {
  for (bool parallel : {false, true})
    for (int threads : {1, 2, 3})
      for (int64_t n : {0, 1, 7, 1000}) {
        std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
        parallel_for_if(parallel, threads, n, [&](int64_t i) { seen[static_cast<size_t>(i)]++; });
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
      parallel_for_stealing(threads, n, [&](int64_t i) { runs[static_cast<size_t>(i)]++; });
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
    parallel_for_stealing(4, kItems, [&](int64_t i) { runs[static_cast<size_t>(base + i)]++; });
  }
  omp_set_max_active_levels(nested);
  for (size_t i = 0; i < runs.size(); ++i) ASSERT_EQ(runs[i].load(), 1) << "item " << i;
}

TEST(ParallelForStealing, ALateThreadsShareIsTakenOver) {
  constexpr int64_t kItems = 1000;  // shares of 500; thread 1 stops 50 ms on its first item
  std::vector<int> by(kItems, -1);
  std::atomic<bool> slept{false};
  parallel_for_stealing(2, kItems, [&](int64_t i) {
    const int t = omp_get_thread_num();
    if (t == 1 && !slept.exchange(true)) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    by[static_cast<size_t>(i)] = t;
  });
  int64_t by_late = 0;
  for (int t : by) {
    ASSERT_GE(t, 0);
    by_late += t == 1;
  }
  if (!slept.load()) GTEST_SKIP() << "the OpenMP team had one thread";
  EXPECT_LT(by_late, kItems / 4) << "thread 0 should have run most of thread 1's share";
}

TEST(WorthParallel, ComparesOneThreadsTimeWithTheMinimum) {
  EXPECT_FALSE(worth_parallel(1, int64_t{1} << 30, 1.0));  // one thread: never
  EXPECT_FALSE(worth_parallel(2, 7999, 1.0));
  EXPECT_TRUE(worth_parallel(2, 8000, 1.0));
  EXPECT_TRUE(worth_parallel(2, 30000, 0.32));
  EXPECT_FALSE(worth_parallel(2, 0, 1.0));
}

}  // namespace
}  // namespace tierjit::interp
