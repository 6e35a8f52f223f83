// Prompt lookup: longest recurring suffix, most recent occurrence (see ngram_proposer.h).
#include "runner/ngram_proposer.h"

#include <algorithm>

namespace pagoda::runner {

Result<NgramProposer> NgramProposer::create(const NgramConfig& config) {
  if (config.min_n < 1 || config.min_n > 64) {
    return invalid_argument("speculative ngram min_n must be in [1, 64], got {}", config.min_n);
  }
  if (config.max_n < config.min_n || config.max_n > 64) {
    return invalid_argument("speculative ngram max_n must be in [min_n={}, 64], got {}",
                            config.min_n, config.max_n);
  }
  if (config.num_speculative_tokens < 1 || config.num_speculative_tokens > 64) {
    return invalid_argument("num_speculative_tokens must be in [1, 64], got {}",
                            config.num_speculative_tokens);
  }
  return NgramProposer(config);
}

void NgramProposer::propose(std::span<const int32_t> tokens, std::vector<int32_t>& out) const {
  out.clear();
  const auto size = static_cast<int64_t>(tokens.size());
  for (int64_t n = std::min<int64_t>(config_.max_n, size - 1); n >= config_.min_n; --n) {
    const std::span<const int32_t> suffix = tokens.subspan(static_cast<size_t>(size - n));
    // Earlier occurrences (they may overlap the suffix), the most recent first.
    for (int64_t start = size - n - 1; start >= 0; --start) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + start)) continue;
      // The continuation; past the end of `tokens` it repeats with the match's period (the
      // draft continues itself), so a repeated phrase is proposed in full.
      const int64_t from = start + n;  // < size
      for (int64_t m = 0; m < config_.num_speculative_tokens; ++m) {
        const int64_t i = from + m;
        out.push_back(i < size ? tokens[static_cast<size_t>(i)]
                               : out[static_cast<size_t>(i - size)]);
      }
      return;
    }
  }
}

Status NgramProposer::propose(const step::StepPlan& /*plan*/, std::span<ProposalRequest> requests) {
  for (ProposalRequest& r : requests) {
    if (r.sampled) propose(r.tokens, *r.draft_tokens);
  }
  return Status();
}

}  // namespace pagoda::runner
