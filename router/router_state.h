// RouterState: what every connection of the router shares: the current config (swapped whole on
// SIGHUP; a request keeps the snapshot it started with), the backend pool and the metrics.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "router/backend_pool.h"
#include "router/degradation.h"
#include "router/router_config.h"
#include "router/router_metrics.h"

namespace pagoda::router {

class RouterState {
 public:
  RouterState(RouterConfig config, std::string config_path);

  std::shared_ptr<const RouterConfig> config() const;
  // Reads the config file again; on success swaps it in (backends reconfigured, requests in
  // flight untouched). On failure the running config stays and the error is returned.
  Status reload();

  BackendPool& pool() { return pool_; }
  RouterMetrics& metrics() { return metrics_; }
  Degradation& degradation() { return degradation_; }

  std::atomic<int64_t> active_requests{0};
  std::atomic<bool> draining{false};

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const RouterConfig> config_;
  std::string config_path_;
  BackendPool pool_;
  RouterMetrics metrics_;
  Degradation degradation_;
};

}  // namespace pagoda::router
