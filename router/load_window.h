// LoadWindow: the finished requests of the last `window` (bounded to kMaxSamples, oldest dropped
// first) and what the ladder reads from them: p95 TTFT, p95 TPOT and the error rate. A statistic
// needs at least `min_samples` samples, or it is nullopt (one slow request of two is no p95).
// Thread-safe (one mutex); the clock is injected.
//
// What the router measures (it has no tokenizer): TTFT = request sent upstream -> first body byte
// (for a non-streamed response that is the whole generation); TPOT = (last byte - first byte) /
// (SSE data events - 1) of a streamed response with at least two events. Errors: requests the
// router answered with a 5xx or whose stream was cut (429s and 4xx are the client's, not load).
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

namespace pagoda::router {

class LoadWindow {
 public:
  using Clock = std::chrono::steady_clock;
  using TimePoint = Clock::time_point;
  static constexpr size_t kMaxSamples = 100000;

  struct Stats {
    size_t num_samples = 0;
    std::optional<double> p95_ttft_ms;
    std::optional<double> p95_tpot_ms;
    std::optional<double> error_rate;
  };

  void add(TimePoint now, std::optional<double> ttft_ms, std::optional<double> tpot_ms, bool error);
  // Drops samples older than `window` and summarises the rest.
  Stats stats(TimePoint now, std::chrono::milliseconds window, size_t min_samples);

 private:
  struct Sample {
    TimePoint at;
    std::optional<double> ttft_ms;
    std::optional<double> tpot_ms;
    bool error = false;
  };
  std::mutex mu_;
  std::deque<Sample> samples_;
};

// The nearest-rank p-th percentile (p in (0, 100]) of `values` (reordered); nullopt if empty.
std::optional<double> percentile(std::vector<double>& values, double p);

}  // namespace pagoda::router
