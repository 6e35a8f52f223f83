// Scheduler: admission, chunked prefill, preemption and token bookkeeping (see scheduler.h).
#include "engine/scheduler.h"

#include <algorithm>

#include "base/check.h"
#include "base/checked_math.h"

namespace pagoda::engine {

Result<Scheduler> Scheduler::create(const SchedulerConfig& config) {
  if (config.max_num_seqs < 1) {
    return invalid_argument("max_num_seqs must be >= 1, got {}", config.max_num_seqs);
  }
  if (config.max_num_batched_tokens < config.max_num_seqs) {
    return invalid_argument("max_num_batched_tokens ({}) must be >= max_num_seqs ({})",
                            config.max_num_batched_tokens, config.max_num_seqs);
  }
  if (config.max_model_len < 0) {
    return invalid_argument("max_model_len must be >= 0, got {}", config.max_model_len);
  }
  // A plan entry carries two tables (step::ScheduledRequest: the full-attention layers' and the
  // sliding-window layers').
  if (config.kv.group_windows.size() > 2 ||
      (config.kv.group_windows.size() == 2 && config.kv.group_windows[0] != 0)) {
    return invalid_argument("kv group_windows must be empty or {{0, window}}");
  }
  const SpeculativeSchedulingConfig& spec = config.speculative;
  if (spec.num_speculative_tokens < 0 || spec.num_speculative_tokens > 64 ||
      spec.num_speculative_tokens >= config.max_num_batched_tokens) {
    return invalid_argument(
        "num_speculative_tokens must be in [0, 64] and below max_num_batched_tokens ({}), got {}",
        config.max_num_batched_tokens, spec.num_speculative_tokens);
  }
  if (spec.disable_batch_tokens < 0) {
    return invalid_argument("speculative disable_batch_tokens must be >= 0, got {}",
                            spec.disable_batch_tokens);
  }
  if (config.long_prefill_token_threshold < 0) {
    return invalid_argument("long_prefill_token_threshold must be >= 0, got {}",
                            config.long_prefill_token_threshold);
  }
  auto kv = kv::KvManager::create(config.kv);
  if (!kv.ok()) return kv.status().with_context("scheduler kv config");
  return Scheduler(config, std::move(kv).value());
}

Scheduler::Scheduler(const SchedulerConfig& config, kv::KvManager kv)
    : config_(config), kv_(std::move(kv)), waiting_(config.policy) {}

Result<RequestId> Scheduler::add_request(NewRequest request) {
  const auto num_prompt = static_cast<int64_t>(request.prompt_token_ids.size());
  if (num_prompt == 0) return invalid_argument("prompt_token_ids must not be empty");
  for (int64_t i = 0; i < num_prompt; ++i) {
    if (request.prompt_token_ids[i] < 0) {
      return invalid_argument("prompt_token_ids[{}] is negative ({})", i,
                              request.prompt_token_ids[i]);
    }
  }
  const StopParams& stop = request.stop;
  if (stop.max_tokens < 1)
    return invalid_argument("max_tokens must be >= 1, got {}", stop.max_tokens);
  if (stop.min_tokens < 0 || stop.min_tokens > stop.max_tokens) {
    return invalid_argument("min_tokens must be in [0, max_tokens={}], got {}", stop.max_tokens,
                            stop.min_tokens);
  }
  if (request.n < 1 || request.n > config_.max_num_seqs) {
    return invalid_argument("n must be in [1, max_num_seqs={}], got {}", config_.max_num_seqs,
                            request.n);
  }
  if (request.sampling.pooling != PoolingType::kNone && request.n != 1) {
    return invalid_argument("n must be 1 for an embedding (pooling) request, got {}", request.n);
  }
  const int64_t total = num_prompt + stop.max_tokens;  // both bounded far below overflow
  if (config_.max_model_len > 0 && total > config_.max_model_len) {
    return invalid_argument("prompt ({} tokens) + max_tokens ({}) exceeds max_model_len ({})",
                            num_prompt, stop.max_tokens, config_.max_model_len);
  }
  // With a sliding window on every layer the sequence holds only its window's blocks.
  const int64_t blocks = kv_.max_blocks_held(total, config_.max_num_batched_tokens);
  if (blocks > kv_.pool().num_usable_blocks()) {
    return invalid_argument(
        "prompt ({} tokens) + max_tokens ({}) needs {} KV blocks of {} tokens but the cache "
        "has {}",
        num_prompt, stop.max_tokens, blocks, kv_.block_size(), kv_.pool().num_usable_blocks());
  }
  if (!config_.enable_chunked_prefill && total > config_.max_num_batched_tokens) {
    return invalid_argument(
        "prompt ({} tokens) + max_tokens ({}) exceeds max_num_batched_tokens ({}) with chunked "
        "prefill off (a preempted request is recomputed in one step)",
        num_prompt, stop.max_tokens, config_.max_num_batched_tokens);
  }
  if (config_.max_num_waiting > 0 &&
      waiting_.size() >= static_cast<size_t>(config_.max_num_waiting)) {
    return resource_exhausted("the waiting queue is full ({} requests)", waiting_.size());
  }
  if (request.beam_search) PAGODA_RETURN_IF_ERROR(check_beam_request(request));
  const std::optional<BeamSearchParams> beam = request.beam_search;
  const int32_t beam_num_results = request.beam_num_results;
  const RequestId id = next_id_++;
  auto r = std::make_unique<Request>(id, std::move(request), next_arrival_seq_++);
  r->num_speculative_tokens_ = config_.speculative.num_speculative_tokens;
  if (beam) add_beam_group(r.get(), *beam, beam_num_results);
  waiting_.push_new(r.get());
  requests_.emplace(id, std::move(r));
  return id;
}

Request* Scheduler::lookup(RequestId id) {
  const auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : it->second.get();
}

const Request* Scheduler::find(RequestId id) const {
  const auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : it->second.get();
}

std::vector<RequestId> Scheduler::running_ids() const {
  std::vector<RequestId> ids;
  ids.reserve(running_.size());
  for (const Request* r : running_)
    ids.push_back(r->id());
  return ids;
}

int32_t Scheduler::num_running_seqs() const {
  int32_t n = num_beam_seqs();
  for (const Request* r : running_) {
    if (!r->beam_root_) n += 1 + r->num_pending_samples_;
  }
  return n;
}

namespace {
// Tokens to compute now for a request with `remaining` uncomputed tokens; 0 = cannot fit.
int64_t chunk_tokens(int64_t remaining, int64_t budget, const SchedulerConfig& config) {
  if (remaining <= 0 || budget <= 0) return 0;
  if (!config.enable_chunked_prefill) return remaining <= budget ? remaining : 0;
  int64_t n = remaining;
  if (config.long_prefill_token_threshold > 0) {
    n = std::min<int64_t>(n, config.long_prefill_token_threshold);
  }
  return std::min(n, budget);
}
// Uncomputed tokens a running request may compute now: all, or all but the last (the one
// whose logits are sampled) while its SamplingGate is closed.
int64_t uncomputed_schedulable(const Request& r) {
  const int64_t uncomputed = r.num_tokens() - r.num_computed_tokens();
  return r.sampling_gated() ? uncomputed - 1 : uncomputed;
}
}  // namespace

std::vector<std::pair<RequestId, Status>> Scheduler::poll_sampling_gates() {
  std::vector<std::pair<RequestId, Status>> failed;
  for (auto& [id, r] : requests_) {
    if (!r->sampling_gate_) continue;
    std::optional<Status> verdict = r->sampling_gate_();
    if (!verdict) continue;
    if (verdict->ok()) {
      r->sampling_gate_ = nullptr;
    } else {
      failed.emplace_back(id, std::move(*verdict));
    }
  }
  std::sort(failed.begin(), failed.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return failed;
}

Request* Scheduler::pick_victim() const {
  PAGODA_CHECK(!running_.empty());
  // Beams are victims only when nothing else runs (a beam-search request is not recomputed: it
  // fails, see beam-search.md).
  std::vector<Request*> candidates;
  for (Request* r : running_) {
    if (!r->beam_root_) candidates.push_back(r);
  }
  if (candidates.empty()) candidates = running_;
  if (config_.policy == SchedulingPolicy::kFcfs) return candidates.back();
  // The request the policy would admit last: largest (priority, arrival, id).
  return *std::max_element(candidates.begin(), candidates.end(), WaitingQueue::before);
}

void Scheduler::remove_running(Request* r) {
  const auto it = std::find(running_.begin(), running_.end(), r);
  PAGODA_CHECK(it != running_.end());
  running_.erase(it);
}

void Scheduler::preempt(Request* r, std::vector<Candidate>& chosen, int64_t& budget,
                        step::StepPlan& plan) {
  // Chosen earlier in this step (priority policy, or a decode ahead of a prefill): undo it,
  // dropping its allocation (copies included; the freed blocks carry nothing yet).
  const auto it =
      std::find_if(chosen.begin(), chosen.end(), [r](const Candidate& c) { return c.r == r; });
  if (it != chosen.end()) {
    budget += it->num_new_tokens + it->num_drafts;
    chosen.erase(it);
  }
  r->draft_token_ids_.clear();
  kv_.free(r->id_);
  remove_running(r);
  r->status_ = RequestStatus::kPreempted;
  r->num_computed_tokens_ = 0;
  r->scheduled_since_admission_ = false;
  ++r->num_preemptions_;
  ++num_preemptions_;
  waiting_.push_preempted(r);
  plan.preempted_ids.push_back(r->id_);
}

// The full blocks this step's tokens complete enter the prefix cache now, before they are
// computed (as in vLLM): a request admitted later in the same step hits them. That is safe
// because the runner writes every sequence's K/V of a layer before any attention of that layer
// reads it, a hit never covers a sequence's last token, and nothing published here is undone by
// a preemption (those happen before the first publish of a step). If the step fails, fail_step
// drops the whole prefix cache, as the published blocks hold nothing valid.
void Scheduler::publish_scheduled_blocks(const Candidate& c) {
  kv::SequenceView view = c.r->kv_view();
  view.num_computed_tokens = c.r->num_computed_tokens_ + c.num_new_tokens;
  kv_.cache_blocks(view);
}

step::StepPlan Scheduler::schedule() {
  PAGODA_CHECK_MSG(!outstanding_step_, "schedule() called while a plan is outstanding");
  step::StepPlan plan;
  plan.step_id = next_step_id_++;
  plan.block_size = kv_.block_size();
  int64_t budget = config_.max_num_batched_tokens;
  std::vector<Candidate> chosen;

  // 1. Running requests: decodes first, then prefill (or recompute) chunks.
  // (By id: a failed beam-search request's beams are gone, not preempted.)
  std::vector<RequestId> order;
  order.reserve(running_.size());
  for (Request* r : running_) {
    if (r->num_tokens() - r->num_computed_tokens_ == 1) order.push_back(r->id_);
  }
  for (Request* r : running_) {
    if (r->num_tokens() - r->num_computed_tokens_ != 1) order.push_back(r->id_);
  }
  for (const RequestId id : order) {
    if (budget <= 0) break;
    Request* r = lookup(id);
    if (r == nullptr || r->status_ != RequestStatus::kRunning) continue;  // preempted / failed
    const int64_t n = chunk_tokens(uncomputed_schedulable(*r), budget, config_);
    if (n == 0) continue;  // an unchunked prompt larger than the budget left, or gated
    std::optional<kv::SlotAllocation> alloc;
    bool own_group_failed = false;
    while (!(alloc = kv_.allocate_slots(r->kv_view(), n))) {
      Request* victim = pick_victim();
      if (victim->beam_root_) {
        own_group_failed = victim->beam_root_ == r->beam_root_;
        end_beam_group(*victim->beam_root_, FinishReason::kError,
                       "the KV cache is full and a beam-search request is not preempted and "
                       "recomputed: it failed (retry it, or lower best_of / max_tokens)",
                       pending_events_, &chosen, &budget);
        if (own_group_failed) break;
        continue;
      }
      preempt(victim, chosen, budget, plan);
      if (victim == r) break;
    }
    if (own_group_failed) continue;
    if (!alloc) break;  // nothing after the request that could not fit alone will fit
    chosen.push_back(Candidate{r, n, std::move(*alloc), !r->scheduled_since_admission_});
    budget -= n;
  }
  // Drafts ride on the decodes as lookahead slots, from the budget every running request left
  // (so they never delay one) and only from free blocks (never worth a preemption).
  const bool speculate = speculation_allowed();
  if (speculate) {
    for (Candidate& c : chosen) {
      if (budget <= 0) break;
      Request* r = c.r;
      if (c.num_new_tokens != 1 || r->num_tokens() - r->num_computed_tokens_ != 1) continue;
      const int64_t k = num_drafts_to_schedule(*r, budget);
      if (k == 0) continue;
      std::optional<kv::SlotAllocation> more = kv_.allocate_slots(r->kv_view(), 1, nullptr, k);
      if (!more) continue;
      c.alloc.new_block_ids.insert(c.alloc.new_block_ids.end(), more->new_block_ids.begin(),
                                   more->new_block_ids.end());
      c.alloc.copies.insert(c.alloc.copies.end(), more->copies.begin(), more->copies.end());
      c.num_drafts = k;
      budget -= k;
    }
  }
  // Preemption is over for this step: publish what the running requests will compute, so the
  // requests admitted below can share it (see publish_scheduled_blocks).
  for (const Candidate& c : chosen)
    publish_scheduled_blocks(c);

  // 2. Waiting requests, in policy order, only when nobody had to be preempted.
  if (plan.preempted_ids.empty()) {
    int32_t num_seqs = num_running_seqs();
    std::vector<Request*> gated;  // skipped: nothing to compute until their gate opens
    while (!waiting_.empty() && budget > 0) {
      Request* r = waiting_.front();
      const int32_t seqs = r->beam_root_ ? beam_groups_.at(*r->beam_root_).params.beam_width
                                         : 1 + r->num_pending_samples_;
      if (num_seqs + seqs > config_.max_num_seqs) break;
      PAGODA_CHECK(r->num_computed_tokens_ == 0);
      // A request that wants prompt logprobs computes every prompt position (no prefix hit), so
      // each one has its logits row; its blocks are still published for others. Pooling reads
      // every prompt position's hidden state: nothing may be skipped either.
      const kv::PrefixHit hit =
          r->sampling_->prompt_logprobs >= 0 || r->sampling_->pooling != PoolingType::kNone
              ? kv::PrefixHit{}
              : kv_.get_computed_blocks(r->kv_view());
      int64_t uncomputed = r->num_tokens() - hit.num_tokens;
      if (r->sampling_gated()) {
        if (--uncomputed == 0) {
          waiting_.pop_front();
          gated.push_back(r);
          continue;
        }
      }
      const int64_t n = chunk_tokens(uncomputed, budget, config_);
      if (n == 0) break;
      std::optional<kv::SlotAllocation> alloc = kv_.allocate_slots(r->kv_view(), n, &hit);
      if (!alloc) break;
      waiting_.pop_front();
      r->status_ = RequestStatus::kRunning;
      r->num_computed_tokens_ = hit.num_tokens;
      if (!r->admitted_once_) {
        r->admitted_once_ = true;
        r->num_cached_tokens_ = hit.num_tokens;
      }
      running_.push_back(r);
      if (r->beam_root_) beam_groups_.at(*r->beam_root_).admitted = true;
      num_seqs += seqs;
      chosen.push_back(Candidate{r, n, std::move(*alloc), true});
      publish_scheduled_blocks(chosen.back());
      budget -= n;
    }
    for (auto it = gated.rbegin(); it != gated.rend(); ++it)
      waiting_.push_preempted(*it);  // back in their places (the front, or by priority)
  }

  // 3. The plan, in the order chosen; computed tokens advance as if it had run.
  plan.requests.reserve(chosen.size());
  const Clock::time_point now = Clock::now();
  for (Candidate& c : chosen) {
    Request* r = c.r;
    step::ScheduledRequest s;
    s.id = r->id_;
    s.num_computed_tokens = r->num_computed_tokens_;
    s.num_prompt_tokens = r->num_prompt_tokens_;
    const auto begin = r->token_ids_.begin() + r->num_computed_tokens_;
    s.token_ids.assign(begin, begin + c.num_new_tokens);
    s.token_ids.insert(s.token_ids.end(), r->draft_token_ids_.begin(),
                       r->draft_token_ids_.begin() + c.num_drafts);
    s.num_draft_tokens = static_cast<int32_t>(c.num_drafts);
    const std::span<const kv::BlockId> table = kv_.block_table(r->id_);
    s.block_table.assign(table.begin(), table.end());
    if (kv_.num_groups() > 1) {
      const std::span<const kv::BlockId> sliding = kv_.block_table(r->id_, 1);
      s.sliding_block_table.assign(sliding.begin(), sliding.end());
    }
    s.new_block_ids = std::move(c.alloc.new_block_ids);
    plan.block_copies.insert(plan.block_copies.end(), c.alloc.copies.begin(), c.alloc.copies.end());
    s.is_new = c.is_new;
    if (c.is_new) s.history_token_ids = r->token_ids_;
    if (!r->first_scheduled_time_) r->first_scheduled_time_ = now;
    const int64_t prompt_end =
        std::min(r->num_prompt_tokens_, r->num_computed_tokens_ + c.num_new_tokens);
    num_prompt_tokens_computed_ += std::max<int64_t>(0, prompt_end - r->num_computed_tokens_);
    const bool reaches_end = r->num_computed_tokens_ + c.num_new_tokens == r->num_tokens();
    s.num_samples = reaches_end ? 1 + r->num_pending_samples_ : 0;
    s.sample_index = r->sample_index_;
    if (speculate && s.num_samples > 0 && !r->beam_root_) {  // beams draft nothing
      // The k the request will have after this step's verification at most (settle_drafts
      // doubles it after a fully accepted run).
      s.num_proposal_tokens = std::max<int32_t>(
          r->num_speculative_tokens_, std::min<int32_t>(config_.speculative.num_speculative_tokens,
                                                        static_cast<int32_t>(2 * c.num_drafts)));
    }
    s.sampling = r->sampling_;
    s.lora_id = r->lora_id_;
    plan.num_scheduled_tokens += c.num_new_tokens + c.num_drafts;
    // Drafts are not known tokens: they count as computed only once accepted.
    r->num_computed_tokens_ += c.num_new_tokens;
    r->scheduled_since_admission_ = true;
    r->in_flight_ = true;
    plan.requests.push_back(std::move(s));
  }
  ++num_steps_;
  if (!plan.requests.empty()) {
    // Requests finished since the last plan reach the runner with the next plan that runs.
    plan.finished_ids = std::move(finished_since_plan_);
    finished_since_plan_.clear();
    outstanding_step_ = plan.step_id;
  }
  return plan;
}

std::optional<FinishReason> Scheduler::check_stop(const Request& r,
                                                  std::optional<TokenId>& stop_token) const {
  const TokenId last = r.token_ids_.back();
  const StopParams& stop = r.stop_;
  if (r.num_output_tokens() >= stop.min_tokens) {
    const auto has = [last](const std::vector<TokenId>& ids) {
      return std::find(ids.begin(), ids.end(), last) != ids.end();
    };
    if ((!stop.ignore_eos && has(stop.eos_token_ids)) || has(stop.stop_token_ids)) {
      stop_token = last;
      return FinishReason::kStop;
    }
  }
  if (r.num_output_tokens() >= stop.max_tokens) return FinishReason::kLength;
  if (config_.max_model_len > 0 && r.num_tokens() >= config_.max_model_len) {
    return FinishReason::kLength;
  }
  return std::nullopt;
}

void Scheduler::finish(Request* r, FinishReason reason) {
  const RequestId id = r->id_;
  if (r->status_ == RequestStatus::kRunning) {
    remove_running(r);
    if (r->in_flight_) {
      deferred_frees_.push_back(id);  // the runner may still be writing its blocks
    } else {
      kv_.free(id);
    }
  } else {
    PAGODA_CHECK(waiting_.remove(r));
  }
  r->status_ = finished_status(reason);
  finished_since_plan_.push_back(id);
  requests_.erase(id);  // destroys *r
}

void Scheduler::release_deferred() {
  for (const kv::SeqId id : deferred_frees_)
    kv_.free(id);
  deferred_frees_.clear();
}

void Scheduler::fill_event_info(const Request& r, RequestEvent& ev) {
  ev.parent_id = r.parent_id_;
  ev.sample_index = r.sample_index_;
  ev.num_output_tokens = r.num_output_tokens();
  ev.num_prompt_tokens = r.num_prompt_tokens_;
  ev.num_cached_tokens = r.num_cached_tokens_;
  ev.arrival_time = r.arrival_time_;
  ev.first_scheduled_time = r.first_scheduled_time_;
}

bool Scheduler::append_token(Request* r, TokenId token, const TokenLogprobs* logprobs,
                             RequestEvent& ev) {
  r->token_ids_.push_back(token);
  ++num_generation_tokens_;
  ev.id = r->id_;
  ev.new_token_ids.push_back(token);
  if (logprobs != nullptr) ev.new_logprobs.push_back(*logprobs);
  fill_event_info(*r, ev);
  std::optional<TokenId> stop_token;
  if (const std::optional<FinishReason> reason = check_stop(*r, stop_token)) {
    ev.finish_reason = reason;
    ev.stop_token_id = stop_token;
    finish(r, *reason);
    return true;
  }
  return false;
}

bool Scheduler::speculation_allowed() const {
  const SpeculativeSchedulingConfig& spec = config_.speculative;
  if (spec.num_speculative_tokens == 0) return false;
  if (spec.disable_batch_tokens == 0) return true;
  int64_t tokens = 0;
  for (const Request* r : running_) {
    tokens += std::max<int64_t>(0, uncomputed_schedulable(*r));
    if (tokens > spec.disable_batch_tokens) return false;
  }
  return true;
}

int64_t Scheduler::num_drafts_to_schedule(const Request& r, int64_t budget) const {
  // A beam advances one token per step (its 2W candidates are ranked across beams): no drafts.
  if (r.draft_token_ids_.empty() || r.num_pending_samples_ > 0 || r.sampling_gated() ||
      r.beam_root_) {
    return 0;
  }
  // Every draft accepted yields num_drafts + 1 tokens: stay within max_tokens and
  // max_model_len (the last draft's position is num_tokens - 1 + num_drafts).
  int64_t k =
      std::min<int64_t>(static_cast<int64_t>(r.draft_token_ids_.size()), r.num_speculative_tokens_);
  k = std::min(k, budget);
  k = std::min<int64_t>(k, r.stop_.max_tokens - r.num_output_tokens() - 1);
  if (config_.max_model_len > 0) k = std::min(k, config_.max_model_len - r.num_tokens());
  return std::max<int64_t>(k, 0);
}

void Scheduler::settle_drafts(Request* r, int32_t num_drafts, int32_t num_accepted, bool finished) {
  SpecDecodeStats& st = spec_stats_;
  ++st.num_drafts;
  st.num_draft_tokens += num_drafts;
  st.num_accepted_tokens += num_accepted;
  if (st.num_accepted_tokens_per_pos.size() < static_cast<size_t>(num_drafts)) {
    st.num_accepted_tokens_per_pos.resize(static_cast<size_t>(num_drafts), 0);
  }
  for (int32_t i = 0; i < num_accepted; ++i)
    ++st.num_accepted_tokens_per_pos[static_cast<size_t>(i)];
  if (finished) return;  // r is gone (its blocks with it)
  // The accepted drafts' KV is valid; the slot after them (the correction / bonus token's) and
  // those of the rejected drafts are not. Blocks past the known tokens go back to the pool.
  r->num_computed_tokens_ += num_accepted;
  kv_.trim(r->id_, kv_.num_blocks_for_tokens(r->num_tokens()));
  const int32_t max_k = config_.speculative.num_speculative_tokens;
  if (config_.speculative.adaptive) {
    r->num_speculative_tokens_ = num_accepted == num_drafts
                                     ? std::min(max_k, std::max(1, 2 * num_drafts))
                                     : std::min(max_k, num_accepted + 1);
  }
}

Result<std::vector<RequestEvent>> Scheduler::update_from_output(const step::StepPlan& plan,
                                                                const step::StepOutput& output) {
  if (plan.requests.empty()) return std::vector<RequestEvent>{};
  if (outstanding_step_ != plan.step_id) {
    return failed_precondition("update_from_output: step {} is not the outstanding plan",
                               plan.step_id);
  }
  // Validate everything before changing anything.
  size_t k = 0, num_pooled = 0;
  for (const step::ScheduledRequest& s : plan.requests) {
    if (s.num_samples == 0) continue;
    if (s.sampling->pooling != PoolingType::kNone) {
      if (num_pooled >= output.embeddings.size() || output.embeddings[num_pooled].id != s.id ||
          output.embeddings[num_pooled].values.empty() || s.num_draft_tokens != 0) {
        return internal_error("runner output embeddings[{}] is missing, empty or not request {}'s",
                              num_pooled, s.id);
      }
      ++num_pooled;
      continue;
    }
    if (k >= output.sampled.size()) {
      return internal_error("runner output has {} sampled entries; the plan needs more",
                            output.sampled.size());
    }
    const step::SampledTokens& o = output.sampled[k];
    if (o.id != s.id) {
      return internal_error("runner output sampled[{}] is for request {}, plan expects {}", k, o.id,
                            s.id);
    }
    if (s.num_draft_tokens > 0) {
      if (o.token_ids.empty() || o.token_ids.size() > static_cast<size_t>(s.num_draft_tokens) + 1) {
        return internal_error("runner output sampled[{}] has {} tokens for {} drafts", k,
                              o.token_ids.size(), s.num_draft_tokens);
      }
    } else if (o.token_ids.size() != static_cast<size_t>(s.num_samples)) {
      return internal_error("runner output sampled[{}] has {} tokens, plan asks {}", k,
                            o.token_ids.size(), s.num_samples);
    }
    if (!o.logprobs.empty() && o.logprobs.size() != o.token_ids.size()) {
      return internal_error("runner output sampled[{}] has {} logprobs for {} tokens", k,
                            o.logprobs.size(), o.token_ids.size());
    }
    for (const TokenId t : o.token_ids) {
      if (t < 0) return internal_error("runner output sampled[{}] has token id {}", k, t);
    }
    for (const TokenId t : o.draft_token_ids) {
      if (t < 0) return internal_error("runner output sampled[{}] has draft id {}", k, t);
    }
    if (const Request* r = find(s.id);
        r != nullptr && r->beam_root_ && (o.logprobs.size() != 1 || o.logprobs[0].top.empty())) {
      return internal_error("runner output sampled[{}] lacks the beam's top logprobs", k);
    }
    ++k;
  }
  if (k != output.sampled.size() || num_pooled != output.embeddings.size()) {
    return internal_error(
        "runner output has {} sampled entries and {} embeddings, plan expects {}"
        " and {}",
        output.sampled.size(), output.embeddings.size(), k, num_pooled);
  }
  outstanding_step_.reset();

  std::vector<RequestEvent> events = take_pending_events();
  k = 0;
  num_pooled = 0;
  for (const step::ScheduledRequest& s : plan.requests) {
    const bool pooling = s.sampling->pooling != PoolingType::kNone;
    const step::PooledEmbedding* pooled =
        pooling && s.num_samples > 0 ? &output.embeddings[num_pooled++] : nullptr;
    const step::SampledTokens* o = !pooling && s.num_samples > 0 ? &output.sampled[k++] : nullptr;
    Request* r = lookup(s.id);
    if (r == nullptr) continue;  // aborted while in flight
    r->in_flight_ = false;
    if (pooled != nullptr) {
      // An embedding request ends once its prompt is computed: no token is appended.
      RequestEvent ev;
      ev.id = r->id_;
      fill_event_info(*r, ev);
      ev.embedding = pooled->values;
      ev.finish_reason = FinishReason::kStop;
      finish(r, FinishReason::kStop);
      events.push_back(std::move(ev));
      continue;
    }
    if (o == nullptr) continue;
    if (r->beam_root_) {
      settle_beam(r, *o, events);
      continue;
    }
    const auto lp = [o](size_t i) { return o->logprobs.empty() ? nullptr : &o->logprobs[i]; };
    // Fork first, so every child starts from exactly the parent's tokens and blocks.
    std::vector<Request*> children;
    if (r->num_pending_samples_ > 0) {
      PAGODA_CHECK(r->num_output_tokens() == 0);
      for (int32_t i = 1; i <= r->num_pending_samples_; ++i) {
        auto child = std::make_unique<Request>(*r);
        child->id_ = next_id_++;
        child->parent_id_ = r->id_;
        child->sample_index_ = i;
        child->num_pending_samples_ = 0;
        child->num_preemptions_ = 0;
        child->scheduled_since_admission_ = false;
        child->draft_token_ids_.clear();
        PAGODA_CHECK(kv_.fork(r->kv_view(), child->id_).ok());
        children.push_back(child.get());
        running_.push_back(child.get());
        requests_.emplace(child->id_, std::move(child));
      }
      r->num_pending_samples_ = 0;
    }
    if (s.num_draft_tokens > 0) {
      // Accepted drafts, then the correction / bonus token; a stop inside the run drops the rest.
      RequestEvent ev;
      bool finished = false;
      for (size_t i = 0; i < o->token_ids.size() && !finished; ++i)
        finished = append_token(r, o->token_ids[i], lp(i), ev);
      events.push_back(std::move(ev));
      settle_drafts(r, s.num_draft_tokens, static_cast<int32_t>(o->token_ids.size()) - 1, finished);
      if (!finished) r->draft_token_ids_ = o->draft_token_ids;
      continue;
    }
    RequestEvent ev;
    const bool finished = append_token(r, o->token_ids[0], lp(0), ev);
    events.push_back(std::move(ev));
    if (!finished && config_.speculative.num_speculative_tokens > 0) {
      r->draft_token_ids_ = o->draft_token_ids;
    }
    for (size_t i = 0; i < children.size(); ++i) {
      RequestEvent child_ev;
      append_token(children[i], o->token_ids[i + 1], lp(i + 1), child_ev);
      events.push_back(std::move(child_ev));
    }
  }
  release_deferred();
  return events;
}

std::vector<RequestEvent> Scheduler::fail_step(const step::StepPlan& plan) {
  std::vector<RequestEvent> events = take_pending_events();
  if (plan.requests.empty() || outstanding_step_ != plan.step_id) return events;
  outstanding_step_.reset();
  // Blocks published when the step was scheduled were never written (publish_scheduled_blocks).
  kv_.reset_prefix_cache();
  for (const step::ScheduledRequest& s : plan.requests) {
    Request* r = lookup(s.id);
    if (r == nullptr) continue;
    r->in_flight_ = false;
    if (r->beam_root_) {
      end_beam_group(*r->beam_root_, FinishReason::kError, "", events);
      continue;
    }
    RequestEvent ev;
    ev.id = r->id_;
    ev.finish_reason = FinishReason::kError;
    fill_event_info(*r, ev);
    finish(r, FinishReason::kError);
    events.push_back(std::move(ev));
  }
  release_deferred();
  return events;
}

Status Scheduler::abort(RequestId id) {
  if (beam_groups_.count(id) != 0) {
    std::vector<RequestEvent> unused;  // the caller reports the abort itself
    end_beam_group(id, FinishReason::kAbort, "", unused);
    return Status();
  }
  Request* r = lookup(id);
  if (r == nullptr) return not_found("request {} is unknown or already finished", id);
  if (r->beam_root_) return abort(*r->beam_root_);
  finish(r, FinishReason::kAbort);
  return Status();
}

SchedulerStats Scheduler::stats() const {
  SchedulerStats s;
  s.num_running = static_cast<int32_t>(running_.size());
  s.num_waiting = static_cast<int32_t>(waiting_.size());
  s.num_preemptions = num_preemptions_;
  s.num_steps = num_steps_;
  s.num_prompt_tokens_computed = num_prompt_tokens_computed_;
  s.num_generation_tokens = num_generation_tokens_;
  s.kv = kv_.stats();
  s.kv_usage = s.kv.usage;
  s.spec_decode = spec_stats_;
  s.prefix_cache_hit_rate =
      s.kv.prefix_cache_queries > 0
          ? static_cast<double>(s.kv.prefix_cache_hits) / s.kv.prefix_cache_queries
          : 0.0;
  return s;
}

Status Scheduler::check_invariants() const {
  PAGODA_RETURN_IF_ERROR(kv_.check_invariants());
  if (running_.size() + waiting_.size() != requests_.size()) {
    return internal_error("{} running + {} waiting != {} requests", running_.size(),
                          waiting_.size(), requests_.size());
  }
  if (num_running_seqs() > config_.max_num_seqs) {
    return internal_error("{} running sequences exceed max_num_seqs {}", num_running_seqs(),
                          config_.max_num_seqs);
  }
  for (const Request* r : running_) {
    if (r->status_ != RequestStatus::kRunning) {
      return internal_error("running request {} has status {}", r->id_, to_string(r->status_));
    }
    if (find(r->id_) != r) return internal_error("running request {} not registered", r->id_);
    const int64_t limit =
        outstanding_step_ || beam_awaits_siblings(*r) ? r->num_tokens() : r->num_tokens() - 1;
    if (r->num_computed_tokens_ < 0 || r->num_computed_tokens_ > limit) {
      return internal_error("running request {} has {} computed of {} tokens", r->id_,
                            r->num_computed_tokens_, r->num_tokens());
    }
    const auto table = kv_.block_table(r->id_);
    if (!kv_.contains(r->id_) ||
        static_cast<int64_t>(table.size()) < kv_.num_blocks_for_tokens(r->num_computed_tokens_)) {
      return internal_error("running request {} has {} blocks for {} computed tokens", r->id_,
                            table.size(), r->num_computed_tokens_);
    }
  }
  for (const Request* r : waiting_.items()) {
    if (r->status_ != RequestStatus::kWaiting && r->status_ != RequestStatus::kPreempted) {
      return internal_error("waiting request {} has status {}", r->id_, to_string(r->status_));
    }
    if (find(r->id_) != r) return internal_error("waiting request {} not registered", r->id_);
    if (r->num_computed_tokens_ != 0 || kv_.contains(r->id_)) {
      return internal_error("waiting request {} holds KV state", r->id_);
    }
  }
  if (kv_.num_sequences() != running_.size() + deferred_frees_.size()) {
    return internal_error("kv tracks {} sequences, scheduler {} running + {} deferred",
                          kv_.num_sequences(), running_.size(), deferred_frees_.size());
  }
  return Status();
}

}  // namespace pagoda::engine
