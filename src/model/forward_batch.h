// ForwardBatch: one step's worth of tokens from any number of sequences, flattened. There is no
// prefill or decode mode: a sequence contributes its next `num_tokens` tokens (a whole prompt, a
// chunk, or one decode token) and attends to everything already in its KV blocks.
#pragma once

#include <cstdint>
#include <span>

namespace pagoda::model {

struct LoraAdapter;  // model/lora.h

struct SequenceSlice {
  int32_t token_begin = 0;  // first row of this sequence in the batch
  int32_t num_tokens = 0;   // consecutive rows [token_begin, token_begin + num_tokens)
  // Physical KV block of each logical block; covers positions up to the last new token.
  std::span<const int32_t> block_table;
  // The LoRA adapter this sequence runs (model/lora.h), or null for the base model. Must outlive
  // the forward pass and have been checked against the model (validate_lora_adapter).
  const LoraAdapter* lora = nullptr;
  // Hybrid models whose KV cache keeps a table per layer group (kv::KvManagerConfig::
  // group_windows, model::kv_layout's kv_groups): the sliding-window layers' table (entries
  // before the window may be the null block), as long as block_table; empty otherwise. Required
  // when the cache's layers share arrays.
  std::span<const int32_t> sliding_block_table = {};
  // The table a layer with attention window `window` (0: full) reads and writes.
  std::span<const int32_t> table_for(int32_t window) const {
    return window > 0 && !sliding_block_table.empty() ? sliding_block_table : block_table;
  }
};

// A KV block copied to another (copy-on-write) before a step.
struct KvBlockCopy {
  int32_t src = 0;
  int32_t dst = 0;
};

struct ForwardBatch {
  std::span<const int32_t> tokens;     // [num_tokens] token ids
  std::span<const int32_t> positions;  // [num_tokens] absolute positions in their sequence
  std::span<const SequenceSlice> sequences;
  // Rows whose logits are wanted, in output order (e.g. the last row of each sequence that
  // samples, or every row for `pagoda logits`).
  std::span<const int32_t> logit_rows;
  // Attention with the flash-style online softmax instead of the exact one (kernels/attention.h).
  bool flash_attention = false;
  // Block copies the caller already made in its KV cache for this step (KvStorage::copy_block):
  // a tensor-parallel model repeats them in the other ranks' caches before the pass.
  std::span<const KvBlockCopy> block_copies;
  // Rows whose final hidden state (after the output norm, before the output projection) is
  // wanted, in output order (pooling: embedding requests). Written to `hidden`:
  // [hidden_rows.size(), hidden_dim] f32 (must be non-null when hidden_rows is not empty).
  std::span<const int32_t> hidden_rows;
  float* hidden = nullptr;
  // Encoders: the token type (segment id, 0 or 1) of each row; empty: all 0.
  std::span<const int32_t> token_types;
};

}  // namespace pagoda::model
