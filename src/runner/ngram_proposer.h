// NgramProposer: prompt-lookup speculative decoding (no second model). The draft for a request
// is what followed the most recent earlier occurrence of its longest suffix n-gram
// (min_n <= n <= max_n) in its own tokens (prompt and outputs): code edits, summaries, RAG
// answers and JSON repeat their context, so the continuation of a match is often right.
// Stateless and thread-safe; O(num_tokens * max_n) per call.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "runner/proposer.h"

namespace pagoda::runner {

struct NgramConfig {
  int32_t min_n = 1;                   // shortest suffix matched, >= 1
  int32_t max_n = 4;                   // longest, >= min_n
  int32_t num_speculative_tokens = 0;  // most tokens proposed (k), >= 1
};

class NgramProposer final : public Proposer {
 public:
  // Errors name the field (min_n, max_n, num_speculative_tokens).
  static Result<NgramProposer> create(const NgramConfig& config);

  // Replaces `out` with the k tokens following the most recent earlier occurrence of the longest
  // matching suffix of `tokens` (continued periodically past the end of `tokens`), or nothing
  // when no suffix of min_n tokens recurs.
  void propose(std::span<const int32_t> tokens, std::vector<int32_t>& out) const;

  // Proposer: every sampled request gets propose(tokens) (point masses: no draft_probs).
  Status propose(const step::StepPlan& plan, std::span<ProposalRequest> requests) override;

  const NgramConfig& config() const { return config_; }

 private:
  explicit NgramProposer(const NgramConfig& config) : config_(config) {}
  NgramConfig config_;
};

}  // namespace pagoda::runner
