// StepPlan / StepOutput: the plain-data contract between the Scheduler (engine/) and the runner
// (runner/, through step::Executor). One plan = one forward pass over a batch of sequences.
//
// StepPlan invariants (the runner may rely on them):
//  - requests[] ids are distinct; each entry computes token_ids[i] at position
//    num_computed_tokens + i; token_ids is non-empty; the sum of token_ids sizes is
//    num_scheduled_tokens <= SchedulerConfig::max_num_batched_tokens, and
//    requests.size() <= max_num_seqs.
//  - block_table covers every position < num_computed_tokens + token_ids.size(): position p
//    lives in block block_table[p / block_size], slot p % block_size. Tokens before
//    num_computed_tokens are already in the KV cache (earlier steps, prefix-cache hits or a
//    fork parent). A table holds the null block 0 only in leading entries whose positions no
//    query of this step reads: with a sliding window on every layer (kv::KvManagerConfig::
//    sliding_window), blocks wholly before position num_computed_tokens - window + 1 are
//    released to the pool. A hybrid model's local layers (sliding_block_table) likewise; its
//    global layers' block_table never holds the null block.
//  - block_copies must be executed in order, before the forward pass: copy every slot of every
//    layer from src to dst (copy-on-write of a block shared after a fork).
//  - num_samples > 0 exactly when the chunk reaches the newest known token, i.e. the entry
//    produces logits for position num_computed_tokens + token_ids.size() - 1, from which the
//    runner draws num_samples tokens (n > 1 only on a forking request's first sampling step).
//  - Speculative decoding: the last num_draft_tokens of token_ids are proposed (draft) tokens
//    after the newest known token (then num_samples == 1). The runner computes logits at every
//    position from the newest known token on, verifies the drafts in order (greedy: accept
//    while equal; sampling: the rejection-sampling rule) and returns the accepted drafts plus
//    one more token (the correction, or the bonus token when every draft was accepted). The KV
//    written for rejected drafts is garbage the engine overwrites or frees; the engine never
//    publishes a block holding a draft position in the prefix cache.
//  - Pooling requests (sampling->pooling != kNone, n == 1, never drafts) have num_samples == 1
//    on the step that computes their last prompt token; the runner returns their embedding
//    (StepOutput::embeddings) instead of a token. Mean pooling needs every prompt position's hidden
//    state, so such a request never starts from a prefix-cache hit (num_computed_tokens starts at
//    0).
//  - preempted_ids and finished_ids list requests whose per-request runner state (if any) can be
//    dropped; their blocks may be reused by this very plan. A preempted request comes back later
//    with is_new set and num_computed_tokens from 0 (or from its prefix-cache hit).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kv/kv_types.h"
#include "pagoda/sampling_params.h"
#include "step/ids.h"

namespace pagoda::step {

struct ScheduledRequest {
  RequestId id = 0;
  int64_t num_computed_tokens = 0;         // position of token_ids[0]
  int64_t num_prompt_tokens = 0;           // positions < this are prompt, the rest outputs
  std::vector<TokenId> token_ids;          // tokens to compute now
  std::vector<kv::BlockId> block_table;    // the whole table after this step's allocation
  std::vector<kv::BlockId> new_block_ids;  // appended to the table in this step (in order)
  // Hybrid models (kv::KvManagerConfig::group_windows = {0, window}): the sliding-window layers'
  // table (KV group 1), as long as block_table, its entries before the window of position
  // num_computed_tokens possibly the null block; block_table is then the full-attention layers'.
  // Empty for other models.
  std::vector<kv::BlockId> sliding_block_table = {};
  // First step since admission, resumption or fork: the runner (re)builds its per-request
  // state (sampler, penalties) from history_token_ids.
  bool is_new = false;
  std::vector<TokenId> history_token_ids;  // only when is_new: every known token at schedule
                                           // time (prompt, then outputs)
  // Tokens to draw from this entry's last logits row: 0 (a prefill chunk short of the newest
  // token), 1, or n on a forking request's first sampling step. Draws 1..n-1 start new
  // sequences (the children): they do not enter this request's penalty history.
  int32_t num_samples = 0;
  // 0, or i for the i-th forked child. Children share `sampling` (and its seed), so a seeded
  // runner keys its RNG stream by (seed, sample_index).
  int32_t sample_index = 0;
  // Drafts at the end of token_ids (0 = no speculation; then num_samples == 1 and
  // num_computed_tokens + token_ids.size() - num_draft_tokens == the request's known tokens).
  int32_t num_draft_tokens = 0;
  // Drafts the engine would verify in the request's next step (its adaptive k; 0 when it would
  // not speculate, e.g. the batch is too large): a proposer with a cost per draft (a draft model)
  // proposes at most this many.
  int32_t num_proposal_tokens = 0;
  std::shared_ptr<const SamplingParams> sampling;  // never null
  uint32_t lora_id = 0;                            // the LoRA adapter it runs (0: none)
};

struct StepPlan {
  uint64_t step_id = 0;  // increasing, one per schedule() call
  int32_t block_size = 0;
  std::vector<ScheduledRequest> requests;
  int64_t num_scheduled_tokens = 0;
  std::vector<kv::BlockCopy> block_copies;
  std::vector<RequestId> preempted_ids;  // preempted while building this plan
  // Finished or aborted since the previous non-empty plan (an empty plan is not executed and
  // carries none; they wait for the next one).
  std::vector<RequestId> finished_ids;
  bool empty() const { return requests.empty(); }
};

struct SampledTokens {
  RequestId id = 0;
  // Exactly num_samples of the plan entry (sample i goes to the request (i == 0) or its i-th
  // forked child); with drafts, the accepted drafts then the correction / bonus token
  // (1..num_draft_tokens + 1 tokens, all for the request).
  std::vector<TokenId> token_ids;
  // Empty, or one per token_ids entry (after the runner's logits processing; top holds the
  // SamplingParams::logprobs best alternatives, descending).
  std::vector<TokenLogprobs> logprobs;
  // Proposals for the request's next step (speculative decoding; empty = none): tokens that
  // would follow token_ids[0..]. The engine may schedule a prefix of them, or none.
  std::vector<TokenId> draft_token_ids;
};

// Logprobs of prompt tokens, for a plan entry whose SamplingParams::prompt_logprobs >= 0: from
// each computed position p < num_prompt_tokens - 1 of the chunk, the logprob of prompt token
// p + 1. entries[i] is prompt token first_token + i (first_token >= 1). A recomputed prompt
// (after preemption) reports its positions again.
struct PromptLogprobs {
  RequestId id = 0;
  int64_t first_token = 0;
  std::vector<TokenLogprobs> entries;
};

// A pooling request's answer: its pooled, L2-normalised final hidden state (the request is then
// finished; it draws no token).
struct PooledEmbedding {
  RequestId id = 0;
  std::vector<float> values;  // [hidden], non-empty
};

// The runner's answer to a StepPlan: one entry per plan request with num_samples > 0, in plan
// order (entries without sampling are omitted): pooling requests' in `embeddings`, the others'
// in `sampled`; and one prompt_logprobs entry per plan request that asked for them and computed
// prompt positions with a known next prompt token.
struct StepOutput {
  std::vector<SampledTokens> sampled;
  std::vector<PromptLogprobs> prompt_logprobs;
  std::vector<PooledEmbedding> embeddings;
};

}  // namespace pagoda::step
