#include "router/load_window.h"

#include <algorithm>
#include <cmath>

namespace pagoda::router {

std::optional<double> percentile(std::vector<double>& values, double p) {
  if (values.empty()) return std::nullopt;
  // Nearest rank: the smallest value with at least p% of the values at or below it.
  auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
  rank = std::clamp<size_t>(rank, 1, values.size());
  auto nth = values.begin() + static_cast<std::ptrdiff_t>(rank - 1);
  std::nth_element(values.begin(), nth, values.end());
  return *nth;
}

void LoadWindow::add(TimePoint now, std::optional<double> ttft_ms, std::optional<double> tpot_ms,
                     bool error) {
  std::lock_guard lock(mu_);
  if (samples_.size() >= kMaxSamples) samples_.pop_front();
  samples_.push_back({now, ttft_ms, tpot_ms, error});
}

LoadWindow::Stats LoadWindow::stats(TimePoint now, std::chrono::milliseconds window,
                                    size_t min_samples) {
  std::vector<double> ttft;
  std::vector<double> tpot;
  size_t errors = 0;
  Stats out;
  {
    std::lock_guard lock(mu_);
    while (!samples_.empty() && now - samples_.front().at > window)
      samples_.pop_front();
    out.num_samples = samples_.size();
    for (const Sample& s : samples_) {
      if (s.ttft_ms) ttft.push_back(*s.ttft_ms);
      if (s.tpot_ms) tpot.push_back(*s.tpot_ms);
      errors += s.error ? 1 : 0;
    }
  }
  min_samples = std::max<size_t>(min_samples, 1);
  if (ttft.size() >= min_samples) out.p95_ttft_ms = percentile(ttft, 95);
  if (tpot.size() >= min_samples) out.p95_tpot_ms = percentile(tpot, 95);
  if (out.num_samples >= min_samples) {
    out.error_rate = static_cast<double>(errors) / static_cast<double>(out.num_samples);
  }
  return out;
}

}  // namespace pagoda::router
