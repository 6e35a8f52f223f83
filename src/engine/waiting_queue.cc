// WaitingQueue: FCFS deque or priority-ordered set (see waiting_queue.h).
#include "engine/waiting_queue.h"

#include <algorithm>
#include <tuple>

#include "base/check.h"

namespace pagoda::engine {

bool WaitingQueue::before(const Request* a, const Request* b) {
  return std::make_tuple(a->priority(), a->arrival_seq(), a->id()) <
         std::make_tuple(b->priority(), b->arrival_seq(), b->id());
}

void WaitingQueue::push_new(Request* r) {
  if (policy_ == SchedulingPolicy::kFcfs) {
    fifo_.push_back(r);
  } else {
    ordered_.insert(r);
  }
}

void WaitingQueue::push_preempted(Request* r) {
  if (policy_ == SchedulingPolicy::kFcfs) {
    fifo_.push_front(r);
  } else {
    ordered_.insert(r);
  }
}

Request* WaitingQueue::front() const {
  PAGODA_CHECK(!empty());
  return policy_ == SchedulingPolicy::kFcfs ? fifo_.front() : *ordered_.begin();
}

void WaitingQueue::pop_front() {
  PAGODA_CHECK(!empty());
  if (policy_ == SchedulingPolicy::kFcfs) {
    fifo_.pop_front();
  } else {
    ordered_.erase(ordered_.begin());
  }
}

bool WaitingQueue::remove(Request* r) {
  if (policy_ == SchedulingPolicy::kFcfs) {
    const auto it = std::find(fifo_.begin(), fifo_.end(), r);
    if (it == fifo_.end()) return false;
    fifo_.erase(it);
    return true;
  }
  return ordered_.erase(r) != 0;
}

std::vector<Request*> WaitingQueue::items() const {
  if (policy_ == SchedulingPolicy::kFcfs) return std::vector<Request*>(fifo_.begin(), fifo_.end());
  return std::vector<Request*>(ordered_.begin(), ordered_.end());
}

}  // namespace pagoda::engine
