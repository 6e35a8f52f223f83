// select_beams and BeamHypotheses (engine/beam_search.h) on hand-computed cases from the
// definitions of transformers' BeamSearchScorer.process and BeamHypotheses.
#include "engine/beam_search.h"

#include <gtest/gtest.h>

#include <cmath>

namespace pagoda::engine {
namespace {

using ES = BeamSearchParams::EarlyStopping;
using Top = std::vector<std::pair<int32_t, float>>;

// Beam A (cum -1.0) and B (cum -1.2): continuation scores A5 -1.1, B5 -1.25, B9 -1.4,
// A6 -1.5, B2 -1.5 (tie: the earlier beam first), A7 -3.0, A8 -4.0, B3 -5.2.
const Top kTopA = {{5, -0.1f}, {6, -0.5f}, {7, -2.0f}, {8, -3.0f}};
const Top kTopB = {{5, -0.05f}, {9, -0.2f}, {2, -0.3f}, {3, -4.0f}};

TEST(SelectBeams, StopTokensRankedInWidthFinish) {
  const BeamCandidates beams[] = {{-1.0, kTopA}, {-1.2, kTopB}};
  const BeamStep s = select_beams(beams, 2, [](TokenId t) { return t == 5; });
  ASSERT_EQ(s.finished.size(), 2u);
  EXPECT_EQ(s.finished[0].parent, 0u);
  EXPECT_NEAR(s.finished[0].cumulative_logprob, -1.1, 1e-6);
  EXPECT_EQ(s.finished[1].parent, 1u);
  ASSERT_EQ(s.next.size(), 2u);
  EXPECT_EQ(s.next[0].parent, 1u);
  EXPECT_EQ(s.next[0].token, 9);
  EXPECT_NEAR(s.next[0].cumulative_logprob, -1.4, 1e-6);
  EXPECT_EQ(s.next[1].parent, 0u);
  EXPECT_EQ(s.next[1].token, 6);
}

TEST(SelectBeams, TakesTheBestAcrossBeams) {
  const BeamCandidates beams[] = {{-1.0, kTopA}, {-1.2, kTopB}};
  const BeamStep s = select_beams(beams, 3, [](TokenId) { return false; });
  ASSERT_EQ(s.next.size(), 3u);
  EXPECT_EQ(s.next[0].token, 5);  // A5
  EXPECT_EQ(s.next[0].parent, 0u);
  EXPECT_EQ(s.next[1].token, 5);  // B5
  EXPECT_EQ(s.next[1].parent, 1u);
  EXPECT_EQ(s.next[2].token, 9);  // B9
  EXPECT_TRUE(s.finished.empty());
}

TEST(SelectBeams, StopTokenRankedAtOrPastWidthIsDropped) {
  const BeamCandidates beams[] = {{-1.0, kTopA}, {-1.2, kTopB}};
  const BeamStep s = select_beams(beams, 1, [](TokenId t) { return t == 5; });
  ASSERT_EQ(s.finished.size(), 1u);  // A5 (rank 0); B5 (rank 1 >= width 1) dropped
  EXPECT_EQ(s.finished[0].parent, 0u);
  // Only the first 2 x width candidates are walked: B9 (rank 2) is not among them, so no beam
  // lives on (transformers raises here; with one EOS id it cannot happen).
  EXPECT_TRUE(s.next.empty());
  // Width 2: ranks 0 and 1 (A5, B5) finish, ranks 2 and 3 (B9, A6) live on.
  const BeamStep s2 = select_beams(beams, 2, [](TokenId t) { return t == 5; });
  EXPECT_EQ(s2.finished.size(), 2u);
  ASSERT_EQ(s2.next.size(), 2u);
  EXPECT_EQ(s2.next[0].token, 9);
}

TEST(BeamScore, PublishedFormula) {
  EXPECT_DOUBLE_EQ(beam_score(-6.0, 3, 2.0f), -6.0 / 9.0);
  EXPECT_DOUBLE_EQ(beam_score(-6.0, 4, -0.5f), -6.0 * 2.0);
  EXPECT_DOUBLE_EQ(beam_score(-6.0, 5, 0.0f), -6.0);
}

BeamHypothesis hyp(int n, double cum) {
  BeamHypothesis h;
  h.output_token_ids.assign(static_cast<size_t>(n), 1);
  h.cumulative_logprob = cum;
  return h;
}

TEST(BeamHypotheses, KeepsTheBestAndStopsAsDefined) {
  BeamSearchParams p;
  p.beam_width = 2;
  p.length_penalty = 1.0f;
  BeamHypotheses h(p, 10);
  h.add(hyp(3, -3.0));                 // score -1
  EXPECT_FALSE(h.is_done(-100.0, 3));  // fewer than width hypotheses
  h.add(hyp(2, -4.0));                 // -2
  h.add(hyp(1, -2.5));                 // -2.5: worse than both, dropped
  ASSERT_EQ(h.size(), 2u);
  const auto sorted = h.sorted();
  EXPECT_DOUBLE_EQ(sorted[0].score, -1.0);
  EXPECT_DOUBLE_EQ(sorted[1].score, -2.0);
  // false: the best live beam as if it ended now (length 3).
  EXPECT_FALSE(h.is_done(-5.0, 3));  // -1.67 > worst -2
  EXPECT_TRUE(h.is_done(-7.0, 3));   // -2.33 <= -2
  p.early_stopping = ES::kTrue;
  BeamHypotheses t(p, 10);
  t.add(hyp(3, -3.0));
  t.add(hyp(2, -4.0));
  EXPECT_TRUE(t.is_done(-0.1, 3));
  // "never" with length_penalty > 0: the best reachable length (max_tokens 10).
  p.early_stopping = ES::kNever;
  BeamHypotheses nv(p, 10);
  nv.add(hyp(3, -3.0));
  nv.add(hyp(2, -4.0));
  EXPECT_FALSE(nv.is_done(-7.0, 3));  // -0.7 > -2
  EXPECT_TRUE(nv.is_done(-25.0, 3));  // -2.5 <= -2
  // ... and with length_penalty <= 0, the live length.
  p.length_penalty = -0.5f;
  BeamHypotheses neg(p, 10);
  neg.add(hyp(4, -1.0));               // -1 * 2 = -2
  neg.add(hyp(1, -3.0));               // -3
  EXPECT_FALSE(neg.is_done(-1.0, 4));  // -2 > -3
  EXPECT_TRUE(neg.is_done(-2.0, 4));   // -4 <= -3
}

}  // namespace
}  // namespace pagoda::engine
