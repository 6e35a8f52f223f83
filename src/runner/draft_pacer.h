// DraftPacer: speculate only while it pays. Adaptive k (the scheduler's) never drops below one
// draft, so a request whose drafts are mostly rejected would pay a draft pass and a verification
// row every step for nothing (0.5x measured on a random-weight self-draft). The rule, per request
// at each sampled step, from
//  - its acceptance estimate alpha (per-draft acceptance probability, a decayed count of accepted
//    drafts against rejections: the maximum-likelihood estimate for the truncated geometric run
//    lengths that verification produces), and
//  - the measured costs (SpeculationCostMeter: the target's step time and its extra time per
//    verified row, the proposer's time per drafted token; prompt lookup's is ~0, so its rule is
//    about verification only),
// drafts the k in [1, max_k] that maximises the step's expected tokens per second,
//     (n - 1 + E(k)) / (step + k * (per_token + per_draft)),
//     E(k) = (1 - alpha^(k+1)) / (1 - alpha)
// (Leviathan et al. 2023, eq. 1: expected tokens per verifying step), where n is the number of
// requests sampling in the step (the others' tokens come at the step's price too: a request's
// drafts slow every row of the batch, so the larger the batch, the more a draft must bring),
// when that beats plain decoding, n / step, by the factor 1 + margin / n (the request's own
// margin). Otherwise the request stops drafting and probes with k = 1 after probe_interval
// sampled steps, then after twice as many (up to max_probe_interval), so it resumes when its
// text becomes predictable (each probe's verification updates alpha); it does not probe while
// even alpha = 1 would not pay (the costs decide).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "runner/proposer.h"

namespace pagoda::runner {

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// What speculating costs in one step, in seconds.
struct SpeculationCosts {
  double step = 0;       // a target step without drafts (what one plain decoded token costs)
  double per_token = 0;  // the target's extra time per verified draft (one more row)
  double per_draft = 0;  // the proposer's time per drafted token (a drafting row's share of a pass)
};

// Expected tokens emitted by a verifying step with k drafts, each accepted with probability
// alpha given the earlier ones were: 1 + alpha + ... + alpha^k.
double expected_tokens_per_step(double alpha, int32_t k);

// The k in [1, max_k] with the most expected tokens per second, if it beats plain decoding by
// the factor (1 + margin); 0 if none does (or max_k < 1, or costs.step <= 0).
// n: the requests sampling in the step (n >= 1).
int32_t best_num_drafts(double alpha, int32_t max_k, const SpeculationCosts& costs, double margin,
                        int64_t n = 1);

struct DraftPacingConfig {
  double margin = 0.1;              // speculate only when >= 10% faster than plain decoding
  int32_t probe_interval = 8;       // while paused: one k = 1 probe after this many sampled steps,
  int32_t max_probe_interval = 64;  // the interval doubling after each probe, up to this
  // (a probe costs a draft pass that catches up the pause: at 4 concurrent requests on the demo
  // pair, probes every 8 steps cost ~5% of throughput where drafting does not pay)
  double decay = 0.8;  // weight of the evidence so far at each new verification
  // The evidence a request starts with (alpha 2/3: new requests draft until measured).
  double prior_accepted = 2;
  double prior_rejected = 1;
};

class DraftPacer {
 public:
  DraftPacer() : DraftPacer(DraftPacingConfig{}) {}
  explicit DraftPacer(const DraftPacingConfig& config);

  // After a verification of `drafted` drafts whose first `accepted` were accepted.
  void record_verification(int32_t drafted, int32_t accepted);
  // At a sampled step: how many drafts to propose for the next step (0: none), at most max_k.
  // nullopt costs (not measured yet): max_k. Counts the paused steps towards the next probe.
  int32_t next_num_drafts(int32_t max_k, const std::optional<SpeculationCosts>& costs,
                          int64_t num_sampling = 1);

  double acceptance() const;  // alpha
  bool paused() const { return paused_; }

 private:
  DraftPacingConfig config_;
  double accepted_ = 0;  // decayed counts
  double rejected_ = 0;
  bool paused_ = false;
  int32_t paused_steps_ = 0;    // since the last probe
  int32_t probe_interval_ = 0;  // the current interval while paused
};

// The runner's measured costs, shared by its requests (one engine step loop: not thread-safe).
// The target's step time is fitted as a + b * tokens over recent small steps (exponentially
// forgotten least squares), so b is the cost of one more row and a + b * n a plain step of n
// decodes; the proposer's time per drafted token is a decayed average.
class SpeculationCostMeter {
 public:
  // A target forward pass over `tokens` tokens that took `seconds`.
  void record_step(int64_t tokens, double seconds);
  // A proposer call that drafted up to `max_drafts` tokens for some request in `seconds`
  // (ignored when max_drafts < 1).
  void record_proposal(int32_t max_drafts, double seconds);
  // A model proposer's call of `seconds` with these passes: the price of its 1 + later_passes
  // draft rounds is the call's time, shared by its drafting rows, except that a first pass that
  // caught up a prompt or a pause's worth of tokens is priced as one of the later passes
  // (without any: the call is not recorded), since that catch-up is not what drafting costs.
  void record_proposal_passes(const ProposalPasses& passes, double seconds);
  // The costs around a plain step of `tokens` tokens; nullopt until enough was measured.
  std::optional<SpeculationCosts> costs(int64_t tokens) const;

 private:
  // Decayed sums of the fit: weight, x, y, xx, xy; the number of steps seen.
  double w_ = 0, x_ = 0, y_ = 0, xx_ = 0, xy_ = 0;
  int64_t num_steps_ = 0;
  double slope_ = 0;  // the last per-row cost the fit could tell apart
  double per_draft_ = 0;
  int64_t num_proposals_ = 0;
};

}  // namespace pagoda::runner
