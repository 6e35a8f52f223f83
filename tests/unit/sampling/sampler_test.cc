#include "sampling/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace pagoda::sampling {
namespace {

// token_logprobs against the definition: log softmax in double, rank = 1 + tokens with a higher
// logit, top k by descending logit with ties to the lower id.
TEST(TokenLogprobs, MatchLogSoftmaxRankAndTop) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f, -0.5f};
  double sum = 0;
  for (float l : logits)
    sum += std::exp(static_cast<double>(l));
  const TokenLogprobs r = token_logprobs(logits, 2, 3);
  EXPECT_EQ(r.token, 2);
  EXPECT_NEAR(r.logprob, 2.0 - std::log(sum), 1e-6);
  EXPECT_EQ(r.rank, 3);
  ASSERT_EQ(r.top.size(), 3u);
  EXPECT_EQ(r.top[0].first, 1);
  EXPECT_EQ(r.top[1].first, 3);
  EXPECT_EQ(r.top[2].first, 2);
  EXPECT_NEAR(r.top[0].second, 3.0 - std::log(sum), 1e-6);
  EXPECT_EQ(token_logprobs(logits, 1, 0).rank, 1);
  EXPECT_TRUE(token_logprobs(logits, 4, 0).top.empty());
  EXPECT_EQ(token_logprobs(logits, 4, 0).rank, 5);
  EXPECT_EQ(token_logprobs(logits, 0, 99).top.size(), logits.size());
}

std::vector<float> softmax(const std::vector<float>& x, float temp = 1.0f) {
  double max = -INFINITY;
  for (float v : x)
    max = std::max(max, static_cast<double>(v) / temp);
  std::vector<float> p(x.size());
  double sum = 0;
  for (size_t i = 0; i < x.size(); ++i)
    sum += std::exp(x[i] / temp - max);
  for (size_t i = 0; i < x.size(); ++i)
    p[i] = static_cast<float>(std::exp(x[i] / temp - max) / sum);
  return p;
}

int32_t sample_once(Sampler& s, std::vector<float> logits) {
  return s.sample(logits).token;
}

TEST(SamplerTest, ValidateNamesTheField) {
  SamplingParams p;
  p.temperature = NAN;
  EXPECT_NE(validate(p, 10).message().find("temperature"), std::string::npos);
  p = {};
  p.top_p = 0;
  EXPECT_NE(validate(p, 10).message().find("top_p"), std::string::npos);
  p = {};
  p.top_k = 11;
  EXPECT_NE(validate(p, 10).message().find("top_k"), std::string::npos);
  p = {};
  p.logit_bias = {{10, 1.0f}};
  EXPECT_NE(validate(p, 10).message().find("logit_bias"), std::string::npos);
  p = {};
  p.min_p = 1.5f;
  EXPECT_FALSE(validate(p, 10).ok());
  p = {};
  p.frequency_penalty = INFINITY;
  EXPECT_FALSE(validate(p, 10).ok());
  EXPECT_TRUE(validate(SamplingParams{}, 10).ok());
}

TEST(SamplerTest, GreedyAndLogitBias) {
  SamplingParams p;
  p.temperature = 0;
  Sampler s(p, 4, {});
  EXPECT_EQ(sample_once(s, {0.1f, 2.0f, 1.9f, -1.0f}), 1);
  p.logit_bias = {{2, 0.5f}};
  Sampler biased(p, 4, {});
  EXPECT_EQ(sample_once(biased, {0.1f, 2.0f, 1.9f, -1.0f}), 2);
}

TEST(SamplerTest, RepetitionPenaltyFollowsHfSemantics) {
  SamplingParams p;
  p.temperature = 0;
  p.repetition_penalty = 2.0f;
  // Token 0 (logit 3, seen in prompt) becomes 1.5 < token 1 (2.0); token 2 (-1, seen) -> -2.
  const int32_t prompt[] = {0, 2};
  Sampler s(p, 3, prompt);
  EXPECT_EQ(sample_once(s, {3.0f, 2.0f, -1.0f}), 1);
  // Token 1 was generated, so it is penalised now too: 2.0 / 2 = 1.0 < 1.5.
  EXPECT_EQ(sample_once(s, {3.0f, 2.0f, -1.0f}), 0);
}

TEST(SamplerTest, PresenceAndFrequencyPenalties) {
  SamplingParams p;
  p.temperature = 0;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  Sampler s(p, 3, {});
  // Generates 0 (logit 1.0). Then 0 is at 1.0 - 0.5 - 0.25 = 0.25 < 0.9.
  EXPECT_EQ(sample_once(s, {1.0f, 0.9f, 0.0f}), 0);
  EXPECT_EQ(sample_once(s, {1.0f, 0.9f, 0.0f}), 1);
  // Both seen once: 0 -> 0.25, 1 -> 0.15; token 2 at 0.2 loses to 0.
  EXPECT_EQ(sample_once(s, {1.0f, 0.9f, 0.2f}), 0);
  // 0 seen twice now: 1.0 - 0.5 - 0.5 = 0.0 < 0.2.
  EXPECT_EQ(sample_once(s, {1.0f, 0.9f, 0.2f}), 2);
}

TEST(SamplerTest, SeedIsDeterministic) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.seed = 1234;
  std::vector<float> logits(50);
  for (size_t i = 0; i < logits.size(); ++i)
    logits[i] = static_cast<float>(std::sin(i * 1.7));
  Sampler a(p, 50, {}), b(p, 50, {});
  std::vector<int32_t> ta, tb;
  for (int i = 0; i < 100; ++i) {
    ta.push_back(sample_once(a, logits));
    tb.push_back(sample_once(b, logits));
  }
  EXPECT_EQ(ta, tb);
  p.seed = 4321;
  Sampler c(p, 50, {});
  std::vector<int32_t> tc;
  for (int i = 0; i < 100; ++i)
    tc.push_back(sample_once(c, logits));
  EXPECT_NE(ta, tc);
}

TEST(SamplerTest, FrequenciesFollowTheTemperedSoftmax) {
  const std::vector<float> logits = {1.0f, 0.5f, 0.0f, -0.5f, 2.0f};
  for (float temp : {0.5f, 1.0f, 2.0f}) {
    SamplingParams p;
    p.temperature = temp;
    p.seed = 7;
    Sampler s(p, 5, {});
    const int n = 40000;
    std::vector<int> counts(5);
    for (int i = 0; i < n; ++i)
      ++counts[static_cast<size_t>(sample_once(s, logits))];
    const auto probs = softmax(logits, temp);
    for (size_t i = 0; i < 5; ++i) {
      const double expected = probs[i] * n;
      const double sigma = std::sqrt(n * probs[i] * (1 - probs[i]));
      EXPECT_NEAR(counts[i], expected, 5 * sigma + 1) << "temp " << temp << " token " << i;
    }
  }
}

// The support and frequencies by the published definitions (sort all tokens by logit, softmax at
// temperature over the top k, cut at cumulative top_p, then at min_p x the best), on a vocabulary
// large enough for the sampler's partition-based selection (not a full sort) to run, with ties
// and masked (-inf) tokens.
std::vector<double> reference_distribution(const std::vector<float>& logits,
                                           const SamplingParams& p) {
  std::vector<int32_t> order(logits.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = static_cast<int32_t>(i);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  size_t keep = 0;
  while (keep < order.size() && std::isfinite(logits[order[keep]]))
    ++keep;
  if (p.top_k > 0) keep = std::min(keep, static_cast<size_t>(p.top_k));
  std::vector<double> prob(keep);
  double sum = 0;
  for (size_t i = 0; i < keep; ++i)
    sum += prob[i] = std::exp((logits[order[i]] - logits[order[0]]) / p.temperature);
  for (double& x : prob)
    x /= sum;
  if (p.top_p < 1) {
    double cum = 0;
    size_t i = 0;
    while (i < keep && (cum += prob[i]) < p.top_p)
      ++i;
    keep = std::min(keep, i + 1);
  }
  size_t cut = 1;
  while (cut < keep && prob[cut] >= p.min_p * prob[0])
    ++cut;
  keep = cut;
  double total = 0;
  for (size_t i = 0; i < keep; ++i)
    total += prob[i];
  std::vector<double> out(logits.size());
  for (size_t i = 0; i < keep; ++i)
    out[order[i]] = prob[i] / total;
  return out;
}

TEST(SamplerTest, LargeVocabularyMatchesTheDefinitions) {
  const int32_t vocab = 4000;
  std::vector<float> logits(vocab);
  for (int32_t i = 0; i < vocab; ++i) {
    logits[i] = static_cast<float>(std::round(std::sin(i * 0.37) * 40) / 10);  // many ties
  }
  for (int32_t i = 0; i < vocab; i += 7)
    logits[i] = -INFINITY;  // masked
  logits[123] = 6.0f;
  logits[2001] = 5.5f;
  logits[3999] = 5.5f;
  struct Case {
    float temp, top_p, min_p;
    int32_t top_k;
  };
  for (const Case c :
       {Case{1.0f, 1.0f, 0.0f, 0}, Case{0.7f, 0.9f, 0.0f, 0}, Case{1.5f, 0.5f, 0.0f, 0},
        Case{1.0f, 1.0f, 0.02f, 0}, Case{1.0f, 0.95f, 0.01f, 500}, Case{2.0f, 1.0f, 0.0f, 100}}) {
    SamplingParams p;
    p.temperature = c.temp;
    p.top_p = c.top_p;
    p.min_p = c.min_p;
    p.top_k = c.top_k;
    p.seed = 11;
    const std::vector<double> expected = reference_distribution(logits, p);
    Sampler s(p, vocab, {});
    const int n = 20000;
    std::vector<int> counts(vocab);
    for (int i = 0; i < n; ++i) {
      const int32_t t = sample_once(s, logits);
      ASSERT_GT(expected[t], 0.0) << "token " << t << " is outside the support (temp " << c.temp
                                  << ", top_p " << c.top_p << ", min_p " << c.min_p << ")";
      ++counts[t];
    }
    for (int32_t t : {123, 2001, 3999}) {
      const double e = expected[t] * n;
      EXPECT_NEAR(counts[t], e, 5 * std::sqrt(e * (1 - expected[t])) + 1) << "token " << t;
    }
  }
}

TEST(SamplerTest, TopKTopPMinPRestrictTheSupport) {
  const std::vector<float> logits = {3.0f, 2.5f, 2.0f, 0.0f, -1.0f, 1.0f};
  const auto probs = softmax(logits);
  auto support = [&](SamplingParams p) {
    p.seed = 99;
    Sampler s(p, 6, {});
    std::set<int32_t> seen;
    for (int i = 0; i < 3000; ++i)
      seen.insert(sample_once(s, logits));
    return seen;
  };
  SamplingParams k2;
  k2.top_k = 2;
  EXPECT_EQ(support(k2), (std::set<int32_t>{0, 1}));
  SamplingParams k1;
  k1.top_k = 1;
  k1.temperature = 5.0f;
  EXPECT_EQ(support(k1), (std::set<int32_t>{0}));
  // top_p: the smallest prefix (by probability) whose mass reaches p.
  SamplingParams tp;
  tp.top_p = (probs[0] + probs[1]) * 0.99f;
  EXPECT_EQ(support(tp), (std::set<int32_t>{0, 1}));
  // min_p: keep tokens with p >= min_p * p_max.
  SamplingParams mp;
  mp.min_p = probs[2] / probs[0] * 0.99f;
  EXPECT_EQ(support(mp), (std::set<int32_t>{0, 1, 2}));
}

TEST(SamplerTest, LogprobsAreTheRawLogSoftmax) {
  SamplingParams p;
  p.temperature = 0;
  p.logprobs = 2;
  p.logit_bias = {{1, 10.0f}};  // changes the choice but not the reported distribution
  Sampler s(p, 3, {});
  std::vector<float> logits = {1.0f, 0.0f, 2.0f};
  const auto probs = softmax(logits);
  TokenLogprobs r = s.sample(logits);
  EXPECT_EQ(r.token, 1);
  EXPECT_NEAR(r.logprob, std::log(probs[1]), 1e-5);
  ASSERT_EQ(r.top.size(), 2u);
  EXPECT_EQ(r.top[0].first, 2);
  EXPECT_NEAR(r.top[0].second, std::log(probs[2]), 1e-5);
  EXPECT_EQ(r.top[1].first, 0);
}

}  // namespace
}  // namespace pagoda::sampling

namespace pagoda::sampling {
namespace {

TEST(SamplerTest, RestoreContinuesTheSameStream) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.seed = 42;
  p.presence_penalty = 0.3f;
  std::vector<float> logits(20);
  for (size_t i = 0; i < logits.size(); ++i)
    logits[i] = static_cast<float>(std::cos(i * 0.9));
  Sampler full(p, 20, {});
  std::vector<int32_t> tokens;
  for (int i = 0; i < 30; ++i) {
    std::vector<float> copy = logits;
    tokens.push_back(full.sample(copy).token);
  }
  // Interrupted after 12 tokens, rebuilt from history: the rest must be identical.
  Sampler resumed(p, 20, {});
  resumed.restore(std::span<const int32_t>(tokens).first(12));
  for (size_t i = 12; i < tokens.size(); ++i) {
    std::vector<float> copy = logits;
    EXPECT_EQ(resumed.sample(copy).token, tokens[i]) << i;
  }
}

TEST(SamplerTest, DerivedSeedsDiffer) {
  EXPECT_EQ(Sampler::derive_seed(7, 0), 7u);
  EXPECT_NE(Sampler::derive_seed(7, 1), Sampler::derive_seed(7, 2));
  EXPECT_NE(Sampler::derive_seed(7, 1), 7u);
}

}  // namespace
}  // namespace pagoda::sampling
