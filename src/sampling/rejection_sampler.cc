// Draft verification by rejection sampling (see rejection_sampler.h).
#include "sampling/rejection_sampler.h"

namespace pagoda::sampling {

Status verify_drafts(Sampler& sampler, std::span<float> rows, size_t vocab,
                     std::span<const int32_t> drafts, const DraftHooks& hooks,
                     std::vector<TokenLogprobs>& out, std::span<const float> draft_probs) {
  if (rows.size() != (drafts.size() + 1) * vocab) {
    return internal_error("verify_drafts: {} logits for {} drafts of vocabulary {}", rows.size(),
                          drafts.size(), vocab);
  }
  if (!draft_probs.empty() && draft_probs.size() != drafts.size() * vocab) {
    return internal_error("verify_drafts: {} draft probabilities for {} drafts of vocabulary {}",
                          draft_probs.size(), drafts.size(), vocab);
  }
  for (size_t i = 0; i <= drafts.size(); ++i) {
    const std::span<float> row = rows.subspan(i * vocab, vocab);
    if (hooks.mask) PAGODA_RETURN_IF_ERROR(hooks.mask(row));
    const int32_t draft = i < drafts.size() ? drafts[i] : -1;
    TokenLogprobs r = draft >= 0 && !draft_probs.empty()
                          ? sampler.sample(row, draft, draft_probs.subspan(i * vocab, vocab))
                          : sampler.sample(row, draft);
    const int32_t token = r.token;
    out.push_back(std::move(r));
    if (hooks.accept) PAGODA_RETURN_IF_ERROR(hooks.accept(token));
    if (token != draft) break;  // the correction, or the bonus token after the last draft
  }
  return Status();
}

}  // namespace pagoda::sampling
