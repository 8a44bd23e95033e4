// TIERJIT_ISA (isa.h).
#include "support/isa.h"

#include <cstdlib>
#include <string>

#include "support/log.h"

namespace tierjit::support {

bool avx512_allowed() {
  static const bool allowed = [] {
    const char* v = std::getenv("TIERJIT_ISA");
    const std::string s = v ? v : "";
    if (s.empty() || s == "native") return true;
    if (s == "avx2") return false;
    TJ_LOG_WARN("TIERJIT_ISA='{}' is not 'avx2' or 'native': using the CPU's own features", s);
    return true;
  }();
  return allowed;
}

}  // namespace tierjit::support
