// RouterMetrics: the router's own /metrics (Prometheus text, pagoda_router_* names). Every client
// request is counted once in pagoda_router_requests_total{backend, outcome} when it ends
// (backend "none" when no upstream answered, "fallback" for the fallback upstream), and each
// failure once more in pagoda_router_errors_total{cause}. Thread-safe.
#pragma once

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
};

const char* outcome_name(Outcome o);
const char* cause_name(ErrorCause c);

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

  // Renders the text format; per-backend gauges come from the pool's snapshot.
  std::string render(const std::vector<BackendPool::BackendView>& backends);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagoda::router
