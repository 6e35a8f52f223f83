// The degradation ladder's state machine with a fake clock: ramp up, hold, descend one level per
// cooldown, return to 0 without oscillating while a signal hovers inside the hysteresis band;
// and the sliding window it reads (nearest-rank p95 against a sorted copy, expiry, min_samples).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "router/degradation.h"
#include "router/degradation_ladder.h"
#include "router/load_window.h"

namespace pagoda::router {
namespace {

using std::chrono::milliseconds;
using TimePoint = DegradationLadder::TimePoint;

LadderConfig five_levels(uint32_t cooldown_ms) {
  LadderConfig c;
  c.enabled = true;
  c.cooldown_ms = cooldown_ms;
  c.clear_ratio = 0.5;
  for (int i = 1; i <= 5; ++i) {
    LadderLevel l;
    l.queue_length = 10.0 * i;  // 10, 20, 30, 40, 50
    c.levels.push_back(l);
  }
  return c;
}

LadderSignals queue(double n) {
  LadderSignals s;
  s.queue_length = n;
  return s;
}

TEST(DegradationLadder, ClimbsAtOnceToTheHighestLevelThatHolds) {
  DegradationLadder ladder(five_levels(1000));
  TimePoint t{};
  EXPECT_EQ(ladder.update(queue(9), t), 0);
  EXPECT_EQ(ladder.update(queue(10), t), 1);
  EXPECT_EQ(ladder.update(queue(35), t), 3);
  EXPECT_EQ(ladder.update(queue(1000), t), 5);
}

TEST(DegradationLadder, RampHoldDropAndReturnToZeroWithoutOscillating) {
  DegradationLadder ladder(five_levels(1000));
  TimePoint t{};
  std::vector<int> levels;
  auto step = [&](double q, int ms) {
    t += milliseconds(ms);
    levels.push_back(ladder.update(queue(q), t));
  };
  // Ramp: 0 -> 5 over the queue thresholds.
  for (double q : {5.0, 12.0, 25.0, 33.0, 41.0, 55.0})
    step(q, 100);
  EXPECT_EQ(levels, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  // Hold: load stays over level 5's threshold for 10 s.
  for (int i = 0; i < 100; ++i)
    step(60, 100);
  EXPECT_EQ(ladder.level(), 5);
  // Load drops to 0: one level down per full cooldown (1 s), never two at once.
  levels.clear();
  for (int i = 0; i < 60; ++i)
    step(0, 100);
  ASSERT_EQ(ladder.level(), 0);
  for (size_t i = 1; i < levels.size(); ++i) {
    EXPECT_TRUE(levels[i] == levels[i - 1] || levels[i] == levels[i - 1] - 1) << i;
  }
  // Each level lasts exactly the cooldown: 10 steps of 100 ms (the first from the last hold).
  for (int l = 4; l >= 1; --l) {
    EXPECT_EQ(std::count(levels.begin(), levels.end(), l), 10) << "level " << l;
  }
  EXPECT_EQ(levels.front(), 5);
}

TEST(DegradationLadder, HysteresisKeepsALevelWhileTheSignalHovers) {
  DegradationLadder ladder(five_levels(1000));
  TimePoint t{};
  ladder.update(queue(21), t);
  ASSERT_EQ(ladder.level(), 2);
  // The queue hovers around level 2's threshold (20) but above half of it (clear_ratio 0.5):
  // the level neither drops nor flaps for a minute.
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> hover(11, 24);
  std::vector<int> seen;
  for (int i = 0; i < 600; ++i) {
    t += milliseconds(100);
    seen.push_back(ladder.update(queue(hover(rng)), t));
  }
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int l) { return l == 2; }));
  // Under clear_ratio * 20 = 10 (still level 1's trigger at 0.5 * 10 = 5): one step per cooldown
  // and no lower than 1 while the queue stays at 7.
  for (int i = 0; i < 50; ++i) {
    t += milliseconds(100);
    ladder.update(queue(7), t);
  }
  EXPECT_EQ(ladder.level(), 1);
  // A short spike back over level 1's clear band restarts its cooldown.
  t += milliseconds(900);
  ladder.update(queue(4), t);
  EXPECT_EQ(ladder.level(), 1);
  t += milliseconds(50);
  ladder.update(queue(6), t);  // >= 5: held again
  t += milliseconds(999);
  EXPECT_EQ(ladder.update(queue(0), t), 1);
  t += milliseconds(1);
  EXPECT_EQ(ladder.update(queue(0), t), 0);
}

TEST(DegradationLadder, PerLevelCooldownAndEveryTrigger) {
  LadderConfig c = five_levels(1000);
  c.levels[0].cooldown_ms = 100;
  c.levels[1].p95_ttft_ms = 2000;
  c.levels[2].p95_tpot_ms = 300;
  c.levels[3].error_rate = 0.2;
  c.levels[0].backend_waiting = 4;
  DegradationLadder ladder(c);
  TimePoint t{};
  LadderSignals s;
  s.backend_waiting = 4;
  EXPECT_EQ(ladder.update(s, t), 1);
  s = {};
  s.p95_ttft_ms = 2500;
  EXPECT_EQ(ladder.update(s, t), 2);
  s.p95_tpot_ms = 300;
  EXPECT_EQ(ladder.update(s, t), 3);
  s.error_rate = 0.25;
  EXPECT_EQ(ladder.update(s, t), 4);
  // Unknown latency (too few samples) is not a trigger.
  s = {};
  for (int l = 4; l >= 2; --l) {
    t += milliseconds(1000);
    EXPECT_EQ(ladder.update(s, t), l - 1);
  }
  t += milliseconds(100);  // level 1's own cooldown
  EXPECT_EQ(ladder.update(s, t), 0);
}

TEST(DegradationLadder, ReconfigureCapsTheLevel) {
  DegradationLadder ladder(five_levels(1000));
  ladder.update(queue(100), TimePoint{});
  ASSERT_EQ(ladder.level(), 5);
  LadderConfig two = five_levels(1000);
  two.levels.resize(2);
  ladder.reconfigure(two);
  EXPECT_EQ(ladder.level(), 2);
}

TEST(LoadWindow, NearestRankP95AgainstASortedCopy) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> d(1, 5000);
  for (size_t n : {1u, 2u, 19u, 20u, 21u, 100u, 1237u}) {
    std::vector<double> v(n);
    for (double& x : v)
      x = d(rng);
    std::vector<double> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    // Nearest rank: index ceil(0.95 n) - 1 of the sorted values.
    size_t rank = (95 * n + 99) / 100;
    std::vector<double> copy = v;
    EXPECT_EQ(*percentile(copy, 95), sorted[rank - 1]) << n;
  }
  std::vector<double> empty;
  EXPECT_FALSE(percentile(empty, 95));
}

TEST(LoadWindow, ExpiresOldSamplesAndNeedsMinSamples) {
  LoadWindow w;
  TimePoint t{};
  for (int i = 0; i < 10; ++i)
    w.add(t + milliseconds(i), 100.0 + i, std::nullopt, i < 3);
  auto s = w.stats(t + milliseconds(10), milliseconds(1000), 10);
  EXPECT_EQ(s.num_samples, 10u);
  EXPECT_EQ(*s.p95_ttft_ms, 109.0);
  EXPECT_FALSE(s.p95_tpot_ms);  // no TPOT samples
  EXPECT_DOUBLE_EQ(*s.error_rate, 0.3);
  s = w.stats(t + milliseconds(10), milliseconds(1000), 11);
  EXPECT_FALSE(s.p95_ttft_ms);
  EXPECT_FALSE(s.error_rate);
  // 1005 ms later the first 5 samples (at 0..4 ms) are older than the window.
  s = w.stats(t + milliseconds(1005), milliseconds(1000), 1);
  EXPECT_EQ(s.num_samples, 5u);
  EXPECT_DOUBLE_EQ(*s.error_rate, 0.0);
}

TEST(Degradation, QueueLengthCountsRunningAndQueuedRequests) {
  LadderConfig c = five_levels(1000);
  c.queue.max_concurrent = 10;
  c.queue.max_queued = 100;
  Degradation d(c);
  TimePoint t{};
  for (int i = 0; i < 15; ++i)
    d.queue().enqueue(0, false, t);  // 10 running, 5 waiting
  LadderSignals seen;
  EXPECT_EQ(d.evaluate(0, t, &seen), 1);
  EXPECT_EQ(seen.queue_length, 15);
  EXPECT_EQ(d.level(), 1);
  // The replicas' waiting counts are their own trigger, not added to the router's queue.
  EXPECT_EQ(d.evaluate(1000, t, &seen), 1);
  EXPECT_EQ(seen.backend_waiting, 1000);
  LadderConfig off;
  d.reconfigure(off);
  EXPECT_EQ(d.level(), 0);
  EXPECT_EQ(d.evaluate(0, t), 0);
}

}  // namespace
}  // namespace pagoda::router
