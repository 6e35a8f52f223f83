#include "router/degradation.h"

namespace pagoda::router {

Degradation::Degradation(const LadderConfig& config)
    : config_(config), ladder_(config), queue_(config.queue), cache_(config.cache) {}

void Degradation::reconfigure(const LadderConfig& config) {
  std::lock_guard lock(mu_);
  config_ = config;
  ladder_.reconfigure(config);
  level_ = config.enabled ? ladder_.level() : 0;
  queue_.reconfigure(config.queue);
  cache_.reconfigure(config.cache);
}

int Degradation::evaluate(double backend_waiting, TimePoint now, LadderSignals* seen) {
  std::lock_guard lock(mu_);
  if (!config_.enabled) return 0;
  LoadWindow::Stats stats =
      window_.stats(now, std::chrono::milliseconds(config_.window_ms), config_.min_samples);
  LadderSignals s;
  s.queue_length = static_cast<double>(queue_.num_running() + queue_.num_waiting());
  s.backend_waiting = backend_waiting;
  s.p95_ttft_ms = stats.p95_ttft_ms;
  s.p95_tpot_ms = stats.p95_tpot_ms;
  s.error_rate = stats.error_rate;
  int level = ladder_.update(s, now);
  level_.store(level, std::memory_order_relaxed);
  if (seen) *seen = s;
  return level;
}

}  // namespace pagoda::router
