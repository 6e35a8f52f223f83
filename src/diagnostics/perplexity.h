// Perplexity as llama.cpp's llama-perplexity computes it, so numbers are comparable with it.
// The text is tokenized once (BOS first when the vocab adds one) and cut into windows of n_ctx
// tokens, each evaluated on a fresh KV cache with its first token replaced by BOS (when the vocab
// adds one):
// - default (stride 0): non-overlapping windows [i·n_ctx, (i+1)·n_ctx) for i < num_tokens / n_ctx
//   (a partial last window is dropped); only the second half is scored: the logits at positions
//   j in [n_ctx/2, n_ctx - 1) predict token j + 1, so every scored token sees at least n_ctx/2
//   tokens of context;
// - stride S (llama-perplexity's --ppl-stride): windows start every S tokens, for
//   i < ceil((num_tokens - n_ctx) / S), and the last S positions before the window's end are
//   scored (j in [n_ctx - S - 1, n_ctx - 1)).
// PPL = exp(mean NLL); its uncertainty is PPL · sqrt(var(NLL) / (count - 1)) as llama prints it.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "base/status.h"
#include "loader/model_loader.h"
#include "tensor/dtype.h"

namespace pagoda::diagnostics {

// One window: tokens [start, start + n_ctx); the logits at window positions
// [first_scored, first_scored + num_scored) are scored against the next token.
struct PerplexityWindow {
  int64_t start = 0;
  int32_t first_scored = 0;
  int32_t num_scored = 0;
};

// The windows of a text of num_tokens tokens. Errors: n_ctx < 4, stride < 0 or >= n_ctx - 1,
// fewer tokens than one window needs (naming how many are needed).
Result<std::vector<PerplexityWindow>> plan_windows(int64_t num_tokens, int32_t n_ctx,
                                                   int32_t stride);

struct PerplexityOptions {
  int32_t n_ctx = 512;
  int32_t stride = 0;   // 0: llama-perplexity's default (second half of non-overlapping windows)
  int32_t n_batch = 0;  // tokens per forward call (0: the whole window)
  tensor::DType kv_dtype = tensor::DType::kF16;
  bool flash_attention = false;
};

// Called for every scored position in order: its logits [vocab] and the token that follows.
using ScoredRowFn = std::function<Status(std::span<const float> logits, int32_t target)>;
// Called after each window: windows done, windows total.
using WindowDoneFn = std::function<void(size_t done, size_t total)>;

struct NllStats {
  int64_t count = 0;
  double sum = 0, sum_sq = 0;  // of -log p(target)

  void add(double nll) {
    ++count;
    sum += nll;
    sum_sq += nll * nll;
  }
  double ppl() const;        // exp(mean NLL)
  double ppl_error() const;  // llama-perplexity's "+/-"; 0 with fewer than two tokens
};

struct PerplexityResult {
  NllStats nll;
  std::vector<double> ppl_after_window;  // running PPL after each window (llama's [i]x lines)
  int64_t num_text_tokens = 0;
};

// Runs the windows of `tokens` through the model and scores them. `on_row`, when set, sees each
// scored row (for --save-logits and KL divergence) and may stop the run with an error.
Result<PerplexityResult> compute_perplexity(loader::LoadedModel& loaded,
                                            std::span<const int32_t> tokens,
                                            const PerplexityOptions& options,
                                            const ScoredRowFn& on_row = nullptr,
                                            const WindowDoneFn& on_window = nullptr);

// The text's tokens as llama-perplexity makes them (the vocab's BOS first when it adds one).
std::vector<int32_t> tokenize_for_perplexity(const loader::LoadedModel& loaded,
                                             const std::string& text);

}  // namespace pagoda::diagnostics
