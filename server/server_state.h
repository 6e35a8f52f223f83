// ServerState: what every connection shares: the config, the metrics, the models and their
// engines (server/model_registry.h: loaded on first use, each request holding a lease on its
// model's engine), the server's phase (loading -> ready -> draining; "loading" only while a
// single-model server loads its model at startup) and the Responses API's stored responses.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "pagoda/engine.h"
#include "server/model_registry.h"
#include "server/response_store.h"
#include "server/server_config.h"
#include "server/server_metrics.h"

namespace pagoda::server {

class HttpSession;

// kLost: a rank of the parallel job this server is rank 0 of is gone (server_config.h
// signal_exit_code); the process is about to exit.
enum class ServerPhase { kLoading, kReady, kDraining, kFailed, kLost };

class ServerState {
 public:
  // precondition: models is not empty.
  ServerState(ServerConfig config, std::vector<ModelSource> models, ModelRegistryOptions options)
      : config_(std::move(config)),
        metrics_(names_of(models)),
        responses_(config_.response_store_max_entries, config_.response_store_max_bytes,
                   config_.response_store_ttl),
        models_(std::move(models), std::move(options)) {}

  const ServerConfig& config() const { return config_; }
  ModelRegistry& models() { return models_; }
  const ModelRegistry& models() const { return models_; }
  ServerMetrics& metrics() { return metrics_; }
  ResponseStore& responses() { return responses_; }

  ServerPhase phase() const { return phase_.load(std::memory_order_acquire); }
  void set_phase(ServerPhase p) { phase_.store(p, std::memory_order_release); }

  // Live connections, so that draining can close idle ones.
  uint64_t add_session(const std::shared_ptr<HttpSession>& s) {
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t id = next_session_id_++;
    sessions_.emplace(id, s);
    return id;
  }
  void remove_session(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    sessions_.erase(id);
  }
  size_t num_sessions() const {
    std::lock_guard<std::mutex> lock(mu_);
    return sessions_.size();
  }
  void for_each_session(const std::function<void(const std::shared_ptr<HttpSession>&)>& f) {
    std::unordered_map<uint64_t, std::weak_ptr<HttpSession>> copy;
    {
      std::lock_guard<std::mutex> lock(mu_);
      copy = sessions_;
    }
    for (auto& [id, w] : copy) {
      if (auto s = w.lock()) f(s);
    }
  }

 private:
  static std::vector<std::string> names_of(const std::vector<ModelSource>& models) {
    std::vector<std::string> names;
    for (const ModelSource& m : models)
      names.push_back(m.name);
    return names;
  }

  ServerConfig config_;
  ServerMetrics metrics_;
  ResponseStore responses_;
  ModelRegistry models_;
  std::atomic<ServerPhase> phase_{ServerPhase::kLoading};
  mutable std::mutex mu_;
  uint64_t next_session_id_ = 1;
  std::unordered_map<uint64_t, std::weak_ptr<HttpSession>> sessions_;
};

}  // namespace pagoda::server
