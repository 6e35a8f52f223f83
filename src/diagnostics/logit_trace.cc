#include "diagnostics/logit_trace.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "diagnostics/sequence_session.h"

namespace pagoda::diagnostics {

Result<LogitTrace> trace_logits(loader::LoadedModel& loaded, const std::string& prompt,
                                int32_t n_predict, tensor::DType kv_dtype, bool flash_attention) {
  LogitTrace trace;
  tokenizer::EncodeOptions opts;
  trace.prompt_tokens = loaded.tokenizer->encode(prompt, opts);
  if (trace.prompt_tokens.empty()) return invalid_argument("the prompt has no tokens");
  if (n_predict < 0) return invalid_argument("n_predict must be >= 0");
  const int64_t total = static_cast<int64_t>(trace.prompt_tokens.size()) + n_predict;
  if (total > loaded.model->config().context_length) {
    return out_of_range("prompt ({} tokens) + {} exceeds the context length {}",
                        trace.prompt_tokens.size(), n_predict,
                        loaded.model->config().context_length);
  }
  // f16 by default, as llama.cpp's KV cache (the peer these traces are compared with).
  PAGODA_ASSIGN_OR_RETURN(
      SequenceSession session,
      SequenceSession::create(*loaded.model, static_cast<int32_t>(total), kv_dtype));
  session.set_flash_attention(flash_attention);
  const size_t vocab = static_cast<size_t>(loaded.model->config().vocab_size);
  std::vector<float> logits;
  PAGODA_RETURN_IF_ERROR(session.feed(trace.prompt_tokens, /*all_logits=*/true, logits));
  for (size_t i = 0; i < trace.prompt_tokens.size(); ++i) {
    trace.rows.emplace_back(logits.begin() + static_cast<std::ptrdiff_t>(i * vocab),
                            logits.begin() + static_cast<std::ptrdiff_t>((i + 1) * vocab));
  }
  for (int32_t step = 0; step < n_predict; ++step) {
    const auto& last = trace.rows.back();
    const int32_t next =
        static_cast<int32_t>(std::max_element(last.begin(), last.end()) - last.begin());
    trace.greedy_tokens.push_back(next);
    const int32_t one[1] = {next};
    PAGODA_RETURN_IF_ERROR(session.feed(one, /*all_logits=*/false, logits));
    trace.rows.emplace_back(logits.begin(), logits.begin() + static_cast<std::ptrdiff_t>(vocab));
  }
  trace.greedy_text = loaded.tokenizer->decode(trace.greedy_tokens);
  return trace;
}

RowStats row_stats(const std::vector<float>& row, int32_t top_k) {
  RowStats s;
  const double n = static_cast<double>(row.size());
  double max = -INFINITY, sum = 0;
  for (float v : row) {
    max = std::max(max, static_cast<double>(v));
    sum += v;
  }
  s.mean = sum / n;
  double var = 0, se = 0;
  for (float v : row) {
    var += (v - s.mean) * (v - s.mean);
    se += std::exp(static_cast<double>(v) - max);
  }
  s.std = std::sqrt(var / n);
  s.logsumexp = max + std::log(se);
  std::vector<int32_t> idx(row.size());
  std::iota(idx.begin(), idx.end(), 0);
  const size_t k = std::min(row.size(), static_cast<size_t>(std::max(top_k, 0)));
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(),
                    [&row](int32_t a, int32_t b) {
                      return row[static_cast<size_t>(a)] > row[static_cast<size_t>(b)] ||
                             (row[static_cast<size_t>(a)] == row[static_cast<size_t>(b)] && a < b);
                    });
  for (size_t i = 0; i < k; ++i)
    s.top.emplace_back(idx[i], row[static_cast<size_t>(idx[i])]);
  return s;
}

}  // namespace pagoda::diagnostics
