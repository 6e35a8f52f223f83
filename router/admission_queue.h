// AdmissionQueue: the router-side queue of the ladder's level 1. At most max_concurrent requests
// run (are proxied) at once; the others wait, highest tier first and first come first within a
// tier, for at most timeout. When the queue is full, a newcomer of a higher tier than the lowest
// waiting one takes its place (that one is shed); otherwise the newcomer is shed: lower tiers
// shed first. Below level 1 requests bypass the queue but are still counted as running, so the
// cap holds from the moment the ladder climbs. Pure state with an injected clock; thread-safe.
// Waiters poll() (the proxy sleeps a few ms between polls).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <utility>

#include "router/ladder_config.h"

namespace pagoda::router {

class AdmissionQueue {
 public:
  using Clock = std::chrono::steady_clock;
  using TimePoint = Clock::time_point;

  enum class State { kAdmitted, kWaiting, kShed, kTimedOut };

  struct Ticket {
    uint64_t id = 0;
    State state = State::kAdmitted;
  };

  explicit AdmissionQueue(QueueConfig config) : config_(config) {}
  void reconfigure(QueueConfig config);

  // A new request. `bypass`: admitted at once (below level 1 or no queue configured).
  Ticket enqueue(uint32_t tier, bool bypass, TimePoint now);
  // A waiting ticket's state now; kAdmitted, kShed and kTimedOut are final (the ticket is gone
  // from the queue; an admitted one must be released).
  State poll(uint64_t id, TimePoint now);
  // An admitted request finished.
  void release();
  // A waiting request's client went away (no-op if it was admitted, shed or timed out meanwhile:
  // an admitted one is released).
  void cancel(uint64_t id);

  size_t num_waiting() const;
  size_t num_running() const;

 private:
  void promote();

  mutable std::mutex mu_;
  QueueConfig config_;
  uint64_t next_id_ = 1;
  size_t running_ = 0;
  // (-tier, id): begin() is the next to admit, the last element the first to shed.
  std::set<std::pair<int64_t, uint64_t>> waiting_;
  std::map<uint64_t, std::pair<TimePoint, uint32_t>> waiting_info_;  // id -> (since, tier)
  std::map<uint64_t, State> decided_;  // admitted or shed while waiting, not yet polled
};

}  // namespace pagoda::router
