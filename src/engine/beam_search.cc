// Beam selection and finished hypotheses (see beam_search.h).
#include "engine/beam_search.h"

#include <algorithm>
#include <cmath>

namespace pagoda::engine {

double beam_score(double cumulative_logprob, int64_t length, float length_penalty) {
  const double len = static_cast<double>(std::max<int64_t>(length, 1));
  return cumulative_logprob / std::pow(len, static_cast<double>(length_penalty));
}

BeamStep select_beams(std::span<const BeamCandidates> beams, int32_t width,
                      const std::function<bool(TokenId)>& is_stop) {
  struct Cand {
    size_t parent;
    size_t rank_in_beam;
    TokenId token;
    double score;
  };
  std::vector<Cand> all;
  for (size_t b = 0; b < beams.size(); ++b) {
    for (size_t i = 0; i < beams[b].top.size(); ++i) {
      const auto& [token, logprob] = beams[b].top[i];
      all.push_back(Cand{b, i, token, beams[b].cumulative_logprob + static_cast<double>(logprob)});
    }
  }
  const size_t keep = std::min(all.size(), static_cast<size_t>(2 * width));
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(keep), all.end(),
                    [](const Cand& a, const Cand& b) {
                      if (a.score != b.score) return a.score > b.score;
                      if (a.parent != b.parent) return a.parent < b.parent;
                      return a.rank_in_beam < b.rank_in_beam;
                    });
  BeamStep step;
  for (size_t rank = 0; rank < keep; ++rank) {
    const Cand& c = all[rank];
    const BeamChoice choice{c.parent, c.token, c.score};
    if (is_stop(c.token)) {
      if (rank < static_cast<size_t>(width)) step.finished.push_back(choice);
      continue;
    }
    step.next.push_back(choice);
    if (step.next.size() == static_cast<size_t>(width)) break;
  }
  return step;
}

void BeamHypotheses::add(BeamHypothesis h) {
  const size_t width = static_cast<size_t>(params_.beam_width);
  h.score = beam_score(h.cumulative_logprob, static_cast<int64_t>(h.output_token_ids.size()),
                       params_.length_penalty);
  if (hyps_.size() >= width) {
    const auto worst = std::min_element(
        hyps_.begin(), hyps_.end(),
        [](const BeamHypothesis& a, const BeamHypothesis& b) { return a.score < b.score; });
    if (!(h.score > worst->score)) return;
    hyps_.erase(worst);
  }
  hyps_.push_back(std::move(h));
}

bool BeamHypotheses::is_done(double best_live_logprob, int64_t live_length) const {
  if (hyps_.size() < static_cast<size_t>(params_.beam_width)) return false;
  using ES = BeamSearchParams::EarlyStopping;
  if (params_.early_stopping == ES::kTrue) return true;
  int64_t length = live_length;
  if (params_.early_stopping == ES::kNever && params_.length_penalty > 0) length = max_tokens_;
  const double highest = beam_score(best_live_logprob, length, params_.length_penalty);
  double worst = hyps_.front().score;
  for (const BeamHypothesis& h : hyps_)
    worst = std::min(worst, h.score);
  return worst >= highest;
}

std::vector<BeamHypothesis> BeamHypotheses::sorted() const {
  std::vector<BeamHypothesis> out = hyps_;
  std::stable_sort(out.begin(), out.end(), [](const BeamHypothesis& a, const BeamHypothesis& b) {
    return a.score > b.score;
  });
  return out;
}

Status validate_beam_request(const GenerateRequest& r) {
  const BeamSearchParams& p = *r.beam_search;
  if (p.beam_width < 1 || p.beam_width > BeamSearchParams::kMaxBeamWidth) {
    return invalid_argument("beam_width (best_of with use_beam_search) must be in [1, {}], got {}",
                            BeamSearchParams::kMaxBeamWidth, p.beam_width);
  }
  if (r.n < 1 || r.n > p.beam_width) {
    return invalid_argument("n must be in [1, beam_width={}] with beam search, got {}",
                            p.beam_width, r.n);
  }
  if (!std::isfinite(p.length_penalty) || std::fabs(p.length_penalty) > 100.0f) {
    return invalid_argument("length_penalty must be finite and in [-100, 100], got {}",
                            p.length_penalty);
  }
  const SamplingParams& s = r.sampling;
  const auto refuse = [](const char* field) {
    return invalid_argument("{} is not supported with beam search", field);
  };
  if (s.temperature != 0.0f) return refuse("temperature other than 0");
  if (s.top_k > 0) return refuse("top_k");
  if (s.top_p != 1.0f) return refuse("top_p");
  if (s.min_p != 0.0f) return refuse("min_p");
  if (s.repetition_penalty != 1.0f) return refuse("repetition_penalty");
  if (s.presence_penalty != 0.0f) return refuse("presence_penalty");
  if (s.frequency_penalty != 0.0f) return refuse("frequency_penalty");
  if (!s.logit_bias.empty()) return refuse("logit_bias");
  if (s.logprobs >= 0) return refuse("logprobs");
  if (s.prompt_logprobs >= 0) return refuse("prompt_logprobs");
  if (!s.structured.empty()) return refuse("structured outputs (response_format / guided_*)");
  if (s.pooling != PoolingType::kNone) return refuse("pooling");
  if (!r.stop.stop_strings.empty()) return refuse("stop");
  if (r.stop.min_tokens != 0) return refuse("min_tokens");
  return Status();
}

}  // namespace pagoda::engine
