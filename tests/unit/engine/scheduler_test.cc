// Scheduler behaviour, one property per test, with the FakeExecutor playing the runner: budgets,
// chunked prefill, decodes never stalled by a long prompt, preemption order and recompute,
// admission failures, prefix-cache hits, aborts in every state, priorities, n > 1 forks with
// copy-on-write, stop conditions, and runner failures.
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "harness.h"

namespace pagoda::engine {
namespace {

using testing::Harness;
using testing::make_prompt;
using testing::small_config;

const step::ScheduledRequest* entry(const step::StepPlan& plan, RequestId id) {
  for (const step::ScheduledRequest& s : plan.requests) {
    if (s.id == id) return &s;
  }
  return nullptr;
}

TEST(SchedulerConfig, RejectsBadValuesNamingTheField) {
  SchedulerConfig c = small_config(64, 16, 8, 16);  // budget < max_num_seqs
  auto a = Scheduler::create(c);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("max_num_batched_tokens"), std::string::npos);
  c = small_config(1, 16, 64, 16);
  auto b = Scheduler::create(c);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("num_blocks"), std::string::npos);
  c = small_config(64, 16, 64, 0);
  EXPECT_FALSE(Scheduler::create(c).ok());
}

TEST(Scheduler, RejectsRequestsThatCanNeverRun) {
  SchedulerConfig c = small_config(9, 16, 256, 8);  // 8 usable blocks = 128 tokens
  c.max_model_len = 100;
  c.max_num_waiting = 2;
  auto s = std::move(Scheduler::create(c)).value();
  const auto add = [&](std::vector<TokenId> prompt, int32_t max_tokens, int32_t n = 1) {
    NewRequest r;
    r.prompt_token_ids = std::move(prompt);
    r.stop.max_tokens = max_tokens;
    r.n = n;
    return s.add_request(std::move(r));
  };
  const auto message = [](const Result<RequestId>& r) { return r.status().message(); };
  auto empty = add({}, 4);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(message(empty).find("prompt_token_ids"), std::string::npos);
  auto negative = add({1, -5}, 4);
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(message(negative).find("prompt_token_ids[1]"), std::string::npos);
  EXPECT_FALSE(add({1}, 0).ok());
  auto too_long = add(make_prompt(90, 1), 20);
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(message(too_long).find("max_model_len"), std::string::npos);
  EXPECT_FALSE(add({1}, 4, 9).ok());  // n > max_num_seqs
  EXPECT_FALSE(add({1}, 4, 0).ok());

  c.max_model_len = 0;
  auto s2 = std::move(Scheduler::create(c)).value();
  NewRequest big;
  big.prompt_token_ids = make_prompt(120, 2);
  big.stop.max_tokens = 9;  // 129 tokens = 9 blocks > 8
  auto r = s2.add_request(std::move(big));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("KV blocks"), std::string::npos);
  NewRequest fits;
  fits.prompt_token_ids = make_prompt(120, 2);
  fits.stop.max_tokens = 8;  // exactly 128 tokens
  EXPECT_TRUE(s2.add_request(std::move(fits)).ok());

  // The waiting queue bound.
  EXPECT_TRUE(add({1}, 2).ok());
  EXPECT_TRUE(add({1}, 2).ok());
  auto full = add({1}, 2);
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.status().code(), StatusCode::kResourceExhausted);

  // Chunking off: the whole sequence must fit one step.
  SchedulerConfig nc = small_config(64, 16, 32, 8);
  nc.enable_chunked_prefill = false;
  auto s3 = std::move(Scheduler::create(nc)).value();
  NewRequest chunky;
  chunky.prompt_token_ids = make_prompt(30, 3);
  chunky.stop.max_tokens = 3;
  auto rc = s3.add_request(std::move(chunky));
  ASSERT_FALSE(rc.ok());
  EXPECT_NE(rc.status().message().find("max_num_batched_tokens"), std::string::npos);
}

TEST(Scheduler, ChunksALongPromptWithinTheBudget) {
  Harness h(small_config(64, 16, 32, 4));
  const RequestId id = h.add(make_prompt(100, 7), 3);
  std::vector<size_t> chunks;
  std::vector<int32_t> samples;
  while (h.scheduler().has_unfinished_requests()) {
    const StepResult r = h.step();
    ASSERT_EQ(r.plan.requests.size(), 1u);
    chunks.push_back(r.plan.requests[0].token_ids.size());
    samples.push_back(r.plan.requests[0].num_samples);
    EXPECT_EQ(r.plan.requests[0].is_new, chunks.size() == 1);
  }
  EXPECT_EQ(chunks, (std::vector<size_t>{32, 32, 32, 4, 1, 1}));
  EXPECT_EQ(samples, (std::vector<int32_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(h.result(id).outputs, h.expected(id));
  EXPECT_EQ(h.result(id).finish, FinishReason::kLength);
  h.expect_pool_idle();
}

TEST(Scheduler, LongPrefillThresholdCapsEachChunk) {
  SchedulerConfig c = small_config(64, 16, 64, 4);
  c.long_prefill_token_threshold = 24;
  Harness h(c);
  const RequestId a = h.add(make_prompt(50, 1), 2);
  const RequestId b = h.add(make_prompt(10, 2), 2);
  const StepResult first = h.step();
  // Both start in the same step: a's prompt is capped, leaving room for b.
  ASSERT_NE(entry(first.plan, a), nullptr);
  ASSERT_NE(entry(first.plan, b), nullptr);
  EXPECT_EQ(entry(first.plan, a)->token_ids.size(), 24u);
  EXPECT_EQ(entry(first.plan, b)->token_ids.size(), 10u);
  h.run_to_completion();
  h.expect_reference_outputs();
}

TEST(Scheduler, ChunkingOffComputesAPromptInOneStep) {
  SchedulerConfig c = small_config(64, 16, 64, 4);
  c.enable_chunked_prefill = false;
  Harness h(c);
  const RequestId a = h.add(make_prompt(40, 1), 4);
  const RequestId b = h.add(make_prompt(40, 2), 4);  // does not fit next to a: waits
  const StepResult first = h.step();
  ASSERT_EQ(first.plan.requests.size(), 1u);
  EXPECT_EQ(first.plan.requests[0].id, a);
  EXPECT_EQ(first.plan.requests[0].token_ids.size(), 40u);
  const StepResult second = h.step();
  ASSERT_NE(entry(second.plan, b), nullptr);
  EXPECT_EQ(entry(second.plan, b)->token_ids.size(), 40u);
  h.run_to_completion();
  h.expect_reference_outputs();
}

TEST(Scheduler, ALongPrefillNeverStallsARunningDecode) {
  Harness h(small_config(128, 16, 64, 4));
  const RequestId a = h.add(make_prompt(5, 1), 40);
  h.step();  // a's prompt
  const RequestId b = h.add(make_prompt(600, 2), 2);
  int steps_with_b = 0;
  while (h.scheduler().find(a) != nullptr) {
    const StepResult r = h.step();
    const step::ScheduledRequest* ea = entry(r.plan, a);
    ASSERT_NE(ea, nullptr) << "decode skipped at step " << r.plan.step_id;
    EXPECT_EQ(ea->token_ids.size(), 1u);
    if (const step::ScheduledRequest* eb = entry(r.plan, b)) {
      ++steps_with_b;
      EXPECT_LE(eb->token_ids.size(), 63u);
    }
  }
  EXPECT_GT(steps_with_b, 5);
  h.run_to_completion();
  h.expect_reference_outputs();
  h.expect_pool_idle();
}

// 6 usable blocks of 4 tokens; three 4-token prompts decoding 12 tokens each (4 blocks each).
TEST(Scheduler, PreemptsTheLatestAdmittedAndRecomputesToTheSameOutputs) {
  Harness h(small_config(7, 4, 64, 4));
  const RequestId a = h.add(make_prompt(4, 1), 12);
  const RequestId b = h.add(make_prompt(4, 2), 12);
  const RequestId c = h.add(make_prompt(4, 3), 12);
  std::vector<RequestId> preempted;
  bool checked_c = false;
  for (int i = 0; i < 200 && h.scheduler().has_unfinished_requests(); ++i) {
    const StepResult r = h.step();
    preempted.insert(preempted.end(), r.plan.preempted_ids.begin(), r.plan.preempted_ids.end());
    if (!checked_c && !preempted.empty()) {
      checked_c = true;
      EXPECT_EQ(preempted, std::vector<RequestId>{c});
      const Request* rc = h.scheduler().find(c);
      ASSERT_NE(rc, nullptr);
      EXPECT_EQ(rc->status(), RequestStatus::kPreempted);
      EXPECT_EQ(rc->num_computed_tokens(), 0);
      EXPECT_GT(rc->num_output_tokens(), 0);  // its outputs are kept and recomputed
      EXPECT_FALSE(h.scheduler().kv().contains(c));
      EXPECT_EQ(entry(r.plan, c), nullptr);
    }
  }
  ASSERT_GE(preempted.size(), 2u);
  EXPECT_EQ(preempted[1], b);  // then the next-latest
  EXPECT_EQ(h.scheduler().stats().num_preemptions, static_cast<int64_t>(preempted.size()));
  h.run_to_completion();
  for (RequestId id : {a, b, c})
    EXPECT_EQ(h.result(id).outputs, h.expected(id));
  h.expect_pool_idle();
}

TEST(Scheduler, PriorityPolicyAdmitsAndPreemptsByPriority) {
  SchedulerConfig cfg = small_config(7, 4, 64, 4);
  cfg.policy = SchedulingPolicy::kPriority;
  Harness h(cfg);
  const RequestId low = h.add(make_prompt(4, 1), 12, 1, /*priority=*/5);
  const RequestId high = h.add(make_prompt(4, 2), 12, 1, /*priority=*/0);
  const RequestId mid = h.add(make_prompt(4, 3), 12, 1, /*priority=*/2);
  h.step();
  EXPECT_EQ(h.scheduler().running_ids(), (std::vector<RequestId>{high, mid, low}));
  std::vector<RequestId> preempted;
  while (h.scheduler().has_unfinished_requests()) {
    const StepResult r = h.step();
    preempted.insert(preempted.end(), r.plan.preempted_ids.begin(), r.plan.preempted_ids.end());
  }
  ASSERT_GE(preempted.size(), 2u);
  EXPECT_EQ(preempted[0], low);
  EXPECT_EQ(preempted[1], mid);
  h.expect_reference_outputs();
  h.expect_pool_idle();
}

// The victim was already chosen earlier in the same step: its entry and budget are taken back.
TEST(Scheduler, PreemptingARequestChosenEarlierInTheStepUndoesIt) {
  SchedulerConfig cfg = small_config(7, 4, 64, 4);  // 6 usable blocks
  cfg.policy = SchedulingPolicy::kPriority;
  Harness h(cfg);
  const RequestId low = h.add(make_prompt(4, 1), 12, 1, /*priority=*/5);
  h.step();
  const RequestId high = h.add(make_prompt(6, 2), 12, 1, /*priority=*/0);
  bool seen = false;
  while (h.scheduler().has_unfinished_requests()) {
    const StepResult r = h.step();
    if (!r.plan.preempted_ids.empty() && !seen) {
      seen = true;
      // low is decoding and comes first in the step, then high needs a block: low goes.
      EXPECT_EQ(r.plan.preempted_ids, std::vector<RequestId>{low});
      EXPECT_EQ(entry(r.plan, low), nullptr);
      ASSERT_NE(entry(r.plan, high), nullptr);
      EXPECT_EQ(r.plan.num_scheduled_tokens, 1);
    }
  }
  EXPECT_TRUE(seen);
  h.expect_reference_outputs();
  h.expect_pool_idle();
}

TEST(Scheduler, FcfsVictimChosenAsADecodeBeforeAPrefillIsUndone) {
  SchedulerConfig cfg = small_config(12, 4, 16, 4);  // 11 usable blocks
  cfg.long_prefill_token_threshold = 8;
  Harness h(cfg);
  const RequestId p = h.add(make_prompt(40, 1), 1);
  const RequestId d = h.add(make_prompt(4, 2), 8);
  bool seen = false;
  while (h.scheduler().has_unfinished_requests()) {
    const StepResult r = h.step();
    if (!r.plan.preempted_ids.empty() && !seen) {
      seen = true;
      EXPECT_EQ(r.plan.preempted_ids, std::vector<RequestId>{d});
      EXPECT_EQ(entry(r.plan, d), nullptr);
      ASSERT_NE(entry(r.plan, p), nullptr);
      EXPECT_EQ(r.plan.num_scheduled_tokens, 8);
    }
  }
  EXPECT_TRUE(seen);
  h.expect_reference_outputs();
  h.expect_pool_idle();
}

TEST(Scheduler, PriorityOrderIsValueThenArrival) {
  SchedulerConfig cfg = small_config(64, 4, 64, 1);  // one sequence at a time
  cfg.policy = SchedulingPolicy::kPriority;
  Harness h(cfg);
  const RequestId a = h.add(make_prompt(3, 1), 1, 1, 3);
  const RequestId b = h.add(make_prompt(3, 2), 1, 1, 1);
  const RequestId c = h.add(make_prompt(3, 3), 1, 1, 3);
  const RequestId d = h.add(make_prompt(3, 4), 1, 1, 0);
  std::vector<RequestId> order;
  while (h.scheduler().has_unfinished_requests()) {
    const StepResult r = h.step();
    for (const step::ScheduledRequest& s : r.plan.requests)
      order.push_back(s.id);
  }
  EXPECT_EQ(order, (std::vector<RequestId>{d, b, a, c}));
}

TEST(Scheduler, FcfsAdmitsInArrivalOrderWithoutSkipping) {
  Harness h(small_config(64, 4, 64, 1));
  const RequestId a = h.add(make_prompt(3, 1), 2, 1, 9);
  const RequestId b = h.add(make_prompt(3, 2), 2, 1, 0);
  std::vector<RequestId> order;
  while (h.scheduler().has_unfinished_requests()) {
    for (const step::ScheduledRequest& s : h.step().plan.requests) {
      if (order.empty() || order.back() != s.id) order.push_back(s.id);
    }
  }
  EXPECT_EQ(order, (std::vector<RequestId>{a, b}));
}

// A closed SamplingGate: the prompt is computed in chunks up to its last token, which waits
// (no samples) until the gate opens; then the request generates its reference outputs.
TEST(Scheduler, GatedRequestComputesAllButItsLastTokenUntilTheGateOpens) {
  Harness h(small_config(64, 16, 32, 4));
  bool open = false;
  NewRequest r;
  r.prompt_token_ids = make_prompt(70, 3);
  r.stop.max_tokens = 3;
  r.sampling_gate = [&open]() -> std::optional<Status> {
    if (!open) return std::nullopt;
    return Status();
  };
  const RequestId id = h.add_request(std::move(r));
  std::vector<size_t> chunks;
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(h.scheduler().poll_sampling_gates().empty());
    const StepResult step = h.step();
    if (step.plan.requests.empty()) continue;
    EXPECT_EQ(step.plan.requests[0].num_samples, 0);
    chunks.push_back(step.plan.requests[0].token_ids.size());
  }
  EXPECT_EQ(chunks, (std::vector<size_t>{32, 32, 5}));
  EXPECT_TRUE(h.scheduler().find(id)->sampling_gated());
  open = true;
  EXPECT_TRUE(h.scheduler().poll_sampling_gates().empty());
  EXPECT_FALSE(h.scheduler().find(id)->sampling_gated());
  const StepResult last = h.step();
  ASSERT_EQ(last.plan.requests.size(), 1u);
  EXPECT_EQ(last.plan.requests[0].token_ids.size(), 1u);
  EXPECT_EQ(last.plan.requests[0].num_samples, 1);
  h.run_to_completion();
  EXPECT_EQ(h.result(id).outputs, h.expected(id));
  h.expect_pool_idle();
}

// A waiting gated request with nothing to compute before its sample (a one-token prompt) does
// not hold up the requests behind it; a failed gate is reported, not opened.
TEST(Scheduler, WaitingGatedRequestIsSkippedAndAFailedGateReported) {
  Harness h(small_config(64, 4, 64, 4));
  bool failed = false;
  NewRequest r;
  r.prompt_token_ids = {7};
  r.stop.max_tokens = 2;
  r.sampling_gate = [&failed]() -> std::optional<Status> {
    if (!failed) return std::nullopt;
    return invalid_argument("no text satisfies it");
  };
  const RequestId gated = h.add_request(std::move(r));
  const RequestId b = h.add(make_prompt(5, 2), 2);
  for (int i = 0; i < 10; ++i)
    h.step();  // b finishes; the gated request waits
  EXPECT_EQ(h.result(b).outputs, h.expected(b));
  ASSERT_NE(h.scheduler().find(gated), nullptr);
  EXPECT_EQ(h.scheduler().find(gated)->status(), RequestStatus::kWaiting);
  failed = true;
  const auto failures = h.scheduler().poll_sampling_gates();
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].first, gated);
  EXPECT_EQ(failures[0].second.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(h.scheduler().abort(gated).ok());
  h.expect_pool_idle();
}

// A request that wants prompt logprobs needs a logits row at every prompt position: it takes no
// prefix hit (computes its prompt from token 0) but still publishes its blocks.
TEST(Scheduler, PromptLogprobsRequestsComputeTheWholePrompt) {
  Harness h(small_config(64, 16, 256, 4));
  const std::vector<TokenId> prompt = make_prompt(64, 11);
  h.add(prompt, 2);
  h.run_to_completion();
  NewRequest r;
  r.prompt_token_ids = prompt;
  r.stop.max_tokens = 2;
  r.sampling.prompt_logprobs = 1;
  const RequestId wants = h.add_request(std::move(r));
  const StepResult step = h.step();
  const step::ScheduledRequest* e = entry(step.plan, wants);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->num_computed_tokens, 0);
  EXPECT_EQ(h.scheduler().find(wants)->num_cached_tokens(), 0);
  h.run_to_completion();
  // The same prompt without prompt logprobs hits again (three full blocks; the last recomputed).
  const RequestId plain = h.add(prompt, 2);
  const StepResult next = h.step();
  const step::ScheduledRequest* p = entry(next.plan, plain);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->num_computed_tokens, 48);
  h.run_to_completion();
  h.expect_reference_outputs();
  h.expect_pool_idle();
}

TEST(Scheduler, PrefixCacheHitsSkipComputedTokens) {
  Harness h(small_config(64, 16, 256, 4));
  const std::vector<TokenId> system = make_prompt(64, 11);
  const RequestId first = h.add(system, 2);
  h.run_to_completion();
  std::vector<TokenId> longer = system;
  for (TokenId t : make_prompt(10, 12))
    longer.push_back(t);
  const RequestId second = h.add(longer, 3);
  const StepResult r = h.step();
  const step::ScheduledRequest* e = entry(r.plan, second);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->num_computed_tokens, 64);
  EXPECT_EQ(e->token_ids.size(), 10u);
  EXPECT_TRUE(e->is_new);
  EXPECT_EQ(e->history_token_ids, longer);
  EXPECT_EQ(h.scheduler().find(second)->num_cached_tokens(), 64);
  // Exactly the cached prompt again: the last block is recomputed for the logits.
  const RequestId same = h.add(system, 2);
  h.run_to_completion();
  (void)same;
  const SchedulerStats st = h.scheduler().stats();
  EXPECT_EQ(st.kv.prefix_cache_queries, 64 + 74 + 64);
  EXPECT_EQ(st.kv.prefix_cache_hits, 0 + 64 + 48);
  EXPECT_DOUBLE_EQ(st.prefix_cache_hit_rate, 112.0 / 202.0);
  EXPECT_EQ(h.result(first).outputs, h.expected(first));
  h.expect_reference_outputs();
  h.expect_pool_idle();
}

TEST(Scheduler, RequestsOfOneStepShareThePromptBlocksBeingComputed) {
  Harness h(small_config(64, 16, 256, 4));
  const std::vector<TokenId> system = make_prompt(64, 21);
  std::vector<RequestId> ids;
  for (uint32_t i = 0; i < 3; ++i) {
    std::vector<TokenId> prompt = system;
    for (TokenId t : make_prompt(10, 30 + i))
      prompt.push_back(t);
    ids.push_back(h.add(prompt, 3));
  }
  const StepResult r = h.step();
  ASSERT_EQ(r.plan.requests.size(), 3u);
  EXPECT_EQ(entry(r.plan, ids[0])->num_computed_tokens, 0);
  EXPECT_EQ(entry(r.plan, ids[0])->token_ids.size(), 74u);
  for (int i = 1; i < 3; ++i) {  // the first request writes blocks 0..3 in this very step
    EXPECT_EQ(entry(r.plan, ids[i])->num_computed_tokens, 64);
    EXPECT_EQ(entry(r.plan, ids[i])->token_ids.size(), 10u);
    EXPECT_EQ(entry(r.plan, ids[i])->block_table[0], entry(r.plan, ids[0])->block_table[0]);
  }
  EXPECT_EQ(r.plan.num_scheduled_tokens, 74 + 10 + 10);
  EXPECT_EQ(h.scheduler().stats().num_prompt_tokens_computed, 94);
  h.run_to_completion();
  h.expect_reference_outputs();  // read back through the shared blocks
  h.expect_pool_idle();
}

TEST(Scheduler, AFailedStepDropsTheBlocksItPublished) {
  Harness h(small_config(64, 16, 256, 4));
  const std::vector<TokenId> prompt = make_prompt(40, 22);
  h.add(prompt, 2);
  const step::StepPlan plan = h.scheduler().schedule();
  EXPECT_EQ(h.scheduler().stats().kv.num_cached_blocks, 2);  // published when planned
  const auto events = h.scheduler().fail_step(plan);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(h.scheduler().stats().kv.num_cached_blocks, 0);  // never written: not reusable
  const RequestId again = h.add(prompt, 2);
  const StepResult r = h.step();
  EXPECT_EQ(entry(r.plan, again)->num_computed_tokens, 0);
  h.run_to_completion();
  h.expect_pool_idle();
}

TEST(Scheduler, CacheSaltSeparatesPrefixes) {
  Harness h(small_config(64, 16, 256, 4));
  const std::vector<TokenId> system = make_prompt(40, 5);
  h.add(system, 1, 1, 0, {}, "alice");
  h.run_to_completion();
  const RequestId bob = h.add(system, 1, 1, 0, {}, "bob");
  const RequestId alice = h.add(system, 1, 1, 0, {}, "alice");
  const StepResult r = h.step();
  ASSERT_NE(entry(r.plan, bob), nullptr);
  ASSERT_NE(entry(r.plan, alice), nullptr);
  EXPECT_EQ(entry(r.plan, bob)->num_computed_tokens, 0);
  EXPECT_EQ(entry(r.plan, alice)->num_computed_tokens, 32);
  h.run_to_completion();
  h.expect_reference_outputs();
}

TEST(Scheduler, AbortFreesBlocksInEveryState) {
  Harness h(small_config(7, 4, 64, 2));
  // Waiting (never admitted): max_num_seqs 2 keeps the third waiting.
  const RequestId a = h.add(make_prompt(4, 1), 12);
  const RequestId b = h.add(make_prompt(4, 2), 12);
  const RequestId waiting = h.add(make_prompt(4, 3), 12);
  h.step();
  EXPECT_EQ(h.scheduler().find(waiting)->status(), RequestStatus::kWaiting);
  EXPECT_TRUE(h.scheduler().abort(waiting).ok());
  EXPECT_EQ(h.scheduler().find(waiting), nullptr);
  EXPECT_EQ(h.scheduler().abort(waiting).code(), StatusCode::kNotFound);

  // Running, between steps.
  const int32_t free_before = h.scheduler().kv().pool().num_free_blocks();
  const auto blocks_of_b = h.scheduler().kv().block_table(b).size();
  EXPECT_TRUE(h.scheduler().abort(b).ok());
  EXPECT_EQ(h.scheduler().kv().pool().num_free_blocks(),
            free_before + static_cast<int32_t>(blocks_of_b));
  EXPECT_TRUE(h.scheduler().check_invariants().ok());

  // Running and in flight: blocks are released only when the plan is settled.
  const RequestId c = h.add(make_prompt(4, 4), 12);
  step::StepPlan plan = h.scheduler().schedule();
  ASSERT_NE(entry(plan, c), nullptr);
  // The plan tells the runner which requests are gone since the previous one.
  for (RequestId gone : {waiting, b}) {
    EXPECT_NE(std::find(plan.finished_ids.begin(), plan.finished_ids.end(), gone),
              plan.finished_ids.end());
  }
  const auto out = h.executor().execute(plan);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(h.scheduler().abort(c).ok());
  EXPECT_TRUE(h.scheduler().kv().contains(c));  // the runner may still be writing
  auto events = h.scheduler().update_from_output(plan, *out);
  ASSERT_TRUE(events.ok());
  for (const RequestEvent& ev : *events)
    EXPECT_NE(ev.id, c);
  EXPECT_FALSE(h.scheduler().kv().contains(c));
  h.record(*events);
  EXPECT_TRUE(h.scheduler().check_invariants().ok());
  const StepResult next = h.step();
  EXPECT_EQ(next.plan.finished_ids, std::vector<RequestId>{c});

  // Preempted: fill the cache until someone is preempted, then abort that one.
  const RequestId d = h.add(make_prompt(4, 5), 12);
  std::optional<RequestId> victim;
  for (int i = 0; i < 100 && !victim; ++i) {
    const StepResult r = h.step();
    if (!r.plan.preempted_ids.empty()) victim = r.plan.preempted_ids.front();
  }
  ASSERT_TRUE(victim.has_value());
  EXPECT_EQ(h.scheduler().find(*victim)->status(), RequestStatus::kPreempted);
  EXPECT_TRUE(h.scheduler().abort(*victim).ok());
  (void)a;
  (void)d;
  h.run_to_completion();
  h.expect_reference_outputs();
  h.expect_pool_idle();
}

TEST(Scheduler, ForksNSamplesSharingThePromptBlocks) {
  Harness h(small_config(64, 4, 64, 8));
  const RequestId id = h.add(make_prompt(10, 9), 6, /*n=*/3);
  const StepResult first = h.step();  // the prompt, sampled 3 times
  ASSERT_EQ(first.plan.requests.size(), 1u);
  EXPECT_EQ(first.plan.requests[0].num_samples, 3);
  ASSERT_EQ(first.events.size(), 3u);
  EXPECT_EQ(h.scheduler().num_running(), 3u);
  // Children share every prompt block; the partial third one is copied on first write.
  const auto parent_table = h.scheduler().kv().block_table(id);
  for (const RequestEvent& ev : first.events) {
    if (ev.id == id) continue;
    EXPECT_EQ(ev.parent_id, id);
    const auto t = h.scheduler().kv().block_table(ev.id);
    ASSERT_EQ(t.size(), 3u);
    EXPECT_TRUE(std::equal(t.begin(), t.end(), parent_table.begin()));
  }
  const StepResult second = h.step();
  EXPECT_EQ(second.plan.requests.size(), 3u);
  EXPECT_EQ(second.plan.block_copies.size(), 2u);  // two writers copy, the last owns it alone
  for (const step::ScheduledRequest& s : second.plan.requests) {
    EXPECT_EQ(s.is_new, s.id != id);
    EXPECT_EQ(s.num_computed_tokens, 10);
  }
  h.run_to_completion();
  for (int32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(h.result(id, i).outputs, h.expected(id, i)) << "sample " << i;
  }
  EXPECT_NE(h.result(id, 0).outputs, h.result(id, 1).outputs);
  EXPECT_EQ(h.scheduler().stats().kv.num_cow_copies, 2);
  h.expect_pool_idle();
}

TEST(Scheduler, ForkAtABlockBoundaryCopiesNothing) {
  Harness h(small_config(64, 4, 64, 8));
  const RequestId id = h.add(make_prompt(8, 3), 3, /*n=*/2);
  h.run_to_completion();
  EXPECT_EQ(h.scheduler().stats().kv.num_cow_copies, 0);
  for (int32_t i = 0; i < 2; ++i)
    EXPECT_EQ(h.result(id, i).outputs, h.expected(id, i));
  h.expect_pool_idle();
}

TEST(Scheduler, StopsOnEosStopTokensMinTokensAndLength) {
  const std::vector<TokenId> prompt = make_prompt(6, 21);
  StopParams none;
  none.max_tokens = 12;
  const std::vector<TokenId> free_run = testing::reference_outputs(prompt, none, 0);
  const TokenId third = free_run[2];

  Harness h(small_config(64, 4, 64, 8));
  StopParams eos;
  eos.eos_token_ids = {third};
  const RequestId e = h.add(prompt, 12, 1, 0, eos);
  StopParams stop_id;
  stop_id.stop_token_ids = {third};
  const RequestId s = h.add(prompt, 12, 1, 0, stop_id);
  StopParams ignore = eos;
  ignore.ignore_eos = true;
  const RequestId ig = h.add(prompt, 12, 1, 0, ignore);
  StopParams late = eos;
  late.min_tokens = 5;
  const RequestId mt = h.add(prompt, 12, 1, 0, late);
  h.run_to_completion();

  const auto first_at = [&](size_t from) {
    return static_cast<size_t>(std::find(free_run.begin() + from, free_run.end(), third) -
                               free_run.begin());
  };
  EXPECT_EQ(h.result(e).outputs.size(), first_at(0) + 1);
  EXPECT_EQ(h.result(e).finish, FinishReason::kStop);
  EXPECT_EQ(h.result(e).stop_token, third);
  EXPECT_EQ(h.result(s).finish, FinishReason::kStop);
  EXPECT_EQ(h.result(s).outputs, h.result(e).outputs);
  EXPECT_EQ(h.result(ig).outputs, free_run);
  EXPECT_EQ(h.result(ig).finish, FinishReason::kLength);
  EXPECT_FALSE(h.result(ig).stop_token.has_value());
  EXPECT_GE(h.result(mt).outputs.size(), 5u);
  h.expect_reference_outputs();
  h.expect_pool_idle();
}

TEST(Scheduler, RunnerFailureFailsThePlanRequestsAndFreesThem) {
  Harness h(small_config(64, 4, 64, 8));
  const RequestId a = h.add(make_prompt(5, 1), 4);
  const RequestId b = h.add(make_prompt(5, 2), 4);
  h.executor().fail_call = h.executor().num_calls() + 1;
  const StepResult r = run_step(h.scheduler(), h.executor());
  EXPECT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("injected executor failure"), std::string::npos);
  ASSERT_EQ(r.events.size(), 2u);
  for (const RequestEvent& ev : r.events)
    EXPECT_EQ(ev.finish_reason, FinishReason::kError);
  EXPECT_EQ(h.scheduler().find(a), nullptr);
  EXPECT_EQ(h.scheduler().find(b), nullptr);
  h.expect_pool_idle();
}

TEST(Scheduler, MalformedRunnerOutputIsRejectedBeforeAnythingChanges) {
  Harness h(small_config(64, 4, 64, 8));
  const RequestId a = h.add(make_prompt(5, 1), 4);
  const step::StepPlan plan = h.scheduler().schedule();
  step::StepOutput wrong_id;
  wrong_id.sampled.push_back(step::SampledTokens{a + 100, {1}, {}, {}});
  auto r1 = h.scheduler().update_from_output(plan, wrong_id);
  ASSERT_FALSE(r1.ok());
  EXPECT_EQ(r1.status().code(), StatusCode::kInternal);
  step::StepOutput two_tokens;
  two_tokens.sampled.push_back(step::SampledTokens{a, {1, 2}, {}, {}});
  EXPECT_FALSE(h.scheduler().update_from_output(plan, two_tokens).ok());
  step::StepOutput missing;
  EXPECT_FALSE(h.scheduler().update_from_output(plan, missing).ok());
  EXPECT_EQ(h.scheduler().find(a)->num_output_tokens(), 0);
  EXPECT_TRUE(h.scheduler().step_outstanding());
  const auto events = h.scheduler().fail_step(plan);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].finish_reason, FinishReason::kError);
  h.expect_pool_idle();
}

TEST(Scheduler, LogprobsTravelToTheEvents) {
  Harness h(small_config(64, 4, 64, 8));
  const RequestId a = h.add(make_prompt(5, 1), 4);
  const step::StepPlan plan = h.scheduler().schedule();
  step::StepOutput out;
  TokenLogprobs lp;
  lp.logprob = -0.5f;
  lp.top = {{3, -0.5f}, {4, -1.5f}};
  out.sampled.push_back(step::SampledTokens{a, {3}, {lp}, {}});
  auto events = h.scheduler().update_from_output(plan, out);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 1u);
  ASSERT_EQ((*events)[0].new_logprobs.size(), 1u);
  EXPECT_EQ((*events)[0].new_logprobs[0].top.size(), 2u);
  EXPECT_FLOAT_EQ((*events)[0].new_logprobs[0].logprob, -0.5f);
  EXPECT_EQ((*events)[0].num_prompt_tokens, 5);
  EXPECT_TRUE((*events)[0].first_scheduled_time.has_value());
}

TEST(Scheduler, StatsCountRunningWaitingAndTokens) {
  Harness h(small_config(64, 4, 64, 1));
  h.add(make_prompt(6, 1), 3);
  h.add(make_prompt(6, 2), 3);
  h.step();
  SchedulerStats s = h.scheduler().stats();
  EXPECT_EQ(s.num_running, 1);
  EXPECT_EQ(s.num_waiting, 1);
  EXPECT_EQ(s.kv.num_used_blocks, 2);
  EXPECT_DOUBLE_EQ(s.kv_usage, 2.0 / 63.0);
  h.run_to_completion();
  s = h.scheduler().stats();
  EXPECT_EQ(s.num_prompt_tokens_computed, 12);
  EXPECT_EQ(s.num_generation_tokens, 6);
  EXPECT_EQ(s.num_running, 0);
  EXPECT_EQ(s.kv.num_used_blocks, 0);
}

}  // namespace
}  // namespace pagoda::engine
