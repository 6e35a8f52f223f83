// The speculation cost rule with injected costs and acceptances (no timing).
#include "runner/draft_pacer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <utility>

namespace pagoda::runner {
namespace {

// Expected tokens per verifying step, by simulation of independent per-draft acceptances.
double simulated_tokens_per_step(double alpha, int32_t k, int trials) {
  std::mt19937_64 rng(1234);
  std::bernoulli_distribution accept(alpha);
  int64_t total = 0;
  for (int t = 0; t < trials; ++t) {
    int32_t run = 0;
    while (run < k && accept(rng))
      ++run;
    total += run + 1;
  }
  return static_cast<double>(total) / trials;
}

// Calls next_num_drafts until it drafts: (calls, drafts).
std::pair<int, int32_t> calls_until_drafting(DraftPacer& pacer, const SpeculationCosts& costs) {
  for (int calls = 1; calls <= 1000; ++calls) {
    const int32_t k = pacer.next_num_drafts(4, costs);
    if (k > 0) return {calls, k};
  }
  return {0, 0};
}

TEST(DraftPacer, ExpectedTokensMatchSimulation) {
  for (const double alpha : {0.0, 0.15, 0.5, 0.8, 1.0}) {
    for (const int32_t k : {1, 2, 4, 7}) {
      const double closed = alpha < 1 ? (1 - std::pow(alpha, k + 1)) / (1 - alpha) : k + 1;
      EXPECT_NEAR(expected_tokens_per_step(alpha, k), closed, 1e-12) << alpha << " " << k;
      EXPECT_NEAR(expected_tokens_per_step(alpha, k), simulated_tokens_per_step(alpha, k, 200000),
                  0.02)
          << alpha << " " << k;
    }
  }
}

TEST(DraftPacer, BestNumDraftsWeighsAcceptanceAgainstCost) {
  // A draft pass costing 30% of a target step, a verified row 2%.
  const SpeculationCosts costs{1.0, 0.02, 0.3};
  // alpha 0.15: k = 1 gives 1.15 tokens for 1.32 of cost; plain decoding is faster.
  EXPECT_EQ(best_num_drafts(0.15, 4, costs, 0.1), 0);
  // alpha 0.9: k = 4 gives 4.10 tokens for 2.28 (1.80 per step-time) beats k = 1..3.
  EXPECT_EQ(best_num_drafts(0.9, 4, costs, 0.1), 4);
  // Never more than max_k, nothing for max_k 0 or a zero step cost.
  EXPECT_EQ(best_num_drafts(0.99, 2, costs, 0.1), 2);
  EXPECT_EQ(best_num_drafts(0.99, 0, costs, 0.1), 0);
  EXPECT_EQ(best_num_drafts(0.99, 4, SpeculationCosts{0, 0, 0}, 0.1), 0);
  // Prompt lookup: proposing is free, so only verification rows count; cheap rows make even
  // a low acceptance pay, expensive ones (a compute-bound target) do not.
  EXPECT_GT(best_num_drafts(0.3, 4, SpeculationCosts{1.0, 0.01, 0}, 0.1), 0);
  EXPECT_EQ(best_num_drafts(0.3, 4, SpeculationCosts{1.0, 0.5, 0}, 0.1), 0);
  // The margin: alpha 0.5 with k = 1 at cost 1.4 is 1.07x plain: pays at margin 0, not 0.1.
  const SpeculationCosts near{1.0, 0.1, 0.3};
  EXPECT_EQ(best_num_drafts(0.5, 1, near, 0.0), 1);
  EXPECT_EQ(best_num_drafts(0.5, 1, near, 0.1), 0);
}

TEST(DraftPacer, UnmeasuredCostsDraftEverything) {
  DraftPacer pacer;
  EXPECT_EQ(pacer.next_num_drafts(4, std::nullopt), 4);
  EXPECT_EQ(pacer.next_num_drafts(0, std::nullopt), 0);
  EXPECT_FALSE(pacer.paused());
}

// Low acceptance stops drafting; probes then come every probe_interval steps; high acceptance
// on the probes resumes drafting.
TEST(DraftPacer, StopsOnLowAcceptanceAndResumesAfterGoodProbes) {
  DraftPacingConfig config;
  config.probe_interval = 8;
  config.max_probe_interval = 8;  // (the back-off has its own test)
  DraftPacer pacer(config);
  const SpeculationCosts costs{1.0, 0.02, 0.3};
  ASSERT_GT(pacer.next_num_drafts(4, costs), 0);  // the prior: alpha 2/3
  int32_t k = 4;
  int steps = 0;
  // Every draft rejected but the first one in five runs: acceptance ~0.17.
  while (k > 0 && steps < 100) {
    pacer.record_verification(k, steps % 5 == 0 ? 1 : 0);
    k = pacer.next_num_drafts(4, costs);
    ++steps;
  }
  ASSERT_EQ(k, 0) << "still drafting after " << steps << " bad verifications";
  EXPECT_LE(steps, 8);
  EXPECT_TRUE(pacer.paused());
  EXPECT_LT(pacer.acceptance(), 0.4);
  // Paused: 7 steps without drafts, then a k = 1 probe; rejected probes keep it paused.
  for (int round = 0; round < 3; ++round) {
    const auto [calls, drafts] = calls_until_drafting(pacer, costs);
    EXPECT_EQ(calls, 8) << round;
    ASSERT_EQ(drafts, 1) << round;
    pacer.record_verification(1, 0);
  }
  EXPECT_TRUE(pacer.paused());
  // The text turns predictable: each probe is accepted; drafting resumes within a few probes.
  int probes = 0;
  int32_t next = 0;
  while (probes < 10) {
    const auto [calls, drafts] = calls_until_drafting(pacer, costs);
    EXPECT_EQ(calls, probes == 0 ? 8 : 7) << probes;  // the check after a probe was a step
    ASSERT_EQ(drafts, 1);
    pacer.record_verification(1, 1);
    ++probes;
    next = pacer.next_num_drafts(4, costs);
    if (next > 0) break;
  }
  EXPECT_GT(next, 0) << "no resumption after " << probes << " accepted probes";
  EXPECT_LE(probes, 4);
  EXPECT_FALSE(pacer.paused());
  // With full acceptance from here on, k climbs to max.
  for (int i = 0; i < 10; ++i) {
    pacer.record_verification(next, next);
    next = pacer.next_num_drafts(4, costs);
  }
  EXPECT_EQ(next, 4);
}

// While paused, each probe that does not resume drafting doubles the wait for the next, up to
// max_probe_interval; resuming starts over.
TEST(DraftPacer, ProbesBackOff) {
  DraftPacer pacer;  // probe_interval 8, max 64
  const SpeculationCosts costs{1.0, 0.02, 0.3};
  for (int i = 0; i < 20; ++i)
    pacer.record_verification(4, 0);
  ASSERT_EQ(pacer.next_num_drafts(4, costs), 0);  // pauses
  for (const int32_t interval : {8, 16, 32, 64, 64}) {
    const auto [calls, drafts] = calls_until_drafting(pacer, costs);
    EXPECT_EQ(calls, interval);
    ASSERT_EQ(drafts, 1);
    pacer.record_verification(1, 0);
  }
  for (int i = 0; i < 20; ++i)
    pacer.record_verification(4, 4);
  ASSERT_GT(pacer.next_num_drafts(4, costs), 0);  // resumes
  for (int i = 0; i < 20; ++i)
    pacer.record_verification(4, 0);
  ASSERT_EQ(pacer.next_num_drafts(4, costs), 0);  // pauses again: the interval starts at 8
  EXPECT_EQ(calls_until_drafting(pacer, costs).first, 8);
}

// Cheap drafting (prompt lookup: no draft pass, cheap rows) keeps drafting at a low acceptance
// that a draft model's cost does not pay for.
TEST(DraftPacer, CheapProposerKeepsDraftingWhereADraftModelStops) {
  DraftPacer lookup, model;
  const SpeculationCosts lookup_costs{1.0, 0.01, 0.0};
  const SpeculationCosts model_costs{1.0, 0.01, 0.4};
  for (int i = 0; i < 30; ++i) {
    const int32_t a = lookup.next_num_drafts(4, lookup_costs);
    const int32_t b = model.next_num_drafts(4, model_costs);
    if (a > 0) lookup.record_verification(a, i % 3 == 0 ? 1 : 0);  // ~0.25-0.35
    if (b > 0) model.record_verification(b, i % 3 == 0 ? 1 : 0);
  }
  EXPECT_FALSE(lookup.paused());
  EXPECT_TRUE(model.paused());
}

TEST(SpeculationCostMeter, FitsStepTimeAgainstTokens) {
  SpeculationCostMeter meter;
  EXPECT_FALSE(meter.costs(1).has_value());
  // step = 10 ms + 0.5 ms per token, steps of 1..5 tokens, draft pass 3 ms.
  for (int i = 0; i < 40; ++i) {
    const int64_t tokens = 1 + i % 5;
    meter.record_step(tokens, 0.010 + 0.0005 * static_cast<double>(tokens));
  }
  EXPECT_FALSE(meter.costs(1).has_value());  // no proposal measured yet
  meter.record_proposal(3, 0.009);
  meter.record_proposal(0, 5.0);   // ignored: nothing drafted
  meter.record_step(2000, 100.0);  // ignored: a prefill chunk, another regime
  const auto costs = meter.costs(2);
  ASSERT_TRUE(costs.has_value());
  EXPECT_NEAR(costs->per_token, 0.0005, 1e-9);
  EXPECT_NEAR(costs->step, 0.011, 1e-9);
  EXPECT_NEAR(costs->per_draft, 0.003, 1e-12);
}

TEST(SpeculationCostMeter, OneStepSizeGivesTheMeanAndNoRowCost) {
  SpeculationCostMeter meter;
  for (int i = 0; i < 10; ++i)
    meter.record_step(1, i % 2 == 0 ? 0.009 : 0.011);
  meter.record_proposal(1, 0.002);
  const auto costs = meter.costs(1);
  ASSERT_TRUE(costs.has_value());
  EXPECT_NEAR(costs->step, 0.010, 2e-4);  // decayed mean of alternating 9 and 11 ms
  EXPECT_EQ(costs->per_token, 0);
  EXPECT_NEAR(costs->per_draft, 0.002, 1e-12);
}

TEST(SpeculationCostMeter, KeepsTheRowCostThroughStepsOfOneSize) {
  SpeculationCostMeter meter;
  for (int i = 0; i < 40; ++i) {  // drafting: 4 to 20 tokens, 0.2 ms + 0.05 ms per row
    const int64_t tokens = 4 + 4 * (i % 5);
    meter.record_step(tokens, 0.0002 + 0.00005 * static_cast<double>(tokens));
  }
  meter.record_proposal(1, 0.0001);
  ASSERT_NEAR(meter.costs(4)->per_token, 0.00005, 1e-9);
  // Paused: 500 plain steps of 4 rows (the fit's variance decays away); a row still costs 0.05 ms.
  for (int i = 0; i < 500; ++i)
    meter.record_step(4, 0.0004);
  const auto costs = meter.costs(4);
  ASSERT_TRUE(costs.has_value());
  EXPECT_NEAR(costs->per_token, 0.00005, 1e-9);
  EXPECT_NEAR(costs->step, 0.0004, 1e-9);
}

TEST(SpeculationCostMeter, PricesADraftFromPassesThatOnlyDraft) {
  SpeculationCostMeter meter;
  for (int i = 0; i < 10; ++i)
    meter.record_step(2, 0.010);
  // A call whose only pass caught up a 100-token prompt for 2 drafting requests: no price in it.
  meter.record_proposal_passes({.drafting_rows = 2,
                                .first_pass_tokens = 102,
                                .first_pass_seconds = 0.050,
                                .first_pass_caught_up = true},
                               0.051);
  EXPECT_FALSE(meter.costs(2).has_value());
  // 4 rounds for 2 rows: a catch-up first pass (priced as a later one, 2 ms), 3 later passes of
  // 2 ms and 1 ms of drawing: (2 + 6 + 1) / 4 ms per round, half of it per row.
  meter.record_proposal_passes({.drafting_rows = 2,
                                .first_pass_tokens = 40,
                                .first_pass_seconds = 0.030,
                                .first_pass_caught_up = true,
                                .later_passes = 3,
                                .later_pass_seconds = 0.006},
                               0.037);
  auto costs = meter.costs(2);
  ASSERT_TRUE(costs.has_value());
  EXPECT_NEAR(costs->per_draft, 0.009 / 4 / 2, 1e-12);
  // A k = 1 call whose pass only caught up what drafting leaves behind is priced whole.
  meter.record_proposal_passes(
      {.drafting_rows = 2, .first_pass_tokens = 6, .first_pass_seconds = 0.003}, 0.004);
  const double price = 0.8 * 0.009 / 8 + 0.2 * 0.004 / 2;
  costs = meter.costs(2);
  ASSERT_TRUE(costs.has_value());
  EXPECT_NEAR(costs->per_draft, price, 1e-12);
  // A probe after a pause (k = 1, a long catch-up) leaves the price alone.
  meter.record_proposal_passes({.drafting_rows = 1,
                                .first_pass_tokens = 9,
                                .first_pass_seconds = 0.5,
                                .first_pass_caught_up = true},
                               0.5);
  EXPECT_NEAR(meter.costs(2)->per_draft, price, 1e-12);
}

TEST(DraftPacer, ALargerBatchNeedsMoreFromADraft) {
  // A 1 ms step, 0.1 ms per verified row and 0.1 ms per drafted row: alpha 0.7 pays alone
  // (k = 3: 2.53 tokens in 1.6 ms against 1 in 1 ms), but in a batch of 8 the request's drafts
  // slow the other 7 rows: (7 + 2.53) / 1.6 ms < 8 / 1 ms.
  const SpeculationCosts costs{0.001, 0.0001, 0.0001};
  EXPECT_EQ(best_num_drafts(0.7, 4, costs, 0.1, 1), 3);
  EXPECT_EQ(best_num_drafts(0.7, 4, costs, 0.1, 8), 0);
  // The same with the batch's rule worked out by hand: best k by (n - 1 + E(k)) / (step + k x).
  for (int64_t n : {1, 2, 3, 4, 8}) {
    int32_t want = 0;
    double best = (static_cast<double>(n) + 0.1) / costs.step;
    for (int32_t k = 1; k <= 4; ++k) {
      const double rate = (static_cast<double>(n) - 1 + expected_tokens_per_step(0.7, k)) /
                          (costs.step + k * 0.0002);
      if (rate > best) want = k, best = rate;
    }
    EXPECT_EQ(best_num_drafts(0.7, 4, costs, 0.1, n), want) << n;
  }
  DraftPacer pacer;
  for (int i = 0; i < 20; ++i)
    pacer.record_verification(4, 3);  // alpha 0.75
  EXPECT_GT(pacer.next_num_drafts(4, costs, 1), 0);
  EXPECT_EQ(pacer.next_num_drafts(4, costs, 8), 0);
  // In a batch of 64 not even certain drafts pay ((63 + 5) / 1.8 ms < 64 / 1 ms): no probes.
  for (int i = 0; i < 40; ++i)
    EXPECT_EQ(pacer.next_num_drafts(4, costs, 64), 0) << i;
  // Alone again, a paused request probes (here it drafts at once: alpha 0.75 pays alone).
  EXPECT_GT(pacer.next_num_drafts(4, costs, 1), 0);
}

}  // namespace
}  // namespace pagoda::runner
