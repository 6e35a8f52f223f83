// StopParams: the token-level stop conditions the scheduler checks after every sampled token
// (EOS, stop token ids, min/max tokens). Stop strings are text-level: output processing
// (sequence_output_state.h) matches them, so they never reach the scheduler.
#pragma once

#include <cstdint>
#include <vector>

#include "step/ids.h"

namespace pagoda::engine {

struct StopParams {
  int32_t max_tokens = 16;                   // output tokens, >= 1
  int32_t min_tokens = 0;                    // EOS / stop tokens do not stop before this many
  std::vector<step::TokenId> eos_token_ids;  // the model's end-of-generation ids
  bool ignore_eos = false;
  std::vector<step::TokenId> stop_token_ids;  // extra ids that stop (reported as the stop token)
};

}  // namespace pagoda::engine
