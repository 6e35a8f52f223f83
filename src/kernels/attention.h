// Paged attention over a block-table-addressed KV cache (the layout the paged engine uses).
//
// KV layout of one layer (kv_dtype f32 or f16 for now):
//   K, V: [num_blocks][n_kv_heads][block_size][head_dim]
// A sequence's token at position p lives in block block_table[p / block_size], slot
// p % block_size. Block tables are append-only; a table covers at least context_len tokens.
#pragma once

#include <cstdint>
#include <span>

#include "tensor/dtype.h"

namespace pagoda::kernels {

struct KvLayerView {
  tensor::DType dtype = tensor::DType::kF32;  // kF32 or kF16 (later kBF16, kQ8_0)
  int32_t block_size = 16;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;
  int64_t num_blocks = 0;
  void* k = nullptr;
  void* v = nullptr;
};

// Writes k[t, kvh, :], v[t, kvh, :] (f32, [num_tokens, n_kv_heads, head_dim]) into the cache at
// positions[t] through block_table (f16 caches round to nearest even).
// precondition: positions[t] >= 0, block_table covers positions[t], its ids < kv.num_blocks.
void kv_cache_write(const KvLayerView& kv, std::span<const int32_t> block_table,
                    const int32_t* positions, int64_t num_tokens, const float* k, const float* v);

struct AttentionParams {
  int32_t n_heads = 0;  // query heads; a multiple of kv.n_kv_heads (GQA/MQA)
  float scale = 1;      // usually 1/sqrt(head_dim)
};

// For each query token t (q: [num_tokens, n_heads, head_dim], at position positions[t]),
// attends causally over cache positions [0, positions[t]] of one sequence and writes
// out[t, h, :] ([num_tokens, n_heads, head_dim] f32). Query head h reads KV head
// h / (n_heads / n_kv_heads). Computed flash-style (online softmax, block by block); each
// (token, head) is independent, so results do not depend on how tokens are batched.
// precondition: the cache holds K/V for every position in [0, positions[t]] (write this step's
// tokens with kv_cache_write first); block_table covers them.
void paged_attention(const float* q, int64_t num_tokens, const int32_t* positions,
                     const KvLayerView& kv, std::span<const int32_t> block_table,
                     const AttentionParams& params, float* out);

}  // namespace pagoda::kernels
