// LogitTrace: the full logit rows of a prompt and its greedy continuation, the way the fidelity
// fixtures record a peer engine's numbers (../shared/fixtures/models/reference/*.json).
// Position i < prompt_tokens.size() is the row after prompt token i; then one row after each
// greedy token.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "loader/model_loader.h"
#include "tensor/dtype.h"

namespace pagoda::diagnostics {

struct LogitTrace {
  std::vector<int32_t> prompt_tokens;
  std::vector<int32_t> greedy_tokens;
  std::string greedy_text;               // decoded greedy tokens (raw bytes)
  std::vector<std::vector<float>> rows;  // [prompt + greedy][vocab]
};

struct RowStats {
  double logsumexp = 0, mean = 0, std = 0;
  std::vector<std::pair<int32_t, float>> top;  // k largest, descending (ties: lower id first)
};

// Tokenizes `prompt` (with BOS as the vocab says), evaluates it in one batch, then feeds
// `n_predict` greedy tokens one at a time, on a KV cache of `kv_dtype` (f16 by default, as
// llama.cpp uses; f32, bf16 and q8_0 also work), with the exact softmax or flash attention.
Result<LogitTrace> trace_logits(loader::LoadedModel& loaded, const std::string& prompt,
                                int32_t n_predict, tensor::DType kv_dtype = tensor::DType::kF16,
                                bool flash_attention = false);

RowStats row_stats(const std::vector<float>& row, int32_t top_k);

}  // namespace pagoda::diagnostics
