// Self-attention block: QKV projections (+ optional biases, + optional per-head q/k RMSNorm),
// RoPE, KV cache write through each
// sequence's block table, paged causal attention (through the layer's sliding window and with
// the config's score soft-cap, when set), output projection.
#pragma once

#include <vector>

#include "kernels/attention.h"
#include "kernels/ops.h"
#include "model/blocks/scratch.h"
#include "model/forward_batch.h"
#include "model/lora.h"
#include "model/model_config.h"

namespace pagoda::model {

struct AttentionWeights {
  kernels::WeightView wq, wk, wv, wo;  // [q_dim, hidden], [kv_dim, hidden] x2, [hidden, q_dim]
  std::vector<float> bq, bk, bv;       // empty, or [q_dim], [kv_dim], [kv_dim]
  std::vector<float> q_norm, k_norm;   // empty, or [head_dim]: per-head RMSNorm before RoPE
  int32_t window = 0;                  // this layer's sliding window (0: the whole causal context)
};

// The attention of a layer once its q [T, heads, head_dim] and k, v [T, kv_heads, head_dim]
// (rope applied) are known: every sequence's K/V written into `kv` through its block table, then
// one paged attention call over all sequences (the layer's window, the config's scale and
// softcap) into attn [T, heads, head_dim]. Shared by attention_block and mla_attention_block.
void paged_attend(const ModelConfig& config, int32_t window, const ForwardBatch& batch,
                  const kernels::KvLayerView& kv, const float* q, const float* k, const float* v,
                  float* attn);

// Reserves the scratch attention_block uses for a batch of num_tokens.
void reserve_attention_scratch(const ModelConfig& config, int64_t num_tokens, Scratch& scratch);

// out[T, hidden] = attention(h[T, hidden]) for the batch; writes this layer's K/V into `kv`.
// `lora` adds the rows' adapters to the q, k, v and output projections.
void attention_block(const ModelConfig& config, const AttentionWeights& w,
                     const kernels::RopeParams& rope, const ForwardBatch& batch,
                     const kernels::KvLayerView& kv, const float* h, float* out, Scratch& scratch,
                     const LoraLayer& lora = {});

}  // namespace pagoda::model
