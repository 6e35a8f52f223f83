#include "diagnostics/sequence_session.h"

#include <numeric>

namespace pagoda::diagnostics {

Result<SequenceSession> SequenceSession::create(model::Model& model, int32_t max_tokens,
                                                tensor::DType kv_dtype, int32_t block_size) {
  const auto& c = model.config();
  if (max_tokens <= 0 || max_tokens > c.context_length) {
    return out_of_range("{} tokens do not fit the model's context length {}", max_tokens,
                        c.context_length);
  }
  if (block_size <= 0) return invalid_argument("block size {} must be positive", block_size);
  const int64_t num_blocks = (static_cast<int64_t>(max_tokens) + block_size - 1) / block_size;
  PAGODA_ASSIGN_OR_RETURN(backend::KvStorage storage,
                          backend::KvStorage::create(model.backend(), model.kv_layout(), num_blocks,
                                                     block_size, kv_dtype));
  return SequenceSession(model, std::move(storage), max_tokens);
}

SequenceSession::SequenceSession(model::Model& model, backend::KvStorage storage, int32_t capacity)
    : model_(&model), storage_(std::move(storage)), capacity_(capacity) {
  block_table_.resize(static_cast<size_t>(storage_.num_blocks()));
  std::iota(block_table_.begin(), block_table_.end(), 0);
}

Status SequenceSession::feed(std::span<const int32_t> tokens, bool all_logits,
                             std::vector<float>& logits) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n == 0) return invalid_argument("no tokens to feed");
  if (num_tokens_ + n > capacity_) {
    return out_of_range("{} + {} tokens exceed the session capacity {}", num_tokens_, n, capacity_);
  }
  std::vector<int32_t> positions(static_cast<size_t>(n));
  std::iota(positions.begin(), positions.end(), num_tokens_);
  model::SequenceSlice seq;
  seq.token_begin = 0;
  seq.num_tokens = static_cast<int32_t>(n);
  const int32_t bs = storage_.block_size();
  const size_t used_blocks = static_cast<size_t>((num_tokens_ + n + bs - 1) / bs);
  seq.block_table = std::span<const int32_t>(block_table_.data(), used_blocks);
  std::vector<int32_t> rows;
  if (all_logits) {
    rows.resize(static_cast<size_t>(n));
    std::iota(rows.begin(), rows.end(), 0);
  } else {
    rows.push_back(static_cast<int32_t>(n - 1));
  }
  model::ForwardBatch batch;
  batch.tokens = tokens;
  batch.positions = positions;
  batch.sequences = std::span<const model::SequenceSlice>(&seq, 1);
  batch.logit_rows = rows;
  batch.flash_attention = flash_attention_;
  logits.resize(rows.size() * static_cast<size_t>(model_->config().vocab_size));
  PAGODA_RETURN_IF_ERROR(model_->forward(batch, storage_.layers(), logits.data()));
  num_tokens_ += static_cast<int32_t>(n);
  return Status();
}

}  // namespace pagoda::diagnostics
