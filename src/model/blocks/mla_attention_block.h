// Multi-head latent attention (DeepSeek-V2/V3, GGUF deepseek2): q from a low-rank compression
// (attn_q_a → RMSNorm → attn_q_b; or one attn_q), K and V from a kv_lora_rank-wide latent
// (attn_kv_a_mqa → RMSNorm → attn_kv_b: per head a no-rope key part and a value) plus one
// rope_dims-wide rope key (the rest of attn_kv_a_mqa's output) shared by every head.
//
// The cache holds the expanded per-head K and V (heads x head_dim each, V zero-padded from
// v_head_dim to head_dim), not the latent: the KV bytes of the equivalent MHA model. Each head's
// q and k are laid out rope part first ([rope | no-rope], the same permutation on both, so the
// scores are unchanged), so kernels::rope rotates the leading rope_dims of each head.
#pragma once

#include <vector>

#include "kernels/attention.h"
#include "kernels/ops.h"
#include "model/blocks/scratch.h"
#include "model/forward_batch.h"
#include "model/model_config.h"

namespace pagoda::model {

struct MlaWeights {
  kernels::WeightView wq_a;      // [q_lora_rank, hidden] (q_lora_rank > 0)
  std::vector<float> q_a_norm;   // [q_lora_rank]
  kernels::WeightView wq_b;      // [heads x head_dim, q_lora_rank]
  kernels::WeightView wq;        // [heads x head_dim, hidden] (q_lora_rank == 0)
  kernels::WeightView wkv_a;     // [kv_lora_rank + rope_dims, hidden]
  std::vector<float> kv_a_norm;  // [kv_lora_rank]
  kernels::WeightView wkv_b;     // [heads x (head_dim - rope_dims + v_head_dim), kv_lora_rank]
  kernels::WeightView wo;        // [hidden, heads x v_head_dim]
};

void reserve_mla_scratch(const ModelConfig& config, int64_t num_tokens, Scratch& scratch);

// out[T, hidden] = MLA(h[T, hidden]) for the batch; writes this layer's K/V into `kv`.
void mla_attention_block(const ModelConfig& config, const MlaWeights& w,
                         const kernels::RopeParams& rope, const ForwardBatch& batch,
                         const kernels::KvLayerView& kv, const float* h, float* out,
                         Scratch& scratch);

}  // namespace pagoda::model
