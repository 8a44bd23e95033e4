// Canaries of the sanitizer build (scripts/test-asan.sh): each makes a mistake AddressSanitizer
// or UndefinedBehaviorSanitizer must report. Disabled: test-asan.sh runs them one by one with
// --gtest_also_run_disabled_tests and fails unless the report appears, so an uninstrumented build
// cannot pass as clean. They are never run in the normal suite.
#include <gtest/gtest.h>

#include <climits>
#include <memory>

namespace {

TEST(SanitizerCanary, DISABLED_HeapOverflowIsReported) {
  std::unique_ptr<int[]> a(new int[4]());
  volatile int i = 4;  // one past the end
  EXPECT_NE(a[i], 12345);
}

TEST(SanitizerCanary, DISABLED_SignedOverflowIsReported) {
  volatile int big = INT_MAX;
  volatile int sum = big + 1;
  EXPECT_NE(sum, 0);
}

}  // namespace
