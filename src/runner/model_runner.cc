#include "runner/model_runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>

#include "kernels/isa.h"
#include "runner/constraint_mask.h"
#include "runner/draft_model_proposer.h"
#include "sampling/rejection_sampler.h"

namespace pagoda::runner {

Result<std::unique_ptr<ModelRunner>> ModelRunner::create(model::Model& model,
                                                         const RunnerConfig& config) {
  if (config.kv_groups && config.draft_model != nullptr) {
    return invalid_argument("hybrid KV groups do not run with a draft model");
  }
  PAGODA_ASSIGN_OR_RETURN(KvStorage storage,
                          KvStorage::create(model.backend(), model.kv_layout(config.kv_groups),
                                            config.num_blocks, config.block_size, config.kv_dtype));
  std::unique_ptr<ModelRunner> runner(new ModelRunner(model, std::move(storage), config));
  runner->pace_drafts_ = config.pace_drafts;
  runner->pacing_ = config.pacing;
  if (config.ngram && config.draft_model != nullptr) {
    return invalid_argument("speculative decoding: ngram and a draft model are exclusive");
  }
  if (config.ngram) {
    PAGODA_ASSIGN_OR_RETURN(NgramProposer proposer, NgramProposer::create(*config.ngram));
    runner->proposer_ = std::make_unique<NgramProposer>(proposer);
  }
  if (config.draft_model != nullptr) {
    DraftModelConfig dc;
    dc.num_blocks = config.num_blocks;
    dc.block_size = config.block_size;
    dc.kv_dtype = config.kv_dtype;
    dc.max_num_seqs = config.max_num_seqs;
    dc.num_speculative_tokens = config.num_speculative_tokens;
    dc.flash_attention = config.flash_attention;
    PAGODA_ASSIGN_OR_RETURN(
        runner->proposer_,
        DraftModelProposer::create(*config.draft_model, model.config().vocab_size, dc));
  }
  return runner;
}

Result<int64_t> ModelRunner::blocks_for_memory(const model::ModelConfig& config, uint64_t bytes,
                                               int32_t block_size, tensor::DType dtype,
                                               bool kv_groups) {
  PAGODA_ASSIGN_OR_RETURN(
      uint64_t per_block,
      KvStorage::bytes_per_block(model::kv_layout(config, kv_groups), block_size, dtype));
  const uint64_t n = bytes / per_block;
  if (n < 2) {
    return resource_exhausted("{} bytes of KV memory hold {} blocks of {} tokens; need at least 2",
                              bytes, n, block_size);
  }
  return static_cast<int64_t>(std::min<uint64_t>(n, uint64_t{1} << 30));
}

ModelRunner::ModelRunner(model::Model& model, KvStorage storage, const RunnerConfig& config)
    : model_(model),
      storage_(std::move(storage)),
      flash_attention_(config.flash_attention),
      kv_groups_(config.kv_groups),
      grammars_(config.grammars),
      loras_(config.loras) {}

Result<std::unique_ptr<structured::Constraint>> ModelRunner::make_constraint(
    const step::ScheduledRequest& entry, std::span<const int32_t> outputs) {
  const StructuredOutputs& spec = entry.sampling->structured;
  if (spec.empty()) return std::unique_ptr<structured::Constraint>();
  if (!grammars_) return failed_precondition("structured output is not enabled in this runner");
  PAGODA_ASSIGN_OR_RETURN(std::shared_ptr<const structured::CompiledGrammar> grammar,
                          grammars_->get(spec));
  auto constraint = std::make_unique<structured::Constraint>(std::move(grammar), spec.trigger,
                                                             spec.repeat_trigger);
  for (int32_t token : outputs) {
    // Replaying what this constraint allowed before (after preemption): cannot fail unless the
    // engine's history disagrees with ours.
    PAGODA_RETURN_IF_ERROR(constraint->accept_token(token));
  }
  return constraint;
}

ModelRunner::RequestState ModelRunner::make_state(const step::ScheduledRequest& entry) const {
  const auto& history = entry.history_token_ids;
  const size_t num_prompt =
      std::min(history.size(), static_cast<size_t>(std::max<int64_t>(entry.num_prompt_tokens, 0)));
  const auto tokens = std::span<const int32_t>(history);
  RequestState state{
      make_sampler(entry, entry.sample_index, tokens.first(num_prompt), tokens.subspan(num_prompt)),
      nullptr,
      false,
      history,
      num_prompt,
      {},
      0,
      {},
      {},
      0,
      DraftPacer(pacing_)};
  if (entry.sampling->seed) {
    state.draft_seed = sampling::Sampler::derive_seed(*entry.sampling->seed ^ 0xd4af7d4af7ull,
                                                      entry.sample_index + 1);
  } else {
    std::random_device rd;
    state.draft_seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }
  return state;
}

Status ModelRunner::propose(const step::StepPlan& plan) {
  std::vector<ProposalRequest> requests;
  requests.reserve(plan.requests.size());
  // The cost rule's view of the next step: this one's tokens without drafts.
  std::optional<SpeculationCosts> costs;
  int32_t max_drafts = 0;    // the most any request may draft (its proposal's passes)
  int64_t num_sampling = 0;  // rows drawing a token next step (the cost rule's n)
  if (pace_drafts_) {
    int64_t plain_tokens = 0;
    for (const step::ScheduledRequest& entry : plan.requests) {
      plain_tokens += static_cast<int64_t>(entry.token_ids.size()) - entry.num_draft_tokens;
      if (entry.num_samples > 0 && entry.sampling->pooling == PoolingType::kNone) ++num_sampling;
    }
    costs = cost_meter_.costs(plain_tokens);
  }
  for (const step::ScheduledRequest& entry : plan.requests) {
    auto it = states_.find(entry.id);
    if (it == states_.end()) continue;
    if (entry.sampling->pooling != PoolingType::kNone) continue;  // embeddings draw no token
    RequestState& state = it->second;
    state.draft_tokens.clear();
    state.draft_probs.clear();
    ProposalRequest r;
    r.entry = &entry;
    r.sampled = entry.num_samples > 0;
    const auto computed_end =
        static_cast<size_t>(entry.num_computed_tokens) + entry.token_ids.size();
    r.tokens =
        std::span<const int32_t>(state.tokens)
            .first(r.sampled ? state.tokens.size() : std::min(state.tokens.size(), computed_end));
    r.constrained = !entry.sampling->structured.empty();
    r.constraint = state.constraint.get();
    r.sampler = &state.sampler;
    // Drafts depend on the request's seed and its length only (not on the batch).
    r.draft_seed = sampling::Sampler::derive_seed(
        state.draft_seed, static_cast<int32_t>(state.tokens.size() & 0x3fffffff));
    r.draft_tokens = &state.draft_tokens;
    r.draft_probs = &state.draft_probs;
    // A seeded sampled request is not paced: its tokens depend on which drafts it verified (the
    // draft is visited first), and they must not depend on timings (nor on the batch).
    const bool reproducible = entry.sampling->seed && !entry.sampling->is_greedy();
    if (pace_drafts_ && r.sampled && !reproducible) {
      r.max_drafts = state.pacer.next_num_drafts(entry.num_proposal_tokens, costs, num_sampling);
    }
    if (r.sampled) {
      max_drafts = std::max(max_drafts, std::min(r.max_drafts, entry.num_proposal_tokens));
    }
    requests.push_back(r);
  }
  const auto start = std::chrono::steady_clock::now();
  PAGODA_RETURN_IF_ERROR(proposer_->propose(plan, requests));
  if (pace_drafts_) {
    if (const std::optional<ProposalPasses> passes = proposer_->last_passes()) {
      cost_meter_.record_proposal_passes(*passes, seconds_since(start));
    } else {
      cost_meter_.record_proposal(max_drafts, seconds_since(start));
    }
  }
  const size_t vocab = static_cast<size_t>(model_.config().vocab_size);
  for (const ProposalRequest& r : requests) {
    const auto cap = static_cast<size_t>(std::max(r.max_drafts, 0));
    if (r.draft_tokens->size() > cap) r.draft_tokens->resize(cap);
    if (r.draft_probs->size() > cap * vocab) r.draft_probs->resize(cap * vocab);
  }
  return Status();
}

sampling::Sampler ModelRunner::make_sampler(const step::ScheduledRequest& entry,
                                            int32_t sample_index, std::span<const int32_t> prompt,
                                            std::span<const int32_t> outputs) const {
  SamplingParams params = *entry.sampling;
  if (params.seed) params.seed = sampling::Sampler::derive_seed(*params.seed, sample_index);
  sampling::Sampler sampler(params, model_.config().vocab_size, prompt);
  sampler.restore(outputs);
  return sampler;
}

Status ModelRunner::forward_step() {
  logits_.resize(logit_rows_.size() * static_cast<size_t>(model_.config().vocab_size));
  model::ForwardBatch batch;
  batch.tokens = tokens_;
  batch.positions = positions_;
  batch.sequences = slices_;
  batch.logit_rows = logit_rows_;
  hidden_.resize(hidden_rows_.size() * static_cast<size_t>(model_.config().hidden_dim));
  batch.hidden_rows = hidden_rows_;
  batch.hidden = hidden_.data();
  batch.token_types = token_types_;
  batch.flash_attention = flash_attention_;
  batch.block_copies = copies_;
  Status status = model_.forward(batch, storage_.layers(), logits_.data());
  copies_.clear();
  return status;
}

Result<int64_t> ModelRunner::warm_up(int32_t num_tokens, int32_t num_logit_rows) {
  const int64_t bs = storage_.block_size();
  const int64_t capacity = (storage_.num_blocks() - 1) * bs;  // block 0 is the null block
  const int64_t t = std::min<int64_t>(num_tokens, capacity);
  if (t <= 0) return int64_t{0};
  const int64_t rows = std::clamp<int64_t>(num_logit_rows, 1, t);
  tokens_.assign(static_cast<size_t>(t), 0);
  positions_.resize(static_cast<size_t>(t));
  for (int64_t i = 0; i < t; ++i)
    positions_[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  logit_rows_.clear();
  hidden_rows_.clear();
  token_types_.clear();
  for (int64_t r = t - rows; r < t; ++r)
    logit_rows_.push_back(static_cast<int32_t>(r));
  std::vector<kv::BlockId> table;
  for (int64_t b = 1; (b - 1) * bs < t; ++b)
    table.push_back(static_cast<kv::BlockId>(b));
  slices_.assign(1, model::SequenceSlice{});
  slices_[0].token_begin = 0;
  slices_[0].num_tokens = static_cast<int32_t>(t);
  slices_[0].block_table = table;
  // (Hybrid KV groups: both groups' layers write the same blocks; nothing here is read later.)
  if (kv_groups_) slices_[0].sliding_block_table = table;
  PAGODA_RETURN_IF_ERROR(forward_step());
  return t;
}

Result<step::StepOutput> ModelRunner::execute(const step::StepPlan& plan) {
  copies_.clear();
  for (step::RequestId id : plan.preempted_ids)
    states_.erase(id);
  for (step::RequestId id : plan.finished_ids)
    states_.erase(id);
  for (const kv::BlockCopy& copy : plan.block_copies) {
    if (copy.src <= 0 || copy.dst <= 0 || copy.src >= storage_.num_blocks() ||
        copy.dst >= storage_.num_blocks()) {
      return internal_error("block copy {} -> {} is outside the KV cache", copy.src, copy.dst);
    }
    storage_.copy_block(copy.src, copy.dst);
    copies_.push_back(model::KvBlockCopy{copy.src, copy.dst});  // (for tensor-parallel peers)
  }

  tokens_.clear();
  positions_.clear();
  token_types_.clear();
  logit_rows_.clear();
  hidden_rows_.clear();
  slices_.clear();
  step_loras_.clear();
  // Per plan entry: its first sampling row, and its prompt-logprobs rows (prompt_logprobs).
  std::vector<size_t> sample_rows(plan.requests.size(), 0);
  std::vector<PromptRows> prompt_rows;
  std::vector<std::pair<size_t, size_t>> pooled;  // per plan entry: first hidden row, count
  pooled.reserve(plan.requests.size());
  for (size_t e = 0; e < plan.requests.size(); ++e) {
    const step::ScheduledRequest& entry = plan.requests[e];
    model::SequenceSlice slice;
    slice.token_begin = static_cast<int32_t>(tokens_.size());
    slice.num_tokens = static_cast<int32_t>(entry.token_ids.size());
    slice.block_table = entry.block_table;
    slice.sliding_block_table = entry.sliding_block_table;
    if (entry.lora_id != 0) {
      std::shared_ptr<const model::LoraAdapter> adapter =
          loras_ ? loras_->find(entry.lora_id) : nullptr;
      if (adapter == nullptr) {
        return internal_error("request {}: LoRA adapter {} is not loaded", entry.id, entry.lora_id);
      }
      slice.lora = adapter.get();
      step_loras_.push_back(std::move(adapter));
    }
    for (size_t i = 0; i < entry.token_ids.size(); ++i) {
      tokens_.push_back(entry.token_ids[i]);
      positions_.push_back(
          static_cast<int32_t>(entry.num_computed_tokens + static_cast<int64_t>(i)));
    }
    if (entry.sampling->second_segment_start > 0) {
      // Sentence pairs (encoders): token types 0 before the second segment, 1 from it.
      token_types_.resize(tokens_.size() - entry.token_ids.size(), 0);
      for (size_t i = 0; i < entry.token_ids.size(); ++i) {
        const int64_t pos = entry.num_computed_tokens + static_cast<int64_t>(i);
        token_types_.push_back(pos >= entry.sampling->second_segment_start ? 1 : 0);
      }
    }
    if (entry.sampling->prompt_logprobs >= 0) {
      // A row for every computed position whose next token is a prompt token.
      const int64_t begin = entry.num_computed_tokens;
      const int64_t end = std::min<int64_t>(begin + slice.num_tokens, entry.num_prompt_tokens - 1);
      if (end > begin) {
        prompt_rows.push_back(
            PromptRows{e, logit_rows_.size(), begin + 1, static_cast<size_t>(end - begin)});
        for (int64_t p = begin; p < end; ++p)
          logit_rows_.push_back(slice.token_begin + static_cast<int32_t>(p - begin));
      }
    }
    sample_rows[e] = logit_rows_.size();
    const size_t first_hidden = hidden_rows_.size();
    if (entry.sampling->pooling != PoolingType::kNone) {
      if (entry.num_draft_tokens != 0 || entry.num_samples > 1) {
        return internal_error("pooling request {}: {} drafts, {} samples", entry.id,
                              entry.num_draft_tokens, entry.num_samples);
      }
      add_hidden_rows(entry, slice.token_begin, slice.num_tokens);
    } else if (entry.num_samples > 0) {
      // One row per position from the newest known token on (drafts after it).
      if (entry.num_draft_tokens < 0 || entry.num_draft_tokens >= slice.num_tokens ||
          (entry.num_draft_tokens > 0 && entry.num_samples != 1)) {
        return internal_error("request {}: {} drafts in {} tokens with {} samples", entry.id,
                              entry.num_draft_tokens, slice.num_tokens, entry.num_samples);
      }
      for (int32_t j = entry.num_draft_tokens; j >= 0; --j)
        logit_rows_.push_back(static_cast<int32_t>(tokens_.size()) - 1 - j);
    }
    pooled.emplace_back(first_hidden, hidden_rows_.size() - first_hidden);
    slices_.push_back(slice);
    // Every request's state starts with its first step since admission (a prefill chunk too,
    // so the sampler sees the whole history and a recompute restores the RNG and outputs).
    if (entry.is_new) states_.insert_or_assign(entry.id, make_state(entry));
  }
  const size_t vocab = static_cast<size_t>(model_.config().vocab_size);
  if (!token_types_.empty()) token_types_.resize(tokens_.size(), 0);
  const auto forward_start = std::chrono::steady_clock::now();
  PAGODA_RETURN_IF_ERROR(forward_step());

  // Sampling: first (serially) the state of each sampling request (new ones build their sampler
  // and constraint), then the masks and draws of all requests in parallel on the kernels'
  // threads (otherwise idle here): each request's sampler and constraint are its own, so the
  // tokens do not depend on the split.
  struct Job {
    const step::ScheduledRequest* entry = nullptr;
    RequestState* state = nullptr;
    const float* logits = nullptr;
    bool pooled = false;  // a pooling request: its output is pooled_embedding
    step::SampledTokens sampled;
    step::PooledEmbedding pooled_embedding;
    Status status;
  };
  std::vector<Job> jobs;
  for (size_t e = 0; e < plan.requests.size(); ++e) {
    const step::ScheduledRequest& entry = plan.requests[e];
    if (entry.sampling->pooling != PoolingType::kNone) {
      auto it = states_.find(entry.id);
      if (it == states_.end()) {
        return internal_error("request {} pools without having been scheduled as new", entry.id);
      }
      Job job;
      job.entry = &entry;
      job.pooled = true;
      PAGODA_RETURN_IF_ERROR(
          pool_request(entry, it->second, pooled[e].first, pooled[e].second, job.pooled_embedding));
      if (entry.num_samples > 0) jobs.push_back(std::move(job));
      continue;
    }
    if (entry.num_samples <= 0) continue;
    Job job;
    job.entry = &entry;
    job.logits = logits_.data() + sample_rows[e] * vocab;
    auto it = states_.find(entry.id);
    if (it == states_.end()) {
      return internal_error("request {} samples without having been scheduled as new", entry.id);
    }
    RequestState& state = it->second;
    if (!state.constraint_built) {
      const auto outputs = std::span<const int32_t>(state.tokens).subspan(state.num_prompt);
      PAGODA_ASSIGN_OR_RETURN(state.constraint, make_constraint(entry, outputs));
      state.constraint_built = true;
    }
    jobs.push_back(std::move(job));
  }
  for (Job& job : jobs)
    job.state = &states_.at(job.entry->id);  // after every insertion (no rehash from here)

  const auto num_jobs = static_cast<int64_t>(jobs.size());
  const int threads = static_cast<int>(std::min<int64_t>(kernels::num_threads(), num_jobs));
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<float> scratch, masked;
    std::vector<uint64_t> mask;
#pragma omp for schedule(dynamic, 1)
    for (int64_t j = 0; j < num_jobs; ++j) {
      Job& job = jobs[static_cast<size_t>(j)];
      if (job.pooled) continue;
      job.status = sample_request(*job.entry, *job.state, job.logits, vocab, mask, scratch, masked,
                                  job.sampled);
    }
  }
  step::StepOutput out;
  for (Job& job : jobs)
    PAGODA_RETURN_IF_ERROR(job.status);
  // A step's price: the forward pass and the sampling (verification rows cost draws too). Only
  // decode steps (each request one new token plus its drafts) are fitted: the rule prices such
  // steps, and a prefill chunk's rows (attention over a prompt, no draw) cost another amount, so
  // mixing them in skewed the per-row cost of a small batch by 3-5x.
  if (pace_drafts_ &&
      std::all_of(
          plan.requests.begin(), plan.requests.end(), [](const step::ScheduledRequest& entry) {
            return entry.num_samples == 1 &&
                   static_cast<int64_t>(entry.token_ids.size()) - entry.num_draft_tokens == 1;
          })) {
    cost_meter_.record_step(static_cast<int64_t>(tokens_.size()), seconds_since(forward_start));
  }
  if (proposer_) PAGODA_RETURN_IF_ERROR(propose(plan));
  for (Job& job : jobs) {
    if (job.pooled) {
      out.embeddings.push_back(std::move(job.pooled_embedding));
      continue;
    }
    job.sampled.draft_token_ids = job.state->draft_tokens;
    out.sampled.push_back(std::move(job.sampled));
  }
  PAGODA_RETURN_IF_ERROR(collect_prompt_logprobs(plan, prompt_rows, out));
  return out;
}

Status ModelRunner::collect_prompt_logprobs(const step::StepPlan& plan,
                                            std::span<const PromptRows> rows,
                                            step::StepOutput& out) const {
  const size_t vocab = static_cast<size_t>(model_.config().vocab_size);
  for (const PromptRows& r : rows) {
    const step::ScheduledRequest& entry = plan.requests[r.entry];
    const auto it = states_.find(entry.id);
    if (it == states_.end() ||
        it->second.tokens.size() < static_cast<size_t>(r.first_token) + r.count) {
      return internal_error("request {}: prompt logprobs without its prompt tokens", entry.id);
    }
    const std::vector<int32_t>& tokens = it->second.tokens;
    step::PromptLogprobs lp;
    lp.id = entry.id;
    lp.first_token = r.first_token;
    lp.entries.resize(r.count);
    const auto count = static_cast<int64_t>(r.count);
#pragma omp parallel for schedule(static) if (count > 8)
    for (int64_t i = 0; i < count; ++i) {
      const float* row = logits_.data() + (r.first_row + static_cast<size_t>(i)) * vocab;
      const int32_t next = tokens[static_cast<size_t>(r.first_token + i)];
      lp.entries[static_cast<size_t>(i)] = sampling::token_logprobs(
          std::span<const float>(row, vocab), next, entry.sampling->prompt_logprobs);
    }
    out.prompt_logprobs.push_back(std::move(lp));
  }
  return Status();
}

void ModelRunner::add_hidden_rows(const step::ScheduledRequest& entry, int32_t begin, int32_t n) {
  switch (entry.sampling->pooling) {
    case PoolingType::kLast:
      if (entry.num_samples > 0) hidden_rows_.push_back(begin + n - 1);
      break;
    case PoolingType::kMean:
      for (int32_t i = 0; i < n; ++i)
        hidden_rows_.push_back(begin + i);
      break;
    case PoolingType::kCls:
    case PoolingType::kRank:
      if (entry.num_computed_tokens == 0) hidden_rows_.push_back(begin);
      break;
    case PoolingType::kNone:
      break;
  }
}

Status ModelRunner::pool_request(const step::ScheduledRequest& entry, RequestState& state,
                                 size_t first, size_t rows, step::PooledEmbedding& pooled) const {
  const auto dim = static_cast<size_t>(model_.config().hidden_dim);
  state.pool_sum.resize(dim, 0.0);
  for (size_t r = 0; r < rows; ++r) {
    const float* h = hidden_.data() + (first + r) * dim;
    for (size_t i = 0; i < dim; ++i)
      state.pool_sum[i] += h[i];
  }
  state.pool_count += static_cast<int64_t>(rows);
  if (entry.num_samples <= 0) return Status();
  if (state.pool_count <= 0) {
    return internal_error("pooling request {} ends with no pooled position", entry.id);
  }
  if (entry.sampling->pooling == PoolingType::kRank) {
    // The [CLS] row through the classifier head: its raw scores.
    if (state.pool_count != 1) {
      return internal_error("rank pooling request {} pooled {} rows", entry.id, state.pool_count);
    }
    std::vector<float> cls(state.pool_sum.begin(), state.pool_sum.end());
    pooled.id = entry.id;
    pooled.values.resize(static_cast<size_t>(std::max(model_.config().num_labels, 0)));
    return model_.classify(cls.data(), 1, pooled.values.data());
  }
  // The mean (a single row for last / CLS pooling), then L2-normalised: the norm is the same
  // for the sum, so normalising the sum is enough.
  double norm = 0;
  for (double v : state.pool_sum)
    norm += v * v;
  norm = std::sqrt(norm);
  const double scale = norm > 0 ? 1.0 / norm : 0.0;
  pooled.id = entry.id;
  pooled.values.resize(dim);
  for (size_t i = 0; i < dim; ++i)
    pooled.values[i] = static_cast<float>(state.pool_sum[i] * scale);
  return Status();
}

Status ModelRunner::sample_request(const step::ScheduledRequest& entry, RequestState& state,
                                   const float* logits, size_t vocab, std::vector<uint64_t>& mask,
                                   std::vector<float>& scratch, std::vector<float>& masked,
                                   step::SampledTokens& sampled) const {
  sampled.id = entry.id;
  const bool want_logprobs = entry.sampling->logprobs >= 0;
  structured::Constraint* constraint = state.constraint.get();
  const auto accept = [&](int32_t token) -> Status {
    state.tokens.push_back(token);
    if (constraint == nullptr) return Status();
    Status accepted = constraint->accept_token(token);
    return accepted.ok() ? accepted : accepted.with_context("structured output");
  };
  if (entry.num_draft_tokens > 0) {
    // Verification: the mask at each position follows the constraint through the accepted
    // tokens only (the hooks run in order, stopping at the first rejection).
    const auto drafts = std::span<const int32_t>(entry.token_ids).last(entry.num_draft_tokens);
    const size_t rows = drafts.size() + 1;
    masked.assign(logits, logits + rows * vocab);
    sampling::DraftHooks hooks;
    if (constraint != nullptr) {
      hooks.mask = [&](std::span<float> row) {
        mask_logits(*constraint, mask, row);
        return Status();
      };
    }
    hooks.accept = accept;
    // A draft model's q, when these drafts are its proposals (the engine schedules a prefix);
    // otherwise point masses (exact for any draft).
    std::span<const float> q;
    if (!state.draft_probs.empty() && drafts.size() <= state.draft_tokens.size() &&
        state.draft_probs.size() >= drafts.size() * vocab &&
        std::equal(drafts.begin(), drafts.end(), state.draft_tokens.begin())) {
      q = std::span<const float>(state.draft_probs).first(drafts.size() * vocab);
    }
    std::vector<TokenLogprobs> emitted;
    PAGODA_RETURN_IF_ERROR(
        sampling::verify_drafts(state.sampler, masked, vocab, drafts, hooks, emitted, q));
    state.pacer.record_verification(static_cast<int32_t>(drafts.size()),
                                    static_cast<int32_t>(emitted.size()) - 1);
    for (TokenLogprobs& r : emitted) {
      sampled.token_ids.push_back(r.token);
      if (want_logprobs) sampled.logprobs.push_back(std::move(r));
    }
  } else {
    // Forked children start from the parent's state, so the parent's mask is theirs too.
    masked.assign(logits, logits + vocab);
    if (constraint != nullptr) mask_logits(*constraint, mask, masked);
    const auto known = std::span<const int32_t>(state.tokens);
    for (int32_t i = 0; i < entry.num_samples; ++i) {
      scratch = masked;
      TokenLogprobs r;
      if (i == 0) {
        r = state.sampler.sample(scratch);
      } else {
        // A forked child's first token: drawn from the shared row with the child's own stream.
        sampling::Sampler child =
            make_sampler(entry, i, known.first(state.num_prompt), known.subspan(state.num_prompt));
        r = child.sample(scratch);
      }
      sampled.token_ids.push_back(r.token);
      if (want_logprobs) sampled.logprobs.push_back(std::move(r));
    }
    PAGODA_RETURN_IF_ERROR(accept(sampled.token_ids[0]));
  }
  return Status();
}

}  // namespace pagoda::runner
