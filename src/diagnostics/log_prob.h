// The per-token numbers behind perplexity and KL divergence, on one row of logits:
// log-softmax, the KL divergence of a run from a base run, and the summary llama-perplexity's
// --kl-divergence prints (mean, median, p99, top-1 agreement, the two PPLs).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace pagoda::diagnostics {

// out[i] = logits[i] - logsumexp(logits) (sum in double). precondition: out.size() ==
// logits.size() > 0. Returns the logsumexp.
double log_softmax(std::span<const float> logits, std::span<float> out);

// KL(P_base || Q) = Σ_i p_base_i (log p_base_i - log q_i), from two log-softmax rows of equal
// size (terms with p_base_i == 0 contribute 0).
double kl_divergence(std::span<const float> base_log_probs, std::span<const float> log_probs);

// Index of the largest value (the lowest index among equals).
int32_t argmax(std::span<const float> row);

// The p-th percentile (0..100) of `values` with numpy's default linear interpolation
// (np.percentile). precondition: values not empty. Reorders values.
double percentile(std::vector<double>& values, double p);

struct KlSummary {
  int64_t count = 0;
  double mean = 0, median = 0, p99 = 0, max = 0;
  double top1_agreement = 0;  // fraction of positions with the same argmax
  double base_ppl = 0, ppl = 0;
  double delta_ppl() const { return ppl - base_ppl; }
};

// Accumulates per-position numbers while a run is compared with a base run.
class KlAccumulator {
 public:
  // One scored position: both rows as log-softmax, the target token.
  void add(std::span<const float> base_log_probs, std::span<const float> log_probs, int32_t target);
  KlSummary summary() const;

 private:
  std::vector<double> kld_;
  int64_t same_top1_ = 0;
  double base_nll_ = 0, nll_ = 0;
};

}  // namespace pagoda::diagnostics
