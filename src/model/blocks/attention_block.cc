#include "model/blocks/attention_block.h"

#include <cmath>

namespace pagoda::model {
namespace {
enum Slot { kQ = 10, kK, kV, kAttn };
}

void attention_block(const ModelConfig& c, const AttentionWeights& w,
                     const kernels::RopeParams& rope, const ForwardBatch& batch,
                     const kernels::KvLayerView& kv, const float* h, float* out, Scratch& scratch) {
  const int64_t T = static_cast<int64_t>(batch.tokens.size());
  const int64_t q_dim = c.q_dim();
  const int64_t kv_dim = c.kv_dim();
  float* q = scratch.get(kQ, static_cast<size_t>(T * q_dim));
  float* k = scratch.get(kK, static_cast<size_t>(T * kv_dim));
  float* v = scratch.get(kV, static_cast<size_t>(T * kv_dim));
  float* attn = scratch.get(kAttn, static_cast<size_t>(T * q_dim));

  kernels::matmul(w.wq, h, T, q, w.bq.empty() ? nullptr : w.bq.data());
  kernels::matmul(w.wk, h, T, k, w.bk.empty() ? nullptr : w.bk.data());
  kernels::matmul(w.wv, h, T, v, w.bv.empty() ? nullptr : w.bv.data());
  kernels::rope(q, T, c.num_heads, c.head_dim, batch.positions.data(), rope);
  kernels::rope(k, T, c.num_kv_heads, c.head_dim, batch.positions.data(), rope);

  kernels::AttentionParams params;
  params.n_heads = c.num_heads;
  params.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  for (const SequenceSlice& seq : batch.sequences) {
    const int64_t b = seq.token_begin;
    const int32_t* pos = batch.positions.data() + b;
    kernels::kv_cache_write(kv, seq.block_table, pos, seq.num_tokens, k + b * kv_dim,
                            v + b * kv_dim);
    kernels::paged_attention(q + b * q_dim, seq.num_tokens, pos, kv, seq.block_table, params,
                             attn + b * q_dim);
  }
  kernels::matmul(w.wo, attn, T, out);
}

}  // namespace pagoda::model
