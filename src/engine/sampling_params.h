// Per-request generation parameters as the engine carries them. SamplingParams is the public
// pagoda::SamplingParams, passed through to the runner untouched (the scheduler never reads it);
// StopParams is read by the scheduler (token-level stops) and, later, by output processing
// (stop strings).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pagoda/sampling_params.h"

namespace pagoda::engine {

using TokenId = int32_t;
using SamplingParams = ::pagoda::SamplingParams;

struct StopParams {
  int32_t max_tokens = 16;             // output tokens, >= 1
  int32_t min_tokens = 0;              // EOS / stop tokens do not stop before this many
  std::vector<TokenId> eos_token_ids;  // the model's end-of-generation ids
  bool ignore_eos = false;
  std::vector<TokenId> stop_token_ids;    // extra ids that stop (reported as the stop token)
  std::vector<std::string> stop_strings;  // handled by output processing, not the scheduler
};

}  // namespace pagoda::engine
