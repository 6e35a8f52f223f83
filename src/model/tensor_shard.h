// Tensor-parallel sharding of a decoder (Megatron-style): rank r of n keeps
// - attention: the query heads of KV-head group r (KV heads [r*kv/n, (r+1)*kv/n) and their
//   query heads), i.e. rows of wq/wk/wv (and their biases): column-parallel, no communication;
//   its KV cache holds only those KV heads; wo keeps the matching input columns (row-parallel)
//   and the partial outputs are summed across ranks (one all-reduce);
// - MLA attention (deepseek2, as vLLM splits it): the latent (attn_kv_a_mqa, its norm, the rope
//   key) and the q compression (attn_q_a, its norm) are computed on every rank and the latent
//   cache is replicated (every head reads each row); the query heads split as above (rows of
//   attn_q_b or attn_q, each head's f32 copies of attn_kv_b) and attn_output row-parallel;
// - FFN: rows [r*f/n, (r+1)*f/n) of gate and up (column-parallel) and those input columns of
//   down (row-parallel, one all-reduce);
// - output head: vocabulary rows [r*ceil(V/n), ...) (the logits are all-gathered);
// - MoE layers: every expert split like the FFN (its rows of gate/up, those input columns of
//   down: vLLM's default), or under expert parallelism (--expert-parallel) whole experts by index,
//   [r*E/n, (r+1)*E/n); the router replicated; a shared expert split like the FFN; the same
//   all-reduce sums each token's experts;
//   the dense layers of a MoE model (DeepSeek's leading ones, Qwen-MoE's mlp_only_layers) split
//   like any FFN;
// - token embedding and norms: replicated (the embedding stays in the file mapping, where a
//   rank touches only the rows of the tokens it looks up).
// Row slices are views into the file mapping; column slices are copies of each row's byte range,
// which must start and end on a quantisation block (refused otherwise, naming the tensor) and,
// for a GPTQ/AWQ zero term, on its zero-point groups (the term's groups are sliced with them).
// Act-order (input-ordered) GPTQ weights: ffn_down keeps a contiguous run of stored columns and
// the rank computes the intermediate features they hold (gate/up rows gathered to match); wo,
// whose inputs are fixed by the rank's heads, keeps its columns dequantised to F32 (exact
// weights, logged with the memory it costs).
#pragma once

#include <cstdint>
#include <vector>

#include "base/mapped_file.h"
#include "base/status.h"
#include "model/decoder.h"
#include "model/model_config.h"

namespace pagoda::model {

struct TensorShard {
  int32_t rank = 0;
  int32_t size = 1;
  int32_t vocab_begin = 0;  // this rank's output-head rows [vocab_begin, vocab_begin + count)
  int32_t vocab_count = 0;
  int32_t vocab_stride = 0;  // ceil(vocab / size): every rank's padded share of a logits row
  // The column-sliced copies the views point at: on the heap while sharding, then moved to an
  // unlinked temporary file mapped back (`spill`), whose clean pages Backend::place_weights hands
  // back after packing them (heap pages stay resident without swap). `owned` keeps them when no
  // temporary file can be made.
  std::vector<std::vector<uint8_t>> owned;
  MappedFile spill;
  // Act-order (GPTQ desc_act) wo matrices kept as dequantised F32 columns, and their bytes.
  int32_t dequantised_tensors = 0;
  uint64_t dequantised_bytes = 0;
};

// The config shard `rank` of `size` computes with: num_heads, num_kv_heads and ffn_dim divided
// by size (MoE models: the shared expert's width too, expert_ffn_dim set to the whole experts'
// width, and ffn_dim only when some layers are dense); everything else as `full` (MLA:
// kv_lora_rank and rope_dims stay, so model::kv_layout gives every rank the whole latent row).
// invalid_argument (naming the dimension) when the model cannot be split that way (heads, KV
// heads, ffn or experts not divisible; MLA: num_heads, named with the architecture).
// expert_parallel: see backend::TensorParallel (whole experts per rank, or every expert's width
// divided by size).
Result<ModelConfig> shard_config(const ModelConfig& full, int32_t rank, int32_t size,
                                 bool expert_parallel = false);

// Narrows `weights` (bound for `full`) to shard `rank` of `size` in place. The column slices
// end in the shard's `spill` file mapping (or `owned`, see above).
Result<TensorShard> shard_decoder_weights(const ModelConfig& full, int32_t rank, int32_t size,
                                          bool expert_parallel, DecoderWeights& weights);

}  // namespace pagoda::model
