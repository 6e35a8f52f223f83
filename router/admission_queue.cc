#include "router/admission_queue.h"

namespace pagoda::router {

void AdmissionQueue::reconfigure(QueueConfig config) {
  std::lock_guard lock(mu_);
  config_ = config;
  promote();
}

void AdmissionQueue::promote() {
  while (!waiting_.empty() && running_ < config_.max_concurrent) {
    uint64_t id = waiting_.begin()->second;
    waiting_.erase(waiting_.begin());
    waiting_info_.erase(id);
    decided_[id] = State::kAdmitted;
    ++running_;
  }
}

AdmissionQueue::Ticket AdmissionQueue::enqueue(uint32_t tier, bool bypass, TimePoint now) {
  std::lock_guard lock(mu_);
  Ticket t{next_id_++, State::kAdmitted};
  if (bypass || config_.max_concurrent == 0 ||
      (running_ < config_.max_concurrent && waiting_.empty())) {
    ++running_;
    return t;
  }
  std::pair<int64_t, uint64_t> key{-static_cast<int64_t>(tier), t.id};
  if (waiting_.size() >= config_.max_queued) {
    // Full: the newcomer replaces the last (lowest tier, newest) waiter if it outranks it.
    if (waiting_.empty() || -std::prev(waiting_.end())->first >= static_cast<int64_t>(tier)) {
      t.state = State::kShed;
      return t;
    }
    uint64_t victim = std::prev(waiting_.end())->second;
    waiting_.erase(std::prev(waiting_.end()));
    waiting_info_.erase(victim);
    decided_[victim] = State::kShed;
  }
  waiting_.insert(key);
  waiting_info_[t.id] = {now, tier};
  t.state = State::kWaiting;
  return t;
}

AdmissionQueue::State AdmissionQueue::poll(uint64_t id, TimePoint now) {
  std::lock_guard lock(mu_);
  promote();
  if (auto it = decided_.find(id); it != decided_.end()) {
    State s = it->second;
    decided_.erase(it);
    return s;
  }
  auto info = waiting_info_.find(id);
  if (info == waiting_info_.end()) return State::kShed;  // unknown: never wait forever
  if (now - info->second.first >= std::chrono::milliseconds(config_.timeout_ms)) {
    waiting_.erase({-static_cast<int64_t>(info->second.second), id});
    waiting_info_.erase(info);
    return State::kTimedOut;
  }
  return State::kWaiting;
}

void AdmissionQueue::release() {
  std::lock_guard lock(mu_);
  if (running_ > 0) --running_;
  promote();
}

void AdmissionQueue::cancel(uint64_t id) {
  std::lock_guard lock(mu_);
  if (auto it = decided_.find(id); it != decided_.end()) {
    if (it->second == State::kAdmitted && running_ > 0) --running_;
    decided_.erase(it);
  } else if (auto info = waiting_info_.find(id); info != waiting_info_.end()) {
    waiting_.erase({-static_cast<int64_t>(info->second.second), id});
    waiting_info_.erase(info);
  }
  promote();
}

size_t AdmissionQueue::num_waiting() const {
  std::lock_guard lock(mu_);
  return waiting_.size();
}

size_t AdmissionQueue::num_running() const {
  std::lock_guard lock(mu_);
  return running_;
}

}  // namespace pagoda::router
