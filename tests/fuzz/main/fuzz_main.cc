// libFuzzer's entry point for one target: TIERJIT_FUZZ_ENTRY names its function (targets.h), set
// per executable by tests/fuzz/CMakeLists.txt.
#include "fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tierjit::fuzz::TIERJIT_FUZZ_ENTRY(data, size);
}
