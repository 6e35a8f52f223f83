// ServerMetrics: the Prometheus registry behind GET /metrics. vLLM's names, labels (model_name,
// engine) and histogram buckets (vllm/v1/metrics/loggers.py) for what vLLM reports, pagoda:
// names for what it lacks (rejections by reason, aborts by cause, HTTP requests by status, open
// connections, preemptions by reason). Engine-wide numbers are pulled from
// EngineStats at scrape time (counters advance by the delta since the previous scrape); per-request
// histograms are observed by the server as requests finish. Every engine and request series has
// one child per served model (model_name = the model); the server-wide ones (HTTP, connections,
// rejections, aborts, ignored fields) carry the first model's name, as with one model, plus
// process_resident_memory_bytes (no labels). Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "pagoda/engine.h"
#include "server/model_registry.h"

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
  kModelsBusy,    // 503: --max-loaded-models reached and every loaded model is busy
};

// One model's state at scrape time.
struct ModelMetricsInput {
  std::string name;
  ModelState state = ModelState::kUnloaded;
  std::optional<EngineStats> stats;       // loaded models only
  const void* engine_identity = nullptr;  // a new engine (a reload) restarts the counters' base
  // Not loaded, but it would load on demand (the server is ready and its last load did not
  // fail): pagoda:engine_ready is 1 for it, so that an idle-unloaded model raises no alert.
  bool loadable = false;
};

enum class AbortCause {
  kClientDisconnect,  // the socket closed before the response finished
  kSlowReader,        // the client fell too far behind (write buffer or write timeout)
  kShutdown,          // still running when the drain timeout passed
};

class ServerMetrics {
 public:
  // precondition: model_names is not empty; the first names the server-wide series.
  explicit ServerMetrics(const std::vector<std::string>& model_names);
  ~ServerMetrics();
  ServerMetrics(const ServerMetrics&) = delete;
  ServerMetrics& operator=(const ServerMetrics&) = delete;

  // Called for every finished sample (RequestOutput with finished set) of model `model`.
  void observe_finished(const std::string& model, const RequestOutput& output);
  // Seconds between two consecutive token deliveries of one sample.
  void observe_inter_token(const std::string& model, double seconds);
  void count_rejection(Rejection reason);
  void count_abort(AbortCause cause);
  void count_http_response(int status);
  void connection_opened();
  void connection_closed();

  // Pulls each model's EngineStats (none while it is not loaded) and renders the Prometheus
  // text format.
  std::string render(const std::vector<ModelMetricsInput>& models);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagoda::server
