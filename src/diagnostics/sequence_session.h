// SequenceSession: runs a single sequence through a Model on its own KV storage, blocks taken
// in order. The simplest client of the paged forward pass: used by `pagoda logits`, the
// fidelity tests and single-stream generation. (Many sequences go through the engine.)
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/kv_storage.h"
#include "base/status.h"
#include "model/model.h"

namespace pagoda::diagnostics {

class SequenceSession {
 public:
  // Reserves KV for up to max_tokens tokens (at most the model's context length).
  static Result<SequenceSession> create(model::Model& model, int32_t max_tokens,
                                        tensor::DType kv_dtype = tensor::DType::kF32,
                                        int32_t block_size = 16);

  // Appends `tokens` and computes them in one batch. Writes logits [n, vocab] for every new
  // token when all_logits, else only for the last one [1, vocab].
  Status feed(std::span<const int32_t> tokens, bool all_logits, std::vector<float>& logits);

  int32_t num_tokens() const { return num_tokens_; }
  int32_t capacity() const { return capacity_; }
  void reset() { num_tokens_ = 0; }
  // Attention with the flash-style online softmax (ForwardBatch::flash_attention); off by default.
  void set_flash_attention(bool on) { flash_attention_ = on; }
  // Forgets tokens after the first n (their KV slots are overwritten by later feeds).
  void rewind(int32_t n) { num_tokens_ = n < num_tokens_ ? (n < 0 ? 0 : n) : num_tokens_; }

 private:
  SequenceSession(model::Model& model, backend::KvStorage storage, int32_t capacity);
  model::Model* model_;
  backend::KvStorage storage_;
  int32_t capacity_;
  int32_t num_tokens_ = 0;
  bool flash_attention_ = false;
  std::vector<int32_t> block_table_;
};

}  // namespace pagoda::diagnostics
