#include "runner/constraint_mask.h"

#include <algorithm>
#include <cstddef>
#include <limits>

namespace pagoda::runner {

void mask_logits(structured::Constraint& constraint, std::vector<uint64_t>& mask,
                 std::span<float> logits) {
  const structured::TokenTable& table = *constraint.grammar().tokens();
  mask.resize(table.num_mask_words());
  if (!constraint.fill_mask(mask)) return;
  bool any = false;
  for (uint64_t w : mask)
    any = any || w != 0;
  if (!any) {
    // Nothing can continue the text (a vocabulary without the bytes the grammar needs): end.
    for (int32_t t : table.eog_tokens())
      mask[static_cast<size_t>(t) / 64] |= uint64_t{1} << (t % 64);
  }
  // A word at a time: masks are mostly all-zero words (a few allowed tokens) or all-one words.
  constexpr float kMasked = -std::numeric_limits<float>::infinity();
  const size_t n = logits.size();
  for (size_t w = 0; w * 64 < n; ++w) {
    const uint64_t bits = w < mask.size() ? mask[w] : 0;
    if (bits == ~uint64_t{0}) continue;
    const size_t begin = w * 64, end = std::min(n, begin + 64);
    if (bits == 0) {
      std::fill(logits.begin() + static_cast<std::ptrdiff_t>(begin),
                logits.begin() + static_cast<std::ptrdiff_t>(end), kMasked);
      continue;
    }
    for (size_t t = begin; t < end; ++t) {
      if (((bits >> (t - begin)) & 1) == 0) logits[t] = kMasked;
    }
  }
}

}  // namespace pagoda::runner
