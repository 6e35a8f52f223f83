// The scheduler over a model whose every layer attends through a sliding window (a synthetic
// one: the FakeExecutor's next token depends on the last `window` tokens, and it reads only
// those back from its shadow KV store, so a block released while a query still reads it
// changes the output). A 4,096-token generation with a 512-token window and 16-token blocks
// holds at most 512 / 16 + 2 blocks at any step, in a cache far smaller than the sequence.
#include <gtest/gtest.h>

#include <algorithm>

#include "harness.h"

namespace pagoda::engine {
namespace {

using testing::Harness;

SchedulerConfig sliding_config(int32_t num_blocks, int32_t window) {
  SchedulerConfig c = testing::small_config(num_blocks, 16, 64, 4);
  c.kv.sliding_window = window;
  return c;
}

TEST(SchedulerSlidingWindow, FourThousandTokensHoldTheWindowOfBlocks) {
  constexpr int32_t kWindow = 512, kBlock = 16, kTokens = 4096;
  // 48 usable blocks: the whole sequence (100 + 4096 tokens) would need 263; a step of up to 64
  // tokens holds at most ceil((511 + 64) / 16) + 1 = 37.
  Harness h(sliding_config(49, kWindow));
  StopParams stop;
  stop.ignore_eos = true;
  const RequestId id = h.add(testing::make_prompt(100, 3), kTokens, 1, 0, stop);
  int64_t peak = 0, peak_table = 0;
  h.during_step = [&](const step::StepPlan& plan) {
    peak = std::max<int64_t>(peak, h.scheduler().kv().pool().num_used_blocks());
    for (const step::ScheduledRequest& s : plan.requests)
      peak_table = std::max<int64_t>(peak_table, static_cast<int64_t>(s.block_table.size()));
  };
  h.run_to_completion();
  EXPECT_EQ(h.result(id).outputs.size(), static_cast<size_t>(kTokens));
  h.expect_reference_outputs();
  EXPECT_LE(peak, kWindow / kBlock + 2);
  EXPECT_GE(peak, kWindow / kBlock);  // the window itself spans 32 blocks
  EXPECT_EQ(peak_table, (100 + kTokens - 1 + kBlock - 1) / kBlock);
  std::printf("peak blocks %lld (bound %d), table length %lld\n", static_cast<long long>(peak),
              kWindow / kBlock + 2, static_cast<long long>(peak_table));
  h.expect_pool_idle();
}

TEST(SchedulerSlidingWindow, WithoutTheWindowTheSameRequestDoesNotFit) {
  auto s = Scheduler::create(sliding_config(49, 0));
  ASSERT_TRUE(s.ok());
  NewRequest r;
  r.prompt_token_ids = testing::make_prompt(100, 3);
  r.stop.max_tokens = 4096;
  const auto id = s->add_request(std::move(r));
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.status().message().find("KV blocks"), std::string::npos);
}

// Adds `shared` + one token (40 outputs), runs to completion; returns its prefix-cache hit.
int64_t run_extended_prompt(Harness& h, const std::vector<TokenId>& shared,
                            const StopParams& stop) {
  std::vector<TokenId> prompt = shared;
  prompt.push_back(5);
  const RequestId c = h.add(prompt, 40, 1, 0, stop);
  int64_t hit = -1;
  h.during_step = [&](const step::StepPlan& plan) {
    for (const step::ScheduledRequest& s : plan.requests) {
      if (s.id == c && s.is_new && hit < 0) hit = s.num_computed_tokens;
    }
  };
  h.run_to_completion();
  h.during_step = nullptr;
  return hit;
}

// Requests sharing a long prompt after the first one finished: the second hits the blocks of
// the window (the earliest ones were released and evicted meanwhile by a third request) and
// produces the reference outputs; prefix caching off gives the same tokens.
TEST(SchedulerSlidingWindow, PrefixHitsAfterEvictionKeepReferenceOutputs) {
  constexpr int32_t kWindow = 64;
  for (const bool caching : {true, false}) {
    SchedulerConfig cfg = sliding_config(20, kWindow);
    cfg.kv.enable_prefix_caching = caching;
    Harness h(cfg);
    StopParams stop;
    stop.ignore_eos = true;
    const std::vector<TokenId> shared = testing::make_prompt(300, 11);
    const RequestId a = h.add(shared, 8, 1, 0, stop);
    h.run_to_completion();
    const RequestId b = h.add(testing::make_prompt(200, 12), 8, 1, 0, stop);  // evicts
    h.run_to_completion();
    const int64_t hit = run_extended_prompt(h, shared, stop);
    h.expect_reference_outputs();
    EXPECT_EQ(h.result(a).outputs.size(), 8u);
    EXPECT_EQ(h.result(b).outputs.size(), 8u);
    if (caching) {
      // 300 cached tokens: the hit stops at a block boundary with its window cached.
      EXPECT_GE(hit, 300 - 16 + 1 - 16);
      EXPECT_LE(hit, 300);
    } else {
      EXPECT_EQ(hit, 0);
    }
    h.expect_pool_idle();
  }
}

// A hybrid model (Gemma 2/3: local layers with a window, global layers without; two KV groups,
// each plan entry carrying the local layers' table beside the global one): the same 4,096-token
// generation holds at most 512 / 16 + 2 blocks in the local group at every step, while the
// global group keeps the whole sequence, in a pool that could not hold both groups' whole
// tables. The FakeExecutor writes every token through both tables and reads each query's window
// back through the local one (a released block still read fails the test).
TEST(SchedulerSlidingWindow, HybridLocalGroupHoldsTheWindowOfBlocks) {
  constexpr int32_t kWindow = 512, kBlock = 16, kTokens = 4096;
  // Global group: (100 + 4096) / 16 = 263 blocks at the end; local group: at most
  // ceil((511 + 64) / 16) + 1 = 37; both whole tables would need 526.
  SchedulerConfig cfg = testing::small_config(311, kBlock, 64, 4);
  cfg.kv.group_windows = {0, kWindow};
  Harness h(cfg);
  StopParams stop;
  stop.ignore_eos = true;
  const RequestId id = h.add(testing::make_prompt(100, 3), kTokens, 1, 0, stop);
  int64_t peak_local = 0, peak_global = 0;
  h.during_step = [&](const step::StepPlan& plan) {
    for (const step::ScheduledRequest& s : plan.requests) {
      ASSERT_EQ(s.sliding_block_table.size(), s.block_table.size());
      const auto held = [](const std::vector<kv::BlockId>& t) {
        return static_cast<int64_t>(
            std::count_if(t.begin(), t.end(), [](kv::BlockId b) { return b != kv::kNullBlockId; }));
      };
      EXPECT_EQ(held(s.block_table), static_cast<int64_t>(s.block_table.size()));
      peak_local = std::max(peak_local, held(s.sliding_block_table));
      peak_global = std::max(peak_global, held(s.block_table));
    }
  };
  h.run_to_completion();
  EXPECT_EQ(h.result(id).outputs.size(), static_cast<size_t>(kTokens));
  h.expect_reference_outputs();
  EXPECT_LE(peak_local, kWindow / kBlock + 2);
  EXPECT_GE(peak_local, kWindow / kBlock);
  EXPECT_EQ(peak_global, (100 + kTokens - 1 + kBlock - 1) / kBlock);
  std::printf("local group peak %lld blocks (bound %d), global group %lld\n",
              static_cast<long long>(peak_local), kWindow / kBlock + 2,
              static_cast<long long>(peak_global));
  h.expect_pool_idle();

  // Without the local window both groups keep every block: the request does not fit.
  cfg.kv.group_windows = {0, 0};
  auto s = Scheduler::create(cfg);
  ASSERT_TRUE(s.ok());
  NewRequest r;
  r.prompt_token_ids = testing::make_prompt(100, 3);
  r.stop.max_tokens = kTokens;
  EXPECT_FALSE(s->add_request(std::move(r)).ok());
}

// Prefix hits of a hybrid model: a hit needs the global group's blocks from the start and the
// local group's inside the window; outputs equal prefix caching off.
TEST(SchedulerSlidingWindow, HybridPrefixHitsKeepReferenceOutputs) {
  for (const bool caching : {true, false}) {
    SchedulerConfig cfg = testing::small_config(80, 16, 64, 4);
    cfg.kv.group_windows = {0, 64};
    cfg.kv.enable_prefix_caching = caching;
    Harness h(cfg);
    StopParams stop;
    stop.ignore_eos = true;
    const std::vector<TokenId> shared = testing::make_prompt(300, 11);
    const RequestId a = h.add(shared, 8, 1, 0, stop);
    h.run_to_completion();
    const int64_t hit = run_extended_prompt(h, shared, stop);
    h.expect_reference_outputs();
    EXPECT_EQ(h.result(a).outputs.size(), 8u);
    EXPECT_EQ(hit, caching ? 288 : 0);  // 18 full blocks of the 300 shared tokens
    h.expect_pool_idle();
  }
}

TEST(SchedulerSlidingWindow, MoreThanTwoGroupsAreRefused) {
  SchedulerConfig cfg = testing::small_config(80, 16, 64, 4);
  cfg.kv.group_windows = {0, 64, 32};
  EXPECT_FALSE(Scheduler::create(cfg).ok());
  cfg.kv.group_windows = {64, 0};
  EXPECT_FALSE(Scheduler::create(cfg).ok());
}

}  // namespace
}  // namespace pagoda::engine
