// Randomised scheduler workout over many seeds and configurations (block sizes, tiny caches that
// force preemption, budgets, thresholds, chunking on/off, FCFS/priority, prefix caching on/off,
// n > 1, aborts at random moments including while a plan is in flight). Checked every step:
// the scheduler's own invariants, the plan contract (FakeExecutor + Harness), and that no running
// decode is skipped unless the step preempted. Checked at the end: every sequence that finished
// normally produced exactly the reference outputs, and the KV pool is back to its initial state.
// The speculative variant adds drafts (the FakeExecutor proposes partly wrong continuations and
// verifies them greedily against the KV store): outputs must still be the reference, and after
// every step no request holds a block past its known tokens (rejected drafts rolled back).
// The sliding-window variant gives the model a small window on every layer: blocks behind it are
// released while requests run (the FakeExecutor reads only the window, and fails on a released
// block a query still reads), prefix hits may skip evicted blocks before the window, and each
// request holds no more than KvManager::max_blocks_held. The hybrid variant gives the model
// local and global layers (two KV groups): the FakeExecutor writes both tables and reads the
// local window back through the local one, which must hold what the global table holds.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "harness.h"

namespace pagoda::engine {
namespace {

using testing::Harness;

struct Tally {
  int64_t preemptions = 0;
  int64_t hits = 0;
  int64_t copies = 0;
  int64_t chunked = 0;
  int64_t aborts = 0;
  int64_t finished = 0;
  int64_t draft_tokens = 0;
  int64_t accepted = 0;
  int64_t released = 0;  // steps in which some running request had released blocks
};

void workout(uint32_t seed, Tally& tally, bool speculative = false, bool sliding = false,
             bool hybrid = false) {
  std::mt19937 rng(seed);
  SchedulerConfig cfg;
  cfg.kv.block_size = 1 + static_cast<int32_t>(rng() % 8);
  cfg.kv.num_blocks = 2 + static_cast<int32_t>(rng() % 48);
  cfg.kv.enable_prefix_caching = rng() % 4 != 0;
  cfg.max_num_seqs = 1 + static_cast<int32_t>(rng() % 6);
  cfg.max_num_batched_tokens = cfg.max_num_seqs + static_cast<int32_t>(rng() % 40);
  cfg.enable_chunked_prefill = rng() % 5 != 0;
  cfg.long_prefill_token_threshold = rng() % 3 == 0 ? 1 + static_cast<int32_t>(rng() % 10) : 0;
  cfg.policy = rng() % 2 == 0 ? SchedulingPolicy::kFcfs : SchedulingPolicy::kPriority;
  int32_t num_proposed = 0;
  if (speculative) {
    cfg.speculative.num_speculative_tokens =
        std::min<int32_t>(1 + static_cast<int32_t>(rng() % 6), cfg.max_num_batched_tokens - 1);
    cfg.speculative.disable_batch_tokens = rng() % 3 == 0 ? static_cast<int32_t>(rng() % 8) : 0;
    cfg.speculative.adaptive = rng() % 2 == 0;
    num_proposed = 1 + static_cast<int32_t>(rng() % 8);
  }
  if (sliding) cfg.kv.sliding_window = 1 + static_cast<int32_t>(rng() % 12);
  if (hybrid) cfg.kv.group_windows = {0, 1 + static_cast<int32_t>(rng() % 12)};
  Harness h(cfg);
  h.executor().num_proposed_drafts = num_proposed;
  Scheduler& s = h.scheduler();
  const int64_t capacity = static_cast<int64_t>(cfg.kv.num_blocks - 1) * cfg.kv.block_size;

  // Shared prefixes so prompts collide in the prefix cache.
  std::vector<std::vector<TokenId>> prefixes;
  for (int i = 0; i < 3; ++i) {
    prefixes.push_back(testing::make_prompt(1 + static_cast<int>(rng() % 24), seed * 7 + i));
  }
  std::set<RequestId> live;
  int added = 0;
  const int num_requests = 8 + static_cast<int>(rng() % 20);
  for (int step = 0; step < 5000; ++step) {
    // Arrivals.
    while (added < num_requests && rng() % 3 == 0) {
      std::vector<TokenId> prompt = prefixes[rng() % prefixes.size()];
      const auto extra = testing::make_prompt(static_cast<int>(rng() % 12), seed * 1000 + added);
      prompt.insert(prompt.end(), extra.begin(), extra.end());
      int64_t max_tokens = 1 + static_cast<int64_t>(rng() % 16);
      int64_t limit = capacity - static_cast<int64_t>(prompt.size());
      if (!cfg.enable_chunked_prefill) {
        limit = std::min<int64_t>(limit,
                                  cfg.max_num_batched_tokens - static_cast<int64_t>(prompt.size()));
      }
      // Hybrid: both groups' blocks must fit (the scheduler's admission rule).
      while (hybrid && limit >= 1 &&
             s.kv().max_blocks_held(static_cast<int64_t>(prompt.size()) + limit,
                                    cfg.max_num_batched_tokens) > cfg.kv.num_blocks - 1) {
        --limit;
      }
      ++added;
      if (limit < 1) continue;  // would be rejected: covered by the unit tests
      max_tokens = std::min(max_tokens, limit);
      StopParams stop;
      if (rng() % 2 == 0) stop.eos_token_ids = {static_cast<TokenId>(rng() % testing::kVocab)};
      if (rng() % 4 == 0) stop.min_tokens = static_cast<int32_t>(rng() % (max_tokens + 1));
      const int32_t n = rng() % 4 == 0 ? 1 + static_cast<int32_t>(rng() % cfg.max_num_seqs) : 1;
      live.insert(h.add(prompt, static_cast<int32_t>(max_tokens), n,
                        static_cast<int32_t>(rng() % 3), stop));
    }
    // Random aborts between steps.
    if (!live.empty() && rng() % 40 == 0) {
      auto it = live.begin();
      std::advance(it, rng() % live.size());
      if (s.abort(*it).ok()) ++tally.aborts;
      live.erase(it);
    }
    if (!s.has_unfinished_requests()) {
      if (added >= num_requests) break;
      continue;
    }
    // Which running requests are decoding now (they must not be skipped).
    std::vector<RequestId> decoding;
    for (RequestId id : s.running_ids()) {
      const Request* r = s.find(id);
      if (r->num_tokens() - r->num_computed_tokens() == 1) decoding.push_back(id);
    }
    // The plan is checked, and sometimes a request aborted, while it is in flight (from inside
    // the executor, between schedule and settle).
    h.during_step = [&](const step::StepPlan& plan) {
      if (plan.preempted_ids.empty()) {
        for (RequestId id : decoding) {
          bool found = false;
          for (const step::ScheduledRequest& e : plan.requests)
            found |= e.id == id;
          EXPECT_TRUE(found) << "seed " << seed << ": decode of " << id << " skipped";
        }
      }
      if (!live.empty() && rng() % 30 == 0) {
        auto it = live.begin();
        std::advance(it, rng() % live.size());
        if (s.abort(*it).ok()) ++tally.aborts;
        live.erase(it);
      }
    };
    const StepResult r = h.step();
    const step::StepPlan& plan = r.plan;
    tally.preemptions += static_cast<int64_t>(plan.preempted_ids.size());
    tally.copies += static_cast<int64_t>(plan.block_copies.size());
    for (const step::ScheduledRequest& e : plan.requests) {
      if (e.is_new && e.num_computed_tokens > 0 && e.sample_index == 0) {
        tally.hits += e.num_computed_tokens;
      }
      if (e.num_samples == 0) ++tally.chunked;
    }
    for (const RequestEvent& ev : r.events) {
      if (ev.finish_reason) {
        live.erase(ev.id);
        ++tally.finished;
      }
      if (ev.parent_id && ev.num_output_tokens == 1 && !ev.finish_reason) live.insert(ev.id);
    }
    const Status st = s.check_invariants();
    ASSERT_TRUE(st.ok()) << "seed " << seed << ": " << st.to_string();
    bool any_released = false;
    for (RequestId id : s.running_ids()) {
      const Request* req = s.find(id);
      ASSERT_LE(static_cast<int64_t>(s.kv().block_table(id).size()),
                s.kv().num_blocks_for_tokens(req->num_tokens()))
          << "seed " << seed << ": request " << id << " keeps blocks past its tokens";
      const int64_t held = s.kv().num_held_blocks(id);
      const int32_t local = s.kv().num_groups() - 1;  // the windowed group, if any
      any_released |= s.kv().num_held_blocks(id, local) <
                      static_cast<int64_t>(s.kv().block_table(id, local).size());
      ASSERT_LE(held, s.kv().max_blocks_held(req->num_tokens(), cfg.max_num_batched_tokens))
          << "seed " << seed << ": request " << id << " holds blocks behind its window";
    }
    tally.released += any_released ? 1 : 0;
    if (::testing::Test::HasFailure()) return;
  }
  ASSERT_FALSE(s.has_unfinished_requests()) << "seed " << seed << " did not drain";
  h.expect_reference_outputs();
  h.expect_pool_idle();
  tally.draft_tokens += s.stats().spec_decode.num_draft_tokens;
  tally.accepted += s.stats().spec_decode.num_accepted_tokens;
}

TEST(SchedulerRandom, ManySeedsProduceReferenceOutputsAndReturnThePool) {
  Tally tally;
  for (uint32_t seed = 0; seed < 300; ++seed) {
    workout(seed, tally);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "first failing seed " << seed;
      return;
    }
  }
  // The workload must actually reach every mechanism.
  EXPECT_GT(tally.preemptions, 0);
  EXPECT_GT(tally.hits, 0);
  EXPECT_GT(tally.copies, 0);
  EXPECT_GT(tally.chunked, 0);
  EXPECT_GT(tally.aborts, 0);
  EXPECT_GT(tally.finished, 0);
  std::printf(
      "preemptions %lld, hit tokens %lld, copies %lld, chunks %lld, aborts %lld, "
      "finished %lld\n",
      static_cast<long long>(tally.preemptions), static_cast<long long>(tally.hits),
      static_cast<long long>(tally.copies), static_cast<long long>(tally.chunked),
      static_cast<long long>(tally.aborts), static_cast<long long>(tally.finished));
}

TEST(SchedulerRandom, SpeculativeDraftsKeepReferenceOutputsAndRollBackTheirBlocks) {
  Tally tally;
  for (uint32_t seed = 0; seed < 300; ++seed) {
    workout(seed, tally, /*speculative=*/true);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "first failing seed " << seed;
      return;
    }
  }
  EXPECT_GT(tally.preemptions, 0);
  EXPECT_GT(tally.copies, 0);
  EXPECT_GT(tally.aborts, 0);
  // Drafts were verified, some accepted and some rejected.
  EXPECT_GT(tally.accepted, 0);
  EXPECT_LT(tally.accepted, tally.draft_tokens);
  std::printf("draft tokens %lld, accepted %lld, preemptions %lld, finished %lld\n",
              static_cast<long long>(tally.draft_tokens), static_cast<long long>(tally.accepted),
              static_cast<long long>(tally.preemptions), static_cast<long long>(tally.finished));
}

// The windowed variants (every layer sliding, or hybrid groups): drafts on odd seeds; blocks
// were released, hit, copied and preempted somewhere over the seeds.
void windowed_workouts(uint32_t num_seeds, bool hybrid) {
  Tally tally;
  for (uint32_t seed = 0; seed < num_seeds; ++seed) {
    workout(seed, tally, /*speculative=*/seed % 2 == 1, /*sliding=*/!hybrid, hybrid);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "first failing seed " << seed;
      return;
    }
  }
  EXPECT_GT(tally.released, 0);
  EXPECT_GT(tally.preemptions, 0);
  EXPECT_GT(tally.hits, 0);
  EXPECT_GT(tally.copies, 0);
  EXPECT_GT(tally.accepted, 0);
  std::printf("steps with released blocks %lld, hit tokens %lld, preemptions %lld, copies %lld\n",
              static_cast<long long>(tally.released), static_cast<long long>(tally.hits),
              static_cast<long long>(tally.preemptions), static_cast<long long>(tally.copies));
}

TEST(SchedulerRandom, SlidingWindowReleasesBlocksAndKeepsReferenceOutputs) {
  windowed_workouts(300, /*hybrid=*/false);
}

TEST(SchedulerRandom, HybridGroupsReleaseLocalBlocksAndKeepReferenceOutputs) {
  windowed_workouts(200, /*hybrid=*/true);
}

}  // namespace
}  // namespace pagoda::engine
