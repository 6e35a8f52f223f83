#include "diagnostics/log_prob.h"

#include <algorithm>
#include <cmath>

namespace pagoda::diagnostics {

double log_softmax(std::span<const float> logits, std::span<float> out) {
  double max = -INFINITY;
  for (float v : logits)
    max = std::max(max, static_cast<double>(v));
  double sum = 0;
  for (float v : logits)
    sum += std::exp(static_cast<double>(v) - max);
  const double lse = max + std::log(sum);
  for (size_t i = 0; i < logits.size(); ++i)
    out[i] = static_cast<float>(static_cast<double>(logits[i]) - lse);
  return lse;
}

double kl_divergence(std::span<const float> base_log_probs, std::span<const float> log_probs) {
  double kl = 0;
  for (size_t i = 0; i < base_log_probs.size(); ++i) {
    const double lp = base_log_probs[i];
    const double p = std::exp(lp);
    if (p > 0) kl += p * (lp - static_cast<double>(log_probs[i]));
  }
  return std::max(kl, 0.0);  // exact KL is >= 0; rounding may give -1e-12
}

int32_t argmax(std::span<const float> row) {
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

double percentile(std::vector<double>& values, double p) {
  std::sort(values.begin(), values.end());
  const double rank = p / 100.0 * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return values[lo] + (values[hi] - values[lo]) * frac;
}

void KlAccumulator::add(std::span<const float> base_log_probs, std::span<const float> log_probs,
                        int32_t target) {
  kld_.push_back(kl_divergence(base_log_probs, log_probs));
  same_top1_ += argmax(base_log_probs) == argmax(log_probs) ? 1 : 0;
  base_nll_ -= base_log_probs[static_cast<size_t>(target)];
  nll_ -= log_probs[static_cast<size_t>(target)];
}

KlSummary KlAccumulator::summary() const {
  KlSummary s;
  s.count = static_cast<int64_t>(kld_.size());
  if (kld_.empty()) return s;
  std::vector<double> v = kld_;
  double sum = 0;
  for (double x : v)
    sum += x;
  const double n = static_cast<double>(v.size());
  s.mean = sum / n;
  s.p99 = percentile(v, 99);
  s.median = percentile(v, 50);
  s.max = v.back();
  s.top1_agreement = static_cast<double>(same_top1_) / n;
  s.base_ppl = std::exp(base_nll_ / n);
  s.ppl = std::exp(nll_ / n);
  return s;
}

}  // namespace pagoda::diagnostics
