// DegradationLadder: the level (0 = normal, 1..5) the router runs at, from the load it sees.
// Pure state with an injected clock: the router calls update() every eval_interval_ms with the
// current signals; unit tests drive it with a fake clock.
//
// A level "holds" when any of its triggers is at or above its threshold. The target is the
// highest level that holds; the ladder climbs to it at once (load rises fast, the actions must
// keep up). It descends one level at a time, and only after the current level has been clear
// for its cooldown: clear means no trigger of this level or any above is at or above
// clear_ratio * threshold (the hysteresis band), so a signal hovering at a threshold does not
// flap the level. Each step down restarts the cooldown.
#pragma once

#include <chrono>
#include <optional>

#include "router/ladder_config.h"

namespace pagoda::router {

struct LadderSignals {
  double queue_length = 0;            // router-side requests in flight + queued
  double backend_waiting = 0;         // sum of scraped vllm:num_requests_waiting
  std::optional<double> p95_ttft_ms;  // nullopt: too few samples in the window
  std::optional<double> p95_tpot_ms;
  std::optional<double> error_rate;
};

class DegradationLadder {
 public:
  using Clock = std::chrono::steady_clock;
  using TimePoint = Clock::time_point;

  explicit DegradationLadder(LadderConfig config) : config_(std::move(config)) {}

  // A new config (SIGHUP) keeps the current level, capped at the new number of levels.
  void reconfigure(LadderConfig config);

  // Re-evaluates; returns the level now in force.
  int update(const LadderSignals& s, TimePoint now);
  int level() const { return level_; }

  // True if any trigger of `level` (1-based) is at or above `ratio` * its threshold.
  bool holds(int level, const LadderSignals& s, double ratio) const;

 private:
  std::chrono::milliseconds cooldown(int level) const;

  LadderConfig config_;
  int level_ = 0;
  TimePoint last_held_{};  // when the current level (or one above) last held, or was entered
};

}  // namespace pagoda::router
