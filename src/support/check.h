// CHECK macros for broken internal invariants only (never for bad input: that is a Status).
// A failed CHECK prints file, line and the condition to stderr and aborts.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace tierjit::support {
[[noreturn]] void check_failed(const char* file, int line, const char* cond, const char* msg);
}  // namespace tierjit::support

#define TJ_CHECK(cond)                                                          \
  do {                                                                          \
    if (!(cond)) ::tierjit::support::check_failed(__FILE__, __LINE__, #cond, ""); \
  } while (0)
#define TJ_CHECK_MSG(cond, msg)                                                    \
  do {                                                                             \
    if (!(cond)) ::tierjit::support::check_failed(__FILE__, __LINE__, #cond, msg); \
  } while (0)
#ifdef NDEBUG
#define TJ_DCHECK(cond) \
  do {                  \
  } while (0)
#else
#define TJ_DCHECK(cond) TJ_CHECK(cond)
#endif
