#include "diagnostics/perplexity.h"

#include <algorithm>
#include <cmath>

#include "diagnostics/log_prob.h"
#include "diagnostics/sequence_session.h"

namespace pagoda::diagnostics {

Result<std::vector<PerplexityWindow>> plan_windows(int64_t num_tokens, int32_t n_ctx,
                                                   int32_t stride) {
  if (n_ctx < 4) return invalid_argument("--ctx {} is too small (at least 4)", n_ctx);
  if (stride < 0 || stride >= n_ctx - 1) {
    return invalid_argument("--stride {} must be in [0, {}) for --ctx {}", stride, n_ctx - 1,
                            n_ctx);
  }
  std::vector<PerplexityWindow> windows;
  if (stride == 0) {
    const int64_t n = num_tokens / n_ctx;
    if (n == 0) {
      return invalid_argument("the text has {} tokens; --ctx {} needs at least {}", num_tokens,
                              n_ctx, n_ctx);
    }
    const int32_t first = n_ctx / 2;
    for (int64_t i = 0; i < n; ++i)
      windows.push_back({i * n_ctx, first, n_ctx - 1 - first});
    return windows;
  }
  if (num_tokens <= n_ctx) {
    return invalid_argument("the text has {} tokens; --ctx {} with --stride needs more than {}",
                            num_tokens, n_ctx, n_ctx);
  }
  const int64_t n = (num_tokens - n_ctx + stride - 1) / stride;
  for (int64_t i = 0; i < n; ++i)
    windows.push_back({i * stride, n_ctx - stride - 1, stride});
  return windows;
}

double NllStats::ppl() const {
  return count > 0 ? std::exp(sum / static_cast<double>(count)) : 0.0;
}

double NllStats::ppl_error() const {
  if (count < 2) return 0;
  const double n = static_cast<double>(count);
  const double mean = sum / n;
  const double var = sum_sq / n - mean * mean;
  return var > 0 ? ppl() * std::sqrt(var / (n - 1)) : 0.0;
}

std::vector<int32_t> tokenize_for_perplexity(const loader::LoadedModel& loaded,
                                             const std::string& text) {
  tokenizer::EncodeOptions opts;
  opts.add_special = true;
  opts.parse_special = false;  // the text is data: "<s>" in it is not a control token
  return loaded.tokenizer->encode(text, opts);
}

Result<PerplexityResult> compute_perplexity(loader::LoadedModel& loaded,
                                            std::span<const int32_t> tokens,
                                            const PerplexityOptions& options,
                                            const ScoredRowFn& on_row,
                                            const WindowDoneFn& on_window) {
  const model::ModelConfig& config = loaded.model->config();
  if (options.n_ctx > config.context_length) {
    return invalid_argument("--ctx {} exceeds the model's context length {}", options.n_ctx,
                            config.context_length);
  }
  if (options.n_batch < 0) return invalid_argument("--batch {} must be >= 0", options.n_batch);
  PAGODA_ASSIGN_OR_RETURN(
      std::vector<PerplexityWindow> windows,
      plan_windows(static_cast<int64_t>(tokens.size()), options.n_ctx, options.stride));
  const tokenizer::Vocab& vocab = loaded.tokenizer->vocab();
  const bool replace_bos = vocab.add_bos && vocab.bos_id.has_value();
  PAGODA_ASSIGN_OR_RETURN(SequenceSession session,
                          SequenceSession::create(*loaded.model, options.n_ctx, options.kv_dtype));
  session.set_flash_attention(options.flash_attention);
  const auto n_vocab = static_cast<size_t>(config.vocab_size);
  const int32_t n_batch =
      options.n_batch > 0 ? std::min(options.n_batch, options.n_ctx) : options.n_ctx;
  PerplexityResult result;
  result.num_text_tokens = static_cast<int64_t>(tokens.size());
  std::vector<int32_t> window(static_cast<size_t>(options.n_ctx));
  std::vector<float> logits, log_probs(n_vocab);
  for (size_t w = 0; w < windows.size(); ++w) {
    const PerplexityWindow& win = windows[w];
    std::copy_n(tokens.begin() + win.start, options.n_ctx, window.begin());
    if (replace_bos) window[0] = *vocab.bos_id;
    session.reset();
    const int32_t scored_end = win.first_scored + win.num_scored;
    for (int32_t begin = 0; begin < scored_end; begin += n_batch) {
      const int32_t end = std::min(begin + n_batch, scored_end);
      const bool need_rows = end > win.first_scored;
      PAGODA_RETURN_IF_ERROR(session.feed(
          std::span<const int32_t>(window.data() + begin, static_cast<size_t>(end - begin)),
          need_rows, logits));
      if (!need_rows) continue;
      for (int32_t j = std::max(begin, win.first_scored); j < end; ++j) {
        const std::span<const float> row(logits.data() + static_cast<size_t>(j - begin) * n_vocab,
                                         n_vocab);
        const int32_t target = window[static_cast<size_t>(j) + 1];
        log_softmax(row, log_probs);
        result.nll.add(-static_cast<double>(log_probs[static_cast<size_t>(target)]));
        if (on_row) PAGODA_RETURN_IF_ERROR(on_row(row, target));
      }
    }
    result.ppl_after_window.push_back(result.nll.ppl());
    if (on_window) on_window(w + 1, windows.size());
  }
  return result;
}

}  // namespace pagoda::diagnostics
