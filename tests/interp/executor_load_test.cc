// under_current_load: tier 0 lowers its intra-op threads to one while other processes (or this
// one's background compiles) hold the cores a team would need, and keeps them otherwise.
#include <gtest/gtest.h>

#include "interp/executor.h"
#include "support/cpu_load.h"

namespace tierjit::testing {
namespace {

class UnderCurrentLoad : public ::testing::Test {
 protected:
  void TearDown() override { support::override_foreign_busy_cores(-1); }
};

TEST_F(UnderCurrentLoad, IdleMachineKeepsTheTeam) {
  support::override_foreign_busy_cores(0);
  interp::ExecOptions o;
  o.intra_op_threads = support::usable_cores();
  o.memory_limit_bytes = 12345;
  const interp::ExecOptions got = interp::under_current_load(o);
  EXPECT_EQ(got.intra_op_threads, support::usable_cores());
  EXPECT_EQ(got.memory_limit_bytes, 12345);
}

TEST_F(UnderCurrentLoad, BusyMachineRunsOneThread) {
  interp::ExecOptions o;
  o.intra_op_threads = 2;
  support::override_foreign_busy_cores(static_cast<double>(support::usable_cores()));
  EXPECT_EQ(interp::under_current_load(o).intra_op_threads, 1);
  o.intra_op_threads = 1;
  EXPECT_EQ(interp::under_current_load(o).intra_op_threads, 1);
}

TEST_F(UnderCurrentLoad, BackgroundCompilesCountAsBusy) {
  if (support::usable_cores() != 2) GTEST_SKIP() << "written for 2 cores";
  support::override_foreign_busy_cores(0);
  interp::ExecOptions o;
  o.intra_op_threads = 2;
  EXPECT_EQ(interp::under_current_load(o).intra_op_threads, 2);
  {
    support::BackgroundBusy compiling;
    EXPECT_EQ(interp::under_current_load(o).intra_op_threads, 1);
  }
  EXPECT_EQ(interp::under_current_load(o).intra_op_threads, 2);
}

}  // namespace
}  // namespace tierjit::testing
