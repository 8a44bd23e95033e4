// The serving defaults of the CLI and the Python module (see serving_defaults.h for the
// measurements behind them).
#include "support/serving_defaults.h"

#include <malloc.h>
#include <unistd.h>

#include <cstdlib>

namespace tierjit::support {

bool openmp_wait_policy_unset() {
  return std::getenv("OMP_WAIT_POLICY") == nullptr && std::getenv("GOMP_SPINCOUNT") == nullptr;
}

void reexec_with_serving_openmp(char** argv) {
  if (!openmp_wait_policy_unset() || std::getenv("TIERJIT_REEXECUTED") != nullptr) return;
  setenv("GOMP_SPINCOUNT", kServingSpinCount, 1);
  setenv("TIERJIT_REEXECUTED", "1", 1);
  execv("/proc/self/exe", argv);
  // exec failed (no /proc?): carry on with the policy libgomp already read.
}

void set_malloc_for_serving() {
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") == nullptr) mallopt(M_MMAP_THRESHOLD, 32 << 20);
  if (std::getenv("MALLOC_TRIM_THRESHOLD_") == nullptr) mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

}  // namespace tierjit::support
