// DraftModelProposer: speculative drafts from a smaller model with the target's vocabulary. The
// draft has its own paged KV cache (a KvStorage laid out for the draft model) indexed by the SAME
// block ids as the target's: block ids are decided once, by the engine's KV manager, so the
// draft's KV is allocated, copied on write, freed, preempted and prefix-cached with its request.
//
// Per executed plan (after the target sampled), when some entry wants drafts:
//  - catch-up: every entry's known tokens the draft has not seen go through the draft at their
//    positions (prefill chunks, the accepted drafts and the token just sampled; at most 512 per
//    request per step), so the draft's KV stays level with the target's. A plan where no entry
//    wants drafts (speculation off: a large batch) runs no draft pass; the draft's KV lags and
//    catches up when the request drafts again. Blocks published to the prefix cache meanwhile
//    may hold no draft KV: a request that hits them drafts worse (lower acceptance), never
//    wrongly (verification is exact for any draft and its q);
//  - drafting: for the entries that want drafts (ScheduledRequest::num_proposal_tokens), the
//    draft runs autoregressively k - 1 more times, batched across requests, drawing each draft
//    from q = the draft's distribution after the request's own processors (a copy of its
//    Sampler: bias, penalties over the tokens and earlier drafts, temperature, top-k/p, min-p)
//    with its own RNG; q is returned for the rejection sampler. A constrained request's drafts
//    follow a copy of its grammar matcher (Constraint::clone), advanced by each draft, so q is
//    masked as the target's p will be at verification.
// KV written at positions the target's block table does not cover yet (the newest token when it
// starts a block, and the drafts) goes to scratch blocks past the engine's, private to this step;
// such positions are not counted as computed and are redone by the next catch-up. Positions the
// table covers are written in place: every block there holds positions the target computes in
// this step, so the scheduler made it private (copy-on-write) and a draft written past the known
// tokens is overwritten by the next catch-up before it is read, as the target's rejected drafts
// are.
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "backend/kv_storage.h"
#include "model/model.h"
#include "runner/proposer.h"

namespace pagoda::runner {

struct DraftModelConfig {
  int64_t num_blocks = 0;  // the target's KV blocks (block ids), including the null block 0
  int32_t block_size = 16;
  tensor::DType kv_dtype = tensor::DType::kF16;
  int32_t max_num_seqs = 64;           // requests drafted per step (sizes the scratch blocks)
  int32_t num_speculative_tokens = 4;  // most drafts per request, 1..64
  bool flash_attention = false;
};

class DraftModelProposer final : public Proposer {
 public:
  // `draft` outlives the proposer; its vocabulary must be `vocab_size` (the target's).
  static Result<std::unique_ptr<DraftModelProposer>> create(model::Model& draft, int32_t vocab_size,
                                                            const DraftModelConfig& config);
  // Draft KV bytes per block (the engine splits its KV budget between target and draft).
  static Result<uint64_t> bytes_per_block(const model::ModelConfig& draft, int32_t block_size,
                                          tensor::DType dtype);

  Status propose(const step::StepPlan& plan, std::span<ProposalRequest> requests) override;
  std::optional<ProposalPasses> last_passes() const override { return passes_; }

  const backend::KvStorage& storage() const { return storage_; }
  size_t num_tracked() const { return computed_.size(); }

 private:
  DraftModelProposer(model::Model& draft, backend::KvStorage storage,
                     const DraftModelConfig& config);
  // One draft forward pass over the step buffers into logits_.
  Status forward();

  model::Model& model_;
  backend::KvStorage storage_;
  DraftModelConfig config_;
  int32_t scratch_per_request_ = 0;
  ProposalPasses passes_;
  // Per request: the draft's KV is valid for positions [0, computed).
  std::unordered_map<step::RequestId, int64_t> computed_;
  // Step buffers, reused.
  std::vector<int32_t> tokens_, positions_, logit_rows_;
  std::vector<model::SequenceSlice> slices_;
  std::vector<std::vector<int32_t>> tables_;
  std::vector<float> logits_, row_, probs_;
  std::vector<uint64_t> mask_;  // a constrained draft's token mask (scratch)
};

}  // namespace pagoda::runner
