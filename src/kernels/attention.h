// Paged attention over a block-table-addressed KV cache (the layout the paged engine uses).
//
// KV layout of one layer (kv dtype f32, f16, bf16 or q8_0):
//   K, V: [num_blocks][n_kv_heads][block_size][row], each row kv_row_bytes(dtype, head_dim) bytes:
//   head_dim floats / halves / bfloat16s, or for q8_0 head_dim / 32 ggml Q8_0 blocks (34 bytes:
//   f16 scale d, then 32 int8 q; value = q * d), quantised on write like ggml's
//   quantize_row_q8_0_ref. q8_0 needs head_dim % 32 == 0.
// V may be the K array itself (v == k: a latent cache, as multi-head latent attention keeps): each
// cached row is then both the key and the value (kv_cache_write stores it once).
// A sequence's token at position p lives in block block_table[p / block_size], slot
// p % block_size. Block tables are append-only; a table covers at least context_len tokens.
#pragma once

#include <cstdint>
#include <span>

#include "base/status.h"
#include "tensor/dtype.h"

namespace pagoda::kernels {

// Bytes of one cached K (or V) row of head_dim values: 4 per value (f32), 2 (f16, bf16), 34 per 32
// (q8_0). unimplemented for other dtypes; invalid_argument (naming head_dim) when q8_0's head_dim
// is not a multiple of 32 or head_dim is not positive.
Result<uint64_t> kv_row_bytes(tensor::DType dtype, int64_t head_dim);

struct KvLayerView {
  tensor::DType dtype = tensor::DType::kF32;  // kF32, kF16, kBF16 or kQ8_0
  int32_t block_size = 16;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;
  int64_t num_blocks = 0;
  void* k = nullptr;
  void* v = nullptr;
};

// Writes k[t, kvh, :], v[t, kvh, :] (f32, [num_tokens, n_kv_heads, head_dim]) into the cache at
// positions[t] through block_table (f16/bf16 caches round to nearest even; q8_0 caches quantise
// each head's row to Q8_0 blocks). With kv.v == kv.k only k is written (v is not read and may
// be null).
// precondition: positions[t] >= 0, block_table covers positions[t], its ids < kv.num_blocks.
void kv_cache_write(const KvLayerView& kv, std::span<const int32_t> block_table,
                    const int32_t* positions, int64_t num_tokens, const float* k, const float* v);

struct AttentionParams {
  int32_t n_heads = 0;  // query heads; a multiple of kv.n_kv_heads (GQA/MQA)
  float scale = 1;      // usually 1/sqrt(head_dim)
  // The flash-style online softmax (below) instead of the exact one: one walk over the KV blocks,
  // a block's scores at a time.
  bool online_softmax = false;
  // Sliding-window attention: a query at position p sees only cache positions
  // [p - window + 1, p] (llama.cpp's n_swa, Gemma-2's and Mistral's sliding_window); 0: the
  // whole causal context.
  int32_t window = 0;
  // Attention-logit soft-capping (Gemma 2): each scaled score s becomes cap * tanh(s / cap)
  // before the softmax; 0: none.
  float softcap = 0;
};

// The attention math (ggml's attention without flash-attn, llama.cpp's default: the cache acts as
// the weight matrix of two matmuls, so the query and the probabilities are first converted to the
// cache type's vec-dot type, exactly as matmul converts activations; see
// kernels/cpu/reference/attention_ref.cc):
//   q'   = q converted to the cache type's vec-dot type (f16: rounded to half; bf16: to bfloat16;
//          q8_0: quantised to Q8_0 like an activation row; f32: unchanged)
//   s_j  = (q' · K_j) · scale                 for cache positions j in [j0, positions[t]]
//          (q8_0: ggml's Q8_0 x Q8_0 vec-dot, integer sums per 32-block times both scales);
//          j0 = 0, or max(0, positions[t] - window + 1) with a sliding window; with softcap c,
//          s_j = c · tanh(s_j / c) (std::tanh in float, on every path). (Windows some query
//          reaches past run on the reference kernel: the SIMD paths have no window yet.)
//   p_j  = exp(s_j - max s) / Σ exp(s - max s)
//   p'_j = p_j rounded to the cache type (f16, bf16); unchanged for f32 and q8_0 (a quantised V
//          is read the way ggml's CPU flash attention reads it: each row converted to float and
//          accumulated in f32)
//   out  = Σ_j p'_j V_j
// With online_softmax (flash-style, as ggml's flash attention and vLLM's kernels compute it): one
// walk over the KV blocks with a running max M and sum L; per block, with M' the max raised to
// the block's scores and a = exp(M - M'): e_j = exp(s_j - M'), L = L·a + Σ e_j, out = out·a +
// Σ_j round(e_j) V_j; at the end out / L. The same function of the inputs, rounded differently
// (e_j is rounded to the cache type before the division by L); only a block's scores are held.
// Query head h reads KV head h / (n_heads / n_kv_heads). Each (token, head) is independent and
// computed in a fixed order, so results do not depend on how tokens or sequences are batched, and
// every ISA gives the same bits. Work is tiled by KV block (each block of a KV head is read once
// per query token for all the query heads that share it).

// For each query token t (q: [num_tokens, n_heads, head_dim], at position positions[t]),
// attends causally over cache positions [0, positions[t]] of one sequence and writes
// out[t, h, :] ([num_tokens, n_heads, head_dim] f32).
// precondition: the cache holds K/V for every position in [0, positions[t]] (write this step's
// tokens with kv_cache_write first); block_table covers them.
void paged_attention(const float* q, int64_t num_tokens, const int32_t* positions,
                     const KvLayerView& kv, std::span<const int32_t> block_table,
                     const AttentionParams& params, float* out);

// One sequence's part of a batched attention call.
struct AttentionSequence {
  const float* q = nullptr;            // [num_tokens, n_heads, head_dim]
  float* out = nullptr;                // [num_tokens, n_heads, head_dim]
  const int32_t* positions = nullptr;  // [num_tokens]
  int64_t num_tokens = 0;
  std::span<const int32_t> block_table;
};

// paged_attention for many sequences at once (e.g. a batch of single-token decodes): one parallel
// loop covers every (sequence, KV head, token tile). Same results as one call per sequence.
void paged_attention_batch(std::span<const AttentionSequence> sequences, const KvLayerView& kv,
                           const AttentionParams& params);

}  // namespace pagoda::kernels
