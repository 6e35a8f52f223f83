// Scheduler: vLLM-v1-style iteration-level scheduling over a KvManager, with no model and no
// tensors. Each schedule() call spends a token budget (max_num_batched_tokens) over at most
// max_num_seqs sequences:
//  1. running requests first — decoding ones (one token left to compute) before ones still
//     prefilling, so a long prompt never delays a running decode by more than its own chunk;
//     a prefill takes min(remaining, budget, long_prefill_token_threshold) tokens (chunked);
//  2. when KV blocks run out for a running request, the policy's last running request is
//     preempted (FCFS: latest admitted; priority: largest (priority, arrival)) — its blocks
//     are freed, num_computed_tokens reset to 0, and it goes back to the front of waiting —
//     and the allocation retried; if the request itself is the victim, scheduling stops;
//  3. if nothing was preempted, waiting requests are admitted in policy order while budget,
//     sequence slots and blocks last (prefix-cache hits are free), stopping at the first that
//     does not fit (no skipping ahead, except over a gated request with nothing to compute).
// A request whose SamplingGate is still closed (its grammar compiling) is scheduled like any
// other but never for its last uncomputed token, so it computes its prompt and does not sample.
// The runner executes the step::StepPlan; update_from_output() appends the sampled tokens, checks
// EOS / stop tokens / max_tokens, forks n>1 requests and frees finished ones.
//
// Protocol: schedule() -> step::Executor::execute() -> update_from_output() (or fail_step() if
// execution failed), strictly alternating; one plan outstanding at a time. Not thread-safe:
// the engine's step loop owns it. abort() may be called at any time between calls, including
// while a plan is outstanding (the blocks of an in-flight request are released only when that
// plan is settled).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "engine/request.h"
#include "engine/request_event.h"
#include "engine/waiting_queue.h"
#include "kv/kv_manager.h"
#include "step/step_plan.h"

namespace pagoda::engine {

// Speculative decoding (the scheduler's side): the runner proposes draft tokens with each
// sampled token (step::SampledTokens::draft_token_ids); the next plan appends up to k of them
// to the request's decode entry, k adapted per request from its recent acceptance; the runner
// verifies them and returns the accepted ones plus one. Only the accepted drafts' KV is kept:
// blocks past the request's tokens are freed after each verification, and blocks are published
// to the prefix cache only for positions of known tokens.
struct SpeculativeSchedulingConfig {
  int32_t num_speculative_tokens = 0;  // most drafts per request per step; 0 = off
  // No drafts in a step whose running requests have more than this many tokens to compute
  // (verification then costs more than it saves); 0 = no limit.
  int32_t disable_batch_tokens = 0;
  // Per request: k drops to (accepted + 1) after a rejection and doubles (up to
  // num_speculative_tokens) after a fully accepted run. Off: always num_speculative_tokens.
  bool adaptive = true;
};

// Counters of verified drafts, as vLLM names them (vllm:spec_decode_*).
struct SpecDecodeStats {
  int64_t num_drafts = 0;           // verified draft runs (one per request per step)
  int64_t num_draft_tokens = 0;     // drafted tokens verified
  int64_t num_accepted_tokens = 0;  // of those, accepted
  std::vector<int64_t> num_accepted_tokens_per_pos;  // [i]: runs whose draft i was accepted
};

struct SchedulerConfig {
  int32_t max_num_seqs = 256;                // running sequences (forked samples count each)
  int32_t max_num_batched_tokens = 2048;     // tokens per step, >= max_num_seqs
  int64_t max_model_len = 0;                 // prompt + max_tokens limit; 0 = only the cache's
  bool enable_chunked_prefill = true;        // off: a prompt is computed in one step, so
                                             // prompt + max_tokens must fit the token budget
  int32_t long_prefill_token_threshold = 0;  // cap per request per step; 0 = none
  SchedulingPolicy policy = SchedulingPolicy::kFcfs;
  int32_t max_num_waiting = 0;  // add_request refuses beyond this; 0 = unbounded
  kv::KvManagerConfig kv;
  SpeculativeSchedulingConfig speculative;
};

struct SchedulerStats {
  int32_t num_running = 0;      // requests (sequences) holding blocks
  int32_t num_waiting = 0;      // waiting + preempted
  int64_t num_preemptions = 0;  // since creation
  int64_t num_steps = 0;
  int64_t num_prompt_tokens_computed = 0;  // prompt positions computed (recomputes included)
  int64_t num_generation_tokens = 0;       // sampled tokens appended
  double kv_usage = 0;                     // used / usable blocks
  double prefix_cache_hit_rate = 0;        // hit tokens / queried tokens (0 with no queries)
  kv::KvStats kv;
  SpecDecodeStats spec_decode;
};

class Scheduler {
 public:
  // Validates the config; errors name the field.
  static Result<Scheduler> create(const SchedulerConfig& config);

  Scheduler(Scheduler&&) noexcept = default;
  Scheduler& operator=(Scheduler&&) noexcept = default;

  // Validates and queues a request. Rejects (kInvalidArgument) one that could never run: empty
  // prompt, negative ids, bad max_tokens/min_tokens/n, prompt + max_tokens beyond max_model_len,
  // beyond the whole KV cache, or (chunking off) beyond the token budget. kResourceExhausted
  // when max_num_waiting requests are already waiting.
  Result<RequestId> add_request(NewRequest request);

  // Builds the next plan (possibly empty) and advances each scheduled request's
  // num_computed_tokens as if the plan had run. Precondition: no plan outstanding.
  step::StepPlan schedule();

  // Settles the outstanding plan with the runner's output: publishes computed blocks to the
  // prefix cache, appends sampled tokens, forks, checks stops, frees finished requests.
  // Returns one event per request that got tokens or finished. A malformed output (wrong ids,
  // sample counts) returns kInternal and changes nothing; then call fail_step(plan).
  Result<std::vector<RequestEvent>> update_from_output(const step::StepPlan& plan,
                                                       const step::StepOutput& output);

  // Settles the outstanding plan after the runner failed: every request still in it finishes
  // with FinishReason::kError (their events are returned).
  std::vector<RequestEvent> fail_step(const step::StepPlan& plan);

  // Events the scheduler produced outside a step's settlement (a beam-search request failed
  // while scheduling, see beam-search.md); also returned by the next update_from_output /
  // fail_step. Call after a schedule() that returned an empty plan.
  std::vector<RequestEvent> take_pending_events();

  // Polls the SamplingGate of every request that has one (see request.h): opens those whose
  // verdict is ok and returns those whose verdict is an error (still unfinished: the caller
  // aborts each and reports the error). Call between steps, before schedule().
  std::vector<std::pair<RequestId, Status>> poll_sampling_gates();

  // Finishes a request in any state and frees its blocks (see the class comment for in-flight
  // ones). kNotFound if unknown or already finished. Forked children are separate requests.
  Status abort(RequestId id);

  const Request* find(RequestId id) const;  // nullptr once finished
  bool has_unfinished_requests() const { return !requests_.empty(); }
  size_t num_requests() const { return requests_.size(); }
  size_t num_running() const { return running_.size(); }
  size_t num_waiting() const { return waiting_.size(); }
  bool step_outstanding() const { return outstanding_step_.has_value(); }
  // Running requests in admission order (the order FCFS preemption walks backwards).
  std::vector<RequestId> running_ids() const;

  SchedulerStats stats() const;
  const kv::KvManager& kv() const { return kv_; }
  const SchedulerConfig& config() const { return config_; }
  int64_t reset_prefix_cache() { return kv_.reset_prefix_cache(); }

  // O(requests + blocks) consistency check of the scheduler and KV state (tests).
  Status check_invariants() const;

 private:
  struct Candidate {  // a request chosen for this step (schedule() internals)
    Request* r = nullptr;
    int64_t num_new_tokens = 0;
    kv::SlotAllocation alloc;
    bool is_new = false;
    int64_t num_drafts = 0;  // draft tokens verified after the request's own
  };

  Scheduler(const SchedulerConfig& config, kv::KvManager kv);

  Request* lookup(RequestId id);
  int32_t num_running_seqs() const;  // running requests plus their pending forks
  Request* pick_victim() const;
  void preempt(Request* r, std::vector<Candidate>& chosen, int64_t& budget, step::StepPlan& plan);
  void publish_scheduled_blocks(const Candidate& c);
  std::optional<FinishReason> check_stop(const Request& r,
                                         std::optional<TokenId>& stop_token) const;
  // Appends one sampled token and finishes the request if it stopped; returns its event.
  // Appends one sampled token to `ev` (r's event of this step) and finishes the request if it
  // stopped; returns true then (r is destroyed).
  bool append_token(Request* r, TokenId token, const TokenLogprobs* logprobs, RequestEvent& ev);
  // Drafts the request may verify in this step given `budget` tokens left after its own.
  int64_t num_drafts_to_schedule(const Request& r, int64_t budget) const;
  // Whether this step's running batch is small enough to speculate.
  bool speculation_allowed() const;
  // After verifying `num_drafts` drafts of which `num_accepted` were: stats, k, KV trim.
  void settle_drafts(Request* r, int32_t num_drafts, int32_t num_accepted, bool finished);
  void finish(Request* r, FinishReason reason);
  static void fill_event_info(const Request& r, RequestEvent& ev);
  void release_deferred();
  void remove_running(Request* r);

  // Beam search (scheduler_beam.cc).
  Status check_beam_request(const NewRequest& request) const;
  void add_beam_group(Request* root, const BeamSearchParams& params, int32_t num_results);
  bool beam_awaits_siblings(const Request& r) const;
  int32_t num_beam_seqs() const;  // `width` slots per admitted beam-search request
  // Stores a beam's report; once every live beam of its group reported, takes the beam step.
  void settle_beam(Request* r, const step::SampledTokens& o, std::vector<RequestEvent>& events);
  void take_beam_step(BeamGroup& g, std::vector<RequestEvent>& events);
  Request* fork_beam(Request* parent);
  void drop_beam(Request* r);  // a pruned / ended beam: its blocks are freed at once
  // Ends the group: drops its live beams and reports (hypotheses unless abort / error). In
  // schedule(), `chosen` and `budget` give back what its beams had taken.
  void end_beam_group(RequestId root, FinishReason reason, const std::string& error,
                      std::vector<RequestEvent>& events, std::vector<Candidate>* chosen = nullptr,
                      int64_t* budget = nullptr);

  SchedulerConfig config_;
  kv::KvManager kv_;
  std::unordered_map<RequestId, std::unique_ptr<Request>> requests_;
  std::vector<Request*> running_;  // admission order
  WaitingQueue waiting_;
  std::vector<RequestId> finished_since_plan_;
  std::vector<kv::SeqId> deferred_frees_;  // aborted while in flight
  std::optional<uint64_t> outstanding_step_;
  RequestId next_id_ = 1;
  uint64_t next_arrival_seq_ = 0;
  uint64_t next_step_id_ = 0;
  int64_t num_preemptions_ = 0;
  int64_t num_steps_ = 0;
  int64_t num_prompt_tokens_computed_ = 0;
  int64_t num_generation_tokens_ = 0;
  SpecDecodeStats spec_stats_;
  std::unordered_map<RequestId, BeamGroup> beam_groups_;  // by root sequence id
  std::vector<RequestEvent> pending_events_;              // see take_pending_events()
};

}  // namespace pagoda::engine
