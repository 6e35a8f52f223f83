#include "runner/draft_pacer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace pagoda::runner {
namespace {

constexpr int64_t kMaxFitTokens = 256;  // larger steps are prefill chunks: another regime
constexpr double kStepDecay = 0.98;     // per recorded step
constexpr double kProposalDecay = 0.8;  // per recorded proposal
constexpr int64_t kMinSteps = 4;

}  // namespace

double expected_tokens_per_step(double alpha, int32_t k) {
  alpha = std::clamp(alpha, 0.0, 1.0);
  double sum = 1;
  double term = 1;
  for (int32_t i = 0; i < k; ++i) {
    term *= alpha;
    sum += term;
  }
  return sum;
}

int32_t best_num_drafts(double alpha, int32_t max_k, const SpeculationCosts& costs, double margin,
                        int64_t n) {
  if (max_k < 1 || !(costs.step > 0)) return 0;
  const auto others = static_cast<double>(std::max<int64_t>(n, 1) - 1);
  const double extra = std::max(0.0, costs.per_token) + std::max(0.0, costs.per_draft);
  const double plain_rate = (others + 1 + std::max(0.0, margin)) / costs.step;
  int32_t best = 0;
  double best_rate = plain_rate;
  for (int32_t k = 1; k <= max_k; ++k) {
    const double rate = (others + expected_tokens_per_step(alpha, k)) / (costs.step + k * extra);
    if (rate > best_rate) best = k, best_rate = rate;
  }
  return best;
}

DraftPacer::DraftPacer(const DraftPacingConfig& config)
    : config_(config),
      accepted_(config.prior_accepted),
      rejected_(config.prior_rejected),
      probe_interval_(config.probe_interval) {}

void DraftPacer::record_verification(int32_t drafted, int32_t accepted) {
  if (drafted < 1) return;
  accepted = std::clamp(accepted, 0, drafted);
  const double d = std::clamp(config_.decay, 0.0, 1.0);
  accepted_ = d * accepted_ + accepted;
  rejected_ = d * rejected_ + (accepted < drafted ? 1 : 0);
}

double DraftPacer::acceptance() const {
  const double n = accepted_ + rejected_;
  return n > 0 ? accepted_ / n : 0;
}

int32_t DraftPacer::next_num_drafts(int32_t max_k, const std::optional<SpeculationCosts>& costs,
                                    int64_t num_sampling) {
  if (max_k < 1) return 0;
  if (!costs) return max_k;
  const int32_t k = best_num_drafts(acceptance(), max_k, *costs, config_.margin, num_sampling);
  if (k > 0) {
    paused_ = false;
    paused_steps_ = 0;
    probe_interval_ = config_.probe_interval;
    return k;
  }
  // Not even drafts that are always accepted would pay at these costs (a large batch, a dear
  // draft): a probe could not change the answer, it would only cost a draft pass.
  if (best_num_drafts(1.0, max_k, *costs, config_.margin, num_sampling) == 0) {
    paused_ = true;
    return 0;
  }
  if (!paused_) {  // this step is the first without drafts
    paused_ = true;
    paused_steps_ = 0;
    probe_interval_ = config_.probe_interval;
    return 0;
  }
  if (++paused_steps_ >= std::max(1, probe_interval_)) {
    paused_steps_ = 0;
    probe_interval_ =
        std::max(1, std::min(std::max(config_.max_probe_interval, config_.probe_interval),
                             probe_interval_ > INT32_MAX / 2 ? INT32_MAX : 2 * probe_interval_));
    return 1;
  }
  return 0;
}

void SpeculationCostMeter::record_step(int64_t tokens, double seconds) {
  if (tokens < 1 || tokens > kMaxFitTokens || !(seconds >= 0) || !std::isfinite(seconds)) return;
  const auto x = static_cast<double>(tokens);
  w_ = kStepDecay * w_ + 1;
  x_ = kStepDecay * x_ + x;
  y_ = kStepDecay * y_ + seconds;
  xx_ = kStepDecay * xx_ + x * x;
  xy_ = kStepDecay * xy_ + x * seconds;
  ++num_steps_;
  const double mean_x = x_ / w_;
  const double var = xx_ / w_ - mean_x * mean_x;
  const double cov = xy_ / w_ - mean_x * (y_ / w_);
  if (var >= 0.25 && cov > 0) slope_ = cov / var;
}

void SpeculationCostMeter::record_proposal(int32_t max_drafts, double seconds) {
  if (max_drafts < 1 || !(seconds >= 0) || !std::isfinite(seconds)) return;
  const double per = seconds / max_drafts;
  per_draft_ = num_proposals_ == 0 ? per : kProposalDecay * per_draft_ + (1 - kProposalDecay) * per;
  ++num_proposals_;
}

void SpeculationCostMeter::record_proposal_passes(const ProposalPasses& passes, double seconds) {
  if (passes.drafting_rows < 1 || passes.later_passes < 0 || !(seconds >= 0)) return;
  double first = passes.first_pass_seconds;
  if (passes.first_pass_caught_up) {
    if (passes.later_passes == 0) return;
    first = passes.later_pass_seconds / passes.later_passes;
  }
  // The rest of the call (drawing the drafts, masks) stays in the price.
  const double rest =
      std::max(0.0, seconds - passes.first_pass_seconds - passes.later_pass_seconds);
  record_proposal(1 + passes.later_passes,
                  (first + passes.later_pass_seconds + rest) / passes.drafting_rows);
}

std::optional<SpeculationCosts> SpeculationCostMeter::costs(int64_t tokens) const {
  if (num_steps_ < kMinSteps || num_proposals_ == 0 || w_ <= 0) return std::nullopt;
  const double mean_x = x_ / w_;
  const double mean_y = y_ / w_;
  const double var = xx_ / w_ - mean_x * mean_x;
  const double cov = xy_ / w_ - mean_x * mean_y;
  SpeculationCosts c;
  c.per_draft = per_draft_;
  // One step size only (or a noisy negative slope): no per-row cost can be told apart now, so a
  // row costs what it did when one could (nothing, if it never could). Only plain steps of one
  // batch size are seen while nobody drafts; a slope of 0 then made drafting look free, and a
  // request at the edge resumed, paid, paused and resumed again.
  const double n = static_cast<double>(std::clamp<int64_t>(tokens, 1, kMaxFitTokens));
  c.per_token = var < 0.25 || cov <= 0 ? slope_ : cov / var;
  c.step = std::max(mean_y + c.per_token * (n - mean_x), 1e-3 * mean_y);
  if (!(c.step > 0)) return std::nullopt;
  return c;
}

}  // namespace pagoda::runner
