// Draft-model proposals with a KV cache indexed by the target's block ids (see the header).
#include "runner/draft_model_proposer.h"

#include <algorithm>
#include <memory>

#include "runner/constraint_mask.h"
#include "runner/draft_pacer.h"

namespace pagoda::runner {
namespace {

// Most tokens of one request the draft catches up in one step.
constexpr int64_t kMaxCatchUp = 512;

int64_t round_up(int64_t v, int64_t m) {
  return (v + m - 1) / m * m;
}

}  // namespace

Result<std::unique_ptr<DraftModelProposer>> DraftModelProposer::create(
    model::Model& draft, int32_t vocab_size, const DraftModelConfig& config) {
  if (draft.config().vocab_size != vocab_size) {
    return invalid_argument(
        "speculative model: its vocabulary has {} tokens, the target's {} (a draft model must "
        "share the target's vocabulary)",
        draft.config().vocab_size, vocab_size);
  }
  if (config.num_speculative_tokens < 1 || config.num_speculative_tokens > 64) {
    return invalid_argument("num_speculative_tokens must be in [1, 64], got {}",
                            config.num_speculative_tokens);
  }
  if (config.max_num_seqs < 1) {
    return invalid_argument("max_num_seqs must be >= 1, got {}", config.max_num_seqs);
  }
  if (config.block_size < 1 || config.num_blocks < 2) {
    return invalid_argument("draft KV cache: {} blocks of {} tokens", config.num_blocks,
                            config.block_size);
  }
  // Past a request's table it writes at most k positions (the newest token and k - 1 drafts),
  // starting at a block boundary.
  const int32_t per_request =
      (config.num_speculative_tokens + config.block_size - 1) / config.block_size;
  const int64_t scratch = static_cast<int64_t>(config.max_num_seqs) * per_request;
  PAGODA_ASSIGN_OR_RETURN(
      backend::KvStorage storage,
      backend::KvStorage::create(draft.backend(), draft.kv_layout(), config.num_blocks + scratch,
                                 config.block_size, config.kv_dtype));
  std::unique_ptr<DraftModelProposer> p(new DraftModelProposer(draft, std::move(storage), config));
  p->scratch_per_request_ = per_request;
  return p;
}

Result<uint64_t> DraftModelProposer::bytes_per_block(const model::ModelConfig& draft,
                                                     int32_t block_size, tensor::DType dtype) {
  return backend::KvStorage::bytes_per_block(model::kv_layout(draft), block_size, dtype);
}

DraftModelProposer::DraftModelProposer(model::Model& draft, backend::KvStorage storage,
                                       const DraftModelConfig& config)
    : model_(draft), storage_(std::move(storage)), config_(config) {}

Status DraftModelProposer::forward() {
  logits_.resize(logit_rows_.size() * static_cast<size_t>(model_.config().vocab_size));
  model::ForwardBatch batch;
  batch.tokens = tokens_;
  batch.positions = positions_;
  batch.sequences = slices_;
  batch.logit_rows = logit_rows_;
  batch.flash_attention = config_.flash_attention;
  return model_.forward(batch, storage_.layers(), logits_.data());
}

Status DraftModelProposer::propose(const step::StepPlan& plan,
                                   std::span<ProposalRequest> requests) {
  for (step::RequestId id : plan.preempted_ids)
    computed_.erase(id);
  for (step::RequestId id : plan.finished_ids)
    computed_.erase(id);
  // The target's copy-on-write copies, on the draft's blocks too (same ids).
  for (const kv::BlockCopy& copy : plan.block_copies) {
    if (copy.src <= 0 || copy.dst <= 0 || copy.src >= config_.num_blocks ||
        copy.dst >= config_.num_blocks) {
      return internal_error("block copy {} -> {} is outside the draft's KV cache", copy.src,
                            copy.dst);
    }
    storage_.copy_block(copy.src, copy.dst);
  }

  const int64_t bs = config_.block_size;
  const auto vocab = static_cast<size_t>(model_.config().vocab_size);
  struct Drafting {
    ProposalRequest* request = nullptr;
    size_t table = 0;    // index into tables_
    int32_t want = 0;    // drafts to propose
    int64_t newest = 0;  // position of the newest known token
    sampling::Sampler sampler;
    bool keep_probs = false;
    // A copy of the request's constraint, advanced by its drafts (q masked as p will be).
    std::unique_ptr<structured::Constraint> constraint;
  };
  std::vector<Drafting> drafting;
  tokens_.clear();
  positions_.clear();
  logit_rows_.clear();
  slices_.clear();
  tables_.resize(requests.size());
  int64_t next_scratch = config_.num_blocks;
  const int64_t scratch_end = storage_.num_blocks();
  const auto wants_drafts = [this](const ProposalRequest& r) {
    return r.sampled && (!r.constrained || r.constraint != nullptr) && r.sampler != nullptr &&
           !r.tokens.empty() &&
           std::min({r.entry->num_proposal_tokens, config_.num_speculative_tokens, r.max_drafts}) >
               0;
  };
  passes_ = ProposalPasses{};
  bool any = false;
  for (const ProposalRequest& r : requests) {
    if (r.entry->is_new) computed_.insert_or_assign(r.entry->id, r.entry->num_computed_tokens);
    any = any || wants_drafts(r);
  }
  // A step without drafts (speculation off for a large batch) costs no draft pass at all: the
  // draft's KV lags and catches up when the request drafts again.
  if (!any) return Status();
  for (size_t i = 0; i < requests.size(); ++i) {
    ProposalRequest& r = requests[i];
    const step::ScheduledRequest& e = *r.entry;
    auto [it, inserted] = computed_.try_emplace(e.id, e.num_computed_tokens);
    int64_t& computed = it->second;
    const auto known = static_cast<int64_t>(r.tokens.size());
    // Positions the target's table covers and this step made private: up to the end of the
    // block holding the last position the target computed now.
    const int64_t target_end = e.num_computed_tokens + static_cast<int64_t>(e.token_ids.size());
    const int64_t real_limit =
        std::min(static_cast<int64_t>(e.block_table.size()) * bs, round_up(target_end, bs));
    // Only a request that drafts now catches up: one that does not (a prefill chunk, a paused
    // request) lags until it drafts, and then catches up in one batched pass (a pass per step
    // for one token of every lagging request cost more than the drafting it served: at 4
    // concurrent requests on the demo pair, with few drafts, 8% of throughput).
    if (!wants_drafts(r)) continue;
    int32_t want = std::min({e.num_proposal_tokens, config_.num_speculative_tokens, r.max_drafts});
    // A long lag (a prompt, or decodes while speculation was off) is caught up in pieces.
    const int64_t lag = known - std::min(computed, known);
    if (lag > kMaxCatchUp) want = 0;
    int64_t need = 0;  // scratch blocks
    if (want > 0) {
      const int64_t last = known - 1 + want - 1;  // the last position written
      need = last >= real_limit ? (last - real_limit) / bs + 1 : 0;
      if (next_scratch + need > scratch_end) want = 0, need = 0;
    }
    int64_t begin = std::min(computed, known);
    const int64_t end = want > 0 ? known : std::min({known, real_limit, begin + kMaxCatchUp});
    if (want > 0 && begin >= end) begin = end - 1;  // recompute the newest token for its logits
    if (begin >= end) continue;
    std::vector<int32_t>& table = tables_[i];
    table.assign(e.block_table.begin(), e.block_table.begin() + real_limit / bs);
    for (int64_t b = 0; b < need; ++b)
      table.push_back(static_cast<int32_t>(next_scratch++));
    model::SequenceSlice slice;
    slice.token_begin = static_cast<int32_t>(tokens_.size());
    slice.num_tokens = static_cast<int32_t>(end - begin);
    slice.block_table = table;
    for (int64_t p = begin; p < end; ++p) {
      tokens_.push_back(r.tokens[static_cast<size_t>(p)]);
      positions_.push_back(static_cast<int32_t>(p));
    }
    slices_.push_back(slice);
    computed = std::max(computed, std::min(end, real_limit));
    if (want > 0) {
      logit_rows_.push_back(static_cast<int32_t>(tokens_.size()) - 1);
      Drafting d{&r,
                 i,
                 want,
                 known - 1,
                 *r.sampler,
                 !e.sampling->is_greedy(),
                 r.constraint != nullptr ? r.constraint->clone() : nullptr};
      d.sampler.reseed(r.draft_seed);
      drafting.push_back(std::move(d));
    }
  }
  if (tokens_.empty()) return Status();
  auto pass_start = std::chrono::steady_clock::now();
  PAGODA_RETURN_IF_ERROR(forward());
  passes_.drafting_rows = static_cast<int32_t>(drafting.size());
  passes_.first_pass_tokens = static_cast<int64_t>(tokens_.size());
  passes_.first_pass_seconds = seconds_since(pass_start);
  passes_.first_pass_caught_up =
      passes_.first_pass_tokens >
      static_cast<int64_t>(drafting.size()) * (config_.num_speculative_tokens + 1);

  // Draft j (1-based) comes from the logits after draft j - 1; each pass feeds the newest drafts.
  for (int32_t j = 1;; ++j) {
    size_t row = 0;
    for (Drafting& d : drafting) {
      if (d.want < j) continue;
      row_.assign(logits_.begin() + static_cast<std::ptrdiff_t>(row * vocab),
                  logits_.begin() + static_cast<std::ptrdiff_t>((row + 1) * vocab));
      ++row;
      if (d.constraint) mask_logits(*d.constraint, mask_, row_);
      const int32_t token = d.sampler.sample_with_probs(row_, probs_).token;
      if (d.constraint && !d.constraint->accept_token(token).ok()) {
        d.want = j - 1;  // (cannot happen after the mask; stop drafting this request)
        continue;
      }
      d.request->draft_tokens->push_back(token);
      if (d.keep_probs) {
        d.request->draft_probs->insert(d.request->draft_probs->end(), probs_.begin(), probs_.end());
      }
    }
    tokens_.clear();
    positions_.clear();
    logit_rows_.clear();
    slices_.clear();
    for (Drafting& d : drafting) {
      if (d.want <= j) continue;
      model::SequenceSlice slice;
      slice.token_begin = static_cast<int32_t>(tokens_.size());
      slice.num_tokens = 1;
      slice.block_table = tables_[d.table];
      logit_rows_.push_back(static_cast<int32_t>(tokens_.size()));
      tokens_.push_back(d.request->draft_tokens->back());
      positions_.push_back(static_cast<int32_t>(d.newest + j));
      slices_.push_back(slice);
    }
    if (tokens_.empty()) break;
    pass_start = std::chrono::steady_clock::now();
    PAGODA_RETURN_IF_ERROR(forward());
    ++passes_.later_passes;
    passes_.later_pass_seconds += seconds_since(pass_start);
  }
  return Status();
}

}  // namespace pagoda::runner
