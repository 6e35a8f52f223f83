// How the op fronts (ops.cc, attention.cc) run their work: on the caller's team (team.h) when it
// is in one, else in a parallel region of their own. For kernels/ only.
#pragma once

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "kernels/isa.h"

namespace pagoda::kernels::team_detail {

// What one op's threads share: a buffer its first thread sets up and its work counters, reset
// by the first thread before the barrier that precedes their use.
struct OpShared {
  static constexpr size_t kCounters = 9;
  uint8_t* buffer = nullptr;
  std::atomic<int64_t> counters[kCounters] = {};
};

// What a thread wrote since the last barrier, as all the threads see it (team.h).
enum class Written { kNone, kFirst, kAll };

// One thread's view of the threads running an op.
class OpThread {
 public:
  OpThread(int rank, int size, OpShared& shared, Written& written)
      : rank_(rank), size_(size), shared_(shared), written_(written) {}
  int rank() const { return rank_; }
  int size() const { return size_; }
  OpShared& shared() const { return shared_; }

  // fn() on the first thread only, after a barrier if the others wrote since the last one.
  template <class Fn>
  void first(Fn&& fn) {
    if (written_ == Written::kAll) barrier();
    if (rank_ == 0) fn();
    if (written_ == Written::kNone) written_ = Written::kFirst;
  }
  // Before every thread reads what any of them wrote: a barrier unless nothing was written.
  void sync() {
    if (written_ != Written::kNone) barrier();
  }
  // After this thread (and so, by the same calls, every thread) wrote its share.
  void wrote_all() { written_ = Written::kAll; }

 private:
  void barrier() {
#pragma omp barrier
    written_ = Written::kNone;
  }

  int rank_, size_;
  OpShared& shared_;
  Written& written_;
};

// The calling thread's place in the team running run_in_team's body, or nullptr outside one.
struct TeamThread {
  int rank = 0, size = 1;
  OpShared* shared = nullptr;
  Written written = Written::kNone;
};
TeamThread* current_team();

// The threads an op may use: its team's (which every thread of it sees alike, even if
// set_num_threads runs meanwhile), else isa.h's num_threads().
inline int available_threads() {
  const TeamThread* team = current_team();
  return team != nullptr ? team->size : num_threads();
}

// body(OpThread&) on every thread of the caller's team, or of a region of `threads` threads of
// the op's own (the region ends when all are done).
template <class Body>
void run_op(int threads, Body&& body) {
  if (TeamThread* team = current_team()) {
    OpThread t(team->rank, team->size, *team->shared, team->written);
    body(t);
    return;
  }
  OpShared shared;
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    Written written = Written::kNone;
    OpThread t(omp_get_thread_num(), omp_get_num_threads(), shared, written);
    body(t);
  }
}

// fn() where only one thread is worth it: the team's first thread (after the barrier its inputs
// need), or the caller outside a team.
template <class Fn>
void run_first(Fn&& fn) {
  if (TeamThread* team = current_team()) {
    OpThread t(team->rank, team->size, *team->shared, team->written);
    t.first(fn);
    return;
  }
  fn();
}

// fn(r0, r1) over rows [0, rows) in contiguous slices, one per thread, when `work` (~multiply-adds)
// is worth more than one thread at min_work_per_thread each; else fn(0, rows) by run_first.
// For ops whose rows are computed independently (the bits do not depend on the split).
template <class Fn>
void for_rows(int64_t rows, int64_t work, int64_t min_work_per_thread, int max_threads, Fn&& fn) {
  const int64_t useful = std::min<int64_t>(rows, work / min_work_per_thread);
  const int nth = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(max_threads, useful)));
  if (nth == 1) {
    run_first([&] { fn(int64_t{0}, rows); });
    return;
  }
  run_op(nth, [&](OpThread& t) {
    t.sync();
    const int n = std::min(t.size(), nth);
    if (t.rank() < n) fn(rows * t.rank() / n, rows * (t.rank() + 1) / n);
    t.wrote_all();
  });
}

}  // namespace pagoda::kernels::team_detail
