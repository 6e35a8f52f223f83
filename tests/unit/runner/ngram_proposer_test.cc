// NgramProposer (prompt lookup), checked against a brute-force restatement of its rule: the
// longest suffix of n in [min_n, max_n] tokens that occurs earlier, its latest occurrence, and the
// k tokens after it (continued periodically past the end).
#include "runner/ngram_proposer.h"

#include <gtest/gtest.h>

#include <random>

namespace pagoda::runner {
namespace {

std::vector<int32_t> brute_force(const std::vector<int32_t>& t, int min_n, int max_n, int k) {
  const int size = static_cast<int>(t.size());
  for (int n = max_n; n >= min_n; --n) {
    if (n >= size) continue;
    for (int start = size - n - 1; start >= 0; --start) {
      bool match = true;
      for (int i = 0; i < n; ++i)
        match = match && t[start + i] == t[size - n + i];
      if (!match) continue;
      std::vector<int32_t> seq = t;  // extend by copying from the match: periodic
      std::vector<int32_t> out;
      for (int m = 0; m < k; ++m) {
        out.push_back(seq[start + n + m]);
        seq.push_back(out.back());
      }
      return out;
    }
  }
  return {};
}

TEST(NgramProposer, ProposesTheContinuationOfTheLatestLongestMatch) {
  auto p = NgramProposer::create({1, 3, 4});
  ASSERT_TRUE(p.ok());
  std::vector<int32_t> out;
  // "5 6 7 8 | 1 5 6 7 9 | 2 5 6 7": the 3-gram "5 6 7" last occurred before 9.
  p->propose(std::vector<int32_t>{5, 6, 7, 8, 1, 5, 6, 7, 9, 2, 5, 6, 7}, out);
  EXPECT_EQ(out, (std::vector<int32_t>{9, 2, 5, 6}));
  p->propose(std::vector<int32_t>{1, 2, 3}, out);  // nothing recurs
  EXPECT_TRUE(out.empty());
  p->propose(std::vector<int32_t>{4, 4}, out);  // a repeated token continues itself
  EXPECT_EQ(out, (std::vector<int32_t>{4, 4, 4, 4}));
}

TEST(NgramProposer, EqualsTheBruteForceRuleOnRandomSequences) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    const int min_n = 1 + static_cast<int>(rng() % 3);
    const int max_n = min_n + static_cast<int>(rng() % 3);
    const int k = 1 + static_cast<int>(rng() % 6);
    auto p = NgramProposer::create({min_n, max_n, k});
    ASSERT_TRUE(p.ok());
    std::vector<int32_t> t(static_cast<size_t>(rng() % 40));
    for (auto& x : t)
      x = static_cast<int32_t>(rng() % 4);
    std::vector<int32_t> out;
    p->propose(t, out);
    ASSERT_EQ(out, brute_force(t, min_n, max_n, k)) << "trial " << trial;
  }
}

TEST(NgramProposer, RejectsBadConfigNamingTheField) {
  auto a = NgramProposer::create({0, 3, 4});
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("min_n"), std::string::npos);
  auto b = NgramProposer::create({3, 2, 4});
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("max_n"), std::string::npos);
  auto c = NgramProposer::create({1, 2, 0});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("num_speculative_tokens"), std::string::npos);
}

}  // namespace
}  // namespace pagoda::runner
