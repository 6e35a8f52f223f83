// ServerMetrics: the Prometheus registry behind GET /metrics. vLLM's names, labels (model_name,
// engine) and histogram buckets (vllm/v1/metrics/loggers.py) for what vLLM reports, pagoda:
// names for what it lacks (rejections by reason, aborts by cause, HTTP requests by status, open
// connections, preemptions by reason). Engine-wide numbers are pulled from
// EngineStats at scrape time (counters advance by the delta since the previous scrape); per-request
// histograms are observed by the server as requests finish. Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "pagoda/engine.h"

namespace prometheus {
class Registry;
class Counter;
class Gauge;
class Histogram;
template <typename T>
class Family;
}  // namespace prometheus

namespace pagoda::server {

enum class Rejection {
  kQueueFull,     // 429: the engine's waiting queue is full
  kQueueTimeout,  // 429: no token within --queue-timeout
  kLoading,       // 503: the model is still loading
  kDraining,      // 503: shutting down
  kConnections,   // 503: over --max-connections
  kInvalid,       // 400 / 404 / 413 / 414 / 431: a bad request
  kUnauthorized,  // 401
};

enum class AbortCause {
  kClientDisconnect,  // the socket closed before the response finished
  kSlowReader,        // the client fell too far behind (write buffer or write timeout)
  kShutdown,          // still running when the drain timeout passed
};

class ServerMetrics {
 public:
  explicit ServerMetrics(const std::string& model_name);
  ~ServerMetrics();
  ServerMetrics(const ServerMetrics&) = delete;
  ServerMetrics& operator=(const ServerMetrics&) = delete;

  // Called for every finished sample (RequestOutput with finished set).
  void observe_finished(const RequestOutput& output);
  // Seconds between two consecutive token deliveries of one sample.
  void observe_inter_token(double seconds);
  void count_rejection(Rejection reason);
  void count_abort(AbortCause cause);
  void count_http_response(int status);
  void connection_opened();
  void connection_closed();

  // Pulls EngineStats (nullptr while loading) and renders the Prometheus text format.
  std::string render(const EngineStats* stats);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagoda::server
