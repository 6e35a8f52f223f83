// RouterMetrics: the router's own /metrics (Prometheus text, pagoda_router_* names). Every client
// request is counted once in pagoda_router_requests_total{backend, outcome} when it ends
// (backend "none" when no upstream answered, "fallback" for the fallback upstream), and each
// failure once more in pagoda_router_errors_total{cause}. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "router/backend_pool.h"

namespace pagoda::router {

// How a client request ended.
enum class Outcome {
  kOk,          // the upstream's complete response was relayed (any status < 500)
  kError,       // the router answered with an error (the cause says why)
  kStreamCut,   // the upstream failed after the response started (SSE error event sent)
  kClientGone,  // the client went away before the response finished
};

// Why a request (or one attempt of it) failed.
enum class ErrorCause {
  kInvalidRequest,     // 400/404/405/413: the router refused the request itself
  kModelNotFound,      // no backend is configured for the model
  kNoBackend,          // every replica serving the model is ejected (and no fallback)
  kUpstreamConnect,    // an attempt could not connect or send
  kUpstream5xx,        // an attempt got a 5xx before any byte was relayed
  kUpstreamTimeout,    // an attempt saw no response header within the idle timeout
  kAttemptsExhausted,  // every attempt failed (and no fallback, or the fallback failed too)
  kStreamCut,          // the upstream connection broke mid-response
  kClientDisconnect,   // the client closed before the response finished
  // Refusals of the degradation ladder (router/ladder_config.h), by level.
  kRateLimited,      // 1: the API key's token bucket is empty (429)
  kQueueShed,        // 1: the router's queue is full of requests of this tier or higher (503)
  kQueueTimeout,     // 1: waited in the router's queue longer than its timeout (429)
  kFeatureDisabled,  // 4: a turned-off feature was asked for (503 naming the field)
  kCircuitOpen,      // 5: the circuit breaker answered 503
  // Keep kCircuitOpen last: RouterMetrics creates the series of every cause up to it at 0.
};

// What the ladder did to a request that went through (counted in
// pagoda_router_ladder_actions_total{action}).
enum class LadderAction {
  kClamped,   // 2: max_tokens lowered to the cap
  kRerouted,  // 3: sent to the smaller model
  kCacheHit,  // 4: answered from the response cache
  kPreset,    // 5: answered with the preset reply (keep last, as kCircuitOpen above)
};

const char* outcome_name(Outcome o);
const char* cause_name(ErrorCause c);
const char* action_name(LadderAction a);

// The ladder's gauges, read when /metrics is rendered.
struct LadderGauges {
  size_t queue_waiting = 0;
  size_t queue_running = 0;
  size_t cache_entries = 0;
  uint64_t cache_bytes = 0;
};

class RouterMetrics {
 public:
  RouterMetrics();
  ~RouterMetrics();
  RouterMetrics(const RouterMetrics&) = delete;
  RouterMetrics& operator=(const RouterMetrics&) = delete;

  void count_request(const std::string& backend, Outcome outcome);
  void count_error(ErrorCause cause);
  void count_retry();
  void count_fallback();
  void count_ejection(const std::string& backend);
  void count_readmission(const std::string& backend);
  void count_ladder_action(LadderAction action);
  // A response-cache lookup (hit or miss; only made at level >= 4) and a store.
  void count_cache_lookup(bool hit);
  void count_cache_store();
  void set_degradation_level(int level);
  void count_level_change(int from, int to);

  // Renders the text format; per-backend gauges come from the pool's snapshot.
  std::string render(const std::vector<BackendPool::BackendView>& backends,
                     const LadderGauges& ladder = LadderGauges());

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagoda::router
