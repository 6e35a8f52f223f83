#include "model/blocks/attention_block.h"

#include <cmath>
#include <vector>

namespace pagoda::model {
namespace {
enum Slot { kQ = 10, kK, kV, kAttn };
}

void reserve_attention_scratch(const ModelConfig& c, int64_t T, Scratch& scratch) {
  scratch.reserve(kQ, static_cast<size_t>(T * c.q_dim()));
  scratch.reserve(kK, static_cast<size_t>(T * c.kv_dim()));
  scratch.reserve(kV, static_cast<size_t>(T * c.kv_dim()));
  scratch.reserve(kAttn, static_cast<size_t>(T * c.q_dim()));
}

void paged_attend(const ModelConfig& c, int32_t window, const ForwardBatch& batch,
                  const kernels::KvLayerView& kv, const float* q, const float* k, const float* v,
                  float* attn) {
  const int64_t q_dim = static_cast<int64_t>(c.num_heads) * kv.head_dim;
  const int64_t kv_dim = static_cast<int64_t>(kv.n_kv_heads) * kv.head_dim;
  kernels::AttentionParams params;
  params.n_heads = c.num_heads;
  params.scale = c.attn_scale > 0 ? c.attn_scale : 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  params.online_softmax = batch.flash_attention;
  params.window = window;
  params.softcap = c.attn_softcap;
  // Every sequence's new K/V first, then one parallel attention call over all sequences.
  std::vector<kernels::AttentionSequence> seqs;
  seqs.reserve(batch.sequences.size());
  for (const SequenceSlice& seq : batch.sequences) {
    const int64_t b = seq.token_begin;
    const int32_t* pos = batch.positions.data() + b;
    const std::span<const int32_t> table = seq.table_for(window);
    kernels::kv_cache_write(kv, table, pos, seq.num_tokens, k + b * kv_dim, v + b * kv_dim);
    seqs.push_back(
        kernels::AttentionSequence{q + b * q_dim, attn + b * q_dim, pos, seq.num_tokens, table});
  }
  kernels::paged_attention_batch(seqs, kv, params);
}

void attention_block(const ModelConfig& c, const AttentionWeights& w,
                     const kernels::RopeParams& rope, const ForwardBatch& batch,
                     const kernels::KvLayerView& kv, const float* h, float* out, Scratch& scratch,
                     const LoraLayer& lora) {
  const int64_t T = static_cast<int64_t>(batch.tokens.size());
  const int64_t q_dim = c.q_dim();
  const int64_t kv_dim = c.kv_dim();
  float* q = scratch.get(kQ, static_cast<size_t>(T * q_dim));
  float* k = scratch.get(kK, static_cast<size_t>(T * kv_dim));
  float* v = scratch.get(kV, static_cast<size_t>(T * kv_dim));
  float* attn = scratch.get(kAttn, static_cast<size_t>(T * q_dim));

  // Q, K and V in one parallel region (h converted once).
  const kernels::MatmulJob qkv[] = {{&w.wq, q, w.bq.empty() ? nullptr : w.bq.data()},
                                    {&w.wk, k, w.bk.empty() ? nullptr : w.bk.data()},
                                    {&w.wv, v, w.bv.empty() ? nullptr : w.bv.data()}};
  kernels::matmul_group(qkv, h, T);
  const int64_t hidden = c.hidden_dim;
  const LoraBatch::Output qkv_lora[] = {
      {LoraTarget::kQ, q, q_dim}, {LoraTarget::kK, k, kv_dim}, {LoraTarget::kV, v, kv_dim}};
  lora.add(qkv_lora, h, hidden, scratch);
  if (!w.q_norm.empty()) {  // Qwen3: each head's q and k RMS-normalised (rows of head_dim)
    kernels::rms_norm(q, w.q_norm.data(), T * c.num_heads, c.head_dim, c.rms_norm_eps, q);
    kernels::rms_norm(k, w.k_norm.data(), T * c.num_kv_heads, c.head_dim, c.rms_norm_eps, k);
  }
  kernels::rope(q, T, c.num_heads, c.head_dim, batch.positions.data(), rope);
  kernels::rope(k, T, c.num_kv_heads, c.head_dim, batch.positions.data(), rope);

  paged_attend(c, w.window, batch, kv, q, k, v, attn);
  kernels::matmul(w.wo, attn, T, out);
  lora.add(LoraTarget::kO, attn, q_dim, out, hidden, scratch);
}

}  // namespace pagoda::model
