#include "server/model_registry.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <spdlog/spdlog.h>

namespace pagoda::server {

using Clock = std::chrono::steady_clock;

std::string_view to_string(ModelState state) {
  switch (state) {
    case ModelState::kUnloaded:
      return "unloaded";
    case ModelState::kLoading:
      return "loading";
    case ModelState::kLoaded:
      return "loaded";
    case ModelState::kUnloading:
      return "unloading";
  }
  return "unloaded";
}

namespace {

struct Entry {
  ModelSource source;
  ModelState state = ModelState::kUnloaded;
  std::unique_ptr<Engine> engine;
  int64_t leases = 0;
  Clock::time_point last_used{};
  std::string last_error;
  int64_t num_loads = 0;
  std::vector<ModelRegistry::AcquireCallback> waiters;  // while loading
};

// Unloading: shut the engine's loop down and free it (weights, KV, threads), off the lock.
// Then hand the allocator's free memory back to the system: the engine's heap allocations (the
// tokenizer's tables, per-request state) were made on its own threads, whose malloc arenas
// otherwise keep the freed pages resident.
void destroy_engines(std::vector<std::unique_ptr<Engine>>& engines) {
  if (engines.empty()) return;
  for (std::unique_ptr<Engine>& e : engines) {
    if (!e) continue;
    const std::string id = e->model_info().id;
    e->shutdown();
    e.reset();
    spdlog::info("model '{}' unloaded", id);
  }
  engines.clear();
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace

struct ModelRegistry::Core : std::enable_shared_from_this<ModelRegistry::Core> {
  ModelRegistryOptions options;
  mutable std::mutex mu;
  std::condition_variable cv;
  std::vector<Entry> entries;
  struct LoadTask {
    size_t index;
    std::vector<std::unique_ptr<Engine>> evicted;  // destroyed before the load starts
    std::vector<size_t> evicted_entries;           // theirs, kUnloading until then
  };
  std::deque<LoadTask> tasks;
  bool stopping = false;  // drain: no new acquires
  bool exit_worker = false;
  std::thread worker;

  Clock::time_point now() const { return options.clock ? options.clock() : Clock::now(); }

  std::optional<size_t> find(std::string_view name) const {
    for (size_t i = 0; i < entries.size(); ++i) {
      if (entries[i].source.name == name) return i;
    }
    return std::nullopt;
  }

  // Under mu. A lease on a loaded entry; `use` (a request) marks it used now, else (a /metrics
  // or /v1/models look) it only keeps the engine alive while engine methods run off the lock.
  LeasePtr make_lease(size_t i, bool use = true) {
    Entry& e = entries[i];
    ++e.leases;
    if (use) e.last_used = now();
    return std::make_shared<Lease>(shared_from_this(), i, e.engine.get(), use);
  }

  void release(size_t i, bool use) {
    std::lock_guard<std::mutex> lock(mu);
    Entry& e = entries[i];
    --e.leases;
    if (use) e.last_used = now();
  }

  // Pins every loaded engine (engine methods are never called under mu: an engine thread may
  // release a lease, taking mu, while it holds its own lock).
  std::vector<std::pair<size_t, LeasePtr>> pin_loaded() {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<std::pair<size_t, LeasePtr>> out;
    for (size_t i = 0; i < entries.size(); ++i) {
      if (entries[i].state == ModelState::kLoaded) out.emplace_back(i, make_lease(i, false));
    }
    return out;
  }

  void run_worker();
  void load(LoadTask task);

  // Destroys `engines` (off mu), then marks `indices` unloaded where they are still unloading (a
  // request may have started a new load meanwhile).
  void finish_unloading(std::vector<std::unique_ptr<Engine>>& engines,
                        const std::vector<size_t>& indices) {
    destroy_engines(engines);
    std::lock_guard<std::mutex> lock(mu);
    for (size_t i : indices) {
      if (entries[i].state == ModelState::kUnloading) entries[i].state = ModelState::kUnloaded;
    }
  }

  size_t unload_idle() {
    std::vector<std::unique_ptr<Engine>> idle;
    std::vector<size_t> indices;
    {
      std::lock_guard<std::mutex> lock(mu);
      // While draining the engines stay put (drain() holds pointers to them).
      if (options.idle_unload.count() <= 0 || stopping) return 0;
      const Clock::time_point t = now();
      for (size_t i = 0; i < entries.size(); ++i) {
        Entry& e = entries[i];
        if (e.state == ModelState::kLoaded && e.leases == 0 &&
            t - e.last_used >= options.idle_unload) {
          spdlog::info(
              "model '{}' idle for {} ms: unloading", e.source.name,
              std::chrono::duration_cast<std::chrono::milliseconds>(t - e.last_used).count());
          e.state = ModelState::kUnloading;
          idle.push_back(std::move(e.engine));
          indices.push_back(i);
        }
      }
    }
    const size_t n = idle.size();
    finish_unloading(idle, indices);
    return n;
  }
};

ModelRegistry::Lease::Lease(std::shared_ptr<Core> core, size_t index, Engine* engine, bool use)
    : core_(std::move(core)), index_(index), engine_(engine), use_(use) {}

ModelRegistry::Lease::~Lease() {
  core_->release(index_, use_);
}

void ModelRegistry::Core::run_worker() {
  std::unique_lock<std::mutex> lock(mu);
  const bool idle_checks = options.idle_unload.count() > 0 && !options.no_worker_idle_check;
  std::chrono::milliseconds period = options.idle_check_period;
  if (period.count() <= 0) {
    period = std::clamp(options.idle_unload / 10, std::chrono::milliseconds(10),
                        std::chrono::milliseconds(1000));
  }
  while (!exit_worker) {
    if (!tasks.empty()) {
      LoadTask task = std::move(tasks.front());
      tasks.pop_front();
      lock.unlock();
      load(std::move(task));
      lock.lock();
      continue;
    }
    if (idle_checks) {
      cv.wait_for(lock, period);
      if (exit_worker || !tasks.empty()) continue;
      lock.unlock();
      unload_idle();
      lock.lock();
    } else {
      cv.wait(lock);
    }
  }
}

void ModelRegistry::Core::load(LoadTask task) {
  finish_unloading(task.evicted, task.evicted_entries);
  EngineFactory factory;
  std::string name;
  {
    std::lock_guard<std::mutex> lock(mu);
    factory = entries[task.index].source.factory;
    name = entries[task.index].source.name;
  }
  spdlog::info("loading model '{}'", name);
  const auto t0 = Clock::now();
  Result<std::unique_ptr<Engine>> created =
      factory ? factory() : Result<std::unique_ptr<Engine>>(internal_error("no engine factory"));
  std::vector<AcquireCallback> waiters;
  std::vector<LeasePtr> leases;
  Status failure;
  {
    std::lock_guard<std::mutex> lock(mu);
    Entry& e = entries[task.index];
    waiters = std::move(e.waiters);
    e.waiters.clear();
    if (created.ok()) {
      e.engine = std::move(created).value();
      e.state = ModelState::kLoaded;
      e.last_error.clear();
      ++e.num_loads;
      e.last_used = now();
      for (size_t i = 0; i < waiters.size(); ++i)
        leases.push_back(make_lease(task.index));
      spdlog::info("model '{}' ready in {:.1f} s", name,
                   std::chrono::duration<double>(Clock::now() - t0).count());
    } else {
      e.state = ModelState::kUnloaded;
      e.last_error = created.status().message();
      // A server-side failure whatever the loader's code (500; a bad file is not the request's).
      failure = make_status(StatusCode::kInternal, "The model `{}` failed to load: {}", name,
                            e.last_error);
      spdlog::error("loading model '{}' failed: {}", name, e.last_error);
    }
  }
  for (size_t i = 0; i < waiters.size(); ++i) {
    if (failure.ok()) {
      waiters[i](Result<LeasePtr>(std::move(leases[i])));
    } else {
      waiters[i](Result<LeasePtr>(failure));
    }
  }
}

ModelRegistry::ModelRegistry(std::vector<ModelSource> sources, ModelRegistryOptions options)
    : core_(std::make_shared<Core>()) {
  core_->options = std::move(options);
  for (ModelSource& s : sources) {
    Entry e;
    e.source = std::move(s);
    core_->entries.push_back(std::move(e));
  }
  Core* c = core_.get();
  core_->worker = std::thread([c] { c->run_worker(); });
}

ModelRegistry::~ModelRegistry() {
  shutdown();
}

void ModelRegistry::shutdown() {
  {
    std::lock_guard<std::mutex> lock(core_->mu);
    core_->exit_worker = true;
    core_->stopping = true;
  }
  core_->cv.notify_all();
  if (core_->worker.joinable()) core_->worker.join();
  std::vector<std::unique_ptr<Engine>> engines;
  std::vector<AcquireCallback> waiters;
  {
    std::lock_guard<std::mutex> lock(core_->mu);
    for (Core::LoadTask& t : core_->tasks) {
      for (auto& e : t.evicted)
        engines.push_back(std::move(e));
    }
    core_->tasks.clear();
    for (Entry& e : core_->entries) {
      if (e.engine) engines.push_back(std::move(e.engine));
      e.state = ModelState::kUnloaded;
      for (auto& w : e.waiters)
        waiters.push_back(std::move(w));
      e.waiters.clear();
    }
  }
  for (auto& w : waiters)
    w(Result<LeasePtr>(make_status(StatusCode::kUnavailable, "The server is shutting down")));
  for (auto& e : engines) {
    e->shutdown();
    e.reset();
  }
}

size_t ModelRegistry::num_models() const {
  return core_->entries.size();
}

const std::string& ModelRegistry::default_model() const {
  return core_->entries.front().source.name;
}

std::vector<std::string> ModelRegistry::model_names() const {
  std::vector<std::string> out;
  for (const Entry& e : core_->entries)
    out.push_back(e.source.name);
  return out;
}

std::optional<std::string> ModelRegistry::resolve(std::string_view requested) const {
  {
    std::lock_guard<std::mutex> lock(core_->mu);
    for (const Entry& e : core_->entries) {
      if (e.source.name == requested) return e.source.name;
    }
    for (const Entry& e : core_->entries) {
      for (const std::string& lora : e.source.lora_names) {
        if (lora == requested) return e.source.name;
      }
    }
  }
  for (const auto& [index, pin] : core_->pin_loaded()) {
    for (const LoraAdapterInfo& a : pin->engine().lora_adapters()) {
      if (a.name == requested) return core_->entries[index].source.name;
    }
  }
  return std::nullopt;
}

void ModelRegistry::acquire(const std::string& name, AcquireCallback done) {
  Core& c = *core_;
  std::unique_lock<std::mutex> lock(c.mu);
  const std::optional<size_t> found = c.find(name);
  if (!found) {
    lock.unlock();
    done(Result<LeasePtr>(not_found("The model `{}` does not exist.", name.substr(0, 256))));
    return;
  }
  if (c.stopping) {
    lock.unlock();
    done(Result<LeasePtr>(make_status(StatusCode::kUnavailable, "The server is shutting down")));
    return;
  }
  Entry& e = c.entries[*found];
  if (e.state == ModelState::kLoaded) {
    LeasePtr lease = c.make_lease(*found);
    lock.unlock();
    done(Result<LeasePtr>(std::move(lease)));
    return;
  }
  if (e.state == ModelState::kLoading) {
    e.waiters.push_back(std::move(done));
    return;
  }
  // Unloaded: make room within max_loaded_models (least recently used idle model first).
  Core::LoadTask task{*found, {}, {}};
  const int32_t max_loaded = c.options.max_loaded_models;
  if (max_loaded > 0) {
    int32_t in_memory = 0;
    for (const Entry& x : c.entries) {
      if (x.state != ModelState::kUnloaded) ++in_memory;
    }
    if (in_memory >= max_loaded) {
      Entry* victim = nullptr;
      for (Entry& x : c.entries) {
        if (x.state == ModelState::kLoaded && x.leases == 0 &&
            (victim == nullptr || x.last_used < victim->last_used)) {
          victim = &x;
        }
      }
      if (victim == nullptr) {
        lock.unlock();
        done(Result<LeasePtr>(
            make_status(StatusCode::kUnavailable,
                        "The model `{}` cannot be loaded now: all {} loaded models (the "
                        "--max-loaded-models limit) have requests in flight; retry later",
                        name, max_loaded)));
        return;
      }
      spdlog::info("unloading model '{}' (least recently used) to load '{}'", victim->source.name,
                   name);
      victim->state = ModelState::kUnloading;
      task.evicted.push_back(std::move(victim->engine));
      task.evicted_entries.push_back(static_cast<size_t>(victim - c.entries.data()));
    }
  }
  e.state = ModelState::kLoading;
  e.waiters.push_back(std::move(done));
  c.tasks.push_back(std::move(task));
  lock.unlock();
  c.cv.notify_all();
}

std::vector<ModelSnapshot> ModelRegistry::snapshot() const {
  const std::vector<std::pair<size_t, LeasePtr>> pins = core_->pin_loaded();
  std::vector<ModelSnapshot> out;
  {
    std::lock_guard<std::mutex> lock(core_->mu);
    for (const Entry& e : core_->entries) {
      ModelSnapshot s;
      s.name = e.source.name;
      s.state = e.state;
      s.last_error = e.last_error;
      s.num_loads = e.num_loads;
      out.push_back(std::move(s));
    }
    for (const auto& [index, pin] : pins)
      out[index].num_leases = core_->entries[index].leases - 1;  // not counting the pin
  }
  // A model pinned here was loaded a moment ago; report it as loaded with its engine's numbers
  // (entries are never removed, so indices are stable).
  for (const auto& [index, pin] : pins) {
    ModelSnapshot& s = out[index];
    Engine& engine = pin->engine();
    s.state = ModelState::kLoaded;
    s.info = engine.model_info();
    s.lora_adapters = engine.lora_adapters();
    s.stats = engine.stats();
    s.engine_identity = &engine;
  }
  return out;
}

size_t ModelRegistry::unload_idle() {
  return core_->unload_idle();
}

void ModelRegistry::drain(std::chrono::milliseconds timeout) {
  std::vector<Engine*> engines;
  {
    std::lock_guard<std::mutex> lock(core_->mu);
    core_->stopping = true;
    for (Entry& e : core_->entries) {
      if (e.engine) engines.push_back(e.engine.get());
    }
  }
  // Engines stay owned by their entries (not unloaded while stopping: acquire refuses and the
  // idle check skips nothing else); only the destructor frees them.
  for (Engine* e : engines)
    e->stop_accepting();
  const auto deadline = Clock::now() + timeout;
  for (Engine* e : engines) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (!e->wait_idle(std::max(left, std::chrono::milliseconds(0)))) {
      const EngineStats s = e->stats();
      spdlog::warn("drain timeout: aborting {} running and {} waiting requests of '{}'",
                   s.num_running, s.num_waiting, e->model_info().id);
    }
    e->shutdown();  // aborts what is left; final outputs reach the connections
  }
}

}  // namespace pagoda::server
