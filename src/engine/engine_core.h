// EngineCore: the serving loop. Owns the Scheduler, a step::Executor and the per-sequence output
// states; a dedicated thread runs step after step while there is work and sleeps on a condition
// variable otherwise.
//
// Threading: one mutex guards the scheduler and the request tables. The loop holds it to apply
// queued aborts, schedule, settle a step and turn its events into outputs; it releases it while
// the executor runs the plan and while it delivers outputs. add_request() validates and queues a
// request synchronously (so every error is returned to the caller); abort() only queues (the loop
// applies it between steps), so each sample's outputs — the abort's final one included — reach
// its callback in order, from the loop thread, never while the mutex is held.
//
// Failures: an executor error (a non-ok Result or a std::exception) finishes the requests of
// that plan with FinishReason::kError and the loop continues; so does a request whose
// SamplingGate fails (with the gate's status code in RequestOutput::error_code). Anything else
// escaping the loop kills it: every live sample gets a kError final output, stats().loop_alive
// turns false and add_request() returns unavailable.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"
#include "engine/scheduler.h"
#include "engine/sequence_output_state.h"
#include "pagoda/engine.h"
#include "step/executor.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::engine {

struct EngineCoreConfig {
  SchedulerConfig scheduler;
  std::vector<TokenId> eos_token_ids;  // the model's end-of-generation ids
  int32_t vocab_size = 0;              // prompt / stop token ids must be below; 0 = unchecked
};

class EngineCore {
 public:
  // Validates the config and starts the loop thread. `tokenizer` must outlive the core.
  static Result<std::unique_ptr<EngineCore>> create(const EngineCoreConfig& config,
                                                    std::unique_ptr<step::Executor> executor,
                                                    const tokenizer::Tokenizer& tokenizer);
  ~EngineCore();  // shutdown()
  EngineCore(const EngineCore&) = delete;
  EngineCore& operator=(const EngineCore&) = delete;

  // Validates (request_id non-empty and not live, n, stop strings, stop token ids, prompt ids,
  // then the scheduler's checks) and queues the request. See pagoda::Engine::add_request.
  // `gate` (optional) holds back its first sample (see SamplingGate in request.h).
  // lora_id: the LoRA adapter the request runs (0: none; resolved by the caller).
  Status add_request(GenerateRequest request, OutputCallback on_output, SamplingGate gate = {},
                     uint32_t lora_id = 0);
  // Queues an abort of every sample of `request_id`; unknown ids are ignored.
  void abort(const std::string& request_id);

  EngineStats stats() const;
  void stop_accepting();
  // True once no request is live and every output has been delivered; false on timeout.
  bool wait_idle(std::chrono::milliseconds timeout);
  // Stops accepting, aborts everything (final outputs delivered), joins the loop. Idempotent.
  // Must not be called from an output callback (it then only signals the loop to stop).
  void shutdown();

  const SchedulerConfig& scheduler_config() const { return config_.scheduler; }

 private:
  struct Group;  // one add_request: its callback, samples and options
  struct Sequence {
    Group* group = nullptr;
    std::unique_ptr<SequenceOutputState> state;
    bool prompt_logprobs_sent = false;  // its first output carried the group's prompt logprobs
  };
  using Delivery = std::pair<std::shared_ptr<OutputCallback>, RequestOutput>;

  EngineCore(const EngineCoreConfig& config, Scheduler scheduler,
             std::unique_ptr<step::Executor> executor, const tokenizer::Tokenizer& tokenizer);

  void loop();
  // One iteration; returns false when the loop should exit.
  bool iterate(std::unique_lock<std::mutex>& lock);
  void run_loop_guarded();
  // Locked helpers that append outputs to `out`.
  void log_preemption(RequestId id) const;  // at info, with the request id and the reason
  void apply_aborts(std::vector<Delivery>& out);
  void abort_group(Group& group, FinishReason reason, const std::string& error,
                   std::vector<Delivery>& out, StatusCode error_code = StatusCode::kInternal);
  // Fails the requests whose SamplingGate failed.
  void apply_gate_failures(std::vector<Delivery>& out);
  // Adds a step's prompt logprobs to their groups (in prompt order, repeats dropped).
  void collect_prompt_logprobs(std::vector<step::PromptLogprobs>& chunks);
  void process_events(const std::vector<RequestEvent>& events, const std::string& error,
                      std::vector<Delivery>& out);
  void emit(Group& group, RequestOutput output, std::vector<Delivery>& out);
  // A beam-search request's final event: its n outputs (the best hypotheses, or its failure).
  void emit_beams(Group& group, SequenceOutputState& root_state, const RequestEvent& ev,
                  const std::string& error, Clock::time_point now, std::vector<Delivery>& out);
  void record_step_stats();
  void fail_everything(const std::string& error, std::vector<Delivery>& out);
  // Unlocked: calls the callbacks in order.
  static void deliver(std::vector<Delivery>& outputs);

  EngineCoreConfig config_;
  std::unique_ptr<step::Executor> executor_;
  const tokenizer::Tokenizer& tokenizer_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // the loop waits for work
  std::condition_variable idle_cv_;  // wait_idle waits for no live requests
  Scheduler scheduler_;
  std::unordered_map<std::string, std::unique_ptr<Group>> groups_;  // live request ids
  std::unordered_map<RequestId, Sequence> sequences_;               // live scheduler sequences
  std::deque<std::string> pending_aborts_;
  bool accepting_ = true;
  bool stopping_ = false;
  bool loop_alive_ = true;
  bool delivering_ = false;
  // Counters beyond the scheduler's.
  int64_t prompt_tokens_total_ = 0;
  int64_t requests_finished_total_ = 0;
  int64_t num_steps_ = 0;
  int64_t sum_used_blocks_ = 0;
  int64_t peak_used_blocks_ = 0;
  int64_t sum_live_tokens_ = 0;
  int64_t last_live_tokens_ = 0;
  std::vector<int32_t> block_fill_;  // scratch for live-token counting, [num_blocks]

  std::thread thread_;
  std::once_flag join_once_;
};

}  // namespace pagoda::engine
