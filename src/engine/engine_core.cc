// The step loop, request bookkeeping (groups of n samples) and output delivery (see
// engine_core.h).
#include "engine/engine_core.h"

#include <algorithm>

#include "base/check.h"
#include "base/log.h"
#include "engine/step_loop.h"

namespace pagoda::engine {

struct EngineCore::Group {
  std::string request_id;
  std::shared_ptr<OutputCallback> callback;
  std::shared_ptr<const OutputOptions> options;
  int32_t n = 1;
  RequestId root_id = 0;
  Clock::time_point arrival;
  int32_t num_finished = 0;     // samples that got their final output
  bool forked = false;          // the root produced its first token, so its children exist
  bool beam_search = false;     // one final event carries the n best beams (beam_search.h)
  std::vector<RequestId> live;  // scheduler sequences not finished yet
  // SamplingParams::prompt_logprobs >= 0: collected in prompt order (entry i: prompt token
  // i + 1), sent with each sample's first output.
  bool wants_prompt_logprobs = false;
  std::vector<TokenLogprobs> prompt_logprobs;
};

Result<std::unique_ptr<EngineCore>> EngineCore::create(const EngineCoreConfig& config,
                                                       std::unique_ptr<step::Executor> executor,
                                                       const tokenizer::Tokenizer& tokenizer) {
  if (executor == nullptr) return invalid_argument("engine core: executor must not be null");
  if (config.vocab_size < 0) {
    return invalid_argument("vocab_size must be >= 0, got {}", config.vocab_size);
  }
  for (size_t i = 0; i < config.eos_token_ids.size(); ++i) {
    const TokenId id = config.eos_token_ids[i];
    if (id < 0 || (config.vocab_size > 0 && id >= config.vocab_size)) {
      return invalid_argument("eos_token_ids[{}] = {} is out of range", i, id);
    }
  }
  PAGODA_ASSIGN_OR_RETURN(Scheduler scheduler, Scheduler::create(config.scheduler));
  std::unique_ptr<EngineCore> core(
      new EngineCore(config, std::move(scheduler), std::move(executor), tokenizer));
  core->thread_ = std::thread([c = core.get()] { c->loop(); });
  return core;
}

EngineCore::EngineCore(const EngineCoreConfig& config, Scheduler scheduler,
                       std::unique_ptr<step::Executor> executor,
                       const tokenizer::Tokenizer& tokenizer)
    : config_(config),
      executor_(std::move(executor)),
      tokenizer_(tokenizer),
      scheduler_(std::move(scheduler)) {}

EngineCore::~EngineCore() {
  shutdown();
}

Status EngineCore::add_request(GenerateRequest request, OutputCallback on_output, SamplingGate gate,
                               uint32_t lora_id) {
  const Clock::time_point arrival = Clock::now();
  if (request.request_id.empty()) return invalid_argument("request_id must not be empty");
  if (!on_output) return invalid_argument("on_output callback must be set");
  if (request.prompt_tokens.empty()) return invalid_argument("prompt_tokens must not be empty");
  const int64_t vocab = config_.vocab_size;
  for (size_t i = 0; i < request.prompt_tokens.size(); ++i) {
    const int32_t id = request.prompt_tokens[i];
    if (id < 0 || (vocab > 0 && id >= vocab)) {
      return invalid_argument("prompt_tokens[{}] = {} is not a token id (vocab size {})", i, id,
                              vocab);
    }
  }
  for (size_t i = 0; i < request.stop.stop_token_ids.size(); ++i) {
    const int32_t id = request.stop.stop_token_ids[i];
    if (id < 0 || (vocab > 0 && id >= vocab)) {
      return invalid_argument("stop_token_ids[{}] = {} is not a token id (vocab size {})", i, id,
                              vocab);
    }
  }
  if (request.n < 1) return invalid_argument("n must be >= 1, got {}", request.n);
  if (request.beam_search) PAGODA_RETURN_IF_ERROR(validate_beam_request(request));
  auto options = std::make_shared<OutputOptions>();
  if (!request.stop.stop_strings.empty()) {
    PAGODA_ASSIGN_OR_RETURN(options->stop_strings,
                            StopStringSet::create(std::move(request.stop.stop_strings)));
  }
  options->request_id = request.request_id;
  options->skip_special_tokens = request.skip_special_tokens;
  options->include_stop_str_in_output = request.stop.include_stop_str_in_output;
  options->prompt = std::make_shared<const std::vector<TokenId>>(request.prompt_tokens);

  const bool wants_prompt_logprobs = request.sampling.prompt_logprobs >= 0;
  NewRequest nr;
  nr.prompt_token_ids = std::move(request.prompt_tokens);
  nr.sampling = std::move(request.sampling);
  nr.n = request.beam_search ? 1 : request.n;
  nr.beam_search = request.beam_search;
  nr.beam_num_results = request.n;
  nr.stop.max_tokens = request.stop.max_tokens;
  nr.stop.min_tokens = request.stop.min_tokens;
  nr.stop.eos_token_ids = config_.eos_token_ids;
  nr.stop.ignore_eos = request.stop.ignore_eos;
  nr.stop.stop_token_ids = std::move(request.stop.stop_token_ids);
  nr.priority = request.priority;
  nr.cache_salt = std::move(request.cache_salt);
  nr.lora_id = lora_id;
  nr.arrival_time = arrival;
  nr.sampling_gate = std::move(gate);

  auto group = std::make_unique<Group>();
  group->request_id = request.request_id;
  group->callback = std::make_shared<OutputCallback>(std::move(on_output));
  group->n = request.n;
  group->beam_search = request.beam_search.has_value();
  group->arrival = arrival;
  group->wants_prompt_logprobs = wants_prompt_logprobs;
  auto state = std::make_unique<SequenceOutputState>(tokenizer_, options, 0, arrival);
  group->options = std::move(options);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!loop_alive_) return make_status(StatusCode::kUnavailable, "the engine loop has stopped");
    if (!accepting_ || stopping_) {
      return failed_precondition("the engine is not accepting requests (shutting down)");
    }
    if (groups_.count(group->request_id) != 0) {
      return invalid_argument("request_id '{}' is already in use", group->request_id);
    }
    PAGODA_ASSIGN_OR_RETURN(const RequestId id, scheduler_.add_request(std::move(nr)));
    group->root_id = id;
    group->live.push_back(id);
    sequences_.emplace(id, Sequence{group.get(), std::move(state)});
    groups_.emplace(group->request_id, std::move(group));
  }
  work_cv_.notify_one();
  return Status();
}

void EngineCore::abort(const std::string& request_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (groups_.count(request_id) == 0) return;
    pending_aborts_.push_back(request_id);
  }
  work_cv_.notify_one();
}

EngineStats EngineCore::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  const SchedulerStats ss = scheduler_.stats();
  EngineStats s;
  s.num_running = ss.num_running;
  s.num_waiting = ss.num_waiting;
  s.kv_cache_usage = ss.kv_usage;
  s.num_blocks = ss.kv.num_blocks;
  s.block_size = scheduler_.kv().block_size();
  s.num_used_blocks = ss.kv.num_used_blocks;
  s.peak_used_blocks = peak_used_blocks_;
  s.num_live_tokens = last_live_tokens_;
  s.prefix_cache_queries = ss.kv.prefix_cache_queries;
  s.prefix_cache_hits = ss.kv.prefix_cache_hits;
  s.num_preemptions = ss.num_preemptions;
  s.prompt_tokens_total = prompt_tokens_total_;
  s.prompt_tokens_computed = ss.num_prompt_tokens_computed;
  s.generation_tokens_total = ss.num_generation_tokens;
  s.requests_finished_total = requests_finished_total_;
  s.num_steps = num_steps_;
  s.sum_used_blocks = sum_used_blocks_;
  s.sum_live_tokens = sum_live_tokens_;
  s.spec_decode_num_drafts = ss.spec_decode.num_drafts;
  s.spec_decode_num_draft_tokens = ss.spec_decode.num_draft_tokens;
  s.spec_decode_num_accepted_tokens = ss.spec_decode.num_accepted_tokens;
  s.spec_decode_num_accepted_tokens_per_pos = ss.spec_decode.num_accepted_tokens_per_pos;
  s.loop_alive = loop_alive_;
  return s;
}

void EngineCore::stop_accepting() {
  std::lock_guard<std::mutex> lock(mu_);
  accepting_ = false;
}

bool EngineCore::wait_idle(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_cv_.wait_for(lock, timeout, [this] { return groups_.empty() && !delivering_; });
}

void EngineCore::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    accepting_ = false;
    stopping_ = true;
  }
  work_cv_.notify_all();
  if (std::this_thread::get_id() == thread_.get_id()) return;  // from a callback: no self-join
  std::call_once(join_once_, [this] {
    if (thread_.joinable()) thread_.join();
  });
}

void EngineCore::loop() {
  std::string error;
  try {
    run_loop_guarded();
    return;
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    error = "unknown exception";
  }
  PAGODA_LOG_ERROR("engine loop died: {}", error);
  std::vector<Delivery> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    loop_alive_ = false;
    accepting_ = false;
    try {
      fail_everything("the engine loop died: " + error, out);
    } catch (...) {
      groups_.clear();
      sequences_.clear();
    }
    delivering_ = true;
  }
  deliver(out);
  {
    std::lock_guard<std::mutex> lock(mu_);
    delivering_ = false;
  }
  idle_cv_.notify_all();
}

void EngineCore::run_loop_guarded() {
  std::unique_lock<std::mutex> lock(mu_);
  while (iterate(lock)) {
  }
}

bool EngineCore::iterate(std::unique_lock<std::mutex>& lock) {
  work_cv_.wait(lock, [this] {
    return stopping_ || !pending_aborts_.empty() || scheduler_.has_unfinished_requests();
  });
  std::vector<Delivery> out;
  const auto flush = [&] {
    if (!out.empty()) {
      delivering_ = true;
      lock.unlock();
      deliver(out);
      out.clear();
      lock.lock();
      delivering_ = false;
    }
    if (groups_.empty()) idle_cv_.notify_all();
  };
  if (stopping_) {
    pending_aborts_.clear();
    while (!groups_.empty())
      abort_group(*groups_.begin()->second, FinishReason::kAbort, "", out);
    flush();
    return false;
  }
  apply_aborts(out);
  apply_gate_failures(out);
  bool ran = false;
  if (scheduler_.has_unfinished_requests()) {
    StepResult step = run_step(scheduler_, *executor_, &lock);
    ran = !step.plan.empty();
    peak_used_blocks_ = std::max(peak_used_blocks_, step.used_blocks_scheduled);
    if (!ran && !step.events.empty()) process_events(step.events, "", out);
    if (ran) {
      ++num_steps_;
      for (const RequestId id : step.plan.preempted_ids)
        log_preemption(id);
      collect_prompt_logprobs(step.prompt_logprobs);
      process_events(step.events, step.status.ok() ? std::string() : step.status.to_string(), out);
      record_step_stats();
    }
  }
  flush();
  if (!ran && !stopping_ && pending_aborts_.empty() && scheduler_.has_unfinished_requests()) {
    // Nothing runnable although requests wait: they wait for their SamplingGate (every admitted
    // request fits the cache alone). Poll again shortly; do not spin.
    work_cv_.wait_for(lock, std::chrono::milliseconds(1));
  }
  return true;
}

// A preemption happens only when the KV cache has no free block for a running request's next
// tokens (reason kv_cache_full): the victim's blocks are freed and it is recomputed later.
void EngineCore::log_preemption(RequestId id) const {
  const auto it = sequences_.find(id);
  if (it == sequences_.end()) return;
  PAGODA_LOG_INFO(
      "preempted request '{}' (sequence {}, reason: kv_cache_full): its KV blocks are freed and "
      "it will be recomputed",
      it->second.group->request_id, id);
}

void EngineCore::apply_aborts(std::vector<Delivery>& out) {
  while (!pending_aborts_.empty()) {
    const std::string id = std::move(pending_aborts_.front());
    pending_aborts_.pop_front();
    const auto it = groups_.find(id);
    if (it != groups_.end()) abort_group(*it->second, FinishReason::kAbort, "", out);
  }
}

void EngineCore::apply_gate_failures(std::vector<Delivery>& out) {
  for (auto& [id, status] : scheduler_.poll_sampling_gates()) {
    const auto it = sequences_.find(id);
    if (it == sequences_.end()) continue;
    (void)scheduler_.abort(id);  // a gated request has not sampled: it has no forks
    abort_group(*it->second.group, FinishReason::kError, status.message(), out, status.code());
  }
}

void EngineCore::emit(Group& group, RequestOutput output, std::vector<Delivery>& out) {
  if (output.finished) {
    ++group.num_finished;
    ++requests_finished_total_;
  }
  out.emplace_back(group.callback, std::move(output));
}

void EngineCore::abort_group(Group& group, FinishReason reason, const std::string& error,
                             std::vector<Delivery>& out, StatusCode error_code) {
  const Clock::time_point now = Clock::now();
  const auto finish = [&](SequenceOutputState& state) {
    RequestOutput final_output = state.finish_without_event(reason, now, error);
    if (reason == FinishReason::kError) final_output.error_code = error_code;
    emit(group, std::move(final_output), out);
  };
  for (const RequestId id : group.live) {
    if (reason == FinishReason::kAbort) (void)scheduler_.abort(id);
    const auto it = sequences_.find(id);
    PAGODA_CHECK(it != sequences_.end());
    finish(*it->second.state);
    sequences_.erase(it);
  }
  group.live.clear();
  if (!group.forked) {
    for (int32_t i = 1; i < group.n; ++i) {
      SequenceOutputState unborn(tokenizer_, group.options, i, group.arrival);
      finish(unborn);
    }
  }
  PAGODA_CHECK(group.num_finished == group.n);
  const std::string id = group.request_id;
  groups_.erase(id);  // destroys `group`
}

void EngineCore::fail_everything(const std::string& error, std::vector<Delivery>& out) {
  while (!groups_.empty())
    abort_group(*groups_.begin()->second, FinishReason::kError, error, out);
  sequences_.clear();
  pending_aborts_.clear();
}

void EngineCore::collect_prompt_logprobs(std::vector<step::PromptLogprobs>& chunks) {
  for (step::PromptLogprobs& chunk : chunks) {
    const auto it = sequences_.find(chunk.id);
    if (it == sequences_.end() || !it->second.group->wants_prompt_logprobs) continue;
    std::vector<TokenLogprobs>& got = it->second.group->prompt_logprobs;
    // Token t is entry t - 1; a recomputed prompt (after preemption) repeats what we have.
    for (size_t i = 0; i < chunk.entries.size(); ++i) {
      const int64_t token = chunk.first_token + static_cast<int64_t>(i);
      if (token - 1 == static_cast<int64_t>(got.size())) got.push_back(std::move(chunk.entries[i]));
    }
  }
}

void EngineCore::process_events(const std::vector<RequestEvent>& events, const std::string& error,
                                std::vector<Delivery>& out) {
  const Clock::time_point now = Clock::now();
  for (const RequestEvent& ev : events) {
    auto it = sequences_.find(ev.id);
    if (it == sequences_.end()) {
      // A forked child's first event: its root's group is still live (the root's event for the
      // same step came first and, even if it finished the root, the group waits for this child).
      if (!ev.parent_id) continue;
      const auto parent = std::find_if(groups_.begin(), groups_.end(), [&](const auto& g) {
        return g.second->root_id == *ev.parent_id;
      });
      if (parent == groups_.end()) continue;
      Group& g = *parent->second;
      auto state = std::make_unique<SequenceOutputState>(tokenizer_, g.options, ev.sample_index,
                                                         ev.arrival_time);
      g.live.push_back(ev.id);
      it = sequences_.emplace(ev.id, Sequence{&g, std::move(state)}).first;
    }
    Group& group = *it->second.group;
    SequenceOutputState& state = *it->second.state;
    if (group.beam_search && ev.finish_reason) {
      emit_beams(group, *it->second.state, ev, ev.error.empty() ? error : ev.error, now, out);
      sequences_.erase(it);
      group.live.clear();
      const std::string id = group.request_id;
      groups_.erase(id);
      continue;
    }
    if (state.index() == 0 && !ev.new_token_ids.empty()) {
      group.forked = true;  // the fork happens in the root's first sampling step
      if (ev.num_output_tokens == static_cast<int64_t>(ev.new_token_ids.size())) {
        prompt_tokens_total_ += ev.num_prompt_tokens;
      }
    }
    if (!ev.embedding.empty()) prompt_tokens_total_ += ev.num_prompt_tokens;
    SequenceOutputState::Processed p = state.process(ev, now, error);
    if (p.needs_abort) (void)scheduler_.abort(ev.id);
    if (group.wants_prompt_logprobs && !it->second.prompt_logprobs_sent) {
      p.output.prompt_logprobs = group.prompt_logprobs;
      it->second.prompt_logprobs_sent = true;
    }
    const bool finished = p.output.finished;
    const FinishReason reason = p.output.finish_reason;
    emit(group, std::move(p.output), out);
    if (!finished) continue;
    sequences_.erase(it);
    group.live.erase(std::find(group.live.begin(), group.live.end(), ev.id));
    if (!group.forked) {
      // The root ended before its first token (error): its unborn samples end with it.
      const FinishReason r =
          reason == FinishReason::kAbort ? FinishReason::kAbort : FinishReason::kError;
      for (int32_t i = 1; i < group.n; ++i) {
        SequenceOutputState unborn(tokenizer_, group.options, i, group.arrival);
        emit(group, unborn.finish_without_event(r, now, error), out);
      }
      group.forked = true;
    }
    if (group.num_finished == group.n) {
      const std::string id = group.request_id;
      groups_.erase(id);
    }
  }
}

void EngineCore::emit_beams(Group& group, SequenceOutputState& root_state, const RequestEvent& ev,
                            const std::string& error, Clock::time_point now,
                            std::vector<Delivery>& out) {
  if (!ev.beams.empty()) prompt_tokens_total_ += ev.num_prompt_tokens;
  const FinishReason failed =
      ev.finish_reason == FinishReason::kAbort ? FinishReason::kAbort : FinishReason::kError;
  for (int32_t i = 0; i < group.n; ++i) {
    std::unique_ptr<SequenceOutputState> own;
    SequenceOutputState* state = &root_state;
    if (i > 0) {
      own = std::make_unique<SequenceOutputState>(tokenizer_, group.options, i, group.arrival);
      state = own.get();
    }
    if (static_cast<size_t>(i) >= ev.beams.size()) {
      // Abort / error (or fewer hypotheses than n: a vocabulary smaller than the beams).
      RequestOutput o =
          state->finish_without_event(ev.beams.empty() ? failed : FinishReason::kStop, now, error);
      if (o.finish_reason == FinishReason::kError) o.error = error;
      emit(group, std::move(o), out);
      continue;
    }
    const BeamHypothesis& h = ev.beams[static_cast<size_t>(i)];
    RequestEvent e = ev;
    e.beams.clear();
    e.new_token_ids = h.output_token_ids;
    e.num_output_tokens = static_cast<int64_t>(h.output_token_ids.size());
    e.finish_reason = h.finish_reason;
    e.stop_token_id = h.stop_token_id;
    SequenceOutputState::Processed p = state->process(e, now, error);
    p.output.beam_cumulative_logprob = h.cumulative_logprob;
    p.output.beam_score = h.score;
    emit(group, std::move(p.output), out);
  }
}

void EngineCore::record_step_stats() {
  const kv::KvManager& kv = scheduler_.kv();
  const int32_t bs = kv.block_size();
  block_fill_.resize(static_cast<size_t>(kv.pool().num_blocks()), 0);
  std::vector<kv::BlockId> touched;
  for (const RequestId id : scheduler_.running_ids()) {
    const Request* r = scheduler_.find(id);
    if (r == nullptr) continue;
    const std::span<const kv::BlockId> table = kv.block_table(id);
    const int64_t computed = r->num_computed_tokens();
    for (size_t i = 0; i < table.size(); ++i) {
      if (table[i] == kv::kNullBlockId) continue;  // released behind a sliding window
      const int64_t filled =
          std::clamp<int64_t>(computed - static_cast<int64_t>(i) * bs, 0, static_cast<int64_t>(bs));
      int32_t& f = block_fill_[static_cast<size_t>(table[i])];
      if (f == 0 && filled > 0) touched.push_back(table[i]);
      f = std::max(f, static_cast<int32_t>(filled));
    }
  }
  int64_t live = 0;
  for (const kv::BlockId b : touched) {
    live += block_fill_[static_cast<size_t>(b)];
    block_fill_[static_cast<size_t>(b)] = 0;
  }
  last_live_tokens_ = live;
  sum_live_tokens_ += live;
  sum_used_blocks_ += kv.pool().num_used_blocks();
}

void EngineCore::deliver(std::vector<Delivery>& outputs) {
  for (Delivery& d : outputs) {
    try {
      (*d.first)(std::move(d.second));
    } catch (const std::exception& e) {
      PAGODA_LOG_ERROR("output callback for '{}' threw: {}", d.second.request_id, e.what());
    } catch (...) {
      PAGODA_LOG_ERROR("output callback threw");
    }
  }
}

}  // namespace pagoda::engine
