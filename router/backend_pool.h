// BackendPool: the replicas behind the router and what it knows of each: health (ejected or
// not, consecutive failures, the backoff of the next probe), outstanding requests and the load
// each one last reported (vllm:num_requests_waiting, vllm:kv_cache_usage_perc). Pure state with
// an injected clock: the caller does the I/O and reports outcomes, so every transition is
// unit-tested without sockets or sleeps. Thread-safe (one mutex).
//
// Health: a backend starts admitted. A connection error or 5xx (passive) or a failed /health
// probe (active) counts a failure; `failures_to_eject` in a row eject it. An ejected backend is
// probed after interval * 2^k (k = failed probes since ejection, capped at max_backoff) and
// readmitted by the first probe that succeeds. Admitted backends are probed every interval.
//
// Choice: among admitted backends serving the model and not yet tried by this request, the
// least (outstanding + waiting + 1) * (1 + kv_usage) / weight; ties rotate. A request with a
// prefix-affinity key goes to the first replica in the key's rendezvous order whose outstanding
// count stays within ceil(load_factor * (sum of outstanding + 1) / replicas).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "router/router_config.h"

namespace pagoda::router {

class BackendPool {
 public:
  using Clock = std::chrono::steady_clock;
  using TimePoint = Clock::time_point;

  enum class Transition { kNone, kEjected, kReadmitted };

  struct Backend {
    BackendConfig config;  // immutable
    // Guarded by the pool's mutex; read them through snapshot().
    bool admitted = true;
    uint32_t consecutive_failures = 0;
    uint32_t failed_probes = 0;  // since ejection (the backoff exponent)
    TimePoint next_probe;
    int64_t outstanding = 0;
    double num_waiting = 0;  // scraped
    double kv_usage = 0;     // scraped, 0..1
  };
  using BackendPtr = std::shared_ptr<Backend>;

  struct BackendView {
    std::string name;
    bool admitted = false;
    int64_t outstanding = 0;
    std::vector<std::string> models;
    double num_waiting = 0;  // scraped vllm:num_requests_waiting
  };

  BackendPool(const RouterConfig& config, TimePoint now);

  // A new config: backends with the same name and URL keep their state (and requests in flight
  // keep their BackendPtr); the others are dropped or added admitted.
  void reconfigure(const RouterConfig& config, TimePoint now);

  // The best admitted backend for `model` not in `tried` (its outstanding count is incremented:
  // pair with release()), or nullptr. With an affinity key (router/prefix_affinity.h) and prefix
  // affinity on: the key's rendezvous order, skipping replicas over the bounded load.
  BackendPtr acquire(const std::string& model, const std::vector<const Backend*>& tried,
                     std::optional<uint64_t> affinity = std::nullopt);
  void release(Backend& backend);

  // Passive outcomes of proxied requests.
  Transition report_failure(Backend& backend, TimePoint now);
  void report_success(Backend& backend);

  // Active probes: the backends whose probe is due (their next probe is pushed back by a
  // timeout so a slow probe is not started twice), then each probe's outcome.
  std::vector<BackendPtr> due_probes(TimePoint now);
  Transition report_probe(Backend& backend, bool ok, TimePoint now);
  // Load scraped from a backend's /metrics.
  void report_load(Backend& backend, double num_waiting, double kv_usage);

  // True if some admitted backend serves `model`.
  bool has_admitted(const std::string& model) const;
  // True if any backend (admitted or not) is configured to serve `model`.
  bool serves(const std::string& model) const;
  std::vector<BackendView> snapshot() const;
  // The delay before the next probe of an ejected backend after `failed_probes` failures.
  std::chrono::milliseconds backoff(uint32_t failed_probes) const;

 private:
  Transition count_failure(Backend& b, TimePoint now);

  mutable std::mutex mu_;
  HealthConfig health_;
  BalancingConfig balancing_;
  std::vector<BackendPtr> backends_;
  uint64_t rotation_ = 0;
};

}  // namespace pagoda::router
