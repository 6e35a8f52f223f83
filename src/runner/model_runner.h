// ModelRunner: executes the engine's StepPlans on a Model. One plan = block copies, one batched
// forward pass over every scheduled request (prefill chunks and decode tokens together), then
// sampling with each request's own Sampler (rebuilt from history when the plan says is_new).
#pragma once

#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "backend/kv_storage.h"
#include "model/model.h"
#include "runner/draft_pacer.h"
#include "runner/lora_registry.h"
#include "runner/ngram_proposer.h"
#include "runner/proposer.h"
#include "sampling/sampler.h"
#include "step/executor.h"
#include "structured/constraint.h"
#include "structured/grammar_cache.h"

namespace pagoda::runner {

using backend::KvStorage;

struct RunnerConfig {
  int64_t num_blocks = 0;  // including the engine's null block 0
  int32_t block_size = 16;
  tensor::DType kv_dtype = tensor::DType::kF16;
  bool flash_attention = false;  // ForwardBatch::flash_attention for every step
  // A hybrid model's KV groups (model::kv_layout's kv_groups): its local and global layers share
  // arrays and every plan entry brings its sliding_block_table. Not with a draft model.
  bool kv_groups = false;
  // Compiled constraints for SamplingParams::structured; null: a constrained request fails.
  std::shared_ptr<structured::GrammarCache> grammars;
  // Prompt-lookup speculative decoding: set, every sampled request gets draft proposals
  // (step::SampledTokens::draft_token_ids) for its next step.
  std::optional<NgramConfig> ngram;
  // The LoRA adapters requests may name (ScheduledRequest::lora_id); null: none.
  std::shared_ptr<const LoraRegistry> loras;
  // Draft-model speculative decoding (instead of ngram): the draft (outlives the runner; the
  // target's vocabulary), its k, and the engine's max_num_seqs (sizes its scratch KV).
  model::Model* draft_model = nullptr;
  int32_t num_speculative_tokens = 4;
  int32_t max_num_seqs = 64;
  // Speculation's cost rule (runner/draft_pacer.h): per request, draft only while the expected
  // accepted tokens pay for the measured draft and verification costs, else probe now and then.
  // Off: every sampled request drafts what the scheduler asks for.
  bool pace_drafts = false;
  DraftPacingConfig pacing;
};

class ModelRunner final : public step::Executor {
 public:
  static Result<std::unique_ptr<ModelRunner>> create(model::Model& model,
                                                     const RunnerConfig& config);

  // How many blocks of `block_size` tokens fit in `bytes` of KV memory.
  static Result<int64_t> blocks_for_memory(const model::ModelConfig& config, uint64_t bytes,
                                           int32_t block_size, tensor::DType dtype,
                                           bool kv_groups = false);

  Result<step::StepOutput> execute(const step::StepPlan& plan) override;

  // Runs one forward pass shaped like the engine's largest step, before the first request, as
  // llama.cpp's warm-up decode and vLLM's profile run do: one sequence of `num_tokens` dummy
  // tokens (capped by the KV cache) with logits for its last `num_logit_rows` rows. It grows
  // every scratch buffer to its working size and starts the kernel threads, so the first
  // requests' TTFT does not carry those one-time costs. It writes KV blocks 1.. only: call it
  // while no request holds a block (what it leaves there is never read; every block is written
  // before it is attended to). Returns the number of tokens it ran.
  Result<int64_t> warm_up(int32_t num_tokens, int32_t num_logit_rows);

  const KvStorage& storage() const { return storage_; }
  const Proposer* proposer() const { return proposer_.get(); }
  size_t num_sampler_states() const { return states_.size(); }

 private:
  // What the runner keeps per running request: its sampler, its constraint (built at its first
  // sampling step: its grammar may still compile while the prompt is computed) and its tokens
  // (prompt, then outputs: the proposer's input).
  struct RequestState {
    sampling::Sampler sampler;
    std::unique_ptr<structured::Constraint> constraint;
    bool constraint_built = false;
    std::vector<int32_t> tokens;
    size_t num_prompt = 0;
    // Pooling requests: the sum of the pooled positions' final hidden states so far (mean
    // pooling spans every prefill chunk) and how many there were.
    std::vector<double> pool_sum;
    int64_t pool_count = 0;
    // The proposer's drafts for the next step and, for a draft model's sampled drafts, the
    // distributions q they were drawn from ([drafts][vocab]; empty: point masses).
    std::vector<int32_t> draft_tokens;
    std::vector<float> draft_probs;
    uint64_t draft_seed = 0;  // the draft RNG's stream (from the request's seed if it has one)
    DraftPacer pacer;         // whether its drafting pays (RunnerConfig::pace_drafts)
  };

  ModelRunner(model::Model& model, KvStorage storage, const RunnerConfig& config);
  // One forward pass over the step buffers (tokens_, positions_, slices_, logit_rows_) into
  // logits_, sized here.
  Status forward_step();
  // Sample `sample_index`'s sampler after `outputs` (restored: penalties and RNG position).
  sampling::Sampler make_sampler(const step::ScheduledRequest& entry, int32_t sample_index,
                                 std::span<const int32_t> prompt,
                                 std::span<const int32_t> outputs) const;
  // The entry's constraint, having accepted `outputs` (null if unconstrained).
  Result<std::unique_ptr<structured::Constraint>> make_constraint(
      const step::ScheduledRequest& entry, std::span<const int32_t> outputs);
  RequestState make_state(const step::ScheduledRequest& entry) const;
  // Rows of this step's logits that give prompt logprobs (SamplingParams::prompt_logprobs):
  // `count` rows from `first_row`, for prompt tokens first_token.. of plan entry `entry`.
  struct PromptRows {
    size_t entry = 0;
    size_t first_row = 0;
    int64_t first_token = 0;
    size_t count = 0;
  };
  Status collect_prompt_logprobs(const step::StepPlan& plan, std::span<const PromptRows> rows,
                                 step::StepOutput& out) const;
  // Pooling: the rows of `entry` (batch rows [begin, begin + n)) whose hidden state it pools.
  void add_hidden_rows(const step::ScheduledRequest& entry, int32_t begin, int32_t n);
  // Adds this step's pooled rows (`rows` of hidden_ from `first`) to the request's sum; when
  // the entry samples, writes the L2-normalised mean to `pooled`.
  Status pool_request(const step::ScheduledRequest& entry, RequestState& state, size_t first,
                      size_t rows, step::PooledEmbedding& pooled) const;
  // Asks the proposer for the next step's drafts (every entry, in plan order).
  Status propose(const step::StepPlan& plan);
  // Masks, samples and advances one request (thread-safe across requests); with drafts,
  // verifies them (logits: one row per position from the newest known token on).
  Status sample_request(const step::ScheduledRequest& entry, RequestState& state,
                        const float* logits, size_t vocab, std::vector<uint64_t>& mask,
                        std::vector<float>& scratch, std::vector<float>& masked,
                        step::SampledTokens& sampled) const;

  model::Model& model_;
  KvStorage storage_;
  bool flash_attention_;
  bool kv_groups_;
  std::shared_ptr<structured::GrammarCache> grammars_;
  std::unique_ptr<Proposer> proposer_;  // null: no speculation
  bool pace_drafts_ = false;
  DraftPacingConfig pacing_;
  SpeculationCostMeter cost_meter_;  // measured when pace_drafts_
  std::shared_ptr<const LoraRegistry> loras_;
  std::unordered_map<step::RequestId, RequestState> states_;
  // Per-step buffers, reused.
  // token_types_: empty unless a sentence pair runs this step (then one per row).
  std::vector<int32_t> tokens_, positions_, token_types_, logit_rows_, hidden_rows_;
  std::vector<model::SequenceSlice> slices_;
  std::vector<model::KvBlockCopy> copies_;  // this step's, made here, repeated on TP peers
  std::vector<float> logits_, hidden_;
  std::vector<std::shared_ptr<const model::LoraAdapter>> step_loras_;  // held for the step
};

}  // namespace pagoda::runner
