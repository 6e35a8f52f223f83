// RouterServer: the whole `pagoda router` process minus flag parsing: binds the listener, runs
// the connections and the health checker on an Asio thread pool, reloads the config on SIGHUP
// (streams in flight keep going) and drains on SIGTERM/SIGINT (the listener closes, requests in
// flight get up to 30 s, a second signal exits at once).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "router/router_config.h"

namespace pagoda::router {

class RouterServer {
 public:
  RouterServer(RouterConfig config, std::string config_path, unsigned num_threads);
  ~RouterServer();
  RouterServer(const RouterServer&) = delete;
  RouterServer& operator=(const RouterServer&) = delete;

  Status start();
  uint16_t port() const;
  void handle_signals();
  void request_stop();
  // Blocks until stopped; returns the exit code.
  int wait();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagoda::router
