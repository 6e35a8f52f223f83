// Speculative decoding's verification: given the target model's logits at the newest known
// token and after each proposed (draft) token, emit the accepted drafts and one more token, so
// that the emitted tokens are distributed exactly as sampling them one at a time from the
// target would make them (Leviathan et al. 2023, "Fast Inference from Transformers via
// Speculative Decoding": acceptance min(1, p/q), p(draft) for a point-mass proposal). Every
// position's distribution is the request's own: logits processors (bias, penalties over the tokens
// emitted so far, the constraint mask at that point) and temperature / top-k / top-p / min-p,
// through the request's Sampler, which sees and records the accepted tokens only.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "base/status.h"
#include "sampling/sampler.h"

namespace pagoda::sampling {

struct DraftHooks {
  // Masks row i (before the sampler's processing), in the state after the tokens emitted so
  // far (null: no mask).
  std::function<Status(std::span<float> row)> mask;
  // Called with every emitted token, in order, before the next row is masked (null: none).
  std::function<Status(int32_t token)> accept;
};

// rows: [drafts.size() + 1][vocab] logits (scratch: overwritten); row i holds the logits after
// the newest known token and drafts[0, i). Appends 1..drafts.size() + 1 tokens to `out`: the
// accepted prefix of `drafts`, then the correction (first rejection) or bonus token (all
// accepted). Each emitted token consumes one RNG draw of the sampler (as Sampler::sample does).
// draft_probs: empty (each draft a point-mass proposal, e.g. prompt lookup), or
// [drafts.size()][vocab] the distributions the drafts were drawn from (a draft model's q, after
// the same processors): acceptance min(1, p/q), residual norm(max(0, p - q)).
Status verify_drafts(Sampler& sampler, std::span<float> rows, size_t vocab,
                     std::span<const int32_t> drafts, const DraftHooks& hooks,
                     std::vector<TokenLogprobs>& out, std::span<const float> draft_probs = {});

}  // namespace pagoda::sampling
