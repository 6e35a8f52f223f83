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

TokenLogprobs Sampler::sample(std::span<float> logits) {
  TokenLogprobs result;
  const size_t n = static_cast<size_t>(vocab_size_);
  // Logprobs are reported for the model's raw distribution (vLLM's default), before any
  // processing, so they do not depend on sampling settings.
  float raw_lse = 0;
  std::vector<float> raw;
  if (params_.logprobs >= 0) {
    raw.assign(logits.begin(), logits.begin() + static_cast<std::ptrdiff_t>(n));
    raw_lse = log_sum_exp(raw);
  }
  apply_penalties(logits);

  int32_t chosen = 0;
  const double u = uniform01(rng_);  // one draw per token, greedy or not
  if (params_.is_greedy()) {
    chosen = static_cast<int32_t>(
        std::max_element(logits.begin(), logits.begin() + static_cast<std::ptrdiff_t>(n)) -
        logits.begin());
  } else {
    const float inv_t = 1.0f / params_.temperature;
    candidates_.resize(n);
    std::iota(candidates_.begin(), candidates_.end(), 0);
    auto by_logit = [&logits](int32_t a, int32_t b) {
      const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
      return la > lb || (la == lb && a < b);
    };
    size_t keep = n;
    if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < n) {
      keep = static_cast<size_t>(params_.top_k);
      std::nth_element(candidates_.begin(),
                       candidates_.begin() + static_cast<std::ptrdiff_t>(keep) - 1,
                       candidates_.end(), by_logit);
    }
    std::sort(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(keep),
              by_logit);
    candidates_.resize(keep);
    // Softmax over the kept candidates at temperature.
    probs_.resize(keep);
    const float max = logits[static_cast<size_t>(candidates_[0])] * inv_t;
    double sum = 0;
    for (size_t i = 0; i < keep; ++i) {
      const double e =
          std::exp(static_cast<double>(logits[static_cast<size_t>(candidates_[i])] * inv_t - max));
      probs_[i] = static_cast<float>(e);
      sum += e;
    }
    for (float& p : probs_)
      p = static_cast<float>(p / sum);
    if (params_.top_p < 1.0f) {
      double cum = 0;
      size_t cut = keep;
      for (size_t i = 0; i < keep; ++i) {
        cum += probs_[i];
        if (cum >= params_.top_p) {
          cut = i + 1;
          break;
        }
      }
      keep = cut;
    }
    if (params_.min_p > 0.0f) {
      const float threshold = params_.min_p * probs_[0];
      size_t cut = 1;
      while (cut < keep && probs_[cut] >= threshold)
        ++cut;
      keep = cut;
    }
    double total = 0;
    for (size_t i = 0; i < keep; ++i)
      total += probs_[i];
    double r = u * total;
    chosen = candidates_[keep - 1];
    for (size_t i = 0; i < keep; ++i) {
      r -= probs_[i];
      if (r < 0) {
        chosen = candidates_[i];
        break;
      }
    }
  }
  result.token = chosen;
  if (params_.logprobs >= 0) {
    result.logprob = raw[static_cast<size_t>(chosen)] - raw_lse;
    const size_t k = std::min(static_cast<size_t>(params_.logprobs), n);
    if (k > 0) {
      std::vector<int32_t> idx(n);
      std::iota(idx.begin(), idx.end(), 0);
      std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(),
                        [&raw](int32_t a, int32_t b) {
                          const float ra = raw[static_cast<size_t>(a)],
                                      rb = raw[static_cast<size_t>(b)];
                          return ra > rb || (ra == rb && a < b);
                        });
      for (size_t i = 0; i < k; ++i) {
        result.top.emplace_back(idx[i], raw[static_cast<size_t>(idx[i])] - raw_lse);
      }
    }
  }
  accept(chosen);
  return result;
}

}  // namespace pagoda::sampling
