// ModelRegistry: the models one `pagoda serve` process serves (`-m A -m B`, `--models-dir`), each
// with its own pagoda::Engine (own step loop, weights and KV cache), loaded on first use. A
// request takes a ModelLease (acquire): at once when its model is loaded, after the load when it
// is loading or unloaded (concurrent requests for one model share one load, done on the
// registry's worker thread). At most max_loaded_models are loaded or loading: to load one more,
// the least recently used loaded model with no lease (no running or waiting request) is unloaded
// first; when every loaded model holds leases the request is refused at once (unavailable, a
// 503 with Retry-After; nothing queues behind a busy model). A model idle (no lease) for
// idle_unload is unloaded by the worker (its engine is shut down and destroyed: weights unmapped,
// KV memory freed). A failed load answers that load's waiters with the error and leaves the
// model unloaded (the next request tries again); the server and the other models go on.
// Thread-safe; lease releases never unload (they may run on an engine thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pagoda/engine.h"

namespace pagoda::server {

// Builds one model's engine (on the registry's worker thread). Tests pass fakes.
using EngineFactory = std::function<Result<std::unique_ptr<Engine>>()>;

struct ModelSource {
  std::string name;  // the `model` requests name; the engine's ModelInfo::id must equal it
  EngineFactory factory;
  // LoRA adapters the engine loads at startup: requests naming them route to this model (and
  // load it) even while it is unloaded.
  std::vector<std::string> lora_names;
};

// kUnloading: no new requests, its engine being shut down and freed (unloaded once its memory is
// given back, so a client that sees "unloaded" sees the memory returned).
enum class ModelState { kUnloaded, kLoading, kLoaded, kUnloading };

// "unloaded", "loading", "loaded", "unloading" (the /v1/models `status` values).
std::string_view to_string(ModelState state);

struct ModelRegistryOptions {
  int32_t max_loaded_models = 0;             // loaded + loading at once; 0 = no limit
  std::chrono::milliseconds idle_unload{0};  // 0 = never unload an idle model
  // The worker's idle check period (0: idle_unload / 10, clamped to [10 ms, 1 s]).
  std::chrono::milliseconds idle_check_period{0};
  // Tests: a fake clock (and no_worker_idle_check to drive unload_idle() by hand).
  std::function<std::chrono::steady_clock::time_point()> clock;
  bool no_worker_idle_check = false;
};

// What /v1/models, /health and /metrics read about one model.
struct ModelSnapshot {
  std::string name;
  ModelState state = ModelState::kUnloaded;
  std::string last_error;  // the last failed load's message ("" = none)
  int64_t num_loads = 0;   // loads completed (reloads after an unload count again)
  // Loaded models only:
  std::optional<ModelInfo> info;
  std::vector<LoraAdapterInfo> lora_adapters;
  std::optional<EngineStats> stats;
  const void* engine_identity = nullptr;  // changes when the model is reloaded
  int64_t num_leases = 0;
};

class ModelRegistry {
 public:
  class Lease;
  using LeasePtr = std::shared_ptr<Lease>;
  // Called exactly once: with a lease, or with the reason there is none (not_found for an
  // unknown name, unavailable when every loaded model is busy or the server is stopping, the
  // load's error prefixed with the model's name when it failed). Possibly on the calling thread
  // (before acquire returns), else on the worker thread.
  using AcquireCallback = std::function<void(Result<LeasePtr>)>;

  // precondition: sources is not empty.
  ModelRegistry(std::vector<ModelSource> sources, ModelRegistryOptions options);
  ~ModelRegistry();  // shutdown()
  ModelRegistry(const ModelRegistry&) = delete;
  ModelRegistry& operator=(const ModelRegistry&) = delete;

  size_t num_models() const;
  const std::string& default_model() const;  // the first source's name
  std::vector<std::string> model_names() const;
  // The model a request's `model` names: a model, a startup LoRA adapter of one, or an adapter
  // loaded at runtime into a loaded model. nullopt: no such model.
  std::optional<std::string> resolve(std::string_view requested) const;

  void acquire(const std::string& name, AcquireCallback done);

  std::vector<ModelSnapshot> snapshot() const;

  // Unloads every loaded model without leases idle for at least idle_unload (0: none); returns
  // how many. The worker calls it periodically; tests with a fake clock call it directly.
  size_t unload_idle();

  // Draining: refuses new acquires, then on each loaded engine stop_accepting + wait_idle (the
  // timeout shared) and shutdown (aborting what is left). Engines are destroyed by the destructor
  // (after the HTTP threads stop), so jobs holding them stay valid until then.
  void drain(std::chrono::milliseconds timeout);
  // Stops the worker (a load in progress finishes first; waiting acquires are refused) and
  // destroys every engine. Idempotent; the destructor calls it. The server calls it once its
  // HTTP threads have stopped (jobs, which the engines' callbacks hold, own timers of theirs).
  void shutdown();

 private:
  struct Core;
  std::shared_ptr<Core> core_;
};

// A model in use: while any lease on it exists the model is never unloaded. Jobs hold theirs
// until their last engine output arrives.
class ModelRegistry::Lease {
 public:
  Lease(std::shared_ptr<Core> core, size_t index, Engine* engine, bool use);
  ~Lease();
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  Engine& engine() const { return *engine_; }

 private:
  std::shared_ptr<Core> core_;
  size_t index_;
  Engine* engine_;
  bool use_;  // a request's lease: releasing it marks the model used now
};

using ModelLease = ModelRegistry::LeasePtr;

}  // namespace pagoda::server
