#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace pagoda::sampling {
namespace {

bool finite(float v) {
  return std::isfinite(v);
}

// Uniform double in [0, 1) from 53 random bits (portable across standard libraries).
double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

}  // namespace

Status validate(const SamplingParams& p, int32_t vocab_size) {
  if (!finite(p.temperature) || p.temperature < 0 || p.temperature > 100) {
    return invalid_argument("temperature must be a number in [0, 100], got {}", p.temperature);
  }
  if (p.top_k < -1 || p.top_k > vocab_size) {
    return invalid_argument("top_k must be -1, 0 or in [1, {}], got {}", vocab_size, p.top_k);
  }
  if (!finite(p.top_p) || p.top_p <= 0 || p.top_p > 1) {
    return invalid_argument("top_p must be in (0, 1], got {}", p.top_p);
  }
  if (!finite(p.min_p) || p.min_p < 0 || p.min_p > 1) {
    return invalid_argument("min_p must be in [0, 1], got {}", p.min_p);
  }
  if (!finite(p.repetition_penalty) || p.repetition_penalty <= 0 || p.repetition_penalty > 100) {
    return invalid_argument("repetition_penalty must be in (0, 100], got {}", p.repetition_penalty);
  }
  if (!finite(p.presence_penalty) || std::fabs(p.presence_penalty) > 2) {
    return invalid_argument("presence_penalty must be in [-2, 2], got {}", p.presence_penalty);
  }
  if (!finite(p.frequency_penalty) || std::fabs(p.frequency_penalty) > 2) {
    return invalid_argument("frequency_penalty must be in [-2, 2], got {}", p.frequency_penalty);
  }
  for (const auto& [token, bias] : p.logit_bias) {
    if (token < 0 || token >= vocab_size) {
      return invalid_argument("logit_bias token id {} is outside the vocabulary [0, {})", token,
                              vocab_size);
    }
    if (!finite(bias) || std::fabs(bias) > 100) {
      return invalid_argument("logit_bias for token {} must be in [-100, 100], got {}", token,
                              bias);
    }
  }
  if (p.logprobs > 20) return invalid_argument("logprobs must be at most 20, got {}", p.logprobs);
  if (p.prompt_logprobs > 20) {
    return invalid_argument("prompt_logprobs must be at most 20, got {}", p.prompt_logprobs);
  }
  return Status();
}

float log_sum_exp(std::span<const float> logits) {
  float max = -std::numeric_limits<float>::infinity();
  for (float v : logits)
    max = std::max(max, v);
  if (!std::isfinite(max)) return max;
  double sum = 0;
  for (float v : logits)
    sum += std::exp(static_cast<double>(v - max));
  return max + static_cast<float>(std::log(sum));
}

TokenLogprobs token_logprobs(std::span<const float> logits, int32_t token, int32_t top_k) {
  TokenLogprobs result;
  result.token = token;
  const float lse = log_sum_exp(logits);
  const float own = logits[static_cast<size_t>(token)];
  result.logprob = own - lse;
  int32_t above = 0;
  for (const float v : logits)
    above += v > own ? 1 : 0;
  result.rank = 1 + above;
  const size_t n = logits.size();
  const size_t k = std::min(static_cast<size_t>(std::max(top_k, 0)), n);
  if (k == 0) return result;
  std::vector<int32_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(),
                    [&logits](int32_t a, int32_t b) {
                      const float ra = logits[static_cast<size_t>(a)],
                                  rb = logits[static_cast<size_t>(b)];
                      return ra > rb || (ra == rb && a < b);
                    });
  result.top.reserve(k);
  for (size_t i = 0; i < k; ++i)
    result.top.emplace_back(idx[i], logits[static_cast<size_t>(idx[i])] - lse);
  return result;
}

Sampler::Sampler(const SamplingParams& params, int32_t vocab_size, std::span<const int32_t> prompt)
    : params_(params), vocab_size_(vocab_size) {
  if (params_.seed) {
    rng_.seed(*params_.seed);
  } else {
    std::random_device rd;
    rng_.seed((static_cast<uint64_t>(rd()) << 32) ^ rd());
  }
  if (params_.repetition_penalty != 1.0f) {
    seen_.assign(static_cast<size_t>(vocab_size), 0);
    for (int32_t t : prompt) {
      if (t >= 0 && t < vocab_size) seen_[static_cast<size_t>(t)] = 1;
    }
  }
}

void Sampler::accept(int32_t token) {
  if (token < 0 || token >= vocab_size_) return;
  if (params_.presence_penalty != 0 || params_.frequency_penalty != 0) ++output_counts_[token];
  if (!seen_.empty()) seen_[static_cast<size_t>(token)] = 1;
}

void Sampler::restore(std::span<const int32_t> outputs) {
  for (int32_t t : outputs) {
    accept(t);
    (void)rng_();
  }
}

uint64_t Sampler::derive_seed(uint64_t seed, int32_t index) {
  if (index == 0) return seed;
  // splitmix64 of (seed, index)
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * (static_cast<uint64_t>(index) + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void Sampler::apply_penalties(std::span<float> logits) const {
  for (const auto& [token, bias] : params_.logit_bias)
    logits[static_cast<size_t>(token)] += bias;
  if (!seen_.empty()) {
    const float p = params_.repetition_penalty;
    for (size_t i = 0; i < seen_.size(); ++i) {
      if (seen_[i]) logits[i] = logits[i] > 0 ? logits[i] / p : logits[i] * p;
    }
  }
  for (const auto& [token, count] : output_counts_) {
    logits[static_cast<size_t>(token)] -=
        params_.presence_penalty + params_.frequency_penalty * static_cast<float>(count);
  }
}

template <typename Less>
size_t Sampler::select_prefix(size_t count, double target, bool strict, const Less& before) {
  // Invariant: candidates_[0, lo) are the top lo of candidates_[0, count) (mass `acc`), and
  // candidates_[lo, hi) all rank before candidates_[hi, count); the answer is in (lo, hi].
  const auto reached = [&](double mass) { return strict ? mass > target : mass >= target; };
  const auto at = [&](size_t i) { return candidates_.begin() + static_cast<std::ptrdiff_t>(i); };
  size_t lo = 0, hi = count;
  double acc = 0;
  while (hi - lo > 64) {
    const size_t mid = lo + (hi - lo) / 2;
    std::nth_element(at(lo), at(mid), at(hi), before);
    double mass = 0;
    for (size_t i = lo; i < mid; ++i)
      mass += probs_[static_cast<size_t>(candidates_[i])];
    if (reached(acc + mass)) {
      hi = mid;
    } else {
      acc += mass;
      lo = mid;
    }
  }
  std::sort(at(lo), at(hi), before);
  for (size_t i = lo; i < hi; ++i) {
    acc += probs_[static_cast<size_t>(candidates_[i])];
    if (reached(acc)) return i + 1;
  }
  return hi;  // rounding: the mass ran out just short of the target
}

TokenLogprobs Sampler::sample(std::span<float> logits, int32_t draft) {
  return sample_impl(logits, draft, {}, nullptr);
}

TokenLogprobs Sampler::sample(std::span<float> logits, int32_t draft,
                              std::span<const float> draft_probs) {
  return sample_impl(logits, draft, draft_probs, nullptr);
}

TokenLogprobs Sampler::sample_with_probs(std::span<float> logits, std::vector<float>& probs) {
  return sample_impl(logits, -1, {}, &probs);
}

TokenLogprobs Sampler::sample_impl(std::span<float> logits, int32_t draft,
                                   std::span<const float> draft_probs,
                                   std::vector<float>* probs_out) {
  TokenLogprobs result;
  const size_t n = static_cast<size_t>(vocab_size_);
  // Logprobs are reported for the model's raw distribution (vLLM's default), before any
  // processing, so they do not depend on sampling settings.
  std::vector<float> raw;
  if (params_.logprobs >= 0)
    raw.assign(logits.begin(), logits.begin() + static_cast<std::ptrdiff_t>(n));
  apply_penalties(logits);

  int32_t chosen = 0;
  const double u = uniform01(rng_);  // one draw per token, greedy or not
  if (params_.is_greedy()) {
    chosen = static_cast<int32_t>(
        std::max_element(logits.begin(), logits.begin() + static_cast<std::ptrdiff_t>(n)) -
        logits.begin());
    if (probs_out != nullptr) {
      probs_out->assign(n, 0.0f);
      (*probs_out)[static_cast<size_t>(chosen)] = 1.0f;
    }
  } else {
    const float inv_t = 1.0f / params_.temperature;
    auto by_logit = [&logits](int32_t a, int32_t b) {
      const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
      return la > lb || (la == lb && a < b);
    };
    // Candidates: every token with a finite logit (a grammar mask leaves few), then top-k.
    candidates_.clear();
    for (size_t t = 0; t < n; ++t) {
      if (logits[t] != -std::numeric_limits<float>::infinity()) {
        candidates_.push_back(static_cast<int32_t>(t));
      }
    }
    if (candidates_.empty()) {
      // Everything masked: the first token (never happens under a mask, which keeps EOS).
      candidates_.push_back(0);
    }
    size_t keep = candidates_.size();
    if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < keep) {
      keep = static_cast<size_t>(params_.top_k);
      std::nth_element(candidates_.begin(),
                       candidates_.begin() + static_cast<std::ptrdiff_t>(keep) - 1,
                       candidates_.end(), by_logit);
      candidates_.resize(keep);
    }
    // Softmax over the kept candidates at temperature (probs_ indexed by token id). The order
    // the walk below follows is descending logit (ties: lower id first), as if the candidates
    // were sorted; select_prefix finds a cumulative-mass position in that order by partitioning
    // (linear expected time) instead of sorting the whole vocabulary per token.
    probs_.resize(n);
    const int32_t best = *std::min_element(candidates_.begin(), candidates_.end(), by_logit);
    const float max = logits[static_cast<size_t>(best)] * inv_t;
    double sum = 0;
    for (const int32_t c : candidates_) {
      const double e = std::exp(static_cast<double>(logits[static_cast<size_t>(c)] * inv_t - max));
      probs_[static_cast<size_t>(c)] = static_cast<float>(e);
      sum += e;
    }
    for (const int32_t c : candidates_)
      probs_[static_cast<size_t>(c)] = static_cast<float>(probs_[static_cast<size_t>(c)] / sum);
    if (params_.top_p < 1.0f) {
      // The shortest prefix whose mass reaches top_p.
      keep = select_prefix(keep, params_.top_p, /*strict=*/false, by_logit);
    }
    if (params_.min_p > 0.0f) {
      // Tokens at least min_p times as likely as the best: a prefix of the order, moved to the
      // front.
      const float threshold = params_.min_p * probs_[static_cast<size_t>(best)];
      const auto end = std::partition(
          candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(keep),
          [&](int32_t c) { return probs_[static_cast<size_t>(c)] >= threshold; });
      keep = std::max<size_t>(1, static_cast<size_t>(end - candidates_.begin()));
    }
    double total = 0;
    for (size_t i = 0; i < keep; ++i)
      total += probs_[static_cast<size_t>(candidates_[i])];
    double target = u * total;
    const auto kept_end = candidates_.begin() + static_cast<std::ptrdiff_t>(keep);
    const auto draft_it = draft >= 0 ? std::find(candidates_.begin(), kept_end, draft) : kept_end;
    if (probs_out != nullptr) {
      probs_out->assign(n, 0.0f);
      for (size_t i = 0; i < keep; ++i) {
        const auto c = static_cast<size_t>(candidates_[i]);
        (*probs_out)[c] = static_cast<float>(probs_[c] / total);
      }
    }
    if (draft >= 0 && !draft_probs.empty()) {
      // Full q: a = min(1, p(draft) / q(draft)); the residual max(0, p - q) over the kept tokens
      // (p is zero elsewhere), walked in candidate order.
      const double p_draft =
          draft_it != kept_end ? probs_[static_cast<size_t>(draft)] / total : 0.0;
      const double q_draft = draft_probs[static_cast<size_t>(draft)];
      const double a = q_draft > 0 ? std::min(1.0, p_draft / q_draft) : 0.0;
      if (u < a) {
        chosen = draft;
      } else {
        const double u2 = (u - a) / (1 - a);
        double residual = 0;
        for (size_t i = 0; i < keep; ++i) {
          const auto c = static_cast<size_t>(candidates_[i]);
          residual += std::max(0.0, probs_[c] / total - static_cast<double>(draft_probs[c]));
        }
        if (residual > 0) {
          const double walk = u2 * residual;
          double acc = 0;
          chosen = candidates_[keep - 1];
          for (size_t i = 0; i < keep; ++i) {
            const auto c = static_cast<size_t>(candidates_[i]);
            const double r = std::max(0.0, probs_[c] / total - static_cast<double>(draft_probs[c]));
            if (r <= 0) continue;
            chosen = candidates_[i];
            acc += r;
            if (walk < acc) break;
          }
        } else {
          // p <= q everywhere up to rounding (then a = 1 but for rounding): draw from p.
          const size_t pos = select_prefix(keep, u2 * total, /*strict=*/true, by_logit);
          chosen = candidates_[pos - 1];
        }
      }
    } else if (draft_it != kept_end) {
      // The draft first in the walk: accepted with probability p(draft); else the rest of the
      // walk (the draft removed) is a draw from p without the draft, renormalised.
      const double p_draft = probs_[static_cast<size_t>(draft)];
      if (target < p_draft || keep == 1) {
        chosen = draft;
      } else {
        std::iter_swap(draft_it, kept_end - 1);
        target -= p_draft;
        const size_t pos = select_prefix(keep - 1, target, /*strict=*/true, by_logit);
        chosen = candidates_[pos - 1];
      }
    } else {
      const size_t pos = select_prefix(keep, target, /*strict=*/true, by_logit);
      chosen = candidates_[pos - 1];
    }
  }
  if (params_.logprobs >= 0) {
    result = token_logprobs(raw, chosen, params_.logprobs);
  } else {
    result.token = chosen;
  }
  accept(chosen);
  return result;
}

}  // namespace pagoda::sampling
