// RequestEvent: what one step changed for one request, as update_from_output() reports it to the
// output processor (detokenizer, stop strings, streaming; later).
#pragma once

#include <optional>
#include <vector>

#include "engine/beam_search.h"
#include "engine/request.h"
#include "step/step_plan.h"

namespace pagoda::engine {

struct RequestEvent {
  RequestId id = 0;
  std::vector<TokenId> new_token_ids;         // appended to the outputs this step (1 per step now)
  std::vector<TokenLogprobs> new_logprobs;    // empty, or one per new token
  std::optional<FinishReason> finish_reason;  // set on the request's last event
  std::optional<TokenId> stop_token_id;       // the EOS / stop token that finished it (it is the
                                              // last of new_token_ids)
  std::optional<RequestId> parent_id;         // set on every event of a forked child
  int32_t sample_index = 0;                   // which of the parent's n samples this sequence is
  std::vector<float> embedding;               // pooling requests: on their finishing event
  int64_t num_output_tokens = 0;              // total outputs after this event
  int64_t num_prompt_tokens = 0;
  int64_t num_cached_tokens = 0;  // prompt tokens served by the prefix cache at admission
  Clock::time_point arrival_time;
  std::optional<Clock::time_point> first_scheduled_time;  // queue time = this - arrival_time
  // Beam search: the request's one event (id = its root sequence), on finish: the best
  // hypotheses (at most NewRequest::beam_num_results, best first; empty on abort / error).
  std::vector<BeamHypothesis> beams;
  std::string error;  // kError from the scheduler itself (a beam request it could not keep)
};

}  // namespace pagoda::engine
