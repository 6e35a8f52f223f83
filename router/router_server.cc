#include "router/router_server.h"

#include <sys/resource.h>

#include <csignal>
#include <cstdlib>
#include <optional>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "router/health_checker.h"
#include "router/proxy_session.h"
#include "router/router_state.h"

namespace pagoda::router {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {
constexpr auto kDrainTimeout = std::chrono::seconds(30);

// Every client connection is a descriptor and a proxied request one more: the default soft limit
// (often 1024) would cap the router far below its connection target (5,000 idle keep-alive
// connections are tested), so the soft limit is raised to the hard one.
void raise_file_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max) return;
  rlim_t before = rl.rlim_cur;
  rl.rlim_cur = rl.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &rl) == 0) {
    spdlog::info("open-file limit raised from {} to {}", before, rl.rlim_cur);
  }
}
}  // namespace

struct RouterServer::Impl {
  Impl(RouterConfig config, std::string path, unsigned n)
      : state(std::move(config), std::move(path)), num_threads(std::max(1u, n)), acceptor(ioc) {}

  asio::awaitable<void> accept_loop() {
    while (!state.draining) {
      auto [ec, socket] = co_await acceptor.async_accept(asio::make_strand(ioc),
                                                         asio::as_tuple(asio::use_awaitable));
      if (ec) {
        if (state.draining || ec == asio::error::operation_aborted) break;
        continue;  // EMFILE and the like: keep serving the connections we have
      }
      asio::ip::tcp::no_delay nd(true);
      boost::system::error_code ignored;
      socket.set_option(nd, ignored);
      auto executor = socket.get_executor();
      asio::co_spawn(executor, serve_connection(std::move(socket), state), asio::detached);
    }
  }

  // The degradation ladder's clock: every eval_interval_ms, the level from the router's queue,
  // the replicas' scraped waiting counts and the window of finished requests.
  asio::awaitable<void> run_ladder() {
    asio::steady_timer timer(ioc);
    int level = 0;
    while (!state.draining) {
      double waiting = 0;
      for (const auto& b : state.pool().snapshot()) {
        if (b.admitted) waiting += b.num_waiting;
      }
      LadderSignals seen;
      int next = state.degradation().evaluate(waiting, std::chrono::steady_clock::now(), &seen);
      if (next != level) {
        spdlog::warn(
            "degradation level {} -> {} (queue {}, replicas waiting {}, p95 ttft {} ms, p95 tpot "
            "{} ms, error rate {})",
            level, next, seen.queue_length, seen.backend_waiting, seen.p95_ttft_ms.value_or(-1),
            seen.p95_tpot_ms.value_or(-1), seen.error_rate.value_or(-1));
        state.metrics().count_level_change(level, next);
        level = next;
      }
      state.metrics().set_degradation_level(level);
      timer.expires_after(std::chrono::milliseconds(state.config()->ladder.eval_interval_ms));
      co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    }
  }

  asio::awaitable<void> drain() {
    asio::steady_timer timer(ioc);
    auto deadline = std::chrono::steady_clock::now() + kDrainTimeout;
    while (state.active_requests > 0 && std::chrono::steady_clock::now() < deadline) {
      timer.expires_after(std::chrono::milliseconds(50));
      co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    ioc.stop();
  }

  void stop() {
    asio::post(ioc, [this] {
      if (state.draining.exchange(true)) return;
      boost::system::error_code ec;
      acceptor.close(ec);
      asio::co_spawn(ioc, drain(), asio::detached);
    });
  }

  void arm_signals() {
    signals->async_wait([this](const boost::system::error_code& ec, int sig) {
      if (ec) return;
      if (sig == SIGHUP) {
        Status s = state.reload();
        if (s.ok()) {
          spdlog::info("SIGHUP: config reloaded");
        } else {
          spdlog::error("SIGHUP: config not reloaded (the running one stays): {}", s.message());
        }
      } else {
        if (++num_stop_signals > 1) std::_Exit(1);
        spdlog::info("signal {}: draining", sig);
        stop();
      }
      arm_signals();
    });
  }

  RouterState state;
  unsigned num_threads;
  asio::io_context ioc;
  tcp::acceptor acceptor;
  std::optional<asio::signal_set> signals;
  std::vector<std::thread> threads;
  int num_stop_signals = 0;
};

RouterServer::RouterServer(RouterConfig config, std::string config_path, unsigned num_threads)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(config_path), num_threads)) {}

RouterServer::~RouterServer() {
  impl_->ioc.stop();
  for (auto& t : impl_->threads) {
    if (t.joinable()) t.join();
  }
}

Status RouterServer::start() {
  Impl& m = *impl_;
  raise_file_limit();
  auto cfg = m.state.config();
  boost::system::error_code ec;
  auto address = asio::ip::make_address(cfg->host, ec);
  if (ec) return invalid_argument("listen.host: '{}' is not an IP address", cfg->host);
  tcp::endpoint endpoint(address, cfg->port);
  m.acceptor.open(endpoint.protocol(), ec);
  if (!ec) m.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) m.acceptor.bind(endpoint, ec);
  if (!ec) m.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return io_error("cannot listen on {}:{}: {}", cfg->host, cfg->port, ec.message());
  asio::co_spawn(m.ioc, m.accept_loop(), asio::detached);
  asio::co_spawn(m.ioc, run_health_checks(m.state), asio::detached);
  asio::co_spawn(m.ioc, m.run_ladder(), asio::detached);
  for (unsigned i = 0; i < m.num_threads; ++i)
    m.threads.emplace_back([&m] { m.ioc.run(); });
  return Status();
}

uint16_t RouterServer::port() const {
  boost::system::error_code ec;
  auto ep = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : ep.port();
}

void RouterServer::handle_signals() {
  impl_->signals.emplace(impl_->ioc, SIGTERM, SIGINT, SIGHUP);
  impl_->arm_signals();
}

void RouterServer::request_stop() {
  impl_->stop();
}

int RouterServer::wait() {
  for (auto& t : impl_->threads) {
    if (t.joinable()) t.join();
  }
  return 0;
}

}  // namespace pagoda::router
