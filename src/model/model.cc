#include "model/model.h"

namespace pagoda::model {

Status Model::forward(const ForwardBatch& batch, std::span<const kernels::KvLayerView> kv_layers,
                      float* logits) {
  const size_t n = batch.tokens.size();
  if (batch.positions.size() != n) {
    return invalid_argument("batch has {} tokens but {} positions", n, batch.positions.size());
  }
  if (kv_layers.size() != static_cast<size_t>(config_.num_layers)) {
    return invalid_argument("{} KV layers given, model has {}", kv_layers.size(),
                            config_.num_layers);
  }
  for (const auto& kv : kv_layers) {
    if (kv.n_kv_heads != config_.num_kv_heads || kv.head_dim != config_.head_dim ||
        kv.block_size <= 0) {
      return invalid_argument("KV layer shape does not match the model");
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (batch.tokens[i] < 0 || batch.tokens[i] >= config_.vocab_size) {
      return invalid_argument("token id {} at batch row {} is outside the vocabulary [0, {})",
                              batch.tokens[i], i, config_.vocab_size);
    }
    if (batch.positions[i] < 0) {
      return invalid_argument("negative position at batch row {}", i);
    }
  }
  size_t covered = 0;
  for (const auto& seq : batch.sequences) {
    if (seq.num_tokens <= 0 || seq.token_begin < 0 ||
        static_cast<size_t>(seq.token_begin) != covered ||
        static_cast<size_t>(seq.token_begin) + static_cast<size_t>(seq.num_tokens) > n) {
      return invalid_argument("sequence slices must tile the batch in order");
    }
    covered += static_cast<size_t>(seq.num_tokens);
    const int32_t block_size = kv_layers.empty() ? 1 : kv_layers[0].block_size;
    for (int32_t t = 0; t < seq.num_tokens; ++t) {
      const int64_t pos = batch.positions[static_cast<size_t>(seq.token_begin + t)];
      const int64_t logical = pos / block_size;
      if (logical >= static_cast<int64_t>(seq.block_table.size())) {
        return invalid_argument("position {} is beyond the sequence's block table", pos);
      }
    }
    for (int32_t b : seq.block_table) {
      if (!kv_layers.empty() && (b < 0 || b >= kv_layers[0].num_blocks)) {
        return invalid_argument("block id {} is outside the KV cache", b);
      }
    }
  }
  if (covered != n) return invalid_argument("sequence slices cover {} of {} rows", covered, n);
  for (int32_t r : batch.logit_rows) {
    if (r < 0 || static_cast<size_t>(r) >= n) {
      return invalid_argument("logit row {} is outside the batch", r);
    }
  }
  for (int32_t r : batch.hidden_rows) {
    if (r < 0 || static_cast<size_t>(r) >= n) {
      return invalid_argument("hidden row {} is outside the batch", r);
    }
  }
  if (!batch.hidden_rows.empty() && batch.hidden == nullptr) {
    return invalid_argument("{} hidden rows requested without an output buffer",
                            batch.hidden_rows.size());
  }
  if (n == 0) return Status();
  forward_impl(batch, kv_layers, logits);
  return Status();
}

}  // namespace pagoda::model
