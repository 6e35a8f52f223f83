// bench serve's speculative-decoding summary from two canned /metrics scrapes (the text shape
// prometheus-cpp writes for the server's vllm:spec_decode_* counters).
#include "cli/commands/spec_decode_metrics.h"

#include <gtest/gtest.h>

#include <string>

namespace pagoda::cli {
namespace {

std::string scrape(double drafts, double draft_tokens, double accepted) {
  return "# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.\n"
         "# TYPE vllm:spec_decode_num_drafts_total counter\n"
         "vllm:spec_decode_num_drafts_total{model_name=\"demo\",engine=\"0\"} " +
         std::to_string(drafts) +
         "\n"
         "# TYPE vllm:spec_decode_num_draft_tokens_total counter\n"
         "vllm:spec_decode_num_draft_tokens_total{model_name=\"demo\",engine=\"0\"} " +
         std::to_string(draft_tokens) +
         "\r\n"
         "vllm:spec_decode_num_accepted_tokens_total{model_name=\"demo\",engine=\"0\"} " +
         std::to_string(accepted) +
         "\n"
         "vllm:spec_decode_num_accepted_tokens_per_pos{model_name=\"demo\",position=\"0\"} 99\n"
         "vllm:num_requests_running{model_name=\"demo\"} 3\n";
}

TEST(SpecDecodeMetrics, DeltaGivesAcceptanceAndMeanAcceptedLength) {
  const auto before = read_spec_decode_counters(scrape(10, 40, 25));
  const auto after = read_spec_decode_counters(scrape(110, 440, 325));
  ASSERT_TRUE(before && after);
  EXPECT_EQ(before->num_drafts, 10);
  EXPECT_EQ(before->num_draft_tokens, 40);
  EXPECT_EQ(before->num_accepted_tokens, 25);
  const auto s = spec_decode_delta(before, after);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->num_drafts, 100);
  EXPECT_EQ(s->num_draft_tokens, 400);
  EXPECT_EQ(s->num_accepted_tokens, 300);
  EXPECT_DOUBLE_EQ(s->acceptance_rate, 300.0 / 400.0);
  EXPECT_DOUBLE_EQ(s->mean_accepted_length, 1.0 + 300.0 / 100.0);  // tokens per verify step
}

TEST(SpecDecodeMetrics, LabelSetsAreSummed) {
  const std::string text =
      "vllm:spec_decode_num_drafts_total{model_name=\"a\"} 3\n"
      "vllm:spec_decode_num_drafts_total{model_name=\"b \\\"}\\\" x\"} 4 1700000000000\n"
      "vllm:spec_decode_num_draft_tokens_total 20\n";
  const auto c = read_spec_decode_counters(text);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->num_drafts, 7);
  EXPECT_EQ(c->num_draft_tokens, 20);
  EXPECT_EQ(c->num_accepted_tokens, 0);
}

TEST(SpecDecodeMetrics, NothingDraftedGivesZeroRates) {
  const auto s = spec_decode_delta(read_spec_decode_counters(scrape(5, 20, 10)),
                                   read_spec_decode_counters(scrape(5, 20, 10)));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->num_drafts, 0);
  EXPECT_EQ(s->acceptance_rate, 0);
  EXPECT_EQ(s->mean_accepted_length, 0);
}

TEST(SpecDecodeMetrics, MissingOrInconsistentScrapesGiveNothing) {
  // No speculation counters (speculation off, or another server).
  EXPECT_FALSE(read_spec_decode_counters("vllm:num_requests_running 1\n# x\n\n").has_value());
  EXPECT_FALSE(read_spec_decode_counters("").has_value());
  // Hostile or broken values are skipped, not trusted.
  EXPECT_FALSE(read_spec_decode_counters("vllm:spec_decode_num_drafts_total nan\n"
                                         "vllm:spec_decode_num_drafts_total{x=\"unterminated 5\n"
                                         "vllm:spec_decode_num_drafts_total 1e999\n")
                   .has_value());
  const auto ok = read_spec_decode_counters(scrape(1, 2, 1));
  EXPECT_FALSE(spec_decode_delta(std::nullopt, ok).has_value());
  EXPECT_FALSE(spec_decode_delta(ok, std::nullopt).has_value());
  // A restarted server: counters went backwards.
  EXPECT_FALSE(spec_decode_delta(read_spec_decode_counters(scrape(10, 40, 20)), ok).has_value());
  // More accepted than drafted, or fractional counts: not a vLLM counter set.
  EXPECT_FALSE(spec_decode_delta(ok, read_spec_decode_counters(scrape(2, 3, 5))).has_value());
  EXPECT_FALSE(spec_decode_delta(ok, read_spec_decode_counters(scrape(2.5, 3, 1))).has_value());
}

}  // namespace
}  // namespace pagoda::cli
