// Speculative verification (sampling/rejection_sampler.h) against an independent model of the
// target distribution: a tiny "model" (logits as a function of the context) with temperature,
// top-p, min-p / top-k, a presence penalty (the second position depends on the first token) and
// a grammar-like mask that depends on the accepted tokens. Over many seeded runs, the joint
// distribution of the first two emitted tokens must equal the target's (chi-square), whatever the
// drafts are; greedy verification must equal argmax decoding token for token.
#include "sampling/rejection_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <vector>

namespace pagoda::sampling {
namespace {

constexpr int32_t kVocab = 6;
constexpr float kMasked = -std::numeric_limits<float>::infinity();

// The target model: next-token logits after `context`.
std::vector<float> model_logits(const std::vector<int32_t>& context) {
  const int32_t last = context.empty() ? 0 : context.back();
  std::vector<float> l(kVocab);
  for (int32_t t = 0; t < kVocab; ++t)
    l[t] = 0.4f * static_cast<float>(t % 3) + 0.6f * static_cast<float>((t * 3 + last * 5) % 4);
  return l;
}

// The "grammar": token 5 never; token 4 never right after token 2.
bool allowed(const std::vector<int32_t>& context, int32_t t) {
  if (t == 5) return false;
  return !(t == 4 && !context.empty() && context.back() == 2);
}

// Independent oracle of the sampler's distribution: mask, presence penalty over `outputs`,
// temperature softmax, top-k, top-p (shortest prefix reaching the mass), min-p, renormalise.
std::vector<double> target(const std::vector<int32_t>& context, const std::vector<int32_t>& outputs,
                           const SamplingParams& p) {
  std::vector<double> logit(kVocab);
  for (int32_t t = 0; t < kVocab; ++t) {
    double v = model_logits(context)[t];
    if (!allowed(context, t)) v = -INFINITY;
    if (std::find(outputs.begin(), outputs.end(), t) != outputs.end()) v -= p.presence_penalty;
    logit[t] = v;
  }
  std::vector<int32_t> order(kVocab);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return logit[a] > logit[b]; });
  size_t keep = 0;
  while (keep < order.size() && std::isfinite(logit[order[keep]]))
    ++keep;
  if (p.top_k > 0) keep = std::min<size_t>(keep, static_cast<size_t>(p.top_k));
  std::vector<double> prob(kVocab, 0.0);
  double sum = 0;
  for (size_t i = 0; i < keep; ++i)
    sum += std::exp((logit[order[i]] - logit[order[0]]) / p.temperature);
  for (size_t i = 0; i < keep; ++i)
    prob[order[i]] = std::exp((logit[order[i]] - logit[order[0]]) / p.temperature) / sum;
  double acc = 0;
  size_t top_p_keep = keep;
  for (size_t i = 0; i < keep; ++i) {
    acc += prob[order[i]];
    if (acc >= p.top_p) {
      top_p_keep = i + 1;
      break;
    }
  }
  keep = top_p_keep;
  const double threshold = p.min_p * prob[order[0]];
  size_t min_p_keep = 0;
  while (min_p_keep < keep && prob[order[min_p_keep]] >= threshold)
    ++min_p_keep;
  keep = std::max<size_t>(1, min_p_keep);
  std::vector<double> out(kVocab, 0.0);
  double total = 0;
  for (size_t i = 0; i < keep; ++i)
    total += prob[order[i]];
  for (size_t i = 0; i < keep; ++i)
    out[order[i]] = prob[order[i]] / total;
  return out;
}

DraftHooks mask_hooks(std::vector<int32_t>& context) {
  DraftHooks hooks;
  hooks.mask = [&context](std::span<float> row) {
    for (int32_t t = 0; t < kVocab; ++t)
      if (!allowed(context, t)) row[t] = kMasked;
    return Status();
  };
  hooks.accept = [&context](int32_t token) {
    context.push_back(token);
    return Status();
  };
  return hooks;
}

// The target's logits rows that verify `drafts` after `prompt`: one per draft plus the bonus row.
std::vector<float> verification_rows(const std::vector<int32_t>& prompt,
                                     const std::vector<int32_t>& drafts) {
  std::vector<float> rows;
  std::vector<int32_t> context = prompt;
  for (size_t i = 0; i <= drafts.size(); ++i) {
    const std::vector<float> row = model_logits(context);
    rows.insert(rows.end(), row.begin(), row.end());
    if (i < drafts.size()) context.push_back(drafts[i]);
  }
  return rows;
}

// Continues `context` (the prompt plus what verification emitted) one masked token at a time
// until two tokens follow the prompt; returns those two.
std::pair<int32_t, int32_t> first_two_tokens(Sampler& sampler, size_t prompt_size,
                                             std::vector<int32_t>& context) {
  while (context.size() < prompt_size + 2) {
    std::vector<float> row = model_logits(context);
    for (int32_t t = 0; t < kVocab; ++t)
      if (!allowed(context, t)) row[t] = kMasked;
    context.push_back(sampler.sample(row).token);
  }
  return {context[prompt_size], context[prompt_size + 1]};
}

// The first two tokens of one seeded run that verifies `drafts` (continued one token at a time
// when fewer than two were emitted).
std::pair<int32_t, int32_t> run_once(const SamplingParams& params,
                                     const std::vector<int32_t>& prompt,
                                     const std::vector<int32_t>& drafts, int64_t& accepted) {
  Sampler sampler(params, kVocab, prompt);
  std::vector<int32_t> context = prompt;
  std::vector<float> rows = verification_rows(prompt, drafts);
  std::vector<TokenLogprobs> out;
  EXPECT_TRUE(verify_drafts(sampler, rows, kVocab, drafts, mask_hooks(context), out).ok());
  accepted += static_cast<int64_t>(out.size()) - 1;
  return first_two_tokens(sampler, prompt.size(), context);
}

// Upper 0.1% point of chi-square with `df` degrees of freedom (Wilson-Hilferty).
double chi2_critical(int df) {
  const double z = 3.090;
  const double a = 2.0 / (9.0 * df);
  return df * std::pow(1 - a + z * std::sqrt(a), 3);
}

constexpr int64_t kRuns = 40000;
const std::vector<int32_t> kPrompt = {3, 1};

// One seeded run (run i of kRuns, params seeded for it): the first two tokens after kPrompt; adds
// the drafts it accepted to `accepted`.
using SeededRun = std::function<std::pair<int32_t, int32_t>(const SamplingParams& params, int64_t i,
                                                            int64_t& accepted)>;

// The first two tokens of kRuns seeded runs follow the target's joint distribution (chi-square
// at the 0.1% level), and the drafts were put to the test: some accepted, fewer than all
// `num_drafts` of every run.
void expect_two_token_target_distribution(const SamplingParams& base, size_t num_drafts,
                                          const SeededRun& run) {
  const std::vector<int32_t>& prompt = kPrompt;
  std::map<std::pair<int32_t, int32_t>, int64_t> counts;
  int64_t accepted = 0;
  for (int64_t i = 0; i < kRuns; ++i) {
    SamplingParams p = base;
    p.seed = static_cast<uint64_t>(i) * 7919 + 17;
    ++counts[run(p, i, accepted)];
  }
  double chi2 = 0;
  int cells = 0;
  const std::vector<double> p1 = target(prompt, {}, base);
  for (int32_t a = 0; a < kVocab; ++a) {
    std::vector<int32_t> ctx = prompt;
    ctx.push_back(a);
    const std::vector<double> p2 = target(ctx, {a}, base);
    for (int32_t b = 0; b < kVocab; ++b) {
      const double expected = p1[a] * p2[b] * kRuns;
      const int64_t seen = counts[{a, b}];
      if (expected == 0) {
        EXPECT_EQ(seen, 0) << "tokens (" << a << ", " << b << ") are outside the target's support";
        continue;
      }
      chi2 += (seen - expected) * (seen - expected) / expected;
      ++cells;
    }
  }
  ASSERT_GT(cells, 4);
  EXPECT_LT(chi2, chi2_critical(cells - 1)) << "cells " << cells;
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, kRuns * static_cast<int64_t>(num_drafts));
}

void expect_target_distribution(const SamplingParams& base, const std::vector<int32_t>& drafts) {
  expect_two_token_target_distribution(base, drafts.size(),
                                       [&](const SamplingParams& p, int64_t, int64_t& accepted) {
                                         return run_once(p, kPrompt, drafts, accepted);
                                       });
}

TEST(RejectionSampler, TopPMaskAndPenaltyKeepTheTargetDistribution) {
  SamplingParams p;
  p.temperature = 0.9f;
  p.top_p = 0.85f;
  p.presence_penalty = 0.7f;
  // The likeliest first token, then a token the mask forbids (never accepted); then the
  // least likely token in the support, then the likeliest after it.
  const std::vector<double> p1 = target({3, 1}, {}, p);
  const auto best = static_cast<int32_t>(std::max_element(p1.begin(), p1.end()) - p1.begin());
  expect_target_distribution(p, {best, 5});
  int32_t rare = best;
  for (int32_t t = 0; t < kVocab; ++t)
    if (p1[t] > 0 && p1[t] < p1[rare]) rare = t;
  const std::vector<double> p2 = target({3, 1, rare}, {rare}, p);
  const auto next = static_cast<int32_t>(std::max_element(p2.begin(), p2.end()) - p2.begin());
  expect_target_distribution(p, {rare, next});
}

TEST(RejectionSampler, TopKAndMinPKeepTheTargetDistribution) {
  SamplingParams p;
  p.temperature = 1.3f;
  p.top_k = 4;
  p.min_p = 0.15f;
  p.presence_penalty = 0.5f;
  expect_target_distribution(p, {2, 1});
}

// A draft model unlike the target: its own logits, the same processors (mask, penalty,
// temperature, top-k/p, min-p) through a copy of the request's sampler with its own RNG.
std::vector<float> draft_logits(const std::vector<int32_t>& context) {
  const int32_t last = context.empty() ? 0 : context.back();
  std::vector<float> l(kVocab);
  for (int32_t t = 0; t < kVocab; ++t)
    l[t] = 0.9f * static_cast<float>((t + 2 * last) % 5) - 0.3f * static_cast<float>(t % 2);
  return l;
}

// One seeded run of a draft-model proposer: `num_drafts` drafts drawn from q (the draft's
// processed distribution, recorded for verification), then verification with the full q. Returns
// the first two emitted tokens.
std::pair<int32_t, int32_t> run_full_q_once(const SamplingParams& params,
                                            const std::vector<int32_t>& prompt, int num_drafts,
                                            uint64_t draft_seed, int64_t& accepted) {
  Sampler sampler(params, kVocab, prompt);
  Sampler proposer = sampler;
  proposer.reseed(draft_seed);
  std::vector<int32_t> drafts, dctx = prompt;
  std::vector<float> q, probs;
  for (int i = 0; i < num_drafts; ++i) {
    std::vector<float> row = draft_logits(dctx);
    for (int32_t t = 0; t < kVocab; ++t)
      if (!allowed(dctx, t)) row[t] = kMasked;
    const int32_t d = proposer.sample_with_probs(row, probs).token;
    EXPECT_GT(probs[static_cast<size_t>(d)], 0.0f);
    q.insert(q.end(), probs.begin(), probs.end());
    drafts.push_back(d);
    dctx.push_back(d);
  }
  std::vector<int32_t> context = prompt;
  std::vector<float> rows = verification_rows(prompt, drafts);
  std::vector<TokenLogprobs> out;
  EXPECT_TRUE(verify_drafts(sampler, rows, kVocab, drafts, mask_hooks(context), out, q).ok());
  accepted += static_cast<int64_t>(out.size()) - 1;
  return first_two_tokens(sampler, prompt.size(), context);
}

void expect_full_q_target_distribution(const SamplingParams& base, int num_drafts) {
  expect_two_token_target_distribution(base, static_cast<size_t>(num_drafts),
                                       [&](const SamplingParams& p, int64_t i, int64_t& accepted) {
                                         return run_full_q_once(
                                             p, kPrompt, num_drafts,
                                             static_cast<uint64_t>(i) * 104729 + 3, accepted);
                                       });
}

TEST(RejectionSampler, FullDraftDistributionKeepsTheTargetDistribution) {
  SamplingParams p;
  p.temperature = 0.9f;
  p.top_p = 0.85f;
  p.presence_penalty = 0.7f;
  expect_full_q_target_distribution(p, 2);
  SamplingParams k;
  k.temperature = 1.3f;
  k.top_k = 4;
  k.min_p = 0.15f;
  expect_full_q_target_distribution(k, 3);
}

// The distribution sample_with_probs reports is the processed one (the independent oracle's).
TEST(RejectionSampler, SampleWithProbsReportsTheProcessedDistribution) {
  SamplingParams p;
  p.temperature = 0.7f;
  p.top_p = 0.8f;
  p.min_p = 0.05f;
  p.seed = 5;
  const std::vector<int32_t> prompt = {3, 1};
  Sampler sampler(p, kVocab, prompt);
  std::vector<float> row = model_logits(prompt);
  for (int32_t t = 0; t < kVocab; ++t)
    if (!allowed(prompt, t)) row[t] = kMasked;
  std::vector<float> probs;
  const int32_t token = sampler.sample_with_probs(row, probs).token;
  const std::vector<double> want = target(prompt, {}, p);
  ASSERT_EQ(probs.size(), want.size());
  for (size_t t = 0; t < want.size(); ++t)
    EXPECT_NEAR(probs[t], want[t], 1e-6) << "token " << t;
  EXPECT_GT(probs[static_cast<size_t>(token)], 0.0f);
  SamplingParams g;
  g.temperature = 0;
  Sampler greedy(g, kVocab, prompt);
  row = model_logits(prompt);
  const int32_t best = greedy.sample_with_probs(row, probs).token;
  EXPECT_EQ(probs[static_cast<size_t>(best)], 1.0f);
  EXPECT_FLOAT_EQ(std::accumulate(probs.begin(), probs.end(), 0.0f), 1.0f);
}

TEST(RejectionSampler, GreedyAcceptsWhileEqualThenCorrects) {
  SamplingParams p;
  p.temperature = 0;
  const std::vector<int32_t> prompt = {4, 0};
  // The argmax continuation, decoded one token at a time.
  std::vector<int32_t> greedy = prompt;
  for (int i = 0; i < 4; ++i) {
    std::vector<float> row = model_logits(greedy);
    for (int32_t t = 0; t < kVocab; ++t)
      if (!allowed(greedy, t)) row[t] = kMasked;
    greedy.push_back(static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin()));
  }
  const std::vector<int32_t> truth(greedy.begin() + 2, greedy.end());
  for (size_t wrong = 0; wrong <= 3; ++wrong) {
    std::vector<int32_t> drafts(truth.begin(), truth.begin() + 3);
    if (wrong < 3) drafts[wrong] = (drafts[wrong] + 1) % 5;
    Sampler sampler(p, kVocab, prompt);
    std::vector<int32_t> context = prompt;
    std::vector<float> rows;
    std::vector<int32_t> dctx = prompt;
    for (size_t i = 0; i <= drafts.size(); ++i) {
      const auto row = model_logits(dctx);
      rows.insert(rows.end(), row.begin(), row.end());
      if (i < drafts.size()) dctx.push_back(drafts[i]);
    }
    std::vector<TokenLogprobs> out;
    ASSERT_TRUE(verify_drafts(sampler, rows, kVocab, drafts, mask_hooks(context), out).ok());
    // wrong == 3: all accepted plus the bonus token.
    ASSERT_EQ(out.size(), wrong + 1) << "wrong draft at " << wrong;
    for (size_t i = 0; i < out.size(); ++i)
      EXPECT_EQ(out[i].token, truth[i]) << "position " << i;
  }
}

}  // namespace
}  // namespace pagoda::sampling
