#include "server/http_server.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <thread>

#include <spdlog/spdlog.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "server/http_session.h"
#include "server/router.h"
#include "server/server_state.h"

namespace pagoda::server {

namespace net = boost::asio;
using boost::system::error_code;

struct HttpServer::Impl {
  Impl(ServerConfig config, std::vector<ModelSource> models, ModelRegistryOptions options,
       bool preload_model)
      : state(std::move(config), std::move(models), std::move(options)),
        router(state),
        preload(preload_model) {}

  // Declaration order matters: the io_context (and with it every connection) is destroyed before
  // the state it refers to; the engines are destroyed explicitly once the io threads have stopped.
  ServerState state;
  Router router;
  bool preload;

  net::io_context ioc;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  net::strand<net::io_context::executor_type> accept_strand = net::make_strand(ioc);
  net::ip::tcp::acceptor acceptor{accept_strand};
  net::steady_timer accept_retry{accept_strand};
  std::optional<net::signal_set> signals;
  std::vector<std::thread> threads;
  uint16_t port = 0;

  std::mutex mu;
  std::condition_variable cv;
  bool stop_requested = false;
  bool load_done = false;
  bool load_failed = false;
  bool started = false;
  bool stopped = false;
  int signal_count = 0;

  void do_accept();
  void arm_signals();
  void load();
  int stop_and_join();
};

void HttpServer::Impl::do_accept() {
  acceptor.async_accept(
      net::make_strand(ioc), [this](const error_code& ec, net::ip::tcp::socket socket) {
        if (!acceptor.is_open()) return;
        if (ec) {
          if (ec == net::error::operation_aborted) return;
          // EMFILE and friends: back off instead of spinning.
          spdlog::warn("accept failed: {}", ec.message());
          accept_retry.expires_after(std::chrono::milliseconds(50));
          accept_retry.async_wait([this](const error_code& e) {
            if (!e) do_accept();
          });
          return;
        }
        const bool reject = state.num_sessions() >=
                            static_cast<size_t>(std::max(state.config().max_connections, 1));
        auto session = std::make_shared<HttpSession>(std::move(socket), state, router);
        session->start(reject);
        do_accept();
      });
}

void HttpServer::Impl::arm_signals() {
  signals->async_wait([this](const error_code& ec, int sig) {
    if (ec) return;
    int count = 0;
    {
      std::lock_guard<std::mutex> lock(mu);
      count = ++signal_count;
    }
    if (count > 1) {
      spdlog::warn("second signal {}: exiting now", sig);
      std::_Exit(1);
    }
    if (const int code = state.config().signal_exit_code; code != 0) {
      spdlog::error(
          "signal {}: a rank of the parallel job is gone (or the job is stopping): "
          "/health is 503, exiting with code {} in {} ms",
          sig, code, state.config().signal_exit_grace.count());
      state.set_phase(ServerPhase::kLost);
      state.for_each_session([](const std::shared_ptr<HttpSession>& s) { s->drain(); });
      // The engine may be blocked on the dead rank: no drain, no destructor.
      std::thread([code, grace = state.config().signal_exit_grace] {
        std::this_thread::sleep_for(grace);
        std::fflush(nullptr);
        std::_Exit(code);
      }).detach();
      return;
    }
    spdlog::info("signal {}: draining (up to {} ms; send it again to exit now)", sig,
                 state.config().drain_timeout.count());
    {
      std::lock_guard<std::mutex> lock(mu);
      stop_requested = true;
    }
    cv.notify_all();
    arm_signals();
  });
}

void HttpServer::Impl::load() {
  if (!preload) {
    std::lock_guard<std::mutex> lock(mu);
    state.set_phase(ServerPhase::kReady);
    load_done = true;
    cv.notify_all();
    return;
  }
  // The registry's worker loads it; the lease is dropped at once (the model stays loaded until
  // idle-unloaded or evicted).
  state.models().acquire(state.models().default_model(), [this](Result<ModelLease> lease) {
    std::lock_guard<std::mutex> lock(mu);
    if (lease.ok()) {
      if (state.phase() == ServerPhase::kLoading) state.set_phase(ServerPhase::kReady);
    } else {
      state.set_phase(ServerPhase::kFailed);
      load_failed = true;
    }
    load_done = true;
    cv.notify_all();
  });
}

int HttpServer::Impl::stop_and_join() {
  if (stopped) return load_failed ? 1 : 0;
  stopped = true;
  const ServerConfig& cfg = state.config();
  if (state.phase() != ServerPhase::kFailed) state.set_phase(ServerPhase::kDraining);
  net::post(accept_strand, [this] {
    error_code ec;
    acceptor.close(ec);
    accept_retry.cancel();
  });
  state.for_each_session([](const std::shared_ptr<HttpSession>& s) { s->drain(); });

  {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, cfg.drain_timeout, [this] { return load_done; })) {
      spdlog::warn("still loading after the drain timeout: exiting");
      std::_Exit(0);
    }
  }
  state.models().drain(cfg.drain_timeout);
  // Let connections write their last bytes (they close after their response while draining).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (state.num_sessions() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  work.reset();
  ioc.stop();
  for (std::thread& t : threads)
    t.join();
  threads.clear();
  state.models().shutdown();
  spdlog::info("stopped");
  return load_failed ? 1 : 0;
}

namespace {

std::vector<ModelSource> one_model(std::string name, EngineFactory factory) {
  std::vector<ModelSource> models(1);
  models[0].name = std::move(name);
  models[0].factory = std::move(factory);
  return models;
}

}  // namespace

HttpServer::HttpServer(ServerConfig config, std::string model_name, EngineFactory factory)
    : HttpServer(std::move(config), one_model(std::move(model_name), std::move(factory)),
                 ModelRegistryOptions{}, /*preload=*/true) {}

HttpServer::HttpServer(ServerConfig config, std::vector<ModelSource> models,
                       ModelRegistryOptions options, bool preload)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(models), std::move(options),
                                   preload)) {}

HttpServer::~HttpServer() {
  if (impl_->started) {
    request_stop();
    (void)impl_->stop_and_join();
  }
}

Status HttpServer::start() {
  Impl& m = *impl_;
  if (m.started) return failed_precondition("the server is already started");
  const ServerConfig& cfg = m.state.config();
  error_code ec;
  net::ip::tcp::resolver resolver(m.ioc);
  auto results =
      resolver.resolve(cfg.host, std::to_string(cfg.port), net::ip::tcp::resolver::passive, ec);
  if (ec || results.empty()) {
    return invalid_argument("cannot resolve host '{}': {}", cfg.host, ec.message());
  }
  const net::ip::tcp::endpoint endpoint = results.begin()->endpoint();
  m.acceptor.open(endpoint.protocol(), ec);
  if (!ec) m.acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) m.acceptor.bind(endpoint, ec);
  if (!ec) m.acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return io_error("cannot listen on {}:{}: {}", cfg.host, cfg.port, ec.message());
  }
  m.port = m.acceptor.local_endpoint(ec).port();
  m.started = true;
  m.work.emplace(m.ioc.get_executor());
  m.do_accept();
  const int n = std::max(cfg.io_threads, 1);
  for (int i = 0; i < n; ++i) {
    m.threads.emplace_back([&m] {
      for (;;) {
        try {
          m.ioc.run();
          return;
        } catch (const std::exception& e) {
          // A handler threw (a bug): log it and keep serving the other connections.
          spdlog::error("unexpected exception in the HTTP loop: {}", e.what());
        }
      }
    });
  }
  spdlog::info("listening on http://{}:{}", endpoint.address().to_string(), m.port);
  m.load();
  return Status();
}

uint16_t HttpServer::port() const {
  return impl_->port;
}

void HttpServer::request_stop() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop_requested = true;
  }
  impl_->cv.notify_all();
}

void HttpServer::handle_signals() {
  Impl& m = *impl_;
  m.signals.emplace(m.ioc, SIGTERM, SIGINT);
  m.arm_signals();
}

int HttpServer::wait() {
  Impl& m = *impl_;
  if (!m.started) return 1;
  {
    std::unique_lock<std::mutex> lock(m.mu);
    m.cv.wait(lock, [&m] { return m.stop_requested || m.load_failed; });
  }
  return m.stop_and_join();
}

}  // namespace pagoda::server
