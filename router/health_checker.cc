#include "router/health_checker.h"

#include <algorithm>
#include <chrono>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "router/backend_load.h"
#include "router/upstream_client.h"

namespace pagoda::router {

namespace asio = boost::asio;
using std::chrono::milliseconds;

namespace {

constexpr uint64_t kMaxHealthBody = 64u << 10;
constexpr uint64_t kMaxMetricsBody = 4u << 20;

asio::awaitable<void> probe(RouterState& state, BackendPool::BackendPtr b, milliseconds timeout) {
  auto executor = co_await asio::this_coro::executor;
  auto health = co_await simple_get(executor, b->config.url, "/health", b->config.api_key, timeout,
                                    kMaxHealthBody);
  bool ok = health && health->status == 200;
  auto t = state.pool().report_probe(*b, ok, BackendPool::Clock::now());
  if (t == BackendPool::Transition::kEjected) state.metrics().count_ejection(b->config.name);
  if (t == BackendPool::Transition::kReadmitted) state.metrics().count_readmission(b->config.name);
  if (!ok || state.draining) co_return;
  auto metrics = co_await simple_get(executor, b->config.url, "/metrics", b->config.api_key,
                                     timeout, kMaxMetricsBody);
  if (!metrics || metrics->status != 200) co_return;
  BackendLoad load = parse_backend_load(metrics->body);
  state.pool().report_load(*b, load.num_waiting.value_or(0.0), load.kv_usage.value_or(0.0));
}

}  // namespace

asio::awaitable<void> run_health_checks(RouterState& state) {
  auto executor = co_await asio::this_coro::executor;
  asio::steady_timer timer(executor);
  while (!state.draining) {
    auto cfg = state.config();
    for (BackendPool::BackendPtr& b : state.pool().due_probes(BackendPool::Clock::now())) {
      asio::co_spawn(executor, probe(state, std::move(b), milliseconds(cfg->health.timeout_ms)),
                     asio::detached);
    }
    timer.expires_after(milliseconds(std::min<uint32_t>(100, cfg->health.interval_ms)));
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

}  // namespace pagoda::router
