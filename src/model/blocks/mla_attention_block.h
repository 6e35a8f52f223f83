// Multi-head latent attention (DeepSeek-V2/V3, GGUF deepseek2): q from a low-rank compression
// (attn_q_a → RMSNorm → attn_q_b; or one attn_q), K and V from a kv_lora_rank-wide latent
// (attn_kv_a_mqa → RMSNorm; attn_kv_b would expand it to per-head no-rope keys and values) plus
// one rope_dims-wide rope key (the rest of attn_kv_a_mqa's output) shared by every head.
//
// The cache holds the latent, not per-head K and V: one row per token and layer, [rope key (roped)
// | normalised latent] (rope_dims + kv_lora_rank values; model::kv_layout: one KV head, values in
// the keys). Attention runs in latent space (the "absorbed" form): per head
//   q_abs = [rope(q_rope) | q_nope · W_UK_h]   (W_UK_h: head h's no-rope key rows of attn_kv_b)
//   score_j = q_abs · row_j = q_rope · k_rope_j + q_nope · (W_UK_h c_j)   (the same scores)
//   ctx = Σ_j p_j row_j, of which the latent part times W_UV_h (head h's value rows) is the value,
// then attn_output. The attention itself is the ordinary paged kernel (MQA: every head shares the
// one cached row; its rope part of the output is not used). docs/design/models.md, "MLA".
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
  // attn_kv_b ([heads x (nope + v_head_dim), kv_lora_rank], nope = head_dim - rope_dims) as the
  // absorbed form reads it, dequantised to f32 at load (kernels::head_matmul's layout):
  std::vector<float> w_uk;  // [heads, nope, kv_lora_rank]: each head's key rows, as stored
  std::vector<float>
      w_uv_t;              // [heads, kv_lora_rank, v_head_dim]: each head's value rows, transposed
  kernels::WeightView wo;  // [hidden, heads x v_head_dim]
};

// Fills w.w_uk and w.w_uv_t from attn_kv_b (bound with the shape above, still in its file form).
void absorb_kv_b(const ModelConfig& config, const kernels::WeightView& wkv_b, MlaWeights& w);

void reserve_mla_scratch(const ModelConfig& config, int64_t num_tokens, Scratch& scratch);

// out[T, hidden] = MLA(h[T, hidden]) for the batch; writes this layer's latent rows into `kv`
// (model::kv_layout's: one KV head of rope_dims + kv_lora_rank values, v == k).
void mla_attention_block(const ModelConfig& config, const MlaWeights& w,
                         const kernels::RopeParams& rope, const ForwardBatch& batch,
                         const kernels::KvLayerView& kv, const float* h, float* out,
                         Scratch& scratch);

}  // namespace pagoda::model
