// Decoder: the pre-norm decoder-only transformer shared by llama-family architectures
// (embedding → N × [RMSNorm → attention → residual → RMSNorm → FFN or MoE → residual] →
// RMSNorm → output projection). Architecture files set options in the config (fused q/k/v and
// gate/up weights, embedding scale, post-norms before each residual add, GeGLU, soft-caps,
// sliding windows, shared experts); the forward pass lives here once.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "backend/backend.h"
#include "model/blocks/attention_block.h"
#include "model/blocks/mla_attention_block.h"
#include "model/blocks/moe_block.h"
#include "model/lora.h"
#include "model/model.h"
#include "model/tensor_source.h"
#include "model/weight_binding.h"

namespace pagoda::model {

struct DecoderLayer {
  std::vector<float> attn_norm;       // [hidden]
  AttentionWeights attn;              // (not bound when mla is set)
  std::optional<MlaWeights> mla;      // multi-head latent attention (config.mla())
  std::vector<float> post_attn_norm;  // empty, or [hidden] (config.post_norms)
  std::vector<float> ffn_norm;        // [hidden]
  std::vector<float> post_ffn_norm;   // empty, or [hidden] (config.post_norms)
  FfnWeights ffn;                     // dense layers
  std::optional<MoeWeights> moe;
};

struct DecoderWeights {
  kernels::WeightView token_embd;  // [vocab, hidden]
  std::vector<DecoderLayer> layers;
  std::vector<float> output_norm;        // [hidden]
  kernels::WeightView output;            // [vocab, hidden] (token_embd when tied)
  std::vector<float> rope_freq_factors;  // empty or [rope_dims / 2]
  // LongRoPE (rope_factors_long/short.weight): both empty or both [rope_dims / 2]; the pass
  // rotates by one of them (use_long_rope_factors), never with rope_freq_factors.
  std::vector<float> rope_factors_long;
  std::vector<float> rope_factors_short;
};

// Binds the GGUF llama-family tensor names (token_embd, blk.N.attn_q, ..., output) for `config`:
// biases when config.has_qkv_bias, experts when config.num_experts > 0 (shared ones when
// config.shared_expert_ffn_dim > 0), attn_qkv when config.fused_qkv, gate and up from ffn_up when
// config.fused_gate_up, post_attention_norm / post_ffw_norm when config.post_norms.
Result<DecoderWeights> bind_decoder_weights(const ModelConfig& config, const WeightBinder& binder);

struct TensorShard;

// Selects DecoderModel's pipeline-stage constructor (which stage: backend().pipeline_parallel()).
struct PipelineStage {};

// Keeps only `stage`'s layers of `weights` (layers split into `num_stages` consecutive runs, the
// first stages taking one more when they do not divide) and the output head only on the last
// stage. Returns the stage's config (num_layers = its layer count, so its KV cache holds only
// its layers). invalid_argument when there are more stages than layers.
Result<ModelConfig> stage_layers(const ModelConfig& full, int32_t stage, int32_t num_stages,
                                 DecoderWeights& weights);

class DecoderModel final : public Model {
 public:
  DecoderModel(ModelConfig config, DecoderWeights weights, std::unique_ptr<TensorSource> source,
               backend::Backend& backend);
  // One shard of a tensor-parallel model (model/tensor_shard.h): `config` is the shard's
  // (heads, KV heads and ffn divided), `weights` narrowed to it; every forward pass sums the
  // shards' attention and FFN outputs and gathers their logits over backend.tensor_parallel().
  DecoderModel(ModelConfig config, DecoderWeights weights, std::unique_ptr<TensorSource> source,
               backend::Backend& backend, TensorShard shard);
  // One stage of a pipeline-parallel model (stage_layers): the first stage embeds, the others
  // receive the previous stage's hidden states; the last computes the logits and sends them to
  // stage 0.
  DecoderModel(ModelConfig config, DecoderWeights weights, std::unique_ptr<TensorSource> source,
               backend::Backend& backend, PipelineStage stage);
  ~DecoderModel() override;

  uint64_t weight_bytes() const override;
  void set_served_context(int32_t tokens) override;

 private:
  void forward_impl(const ForwardBatch& batch, std::span<const kernels::KvLayerView> kv_layers,
                    float* logits) override;
  // LongRoPE: rope_ takes the long or the short table (no-op without them). Returns whether the
  // long one is chosen.
  bool choose_rope_table(int32_t served_context);
  // forward_impl's body, run by every thread of the kernels' team.
  void forward_on_team(const ForwardBatch& batch, std::span<const kernels::KvLayerView> kv_layers,
                       float* logits);

  // Pipeline stages: the batch in micro-batches (model/micro_batch.h), one pass each, then the
  // logits from the last stage to rank 0.
  void forward_pipeline(const ForwardBatch& batch, std::span<const kernels::KvLayerView> kv_layers,
                        float* logits);
  // Pipeline stages: the last stage's shard 0 sends the R logit rows to rank 0 (stage 0).
  // The widest projection a LoRA adapter may add to (its scratch rows' width).
  int64_t lora_max_dim() const;
  void transfer_logits(int64_t R, float* logits);

  // Hands every matmul weight to the backend (Backend::place_weights), which copies it into its
  // memory, in the kernels' pre-packed layout where they have one.
  void place_weights();
  // Under tensor parallelism: data[n] := the sum of every shard's data[n] (inside the team).
  void all_reduce(float* data, int64_t n);
  // The output head's logits [R, vocab]: this shard's vocabulary rows, all-gathered.
  void output_logits(const float* final_rows, int64_t R, float* logits);

  DecoderWeights w_;
  std::unique_ptr<TensorSource> source_;            // keeps the weight memory alive
  std::unique_ptr<backend::DeviceBuffer> weights_;  // what the views' `packed` or `data` point
                                                    // into (null: the file mapping)
  kernels::RopeParams rope_;
  kernels::RopeParams rope_local_;  // the sliding-window layers' (config.rope_local_theta > 0)
  Scratch scratch_;
  LoraBatch lora_;  // this pass's rows grouped by adapter
  backend::TensorParallel tp_;
  backend::PipelineParallel pp_;
  std::unique_ptr<TensorShard> shard_;  // null: the whole model
};

}  // namespace pagoda::model
