// PAGODA_CHECK: invariants that only a bug can break (never used on input; input gets a Status).
#pragma once

#include <cstdio>
#include <cstdlib>

namespace pagoda::detail {
[[noreturn]] void check_failed(const char* expr, const char* file, int line, const char* msg);
}  // namespace pagoda::detail

#define PAGODA_CHECK(cond)                                           \
  do {                                                               \
    if (!(cond)) [[unlikely]]                                        \
      ::pagoda::detail::check_failed(#cond, __FILE__, __LINE__, ""); \
  } while (0)

#define PAGODA_CHECK_MSG(cond, msg)                                   \
  do {                                                                \
    if (!(cond)) [[unlikely]]                                         \
      ::pagoda::detail::check_failed(#cond, __FILE__, __LINE__, msg); \
  } while (0)
