// Beam search, the engine's side (design: docs/design/beam-search.md). The Scheduler runs every
// live beam of a request as its own sequence (a Request whose KV blocks are forked from its
// parent's, shared copy-on-write) in the ordinary batched steps; each beam samples greedily with
// logprobs = 2 x width, so the runner reports the 2 x width most likely next tokens of every beam
// (log_softmax of the raw logits). Once every live beam of a request has reported,
// select_beams() takes the next beams as transformers' BeamSearchScorer.process does, and
// BeamHypotheses keeps the finished ones and decides when to stop (early_stopping). This file is
// the pure part (no scheduler state), so it is unit-tested against the published definitions.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"
#include "pagoda/engine.h"
#include "step/ids.h"

namespace pagoda::engine {

using step::RequestId;
using step::TokenId;

// cumulative_logprob / length ** length_penalty; length = generated tokens, a final EOS
// included (>= 1).
double beam_score(double cumulative_logprob, int64_t length, float length_penalty);

// A finished hypothesis (a beam that ended with EOS / a stop token, or reached max_tokens).
struct BeamHypothesis {
  std::vector<TokenId> output_token_ids;
  double cumulative_logprob = 0;
  double score = 0;  // beam_score(cumulative_logprob, output_token_ids.size(), length_penalty)
  FinishReason finish_reason = FinishReason::kStop;
  std::optional<TokenId> stop_token_id;  // kStop: the last token
};

// One live beam's report of a step: its cumulative logprob so far and its top candidates
// (token, logprob), descending.
struct BeamCandidates {
  double cumulative_logprob = 0;
  std::span<const std::pair<int32_t, float>> top;
};

struct BeamChoice {
  size_t parent = 0;  // index into the candidates passed to select_beams
  TokenId token = 0;
  double cumulative_logprob = 0;
};

struct BeamStep {
  std::vector<BeamChoice> next;      // the new live beams (<= width), best first
  std::vector<BeamChoice> finished;  // stop-token continuations ranked among the first `width`
};

// transformers' BeamSearchScorer.process for one request: the 2 x width best continuations over
// every beam by cumulative logprob (ties: earlier beam, then earlier in its list), walked in
// order: a stop token (is_stop) ranked below `width` finishes a hypothesis (ranked at or past
// `width` it is dropped); any other token becomes a live beam until `width` are taken.
BeamStep select_beams(std::span<const BeamCandidates> beams, int32_t width,
                      const std::function<bool(TokenId)>& is_stop);

// transformers' BeamHypotheses: the `width` best finished hypotheses by score, and is_done().
class BeamHypotheses {
 public:
  BeamHypotheses(const BeamSearchParams& params, int32_t max_tokens)
      : params_(params), max_tokens_(max_tokens) {}

  void add(BeamHypothesis h);  // keeps the best `width` (a worse one than all of them is dropped)
  // Whether no live beam can still improve the result (with width hypotheses held):
  // early_stopping true: always; false: the best live beam's score if it ended now
  // (best_live_logprob / live_length ** length_penalty) is not above the worst hypothesis;
  // "never": the same with the best length it could reach (max_tokens when length_penalty > 0).
  bool is_done(double best_live_logprob, int64_t live_length) const;
  size_t size() const { return hyps_.size(); }
  // Best first (ties: earlier added first).
  std::vector<BeamHypothesis> sorted() const;

 private:
  BeamSearchParams params_;
  int32_t max_tokens_;
  std::vector<BeamHypothesis> hyps_;
};

// A beam-search request's state in the Scheduler, keyed by its first sequence's id (the root,
// which may itself be pruned later; the engine knows the request by that id).
struct BeamGroup {
  BeamGroup(RequestId root, const BeamSearchParams& p, int32_t num_results, int32_t max_tokens)
      : root_id(root), params(p), n(num_results), hyps(p, max_tokens) {}

  RequestId root_id;
  BeamSearchParams params;
  int32_t n;                    // hypotheses returned
  bool admitted = false;        // the root left the waiting queue (the group holds `width` slots)
  std::vector<RequestId> live;  // live beam sequences
  std::unordered_map<RequestId, double> cum;              // cumulative logprob per live beam
  std::unordered_map<RequestId, TokenLogprobs> reported;  // this step's reports so far
  BeamHypotheses hyps;
};

// The checks a beam-search request must pass (errors name the field): width in
// [1, kMaxBeamWidth], n <= width, a finite length_penalty, temperature 0 and no other sampling
// processor, no stop strings, min_tokens 0.
Status validate_beam_request(const GenerateRequest& request);

}  // namespace pagoda::engine
