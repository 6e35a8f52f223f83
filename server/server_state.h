// ServerState: what every connection shares: the config, the metrics, the engine (absent while
// the model loads), the server's phase (loading -> ready -> draining) and the Responses API's
// stored responses. The engine pointer,
// once set, stays valid until every connection is gone (the server destroys it last).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "pagoda/engine.h"
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
  ServerState(ServerConfig config, std::string model_name)
      : config_(std::move(config)),
        model_name_(std::move(model_name)),
        metrics_(model_name_),
        responses_(config_.response_store_max_entries, config_.response_store_max_bytes,
                   config_.response_store_ttl) {}

  const ServerConfig& config() const { return config_; }
  const std::string& model_name() const { return model_name_; }
  ServerMetrics& metrics() { return metrics_; }
  ResponseStore& responses() { return responses_; }

  ServerPhase phase() const { return phase_.load(std::memory_order_acquire); }
  void set_phase(ServerPhase p) { phase_.store(p, std::memory_order_release); }
  // Non-null once loaded (also while draining).
  Engine* engine() const { return engine_.load(std::memory_order_acquire); }
  void set_engine(Engine* e) { engine_.store(e, std::memory_order_release); }

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
  ServerConfig config_;
  std::string model_name_;
  ServerMetrics metrics_;
  ResponseStore responses_;
  std::atomic<ServerPhase> phase_{ServerPhase::kLoading};
  std::atomic<Engine*> engine_{nullptr};
  mutable std::mutex mu_;
  uint64_t next_session_id_ = 1;
  std::unordered_map<uint64_t, std::weak_ptr<HttpSession>> sessions_;
};

}  // namespace pagoda::server
