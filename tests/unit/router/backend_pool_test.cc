// BackendPool with an injected clock: choice by weighted least load, exclusion of tried
// replicas, passive ejection, probe backoff (interval * 2^k capped), readmission, reconfigure
// keeping state. No sockets, no sleeps.
#include <gtest/gtest.h>

#include <chrono>
#include <map>

#include "router/backend_pool.h"

namespace pagoda::router {
namespace {

using std::chrono::milliseconds;
using TimePoint = BackendPool::TimePoint;

RouterConfig config_of(const std::string& yaml) {
  auto r = parse_router_config(yaml);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : RouterConfig{};
}

const char* kThree = R"(
backends:
  - {name: a, url: 'http://h:1', models: [m]}
  - {name: b, url: 'http://h:2', models: [m]}
  - {name: c, url: 'http://h:3', models: [m, other]}
health: {interval_ms: 100, max_backoff_ms: 1000, failures_to_eject: 2}
)";

TEST(BackendPool, LeastOutstandingSpreadsLoad) {
  TimePoint t0{};
  BackendPool pool(config_of(kThree), t0);
  std::map<std::string, int> counts;
  std::vector<BackendPool::BackendPtr> held;
  for (int i = 0; i < 6; ++i) {
    auto b = pool.acquire("m", {});
    ASSERT_TRUE(b);
    counts[b->config.name]++;
    held.push_back(b);
  }
  // Outstanding requests are never released here: least-outstanding gives 2 each.
  EXPECT_EQ(counts["a"], 2);
  EXPECT_EQ(counts["b"], 2);
  EXPECT_EQ(counts["c"], 2);
  EXPECT_EQ(pool.acquire("other", {})->config.name, "c");
  EXPECT_FALSE(pool.acquire("missing", {}));
}

TEST(BackendPool, WeightsAndScrapedLoadSteerTheChoice) {
  BackendPool pool(config_of(R"(
backends:
  - {name: a, url: 'http://h:1', models: [m], weight: 2.9}
  - {name: b, url: 'http://h:2', models: [m]}
)"),
                   TimePoint{});
  std::map<std::string, int> counts;
  for (int i = 0; i < 8; ++i)
    counts[pool.acquire("m", {})->config.name]++;
  // Score (outstanding + 1) / weight, no ties: a at 0.34 0.69 1.03 1.38 1.72 2.07, b at 1 2;
  // the 8 smallest are a's 6 and b's 2.
  EXPECT_EQ(counts["a"], 6);
  EXPECT_EQ(counts["b"], 2);

  BackendPool loaded(config_of(kThree), TimePoint{});
  auto snapshot = [&](const std::string& name) {
    for (int i = 0; i < 3; ++i) {
      auto b = loaded.acquire("m", {});
      loaded.release(*b);
      if (b->config.name == name) return b;
    }
    return BackendPool::BackendPtr();
  };
  auto a = snapshot("a");
  auto b = snapshot("b");
  ASSERT_TRUE(a && b);
  loaded.report_load(*a, 5, 0.0);   // a queue
  loaded.report_load(*b, 0, 0.99);  // a full KV cache: score 1 * 1.99
  for (int i = 0; i < 3; ++i) {
    auto c = loaded.acquire("m", {});
    EXPECT_EQ(c->config.name, "c");
    loaded.release(*c);
  }
}

TEST(BackendPool, ExcludesTriedReplicas) {
  BackendPool pool(config_of(kThree), TimePoint{});
  std::vector<const BackendPool::Backend*> tried;
  for (int i = 0; i < 3; ++i) {
    auto b = pool.acquire("m", tried);
    ASSERT_TRUE(b);
    for (auto* t : tried)
      EXPECT_NE(t, b.get());
    tried.push_back(b.get());
  }
  EXPECT_FALSE(pool.acquire("m", tried));
}

TEST(BackendPool, PassiveEjectionBackoffAndReadmission) {
  TimePoint t0{};
  BackendPool pool(config_of(kThree), t0);
  auto a = pool.acquire("m", {});
  pool.release(*a);
  // failures_to_eject = 2: one failure, then a success resets the count.
  EXPECT_EQ(pool.report_failure(*a, t0), BackendPool::Transition::kNone);
  pool.report_success(*a);
  EXPECT_EQ(pool.report_failure(*a, t0), BackendPool::Transition::kNone);
  EXPECT_EQ(pool.report_failure(*a, t0), BackendPool::Transition::kEjected);
  EXPECT_EQ(pool.report_failure(*a, t0), BackendPool::Transition::kNone);  // already out
  for (int i = 0; i < 10; ++i) {
    auto b = pool.acquire("m", {});
    EXPECT_NE(b.get(), a.get());
    pool.release(*b);
  }
  EXPECT_EQ(pool.backoff(0), milliseconds(100));
  EXPECT_EQ(pool.backoff(1), milliseconds(200));
  EXPECT_EQ(pool.backoff(3), milliseconds(800));
  EXPECT_EQ(pool.backoff(4), milliseconds(1000));  // capped
  EXPECT_EQ(pool.backoff(40), milliseconds(1000));

  // The first probe of the ejected backend is due one interval after the ejection.
  auto due_names = [&](TimePoint t) {
    std::vector<std::string> names;
    for (auto& b : pool.due_probes(t))
      names.push_back(b->config.name);
    return names;
  };
  // At t0 the never-probed b and c are due; a was pushed to t0 + 100 ms.
  EXPECT_EQ(due_names(t0), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(due_names(t0 + milliseconds(99)), std::vector<std::string>{});
  EXPECT_EQ(due_names(t0 + milliseconds(100)), std::vector<std::string>{"a"});
  // Failed probes back off: 200 ms, then 400 ms.
  TimePoint t1 = t0 + milliseconds(100);
  EXPECT_EQ(pool.report_probe(*a, false, t1), BackendPool::Transition::kNone);
  EXPECT_EQ(due_names(t1 + milliseconds(199)), std::vector<std::string>{});
  EXPECT_EQ(due_names(t1 + milliseconds(200)), std::vector<std::string>{"a"});
  TimePoint t2 = t1 + milliseconds(200);
  EXPECT_EQ(pool.report_probe(*a, false, t2), BackendPool::Transition::kNone);
  EXPECT_EQ(due_names(t2 + milliseconds(399)), std::vector<std::string>{});
  EXPECT_FALSE(pool.snapshot()[0].admitted);
  TimePoint t3 = t2 + milliseconds(400);
  EXPECT_EQ(due_names(t3), std::vector<std::string>{"a"});
  EXPECT_EQ(pool.report_probe(*a, true, t3), BackendPool::Transition::kReadmitted);
  EXPECT_TRUE(pool.snapshot()[0].admitted);
}

TEST(BackendPool, FailedProbesEjectAnAdmittedBackend) {
  TimePoint t0{};
  BackendPool pool(config_of(kThree), t0);
  auto due = pool.due_probes(t0);
  ASSERT_EQ(due.size(), 3u);
  EXPECT_EQ(pool.report_probe(*due[0], false, t0), BackendPool::Transition::kNone);
  EXPECT_EQ(pool.report_probe(*due[0], false, t0), BackendPool::Transition::kEjected);
  EXPECT_TRUE(pool.has_admitted("m"));
  EXPECT_EQ(pool.report_probe(*due[2], false, t0), BackendPool::Transition::kNone);
  EXPECT_EQ(pool.report_probe(*due[2], false, t0), BackendPool::Transition::kEjected);
  EXPECT_FALSE(pool.has_admitted("other"));
  EXPECT_TRUE(pool.serves("other"));
}

TEST(BackendPool, ReconfigureKeepsStateAndInFlightBackends) {
  TimePoint t0{};
  BackendPool pool(config_of(kThree), t0);
  auto a = pool.acquire("m", {});
  ASSERT_EQ(a->config.name, "a");
  pool.report_failure(*a, t0);
  pool.report_failure(*a, t0);  // ejected
  // a keeps its URL (state kept), b is removed, d is new; c changes its weight.
  pool.reconfigure(config_of(R"(
backends:
  - {name: a, url: 'http://h:1', models: [m]}
  - {name: c, url: 'http://h:3', models: [m], weight: 2}
  - {name: d, url: 'http://h:4', models: [m]}
)"),
                   t0);
  auto views = pool.snapshot();
  ASSERT_EQ(views.size(), 3u);
  EXPECT_EQ(views[0].name, "a");
  EXPECT_FALSE(views[0].admitted);
  EXPECT_EQ(views[0].outstanding, 1);  // the request in flight is still counted
  pool.release(*a);
  EXPECT_EQ(pool.snapshot()[0].outstanding, 0);
  EXPECT_EQ(views[1].name, "c");
  EXPECT_TRUE(views[1].admitted);
  EXPECT_EQ(views[2].name, "d");
}

TEST(UpstreamPath, JoinsBaseUrlAndClientPath) {
  UpstreamUrl plain{"h", 80, ""};
  UpstreamUrl v1{"h", 80, "/v1"};
  UpstreamUrl proxy{"h", 80, "/openai"};
  EXPECT_EQ(upstream_path(plain, "/v1/chat/completions"), "/v1/chat/completions");
  EXPECT_EQ(upstream_path(v1, "/v1/chat/completions"), "/v1/chat/completions");
  EXPECT_EQ(upstream_path(proxy, "/v1/models?x=1"), "/openai/v1/models?x=1");
  EXPECT_EQ(upstream_path(v1, "/health"), "/v1/health");
}

}  // namespace
}  // namespace pagoda::router
