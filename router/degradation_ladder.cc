#include "router/degradation_ladder.h"

#include <algorithm>

namespace pagoda::router {

void DegradationLadder::reconfigure(LadderConfig config) {
  config_ = std::move(config);
  level_ = std::min(level_, static_cast<int>(config_.levels.size()));
}

bool DegradationLadder::holds(int level, const LadderSignals& s, double ratio) const {
  if (level < 1 || level > static_cast<int>(config_.levels.size())) return false;
  const LadderLevel& l = config_.levels[static_cast<size_t>(level - 1)];
  auto over = [ratio](const std::optional<double>& threshold, std::optional<double> value) {
    return threshold && value && *value >= *threshold * ratio;
  };
  return over(l.queue_length, s.queue_length) || over(l.backend_waiting, s.backend_waiting) ||
         over(l.p95_ttft_ms, s.p95_ttft_ms) || over(l.p95_tpot_ms, s.p95_tpot_ms) ||
         over(l.error_rate, s.error_rate);
}

std::chrono::milliseconds DegradationLadder::cooldown(int level) const {
  const LadderLevel& l = config_.levels[static_cast<size_t>(level - 1)];
  return std::chrono::milliseconds(l.cooldown_ms.value_or(config_.cooldown_ms));
}

int DegradationLadder::update(const LadderSignals& s, TimePoint now) {
  const int num_levels = static_cast<int>(config_.levels.size());
  int target = 0;
  for (int l = num_levels; l >= 1 && target == 0; --l) {
    if (holds(l, s, 1.0)) target = l;
  }
  if (target > level_) {
    level_ = target;
    last_held_ = now;
    return level_;
  }
  if (level_ == 0) return 0;
  bool still = false;
  for (int l = level_; l <= num_levels && !still; ++l)
    still = holds(l, s, config_.clear_ratio);
  if (still) {
    last_held_ = now;
  } else if (now - last_held_ >= cooldown(level_)) {
    --level_;
    last_held_ = now;
  }
  return level_;
}

}  // namespace pagoda::router
