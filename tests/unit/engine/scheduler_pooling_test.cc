// Embedding (pooling) requests in the Scheduler: they take no prefix-cache hit (mean pooling
// reads every prompt position), sample nothing, finish with kStop and their embedding once the
// prompt is computed (across chunks), refuse n > 1, and a runner output that gives a pooling
// request tokens or no embedding is rejected before anything changes.
#include <gtest/gtest.h>

#include "engine/scheduler.h"
#include "harness.h"

namespace pagoda::engine {
namespace {

using testing::make_prompt;
using testing::small_config;

NewRequest request(std::vector<TokenId> prompt, PoolingType pooling) {
  NewRequest r;
  r.prompt_token_ids = std::move(prompt);
  r.stop.max_tokens = 1;
  r.sampling.pooling = pooling;
  return r;
}

TEST(SchedulerPooling, NoPrefixHitChunkedPromptAndFinishWithEmbedding) {
  SchedulerConfig c = small_config(64, 4, 8, 4);
  c.kv.enable_prefix_caching = true;
  auto s = std::move(Scheduler::create(c)).value();
  const std::vector<TokenId> prompt = make_prompt(12, 3);
  // A generation request computes (and publishes) the prompt's blocks first.
  const RequestId gen = s.add_request(request(prompt, PoolingType::kNone)).value();
  for (int i = 0; i < 4 && s.find(gen) != nullptr; ++i) {
    const step::StepPlan plan = s.schedule();
    step::StepOutput out;
    for (const auto& e : plan.requests)
      if (e.num_samples > 0) out.sampled.push_back(step::SampledTokens{e.id, {7}, {}, {}});
    ASSERT_TRUE(s.update_from_output(plan, out).ok());
  }
  ASSERT_EQ(s.find(gen), nullptr);

  const RequestId id = s.add_request(request(prompt, PoolingType::kMean)).value();
  step::StepPlan plan = s.schedule();
  ASSERT_EQ(plan.requests.size(), 1u);
  EXPECT_EQ(plan.requests[0].num_computed_tokens, 0);  // no prefix hit
  EXPECT_EQ(plan.requests[0].token_ids.size(), 8u);    // the budget
  EXPECT_EQ(plan.requests[0].num_samples, 0);
  auto events = s.update_from_output(plan, step::StepOutput{});
  ASSERT_TRUE(events.ok());
  EXPECT_TRUE(events->empty());

  plan = s.schedule();
  ASSERT_EQ(plan.requests.size(), 1u);
  EXPECT_EQ(plan.requests[0].num_computed_tokens, 8);
  EXPECT_EQ(plan.requests[0].num_samples, 1);
  // A token instead of the embedding, an empty embedding, another request's: malformed.
  step::StepOutput wrong;
  wrong.sampled.push_back(step::SampledTokens{id, {5}, {}, {}});
  EXPECT_EQ(s.update_from_output(plan, wrong).status().code(), StatusCode::kInternal);
  wrong.sampled.clear();
  wrong.embeddings.push_back(step::PooledEmbedding{id, {}});
  EXPECT_EQ(s.update_from_output(plan, wrong).status().code(), StatusCode::kInternal);
  wrong.embeddings[0] = step::PooledEmbedding{id + 1, {1.0f}};
  EXPECT_EQ(s.update_from_output(plan, wrong).status().code(), StatusCode::kInternal);
  ASSERT_NE(s.find(id), nullptr);

  step::StepOutput ok;
  ok.embeddings.push_back(step::PooledEmbedding{id, {0.6f, 0.8f}});
  events = s.update_from_output(plan, ok);
  ASSERT_TRUE(events.ok()) << events.status().to_string();
  ASSERT_EQ(events->size(), 1u);
  const RequestEvent& ev = (*events)[0];
  EXPECT_EQ(ev.id, id);
  EXPECT_TRUE(ev.new_token_ids.empty());
  EXPECT_EQ(ev.finish_reason, FinishReason::kStop);
  EXPECT_EQ(ev.embedding, (std::vector<float>{0.6f, 0.8f}));
  EXPECT_EQ(ev.num_prompt_tokens, 12);
  EXPECT_EQ(s.find(id), nullptr);
  EXPECT_EQ(s.stats().num_generation_tokens, 1);  // the generation request's only
  EXPECT_TRUE(s.check_invariants().ok());
}

TEST(SchedulerPooling, RefusesSeveralSamples) {
  auto s = std::move(Scheduler::create(small_config(64, 4, 64, 4))).value();
  NewRequest r = request({1, 2, 3}, PoolingType::kLast);
  r.n = 2;
  auto id = s.add_request(std::move(r));
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.status().message().find("n must be 1"), std::string::npos);
}

}  // namespace
}  // namespace pagoda::engine
