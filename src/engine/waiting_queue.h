// WaitingQueue: requests waiting for admission, in the order the policy admits them.
//  FCFS: arrival order; a preempted request goes back to the front (the most recently
//        preempted first, so a burst of preemptions keeps admission order).
//  Priority: by (priority, arrival_seq, id) ascending; preempted requests are reinserted by
//        the same key, so they resume before later arrivals of the same priority.
// The queue holds non-owning pointers; the Scheduler owns the requests.
#pragma once

#include <cstddef>
#include <deque>
#include <set>
#include <vector>

#include "engine/request.h"

namespace pagoda::engine {

enum class SchedulingPolicy : uint8_t { kFcfs, kPriority };

class WaitingQueue {
 public:
  explicit WaitingQueue(SchedulingPolicy policy) : policy_(policy) {}

  void push_new(Request* r);        // a new arrival
  void push_preempted(Request* r);  // a request just preempted
  Request* front() const;           // precondition: !empty()
  void pop_front();
  bool remove(Request* r);  // O(n) for FCFS, O(log n) for priority
  size_t size() const {
    return policy_ == SchedulingPolicy::kFcfs ? fifo_.size() : ordered_.size();
  }
  bool empty() const { return size() == 0; }
  std::vector<Request*> items() const;  // in admission order (tests, invariant checks)

  // Policy order: true if a should be admitted before b (priority policy key).
  static bool before(const Request* a, const Request* b);

 private:
  struct Before {
    bool operator()(const Request* a, const Request* b) const { return before(a, b); }
  };
  SchedulingPolicy policy_;
  std::deque<Request*> fifo_;
  std::set<Request*, Before> ordered_;
};

}  // namespace pagoda::engine
