// The ladder's actions as pure state with a fake clock: token buckets (refill arithmetic,
// Retry-After), the admission queue (tiers, shedding, timeout, cancel), the response cache (TTL,
// LRU, byte bound, which requests qualify) and the body rewrites of levels 2, 4 and 5.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "router/admission_queue.h"
#include "router/ladder_actions.h"
#include "router/rate_limiter.h"
#include "router/response_cache.h"

namespace pagoda::router {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;
using TimePoint = std::chrono::steady_clock::time_point;

TEST(RateLimiter, RequestBucketRefillsContinuously) {
  RateLimiter rl;
  RateLimit limit{60, 0, 0};  // one request per second, a minute's burst
  TimePoint t{};
  for (int i = 0; i < 60; ++i)
    ASSERT_TRUE(rl.acquire("k", limit, 1, t).allowed) << i;
  auto d = rl.acquire("k", limit, 1, t);
  EXPECT_FALSE(d.allowed);
  EXPECT_FALSE(d.tokens_exhausted);
  EXPECT_EQ(d.retry_after_s, 1);
  EXPECT_FALSE(rl.acquire("k", limit, 1, t + milliseconds(999)).allowed);
  EXPECT_TRUE(rl.acquire("k", limit, 1, t + milliseconds(1000)).allowed);
  // Keys are independent.
  EXPECT_TRUE(rl.acquire("other", limit, 1, t).allowed);
}

TEST(RateLimiter, TokenBucketAndRetryAfter) {
  RateLimiter rl;
  RateLimit limit{0, 600, 0};  // 10 tokens per second
  TimePoint t{};
  EXPECT_TRUE(rl.acquire("k", limit, 500, t).allowed);
  auto d = rl.acquire("k", limit, 300, t);  // 100 left, 200 missing: 20 s
  EXPECT_FALSE(d.allowed);
  EXPECT_TRUE(d.tokens_exhausted);
  EXPECT_EQ(d.retry_after_s, 20);
  EXPECT_TRUE(rl.acquire("k", limit, 300, t + milliseconds(20000)).allowed);
  // Larger than the whole allowance: charged the allowance, passes once the bucket is full.
  EXPECT_FALSE(rl.acquire("k", limit, 100000, t + milliseconds(20000)).allowed);
  EXPECT_TRUE(rl.acquire("k", limit, 100000, t + milliseconds(80000)).allowed);
  // Unlimited.
  EXPECT_TRUE(rl.acquire("k", RateLimit{}, UINT64_MAX, t).allowed);
  EXPECT_EQ(estimate_tokens(400, 50), 150u);
  EXPECT_EQ(estimate_tokens(0, std::nullopt), 256u);
  EXPECT_EQ(estimate_tokens(8, UINT64_MAX), UINT64_MAX);
}

TEST(AdmissionQueue, TiersOrderAdmissionAndLowestTierIsShedFirst) {
  AdmissionQueue q(QueueConfig{2, 3, 1000});
  TimePoint t{};
  EXPECT_EQ(q.enqueue(0, false, t).state, AdmissionQueue::State::kAdmitted);
  EXPECT_EQ(q.enqueue(0, false, t).state, AdmissionQueue::State::kAdmitted);
  auto low1 = q.enqueue(0, false, t);
  auto low2 = q.enqueue(0, false, t);
  auto high = q.enqueue(5, false, t);
  EXPECT_EQ(low1.state, AdmissionQueue::State::kWaiting);
  EXPECT_EQ(q.num_waiting(), 3u);
  // Full: a tier-0 newcomer is shed; a tier-3 one takes the newest tier-0 waiter's place.
  EXPECT_EQ(q.enqueue(0, false, t).state, AdmissionQueue::State::kShed);
  auto mid = q.enqueue(3, false, t);
  EXPECT_EQ(mid.state, AdmissionQueue::State::kWaiting);
  EXPECT_EQ(q.poll(low2.id, t), AdmissionQueue::State::kShed);
  // One finishes: the highest tier goes first, then tier 3, then the oldest tier 0.
  q.release();
  EXPECT_EQ(q.poll(high.id, t), AdmissionQueue::State::kAdmitted);
  EXPECT_EQ(q.poll(mid.id, t), AdmissionQueue::State::kWaiting);
  q.release();
  EXPECT_EQ(q.poll(mid.id, t), AdmissionQueue::State::kAdmitted);
  EXPECT_EQ(q.poll(low1.id, t), AdmissionQueue::State::kWaiting);
  EXPECT_EQ(q.num_running(), 2u);
  // Waiting longer than the timeout.
  EXPECT_EQ(q.poll(low1.id, t + milliseconds(1000)), AdmissionQueue::State::kTimedOut);
  EXPECT_EQ(q.num_waiting(), 0u);
}

TEST(AdmissionQueue, BypassCountsAndCancelFreesTheSlot) {
  AdmissionQueue q(QueueConfig{1, 4, 1000});
  TimePoint t{};
  EXPECT_EQ(q.enqueue(0, true, t).state, AdmissionQueue::State::kAdmitted);
  EXPECT_EQ(q.enqueue(0, true, t).state, AdmissionQueue::State::kAdmitted);
  EXPECT_EQ(q.num_running(), 2u);
  auto w = q.enqueue(0, false, t);
  EXPECT_EQ(w.state, AdmissionQueue::State::kWaiting);
  q.release();
  EXPECT_EQ(q.poll(w.id, t), AdmissionQueue::State::kWaiting);  // 1 running = the cap
  auto w2 = q.enqueue(0, false, t);
  q.cancel(w.id);  // its client left while waiting
  q.release();
  EXPECT_EQ(q.poll(w2.id, t), AdmissionQueue::State::kAdmitted);
  // Admitted but never polled, then cancelled: the slot comes back.
  auto w3 = q.enqueue(0, false, t);
  q.release();
  q.cancel(w3.id);
  EXPECT_EQ(q.num_running(), 0u);
}

TEST(ResponseCache, TtlLruAndByteBound) {
  CacheConfig c;
  c.max_entries = 2;
  c.max_bytes = 1000;
  c.ttl_ms = 100;
  c.max_entry_bytes = 400;
  ResponseCache cache(c);
  TimePoint t{};
  cache.put("a", {"application/json", "A"}, t);
  cache.put("b", {"application/json", "B"}, t);
  ASSERT_TRUE(cache.get("a", t));  // a is now the most recent
  cache.put("c", {"application/json", "C"}, t);
  EXPECT_FALSE(cache.get("b", t));  // least recently used went
  EXPECT_EQ(cache.get("a", t)->body, "A");
  EXPECT_EQ(cache.get("c", t)->body, "C");
  EXPECT_FALSE(cache.get("a", t + milliseconds(100)));  // expired
  cache.put("big", {"x", std::string(401, 'x')}, t);
  EXPECT_FALSE(cache.get("big", t));
  cache.put("d", {"", std::string(390, 'd')}, t);
  cache.put("e", {"", std::string(390, 'e')}, t);
  cache.put("f", {"", std::string(390, 'f')}, t);  // 3 * 391 > 1000
  EXPECT_LE(cache.num_bytes(), 1000u);
  EXPECT_FALSE(cache.get("d", t));
  EXPECT_TRUE(cache.get("f", t));
}

TEST(ResponseCache, OnlyDeterministicNonStreamedRequestsHaveAKey) {
  json base = {{"model", "m"}, {"temperature", 0}, {"messages", json::array()}};
  auto k = cache_key("/v1/chat/completions", "key", "m", base);
  ASSERT_TRUE(k);
  // Same request, keys in another order and other whitespace: same key.
  json reordered = json::parse(R"({"messages": [ ],  "temperature": 0, "model": "m"})");
  EXPECT_EQ(cache_key("/v1/chat/completions", "key", "m", reordered), k);
  EXPECT_NE(cache_key("/v1/chat/completions", "other", "m", base), k);
  EXPECT_NE(cache_key("/v1/completions", "key", "m", base), k);
  EXPECT_NE(cache_key("/v1/chat/completions", "key", "small", base), k);
  for (const char* bad : {R"({"temperature": 0.7})", R"({})",
                          R"({"temperature": 0, "stream": true})", R"({"temperature": 0, "n": 2})",
                          R"({"temperature": 0, "best_of": 3})", R"({"temperature": "0"})"}) {
    EXPECT_FALSE(cache_key("/v1/completions", "", "m", json::parse(bad))) << bad;
  }
  EXPECT_TRUE(cache_key("/v1/completions", "", "m",
                        json::parse(R"({"temperature": 0, "stream": false, "n": 1})")));
}

TEST(LadderActions, ClampMaxTokens) {
  json b = {{"max_tokens", 500}, {"max_completion_tokens", 20}};
  EXPECT_TRUE(clamp_max_tokens(b, "/v1/chat/completions", 64));
  EXPECT_EQ(b["max_tokens"], 64);
  EXPECT_EQ(b["max_completion_tokens"], 20);
  json small = {{"max_tokens", 10}};
  EXPECT_FALSE(clamp_max_tokens(small, "/v1/completions", 64));
  json none = json::object();
  EXPECT_TRUE(clamp_max_tokens(none, "/v1/chat/completions", 64));
  EXPECT_EQ(none["max_tokens"], 64);
  json responses = {{"max_output_tokens", 1000}};
  EXPECT_TRUE(clamp_max_tokens(responses, "/v1/responses", 64));
  EXPECT_EQ(responses["max_output_tokens"], 64);
  json embeddings = json::object();
  EXPECT_FALSE(clamp_max_tokens(embeddings, "/v1/embeddings", 64));
  EXPECT_EQ(requested_max_tokens(json{{"max_completion_tokens", 7}}), 7u);
  EXPECT_FALSE(requested_max_tokens(json{{"max_tokens", -1}}));
}

TEST(LadderActions, RefuseDisabledFeaturesByName) {
  std::vector<std::string> off = {"n", "logprobs", "response_format"};
  for (const char* fine :
       {R"({"n": 1})", R"({"logprobs": false})", R"({"logprobs": null})", R"({"logprobs": 0})",
        R"({"response_format": {"type": "text"}})", R"({"best_of": 4})"}) {
    EXPECT_FALSE(refuse_disabled(json::parse(fine), off, 5)) << fine;
  }
  auto e = refuse_disabled(json::parse(R"({"n": 3})"), off, 5);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 503);
  EXPECT_EQ(e->param, "n");
  EXPECT_EQ(e->code, "feature_disabled");
  EXPECT_EQ(e->retry_after_seconds, 5);
  json body = json::parse(e->body());
  EXPECT_EQ(body["error"]["param"], "n");
  EXPECT_EQ(refuse_disabled(json::parse(R"({"logprobs": 2})"), off, 5)->param, "logprobs");
  EXPECT_EQ(refuse_disabled(json::parse(R"({"response_format": {"type": "json_object"}})"), off, 5)
                ->param,
            "response_format");
}

TEST(LadderActions, PresetReplyShapes) {
  auto chat = preset_reply("/v1/chat/completions", "m", "busy", false);
  ASSERT_TRUE(chat);
  json j = json::parse(chat->body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["model"], "m");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "busy");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  auto text = preset_reply("/v1/completions", "m", "busy", false);
  EXPECT_EQ(json::parse(text->body)["choices"][0]["text"], "busy");
  auto stream = preset_reply("/v1/chat/completions", "m", "busy", true);
  EXPECT_EQ(stream->content_type, "text/event-stream");
  // Events: role+content, finish, [DONE].
  std::string s = stream->body;
  std::vector<std::string> events;
  for (size_t i; (i = s.find("\n\n")) != std::string::npos; s = s.substr(i + 2))
    events.push_back(s.substr(0, i));
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(json::parse(events[0].substr(6))["choices"][0]["delta"]["content"], "busy");
  EXPECT_EQ(json::parse(events[1].substr(6))["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(events[2], "data: [DONE]");
  EXPECT_FALSE(preset_reply("/v1/embeddings", "m", "busy", false));
}

}  // namespace
}  // namespace pagoda::router
