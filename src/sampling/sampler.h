// Sampler: one request's logits processors and token choice, in vLLM's order: logit bias →
// penalties (repetition over prompt+output, presence/frequency over output) → greedy, or
// temperature → top-k → top-p → min-p → draw. Each request owns its RNG (seeded or random), so
// its tokens do not depend on what else is in the batch.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "pagoda/sampling_params.h"

namespace pagoda::sampling {

// Checks ranges (temperature >= 0 and finite, top_p in (0, 1], ...); names the field.
Status validate(const SamplingParams& params, int32_t vocab_size);

class Sampler {
 public:
  // precondition: validate(params, vocab_size).ok()
  Sampler(const SamplingParams& params, int32_t vocab_size, std::span<const int32_t> prompt);

  // Records a generated token (for penalties).
  void accept(int32_t token);

  // Rebuilds the state after `outputs` were generated earlier (e.g. after preemption): accepts
  // each and advances the RNG by one draw per token, so a seeded request continues the same
  // random stream whether or not it was interrupted.
  void restore(std::span<const int32_t> outputs);

  // The seed of sample `index` of a request seeded with `seed` (n > 1 forks): index 0 keeps
  // the request's seed, others get independent derived streams.
  static uint64_t derive_seed(uint64_t seed, int32_t index);

  // Chooses the next token from raw logits[vocab_size] and records it (as accept() does);
  // consumes exactly one RNG draw (greedy too). `logits` is used as scratch. The result has the
  // token, its logprob under the model's distribution and, when params.logprobs = k > 0, the k
  // most likely tokens.
  //
  // With `draft` >= 0 (speculative decoding, a proposed token): greedy chooses exactly as
  // without; sampling applies the rejection rule for a point-mass proposal with the same single
  // uniform u over the final distribution p: u < p(draft) accepts the draft, otherwise
  // u' = (u - p(draft)) / (1 - p(draft)) draws from p without the draft (norm(max(0, p - q))).
  // The token is then distributed exactly as p; it equals `draft` iff the draft is accepted.
  TokenLogprobs sample(std::span<float> logits, int32_t draft = -1);

  // Speculative decoding with a full proposal distribution q (a draft model's, after the same
  // processors): sampling accepts `draft` with probability min(1, p(draft) / q(draft)), else
  // draws from norm(max(0, p - q)), with one uniform u as above (u < a accepts; otherwise
  // u' = (u - a) / (1 - a) walks the residual), so the token is distributed exactly as p.
  // Greedy ignores q. draft_probs: [vocab] q, with q(draft) > 0; empty: the point mass above.
  TokenLogprobs sample(std::span<float> logits, int32_t draft, std::span<const float> draft_probs);

  // Draws a token as sample() does and writes the distribution it was drawn from to
  // probs[vocab] (after every processor: zero outside the kept tokens; greedy: a point mass).
  // What a draft model's proposals need (q for verification).
  TokenLogprobs sample_with_probs(std::span<float> logits, std::vector<float>& probs);

  // Replaces the RNG stream (a draft model's copy of the request's sampler draws from its own).
  void reseed(uint64_t seed) { rng_.seed(seed); }

 private:
  void apply_penalties(std::span<float> logits) const;
  TokenLogprobs sample_impl(std::span<float> logits, int32_t draft,
                            std::span<const float> draft_probs, std::vector<float>* probs_out);

  SamplingParams params_;
  int32_t vocab_size_;
  std::mt19937_64 rng_;
  std::unordered_map<int32_t, int32_t> output_counts_;
  std::vector<uint8_t> seen_;  // prompt or output token seen (repetition penalty), [vocab]
  // Moves the first k of candidates_[0, count) in sampling order (descending logit, ties by
  // id; `before` compares) to the front, k the shortest prefix whose probability mass reaches
  // `target` (strict: exceeds it), and returns k (count if the mass never does).
  template <typename Less>
  size_t select_prefix(size_t count, double target, bool strict, const Less& before);

  std::vector<int32_t> candidates_;  // scratch
  std::vector<float> probs_;         // scratch, by token id
};

// log-softmax helpers for logprobs: fills `top` with the k largest entries of logits.
float log_sum_exp(std::span<const float> logits);

// `token`'s logprob under softmax(logits) and the `top_k` most likely tokens (descending, ties by
// id), from raw logits (no processing): what Sampler::sample reports, and the prompt logprobs.
// precondition: 0 <= token < logits.size(), top_k >= 0.
TokenLogprobs token_logprobs(std::span<const float> logits, int32_t token, int32_t top_k);

}  // namespace pagoda::sampling
