// libFuzzer target: LogProbReader::parse (diagnostics/log_prob_file.h) on arbitrary bytes; every
// token and row of an accepted file is read, so ASan sees any read the validation let through.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "diagnostics/log_prob_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto r = pagoda::diagnostics::LogProbReader::parse(std::span<const uint8_t>(data, size));
  if (!r.ok()) return 0;
  for (uint64_t i = 0; i < r->num_tokens(); ++i)
    if (r->token(i) < 0 || static_cast<uint32_t>(r->token(i)) >= r->header().n_vocab)
      __builtin_trap();
  std::vector<float> row(r->header().n_vocab);
  for (uint64_t i = 0; i < r->num_rows() && i < 64; ++i)
    r->row(i, row);
  return 0;
}
