// Request: one sequence the scheduler tracks from add to finish. Its KV progress is one number:
// num_computed_tokens catches up with num_tokens() (prompt + outputs); there is no separate
// prefill or decode phase. A request with sampling.n > 1 forks into n sequences (the request
// itself = sample 0, children = samples 1..n-1) when its prompt is computed.
//
// Invariants: 0 <= num_computed_tokens <= num_tokens(); while RUNNING between steps,
// num_computed_tokens < num_tokens() (at least the newest token is still to be computed);
// WAITING and PREEMPTED requests hold no KV blocks and have num_computed_tokens == 0.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/stop_params.h"
#include "kv/kv_manager.h"
#include "pagoda/engine.h"
#include "step/ids.h"

namespace pagoda::engine {

using step::RequestId;  // assigned by the Scheduler, unique, never reused
using step::TokenId;
using Clock = std::chrono::steady_clock;

enum class RequestStatus : uint8_t {
  kWaiting,          // queued, never admitted
  kRunning,          // admitted: holds KV blocks, scheduled every step it fits
  kPreempted,        // evicted to free blocks; queued again and recomputes from token 0
  kFinishedStopped,  // EOS or a stop token
  kFinishedLength,   // max_tokens or max_model_len
  kFinishedAborted,  // abort()
  kFinishedError,    // the runner failed the step it was in
};

std::string_view to_string(RequestStatus status);
inline bool is_finished(RequestStatus s) {
  return s >= RequestStatus::kFinishedStopped;
}
// The finished status for a finish reason (kNone, never a finish, maps to kFinishedError).
RequestStatus finished_status(FinishReason reason);

// Holds back a request's first sample until something it needs is ready (its grammar, compiled
// in the background): polled by the scheduler on the step loop's thread, it returns nullopt while
// the request must wait (its prompt is computed meanwhile, all but the last token), then the
// verdict: ok lets it sample, an error fails the request with it. Must not block.
using SamplingGate = std::function<std::optional<Status>()>;

// What a caller submits (validated by Scheduler::add_request).
struct NewRequest {
  std::vector<TokenId> prompt_token_ids;  // non-empty, ids >= 0
  SamplingParams sampling;
  int32_t n = 1;  // samples per prompt: the request forks into n sequences once its prompt is
                  // computed, the children sharing the prompt's KV blocks
  StopParams stop;
  int32_t priority = 0;    // priority policy: lower value runs first, then arrival order
  std::string cache_salt;  // isolates prefix-cache sharing ("" = shared)
  uint32_t lora_id = 0;    // the LoRA adapter to run (0: the base model); keys its cache blocks
  std::optional<Clock::time_point> arrival_time;  // default: when added
  SamplingGate sampling_gate;                     // none: may sample at once
  // Beam search (beam_search.h): n must be 1; the scheduler keeps beam_num_results hypotheses.
  std::optional<BeamSearchParams> beam_search;
  int32_t beam_num_results = 1;
};

class Request {
 public:
  Request(RequestId id, NewRequest&& r, uint64_t arrival_seq);

  RequestId id() const { return id_; }
  std::span<const TokenId> all_token_ids() const { return token_ids_; }
  std::span<const TokenId> prompt_token_ids() const {
    return std::span<const TokenId>(token_ids_).first(num_prompt_tokens_);
  }
  std::span<const TokenId> output_token_ids() const {
    return std::span<const TokenId>(token_ids_).subspan(num_prompt_tokens_);
  }
  int64_t num_tokens() const { return static_cast<int64_t>(token_ids_.size()); }
  int64_t num_prompt_tokens() const { return num_prompt_tokens_; }
  int64_t num_output_tokens() const { return num_tokens() - num_prompt_tokens_; }

  RequestStatus status() const { return status_; }
  int64_t num_computed_tokens() const { return num_computed_tokens_; }
  int32_t priority() const { return priority_; }
  uint64_t arrival_seq() const { return arrival_seq_; }  // admission-order tie breaker
  Clock::time_point arrival_time() const { return arrival_time_; }
  const std::shared_ptr<const SamplingParams>& sampling() const { return sampling_; }
  const StopParams& stop() const { return stop_; }
  const std::string& cache_salt() const { return cache_salt_; }
  uint32_t lora_id() const { return lora_id_; }

  // Forks: samples still to split off (n - 1 until the prompt's first sampling step, then 0).
  int32_t num_pending_samples() const { return num_pending_samples_; }
  std::optional<RequestId> parent_id() const { return parent_id_; }
  int32_t sample_index() const { return sample_index_; }

  int32_t num_preemptions() const { return num_preemptions_; }
  // When a plan first included the request (unset until then; kept across preemption).
  std::optional<Clock::time_point> first_scheduled_time() const { return first_scheduled_time_; }
  // Prompt tokens served from the prefix cache at the first admission.
  int64_t num_cached_tokens() const { return num_cached_tokens_; }
  std::span<const TokenId> draft_token_ids() const { return draft_token_ids_; }
  int32_t num_speculative_tokens() const { return num_speculative_tokens_; }
  // Its SamplingGate has not opened yet: it may not be scheduled to sample.
  bool sampling_gated() const { return static_cast<bool>(sampling_gate_); }
  // A beam of a beam-search request: the request's root sequence id (its BeamGroup's key).
  std::optional<RequestId> beam_root() const { return beam_root_; }

  kv::SequenceView kv_view() const {
    return kv::SequenceView{id_, token_ids_, num_computed_tokens_, cache_salt_, lora_id_};
  }

 private:
  friend class Scheduler;

  RequestId id_;
  std::vector<TokenId> token_ids_;  // prompt, then outputs
  int64_t num_prompt_tokens_;
  int64_t num_computed_tokens_ = 0;
  RequestStatus status_ = RequestStatus::kWaiting;
  int32_t priority_;
  uint64_t arrival_seq_;
  Clock::time_point arrival_time_;
  std::shared_ptr<const SamplingParams> sampling_;
  StopParams stop_;
  std::string cache_salt_;
  uint32_t lora_id_ = 0;
  SamplingGate sampling_gate_;  // cleared once it opens
  int32_t num_pending_samples_ = 0;
  std::optional<RequestId> parent_id_;
  int32_t sample_index_ = 0;
  int32_t num_preemptions_ = 0;
  int64_t num_cached_tokens_ = 0;
  std::optional<Clock::time_point> first_scheduled_time_;
  bool admitted_once_ = false;
  bool scheduled_since_admission_ = false;  // false -> the next plan entry has is_new
  bool in_flight_ = false;                  // in the outstanding plan
  // Speculative decoding: the runner's proposals for the tokens after the newest one (cleared
  // on preemption), and how many of them the next step may verify (adaptive).
  std::vector<TokenId> draft_token_ids_;
  int32_t num_speculative_tokens_ = 0;
  std::optional<RequestId> beam_root_;  // beam search: the group this beam belongs to
};

}  // namespace pagoda::engine
