// Request construction and status names.
#include "engine/request.h"

#include <algorithm>

namespace pagoda::engine {

std::string_view to_string(RequestStatus status) {
  switch (status) {
    case RequestStatus::kWaiting:
      return "waiting";
    case RequestStatus::kRunning:
      return "running";
    case RequestStatus::kPreempted:
      return "preempted";
    case RequestStatus::kFinishedStopped:
      return "finished_stopped";
    case RequestStatus::kFinishedLength:
      return "finished_length";
    case RequestStatus::kFinishedAborted:
      return "finished_aborted";
    case RequestStatus::kFinishedError:
      return "finished_error";
  }
  return "unknown";
}

RequestStatus finished_status(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop:
      return RequestStatus::kFinishedStopped;
    case FinishReason::kLength:
      return RequestStatus::kFinishedLength;
    case FinishReason::kAbort:
      return RequestStatus::kFinishedAborted;
    case FinishReason::kError:
    case FinishReason::kNone:
      return RequestStatus::kFinishedError;
  }
  return RequestStatus::kFinishedError;
}

Request::Request(RequestId id, NewRequest&& r, uint64_t arrival_seq)
    : id_(id),
      token_ids_(std::move(r.prompt_token_ids)),
      num_prompt_tokens_(static_cast<int64_t>(token_ids_.size())),
      priority_(r.priority),
      arrival_seq_(arrival_seq),
      arrival_time_(r.arrival_time.value_or(Clock::now())),
      sampling_(std::make_shared<const SamplingParams>(r.sampling)),
      stop_(std::move(r.stop)),
      cache_salt_(std::move(r.cache_salt)),
      lora_id_(r.lora_id),
      sampling_gate_(std::move(r.sampling_gate)),
      num_pending_samples_(r.n > 1 ? r.n - 1 : 0) {
  token_ids_.reserve(token_ids_.size() + static_cast<size_t>(std::max(0, stop_.max_tokens)));
}

}  // namespace pagoda::engine
