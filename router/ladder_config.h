// LadderConfig: the `ladder:` section of the router's config, the five-level degradation plan
// decided at the gateway. Absent section = the ladder stays at level 0 and no action runs.
//
//   ladder:
//     eval_interval_ms: 250   # how often the level is re-evaluated
//     window_ms: 10000        # sliding window of p95 TTFT / TPOT and the error rate
//     min_samples: 20         # fewer finished requests in the window: latency/error triggers off
//     cooldown_ms: 30000      # triggers clear this long before descending one level
//     clear_ratio: 0.8        # hysteresis: a trigger is clear only below ratio * threshold
//     levels:                 # level 1, 2, ... (at most 5); a level holds when ANY trigger does
//       - {queue_length: 8, backend_waiting: 8, p95_ttft_ms: 2000, p95_tpot_ms: 200,
//          error_rate: 0.05, cooldown_ms: 30000}
//     rate_limits:            # level >= 1: token buckets per API key (Bearer token)
//       default: {requests_per_minute: 60, tokens_per_minute: 60000, tier: 0}
//       keys: {sk-gold: {requests_per_minute: 600, tier: 2}}
//     queue: {max_concurrent: 64, max_queued: 256, timeout_ms: 10000}  # level >= 1
//     max_tokens_cap: 256     # level >= 2
//     route: {demo: demo-q4}  # level >= 3: model -> smaller/quantised served model
//     disable: [n, best_of, logprobs, top_logprobs]  # level >= 4: refused with 503
//     cache: {max_entries: 1024, max_bytes: 67108864, ttl_ms: 300000}  # served at level >= 4
//     circuit: {retry_after_s: 30, preset_reply: "..."}  # level 5
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pagoda/status.h"

namespace YAML {
class Node;
}

namespace pagoda::router {

constexpr int kMaxLadderLevel = 5;

// One level's triggers (nullopt = not a trigger of this level).
struct LadderLevel {
  std::optional<double> queue_length;     // router-side requests in flight + queued
  std::optional<double> backend_waiting;  // sum of the replicas' vllm:num_requests_waiting
  std::optional<double> p95_ttft_ms;
  std::optional<double> p95_tpot_ms;
  std::optional<double> error_rate;     // (0, 1]
  std::optional<uint32_t> cooldown_ms;  // overrides the ladder's
};

struct RateLimit {
  uint32_t requests_per_minute = 0;  // 0 = unlimited
  uint64_t tokens_per_minute = 0;    // 0 = unlimited
  uint32_t tier = 0;                 // queue priority: higher is served first, lower shed first
};

struct QueueConfig {
  uint32_t max_concurrent = 0;  // 0 = no router-side queue
  uint32_t max_queued = 256;
  uint32_t timeout_ms = 10000;
};

struct CacheConfig {
  uint32_t max_entries = 0;  // 0 = no response cache
  uint64_t max_bytes = 64u << 20;
  uint32_t ttl_ms = 300000;
  uint32_t max_entry_bytes = 1u << 20;
};

struct CircuitConfig {
  uint32_t retry_after_s = 30;
  std::optional<std::string> preset_reply;  // answered as the assistant's message instead of 503
};

struct LadderConfig {
  bool enabled = false;
  uint32_t eval_interval_ms = 250;
  uint32_t window_ms = 10000;
  uint32_t min_samples = 20;
  uint32_t cooldown_ms = 30000;
  double clear_ratio = 0.8;
  std::vector<LadderLevel> levels;  // levels[i] is level i + 1
  bool rate_limits_enabled = false;
  RateLimit default_limit;
  std::map<std::string, RateLimit> key_limits;
  QueueConfig queue;
  std::optional<uint32_t> max_tokens_cap;
  std::map<std::string, std::string> route;
  std::vector<std::string> disable;
  CacheConfig cache;
  CircuitConfig circuit;

  // The limit of an API key ("" = no key): its own or the default.
  const RateLimit& limit_for(const std::string& api_key) const;
};

// Parses `ladder:`; `served` are the models the backends serve (route targets must be among
// them). Errors name the key path.
Status parse_ladder_config(const YAML::Node& node, const std::set<std::string>& served,
                           LadderConfig& out);

}  // namespace pagoda::router
