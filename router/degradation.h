// Degradation: the ladder's state shared by every connection of the router: the level machine,
// the window of finished requests it reads, and the state of the actions (token buckets, the
// admission queue, the response cache). The level is evaluated every eval_interval_ms by the
// server (evaluate()); requests read it lock-free (level()). Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>

#include "router/admission_queue.h"
#include "router/degradation_ladder.h"
#include "router/ladder_config.h"
#include "router/load_window.h"
#include "router/rate_limiter.h"
#include "router/response_cache.h"

namespace pagoda::router {

class Degradation {
 public:
  using Clock = std::chrono::steady_clock;
  using TimePoint = Clock::time_point;

  explicit Degradation(const LadderConfig& config);
  void reconfigure(const LadderConfig& config);

  // One evaluation: the queue length is the router's requests (running + queued) and the sum of
  // the replicas' scraped waiting counts; latency and errors come from the window. Returns the
  // level now in force and the signals it saw.
  int evaluate(double backend_waiting, TimePoint now, LadderSignals* seen = nullptr);
  int level() const { return level_.load(std::memory_order_relaxed); }

  LoadWindow& window() { return window_; }
  RateLimiter& limiter() { return limiter_; }
  AdmissionQueue& queue() { return queue_; }
  ResponseCache& cache() { return cache_; }

 private:
  std::mutex mu_;  // guards ladder_ and config_
  LadderConfig config_;
  DegradationLadder ladder_;
  std::atomic<int> level_{0};
  LoadWindow window_;
  RateLimiter limiter_;
  AdmissionQueue queue_;
  ResponseCache cache_;
};

}  // namespace pagoda::router
