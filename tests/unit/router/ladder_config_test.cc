// The `ladder:` section of the router config: a full valid section, defaults, and one refusal
// per rule, each naming the offending key path.
#include <gtest/gtest.h>

#include <string>

#include "router/router_config.h"

namespace pagoda::router {
namespace {

const std::string kBackends = R"(
backends:
  - {name: a, url: 'http://h:1', models: [demo, demo-q4]}
)";

constexpr const char* kFullLadder = R"(
ladder:
  eval_interval_ms: 100
  window_ms: 5000
  min_samples: 5
  cooldown_ms: 2000
  clear_ratio: 0.5
  levels:
    - {queue_length: 4, backend_waiting: 6, p95_ttft_ms: 1500, p95_tpot_ms: 90, error_rate: 0.05}
    - {queue_length: 8, cooldown_ms: 3000}
    - {queue_length: 12}
    - {queue_length: 16}
    - {queue_length: 20, error_rate: 0.5}
  rate_limits:
    default: {requests_per_minute: 60, tokens_per_minute: 6000, tier: 1}
    keys:
      sk-gold: {requests_per_minute: 600, tier: 3}
      sk-free: {tokens_per_minute: 100}
  queue: {max_concurrent: 8, max_queued: 32, timeout_ms: 500}
  max_tokens_cap: 64
  route: {demo: demo-q4}
  disable: [n, logprobs, best_of]
  cache: {max_entries: 100, max_bytes: 100000, ttl_ms: 60000, max_entry_bytes: 5000}
  circuit: {retry_after_s: 9, preset_reply: "We are busy."}
)";

std::string error_of(const std::string& yaml) {
  auto r = parse_router_config(yaml);
  return r.ok() ? "" : r.status().message();
}

TEST(LadderConfig, ParsesEveryKey) {
  auto r = parse_router_config(kBackends + kFullLadder);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const LadderConfig& l = r->ladder;
  EXPECT_TRUE(l.enabled);
  EXPECT_EQ(l.eval_interval_ms, 100u);
  EXPECT_EQ(l.window_ms, 5000u);
  EXPECT_EQ(l.min_samples, 5u);
  EXPECT_EQ(l.cooldown_ms, 2000u);
  EXPECT_DOUBLE_EQ(l.clear_ratio, 0.5);
  ASSERT_EQ(l.levels.size(), 5u);
  EXPECT_EQ(*l.levels[0].queue_length, 4);
  EXPECT_EQ(*l.levels[0].backend_waiting, 6);
  EXPECT_EQ(*l.levels[0].p95_ttft_ms, 1500);
  EXPECT_EQ(*l.levels[0].p95_tpot_ms, 90);
  EXPECT_DOUBLE_EQ(*l.levels[0].error_rate, 0.05);
  EXPECT_FALSE(l.levels[0].cooldown_ms);
  EXPECT_EQ(*l.levels[1].cooldown_ms, 3000u);
  EXPECT_FALSE(l.levels[1].p95_ttft_ms);
  EXPECT_TRUE(l.rate_limits_enabled);
  EXPECT_EQ(l.default_limit.requests_per_minute, 60u);
  EXPECT_EQ(l.default_limit.tokens_per_minute, 6000u);
  // A key's limit starts from the default and overrides what it names.
  EXPECT_EQ(l.limit_for("sk-gold").requests_per_minute, 600u);
  EXPECT_EQ(l.limit_for("sk-gold").tokens_per_minute, 6000u);
  EXPECT_EQ(l.limit_for("sk-gold").tier, 3u);
  EXPECT_EQ(l.limit_for("sk-free").tokens_per_minute, 100u);
  EXPECT_EQ(l.limit_for("sk-free").tier, 1u);
  EXPECT_EQ(l.limit_for("unknown").requests_per_minute, 60u);
  EXPECT_EQ(l.queue.max_concurrent, 8u);
  EXPECT_EQ(l.queue.max_queued, 32u);
  EXPECT_EQ(l.queue.timeout_ms, 500u);
  EXPECT_EQ(*l.max_tokens_cap, 64u);
  EXPECT_EQ(l.route.at("demo"), "demo-q4");
  EXPECT_EQ(l.disable, (std::vector<std::string>{"n", "logprobs", "best_of"}));
  EXPECT_EQ(l.cache.max_entries, 100u);
  EXPECT_EQ(l.cache.max_bytes, 100000u);
  EXPECT_EQ(l.cache.ttl_ms, 60000u);
  EXPECT_EQ(l.cache.max_entry_bytes, 5000u);
  EXPECT_EQ(l.circuit.retry_after_s, 9u);
  EXPECT_EQ(*l.circuit.preset_reply, "We are busy.");
}

TEST(LadderConfig, AbsentMeansOff) {
  auto r = parse_router_config(kBackends);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->ladder.enabled);
  EXPECT_FALSE(r->ladder.rate_limits_enabled);
  EXPECT_EQ(r->ladder.queue.max_concurrent, 0u);
  EXPECT_EQ(r->ladder.cache.max_entries, 0u);
}

TEST(LadderConfig, ErrorsNameTheKey) {
  const std::string lv = "ladder:\n  levels: [{queue_length: 1}]\n";
  struct Case {
    std::string yaml;
    std::string expected;
  };
  const Case cases[] = {
      {"ladder: 1", "ladder: must be a mapping"},
      {"ladder: {}", "ladder.levels: must be a list of 1 to 5"},
      {"ladder: {levels: []}", "ladder.levels: must be a list of 1 to 5"},
      {"ladder: {levels: [{}, {}, {}, {}, {}, {}]}", "ladder.levels: must be a list of 1 to 5"},
      {"ladder: {levels: [{queue_lenght: 3}]}", "ladder.levels[0].queue_lenght: unknown key"},
      {"ladder: {levels: [{}, {queue_length: -1}]}", "ladder.levels[1].queue_length"},
      {"ladder: {levels: [{error_rate: 1.5}]}", "ladder.levels[0].error_rate: must be in (0, 1]"},
      {"ladder: {levels: [{p95_ttft_ms: inf}]}", "ladder.levels[0].p95_ttft_ms"},
      {"ladder: {levels: [{cooldown_ms: x}]}", "ladder.levels[0].cooldown_ms: must be an integer"},
      {lv + "  coldown_ms: 1", "ladder.coldown_ms: unknown key"},
      {lv + "  clear_ratio: 2", "ladder.clear_ratio: must be in (0, 1]"},
      {lv + "  eval_interval_ms: 1", "ladder.eval_interval_ms: must be in [10, 60000]"},
      {lv + "  window_ms: 5", "ladder.window_ms"},
      {lv + "  rate_limits: {defualt: {}}", "ladder.rate_limits.defualt: unknown key"},
      {lv + "  rate_limits: {default: {rpm: 1}}", "ladder.rate_limits.default.rpm: unknown key"},
      {lv + "  rate_limits: {keys: [a]}", "ladder.rate_limits.keys: must be a mapping"},
      {lv + "  rate_limits: {keys: {k: {tier: 101}}}", "ladder.rate_limits.keys[0].tier"},
      {lv + "  queue: {max_queued: 3}", "ladder.queue.max_concurrent: missing"},
      {lv + "  queue: {max_concurrent: 0}", "ladder.queue.max_concurrent: must be in"},
      {lv + "  queue: {max_concurrent: 1, timeout: 3}", "ladder.queue.timeout: unknown key"},
      {lv + "  max_tokens_cap: 0", "ladder.max_tokens_cap: must be in"},
      {lv + "  route: {demo: nope}", "ladder.route.demo: model 'nope' is not served"},
      {lv + "  route: {nope: demo}", "ladder.route.nope: model 'nope' is not served"},
      {lv + "  route: [demo]", "ladder.route: must be a mapping"},
      {lv + "  disable: [temperature]", "ladder.disable[0]: 'temperature' cannot be disabled"},
      {lv + "  disable: [n, n]", "ladder.disable[1]: 'n' is listed twice"},
      {lv + "  disable: n", "ladder.disable: must be a list"},
      {lv + "  cache: {ttl_ms: 5}", "ladder.cache.max_entries: missing"},
      {lv + "  cache: {max_entries: 1, max_bytes: 0}", "ladder.cache.max_bytes: must be in"},
      {lv + "  cache: {max_entries: 1, size: 0}", "ladder.cache.size: unknown key"},
      {lv + "  circuit: {retry_after_s: 0}", "ladder.circuit.retry_after_s: must be in"},
      {lv + "  circuit: {preset_reply: [x]}", "ladder.circuit.preset_reply: must be a string"},
  };
  for (const Case& c : cases) {
    std::string message = error_of(kBackends + c.yaml);
    EXPECT_NE(message.find(c.expected), std::string::npos) << "config:\n"
                                                           << c.yaml << "\nmessage: " << message;
  }
}

TEST(LadderConfig, RateLimitKeyErrorsDoNotEchoTheKey) {
  std::string message = error_of(kBackends + R"(
ladder:
  levels: [{queue_length: 1}]
  rate_limits: {keys: {sk-very-secret: {requests_per_minute: x}}}
)");
  EXPECT_NE(message.find("ladder.rate_limits.keys[0].requests_per_minute"), std::string::npos)
      << message;
  EXPECT_EQ(message.find("sk-very-secret"), std::string::npos) << message;
}

}  // namespace
}  // namespace pagoda::router
