#include "base/check.h"

namespace pagoda::detail {

void check_failed(const char* expr, const char* file, int line, const char* msg) {
  std::fprintf(stderr, "pagoda: internal invariant violated: %s at %s:%d %s\n", expr, file, line,
               msg);
  std::fflush(stderr);
  std::abort();
}

}  // namespace pagoda::detail
