// HttpServer: the whole `pagoda serve` process minus flag parsing. start() binds the listener
// and starts the Asio threads at once, then loads the engine on a loader thread (so /health says
// 503 while loading). request_stop() (SIGTERM) drains: the listener closes, idle connections
// close, new requests get 503, running requests get drain_timeout to finish, then the engine
// shuts down (aborting the rest) and wait() returns 0. A second SIGTERM exits at once.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pagoda/engine.h"
#include "server/model_registry.h"
#include "server/server_config.h"

namespace pagoda::server {

class HttpServer {
 public:
  // Builds the engine (on the loader thread). Tests pass a fake.
  using EngineFactory = server::EngineFactory;

  // One model, loaded at startup (/health 503 until it is; wait() returns 1 if it fails).
  HttpServer(ServerConfig config, std::string model_name, EngineFactory factory);
  // Several models (or one with options): each loads on first use within the registry's limits
  // (server/model_registry.h); the server is ready at once and a failed load fails only the
  // requests that waited for it. With one model and preload, as the constructor above.
  HttpServer(ServerConfig config, std::vector<ModelSource> models, ModelRegistryOptions options,
             bool preload);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port and starts serving (and loading). Fails if the address cannot be bound.
  Status start();
  // The bound port (useful with port 0).
  uint16_t port() const;

  // Begins draining; safe from any thread (and from the signal handler thread).
  void request_stop();
  // Installs SIGTERM/SIGINT handling: the first drains, the second calls _Exit(1).
  void handle_signals();
  // Blocks until the server has stopped. 0 after a drain, 1 if the model failed to load.
  int wait();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagoda::server
