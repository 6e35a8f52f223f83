// Perplexity against the peer engine: the fixtures' reference traces (llama.cpp's logits for a
// prompt and its greedy continuation) give, for every greedy position, the peer's
// -log p(next token) = logsumexp - logit(top-1). compute_perplexity on the same tokens must score
// the same NLLs. Also: the window plan, the log-probability file's round trip and its refusal of
// corrupt bytes, and KL divergence against its definition computed independently here.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <random>

#include "diagnostics/log_prob.h"
#include "diagnostics/log_prob_file.h"
#include "diagnostics/perplexity.h"
#include "test_support.h"

namespace pagoda::diagnostics {
namespace {

TEST(PerplexityWindows, FollowLlamaPerplexity) {
  auto w = plan_windows(1000, 128, 0);
  ASSERT_TRUE(w.ok());
  ASSERT_EQ(w->size(), 1000u / 128u);  // the partial last window is dropped
  for (size_t i = 0; i < w->size(); ++i) {
    EXPECT_EQ((*w)[i].start, static_cast<int64_t>(i) * 128);
    EXPECT_EQ((*w)[i].first_scored, 64);
    EXPECT_EQ((*w)[i].first_scored + (*w)[i].num_scored, 127);  // last position has no target
  }
  auto s = plan_windows(1000, 128, 32);
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->size(), (1000u - 128u + 31u) / 32u);
  for (const PerplexityWindow& x : *s) {
    EXPECT_EQ(x.num_scored, 32);
    EXPECT_LE(x.start + 128, 1000);  // every target is inside the text
  }
  EXPECT_FALSE(plan_windows(100, 128, 0).ok());
  EXPECT_FALSE(plan_windows(1000, 2, 0).ok());
  EXPECT_FALSE(plan_windows(1000, 128, 127).ok());
  EXPECT_FALSE(plan_windows(1000, 128, -1).ok());
}

TEST(LogProb, KlDivergenceMatchesDefinition) {
  std::mt19937 rng(7);
  std::normal_distribution<float> n(0, 3);
  std::vector<float> a(50), b(50), la(50), lb(50);
  for (int trial = 0; trial < 20; ++trial) {
    for (size_t i = 0; i < a.size(); ++i) {
      a[i] = n(rng);
      b[i] = a[i] + 0.3f * n(rng);
    }
    log_softmax(a, la);
    log_softmax(b, lb);
    // Definition: Σ p log(p / q) with p, q normalised exponentials.
    double za = 0, zb = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      za += std::exp(static_cast<double>(a[i]));
      zb += std::exp(static_cast<double>(b[i]));
    }
    double kl = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      const double p = std::exp(static_cast<double>(a[i])) / za;
      const double q = std::exp(static_cast<double>(b[i])) / zb;
      kl += p * std::log(p / q);
    }
    EXPECT_NEAR(kl_divergence(la, lb), kl, 1e-5 * (1 + kl));
    EXPECT_NEAR(kl_divergence(la, la), 0.0, 1e-12);
  }
}

TEST(LogProb, PercentileInterpolatesLikeNumpy) {
  // np.percentile([1, 2, 3, 4], 50) == 2.5; ([0, 10], 99) == 9.9
  std::vector<double> v = {4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(percentile(v, 50), 2.5);
  std::vector<double> w = {10, 0};
  EXPECT_NEAR(percentile(w, 99), 9.9, 1e-12);
}

TEST(LogProbFile, RoundTripAndCorruptBytes) {
  const std::string path = ::testing::TempDir() + "/lp_roundtrip.lp";
  const std::vector<int32_t> tokens = {1, 5, 2, 7, 3, 0};
  const LogProbHeader header{8, 4, 0};
  std::vector<std::vector<float>> rows = {{-1, -2, -3, -4, -5, -6, -7, -0.5f},
                                          {-0.25f, -9, -2, -1, -3, -3, -3, -3}};
  {
    auto w = LogProbWriter::create(path, header, tokens, rows.size());
    ASSERT_TRUE(w.ok()) << w.status().to_string();
    for (const auto& r : rows)
      ASSERT_TRUE(w->add_row(r).ok());
    EXPECT_FALSE(w->add_row(rows[0]).ok());  // more rows than announced
    ASSERT_TRUE(w->finish().ok());
  }
  auto r = LogProbReader::open(path);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->header().n_vocab, 8u);
  EXPECT_EQ(r->header().n_ctx, 4u);
  ASSERT_EQ(r->num_tokens(), tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i)
    EXPECT_EQ(r->token(i), tokens[i]);
  ASSERT_EQ(r->num_rows(), rows.size());
  std::vector<float> out(8);
  for (size_t i = 0; i < rows.size(); ++i) {
    r->row(i, out);
    for (size_t k = 0; k < 8; ++k)
      EXPECT_EQ(out[k], rows[i][k]);  // exactly representable in f16
  }
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  EXPECT_TRUE(LogProbReader::parse(bytes).ok());
  for (size_t cut = 0; cut < bytes.size(); ++cut) {  // every truncation is refused
    EXPECT_FALSE(LogProbReader::parse(std::span<const uint8_t>(bytes.data(), cut)).ok()) << cut;
  }
  auto bad = bytes;
  bad[24 + 8 + 4] = 200;  // token 1 = 200 >= n_vocab
  EXPECT_FALSE(LogProbReader::parse(bad).ok());
  bad = bytes;
  bad[8] = 0;  // n_vocab 0
  EXPECT_FALSE(LogProbReader::parse(bad).ok());
  bad = bytes;
  bad[24] = 0xff;  // num_tokens huge
  EXPECT_FALSE(LogProbReader::parse(bad).ok());
}

TEST(PerplexityPeer, ScoredNllsMatchReferenceLogits) {
  const auto ref_path = testing::fixture("models/reference/llama-F16.p1.json");
  const auto model_path = testing::fixture("models/llama-F16.gguf");
  PAGODA_REQUIRE_FIXTURE(ref_path);
  PAGODA_REQUIRE_FIXTURE(model_path);
  nlohmann::json ref = nlohmann::json::parse(std::ifstream(ref_path));
  std::vector<int32_t> tokens = ref["prompt_tokens"].get<std::vector<int32_t>>();
  const auto greedy = ref["greedy_tokens"].get<std::vector<int32_t>>();
  const size_t num_prompt = tokens.size();
  tokens.insert(tokens.end(), greedy.begin(), greedy.end());
  auto loaded = loader::load_model(model_path.string());
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();

  PerplexityOptions options;
  options.n_ctx = static_cast<int32_t>(tokens.size());
  options.n_batch = 5;  // windows fed in pieces
  std::vector<double> nlls;
  std::vector<float> lp(static_cast<size_t>(loaded->model->config().vocab_size));
  auto result = compute_perplexity(*loaded, tokens, options,
                                   [&](std::span<const float> logits, int32_t target) {
                                     log_softmax(logits, lp);
                                     nlls.push_back(-lp[static_cast<size_t>(target)]);
                                     return Status();
                                   });
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  const int32_t first = options.n_ctx / 2;
  ASSERT_EQ(nlls.size(), static_cast<size_t>(options.n_ctx - 1 - first));
  int compared = 0;
  double sum = 0;
  for (size_t k = 0; k < nlls.size(); ++k) {
    sum += nlls[k];
    const size_t pos = static_cast<size_t>(first) + k;  // row `pos` predicts token pos + 1
    const nlohmann::json& row = ref["positions"][pos];
    for (const auto& entry : row["top"]) {
      if (entry[0].get<int32_t>() != tokens[pos + 1]) continue;
      const double peer = row["logsumexp"].get<double>() - entry[1].get<double>();
      EXPECT_NEAR(nlls[k], peer, 0.01 + 0.01 * peer) << "position " << pos;
      ++compared;
    }
  }
  // Every greedy position is the peer's top-1, so all those positions are compared.
  EXPECT_GE(compared,
            static_cast<int>(tokens.size() - 1 - std::max<size_t>(num_prompt - 1, first)));
  EXPECT_NEAR(result->nll.ppl(), std::exp(sum / static_cast<double>(nlls.size())), 1e-9);
}

}  // namespace
}  // namespace pagoda::diagnostics
