// Several models per server: the ModelRegistry alone (lazy loads shared by concurrent requests,
// least-recently-used eviction within max_loaded_models, refusal when every loaded model is busy,
// idle unload on a fake clock, load failures) and through HttpServer over real sockets (requests
// routed by `model` to their own engine, OpenAI's 404 model_not_found, /v1/models states, 503
// when busy), with FakeEngines that count how many of them are alive.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include <nlohmann/json.hpp>

#include "server/fake_engine.h"
#include "server/http_server.h"
#include "server/model_registry.h"
#include "server/raw_client.h"

namespace pagoda::server {
namespace {

using nlohmann::json;
using pagoda::testing::FakeEngine;
using pagoda::testing::FakeEngineOptions;
using pagoda::testing::http_get;
using pagoda::testing::http_post;
using pagoda::testing::RawClient;
using pagoda::testing::RawResponse;
using namespace std::chrono_literals;

struct FakeClock {
  std::atomic<int64_t> ms{1000000};
  std::chrono::steady_clock::time_point now() const {
    return std::chrono::steady_clock::time_point(std::chrono::milliseconds(ms.load()));
  }
  void advance(std::chrono::milliseconds d) { ms += d.count(); }
};

// Models "a", "b", "c", ...: FakeEngines with their name as id; counts factory calls and live
// engines; `fail_next` makes the next load of a model fail.
struct Models {
  explicit Models(int n, std::chrono::milliseconds load_delay = 0ms, std::string_view prefix = "") {
    for (int i = 0; i < n; ++i) {
      ModelSource s;
      s.name = std::string(1, static_cast<char>('a' + i));
      const std::string script = std::string(prefix) + s.name + s.name + s.name + " ";
      s.factory = [this, name = s.name, script, load_delay]() -> Result<std::unique_ptr<Engine>> {
        ++loads;
        std::this_thread::sleep_for(load_delay);
        if (fail_next.exchange(false)) return io_error("cannot read {}.gguf", name);
        FakeEngineOptions o;
        o.model_id = name;
        o.script = script;
        o.live_engines = live;
        o.tick = std::chrono::milliseconds(tick_ms.load());
        return std::unique_ptr<Engine>(std::make_unique<FakeEngine>(o));
      };
      if (i == 0) s.lora_names = {"a-adapter"};
      sources.push_back(std::move(s));
    }
  }
  std::vector<ModelSource> sources;
  std::atomic<int> loads{0};
  std::atomic<bool> fail_next{false};
  std::atomic<int> tick_ms{2};
  std::shared_ptr<std::atomic<int>> live = std::make_shared<std::atomic<int>>(0);
};

// Acquires synchronously (waits for the callback).
Result<ModelLease> acquire(ModelRegistry& r, const std::string& name) {
  std::promise<Result<ModelLease>> p;
  r.acquire(name, [&p](Result<ModelLease> lease) { p.set_value(std::move(lease)); });
  return p.get_future().get();
}

std::map<std::string, ModelState> states(const ModelRegistry& r) {
  std::map<std::string, ModelState> out;
  for (const ModelSnapshot& s : r.snapshot())
    out[s.name] = s.state;
  return out;
}

TEST(ModelRegistry, ResolvesNamesAndAdaptersAndRefusesUnknownOnes) {
  Models m(2);
  ModelRegistry r(std::move(m.sources), {});
  EXPECT_EQ(r.default_model(), "a");
  EXPECT_EQ(r.resolve("b"), "b");
  EXPECT_EQ(r.resolve("a-adapter"), "a");  // a startup adapter routes to its (unloaded) base
  EXPECT_EQ(r.resolve("nope"), std::nullopt);
  Result<ModelLease> lease = acquire(r, "nope");
  ASSERT_FALSE(lease.ok());
  EXPECT_EQ(lease.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(m.loads, 0);  // nothing loads before it is used
  EXPECT_EQ(states(r)["a"], ModelState::kUnloaded);
}

TEST(ModelRegistry, ConcurrentRequestsShareOneLoad) {
  Models m(2, 100ms);
  ModelRegistry r(std::move(m.sources), {});
  std::vector<std::future<Result<ModelLease>>> waits;
  std::vector<std::promise<Result<ModelLease>>> promises(8);
  for (auto& p : promises) {
    waits.push_back(p.get_future());
    r.acquire("b", [&p](Result<ModelLease> lease) { p.set_value(std::move(lease)); });
  }
  EXPECT_EQ(states(r)["b"], ModelState::kLoading);
  std::set<Engine*> engines;
  for (auto& w : waits) {
    Result<ModelLease> lease = w.get();
    ASSERT_TRUE(lease.ok()) << lease.status().message();
    engines.insert(&lease.value()->engine());
    EXPECT_EQ(lease.value()->engine().model_info().id, "b");
  }
  EXPECT_EQ(engines.size(), 1u);
  EXPECT_EQ(m.loads, 1);
  EXPECT_EQ(*m.live, 1);
  EXPECT_EQ(states(r)["b"], ModelState::kLoaded);
  EXPECT_EQ(states(r)["a"], ModelState::kUnloaded);
}

TEST(ModelRegistry, EvictsTheLeastRecentlyUsedIdleModel) {
  Models m(3);
  FakeClock clock;
  ModelRegistryOptions o;
  o.max_loaded_models = 2;
  o.clock = [&clock] { return clock.now(); };
  ModelRegistry r(std::move(m.sources), o);
  ASSERT_TRUE(acquire(r, "a").ok());  // the lease is dropped at once: idle
  clock.advance(1s);
  ASSERT_TRUE(acquire(r, "b").ok());
  clock.advance(1s);
  ASSERT_TRUE(acquire(r, "a").ok());  // a is now more recent than b
  clock.advance(1s);
  ASSERT_TRUE(acquire(r, "c").ok());  // b goes
  auto s = states(r);
  EXPECT_EQ(s["a"], ModelState::kLoaded);
  EXPECT_EQ(s["b"], ModelState::kUnloaded);
  EXPECT_EQ(s["c"], ModelState::kLoaded);
  EXPECT_EQ(*m.live, 2);  // b's engine was destroyed, not only forgotten
  EXPECT_EQ(m.loads, 3);
  clock.advance(1s);
  ASSERT_TRUE(acquire(r, "b").ok());  // now a is the least recently used
  s = states(r);
  EXPECT_EQ(s["a"], ModelState::kUnloaded);
  EXPECT_EQ(s["b"], ModelState::kLoaded);
  EXPECT_EQ(s["c"], ModelState::kLoaded);
  EXPECT_EQ(*m.live, 2);
}

TEST(ModelRegistry, RefusesWhenEveryLoadedModelIsBusyAndNeverUnloadsABusyOne) {
  Models m(2);
  ModelRegistryOptions o;
  o.max_loaded_models = 1;
  ModelRegistry r(std::move(m.sources), o);
  Result<ModelLease> held = acquire(r, "a");
  ASSERT_TRUE(held.ok());
  Result<ModelLease> other = acquire(r, "b");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(other.status().message().find("`b`"), std::string::npos) << other.status().message();
  EXPECT_EQ(states(r)["a"], ModelState::kLoaded);
  EXPECT_EQ(*m.live, 1);
  held = Result<ModelLease>(internal_error("released"));  // drops the lease
  ASSERT_TRUE(acquire(r, "b").ok());
  EXPECT_EQ(states(r)["a"], ModelState::kUnloaded);
  EXPECT_EQ(*m.live, 1);
}

TEST(ModelRegistry, UnloadsIdleModelsAfterTheIdleTime) {
  Models m(2);
  FakeClock clock;
  ModelRegistryOptions o;
  o.idle_unload = 10s;
  o.clock = [&clock] { return clock.now(); };
  o.no_worker_idle_check = true;
  ModelRegistry r(std::move(m.sources), o);
  ASSERT_TRUE(acquire(r, "a").ok());
  Result<ModelLease> busy = acquire(r, "b");
  ASSERT_TRUE(busy.ok());
  clock.advance(9s);
  EXPECT_EQ(r.unload_idle(), 0u);
  clock.advance(2s);
  EXPECT_EQ(r.unload_idle(), 1u);  // a; b holds a lease however long it has been
  auto s = states(r);
  EXPECT_EQ(s["a"], ModelState::kUnloaded);
  EXPECT_EQ(s["b"], ModelState::kLoaded);
  EXPECT_EQ(*m.live, 1);
  busy = Result<ModelLease>(internal_error("released"));  // b used now
  clock.advance(9s);
  EXPECT_EQ(r.unload_idle(), 0u);
  clock.advance(1s);
  EXPECT_EQ(r.unload_idle(), 1u);
  EXPECT_EQ(*m.live, 0);
  // An unloaded model loads again on its next request.
  ASSERT_TRUE(acquire(r, "a").ok());
  EXPECT_EQ(m.loads, 3);
  for (const ModelSnapshot& x : r.snapshot()) {
    if (x.name == "a") {
      EXPECT_EQ(x.num_loads, 2);
    }
  }
}

TEST(ModelRegistry, TheWorkerUnloadsIdleModelsOnItsOwn) {
  Models m(1);
  ModelRegistryOptions o;
  o.idle_unload = 50ms;
  ModelRegistry r(std::move(m.sources), o);
  ASSERT_TRUE(acquire(r, "a").ok());
  for (int i = 0; i < 400 && *m.live > 0; ++i)
    std::this_thread::sleep_for(5ms);
  EXPECT_EQ(*m.live, 0);
  EXPECT_EQ(states(r)["a"], ModelState::kUnloaded);
}

TEST(ModelRegistry, AFailedLoadAnswersItsWaitersAndTheNextRequestRetries) {
  Models m(2);
  m.fail_next = true;
  ModelRegistry r(std::move(m.sources), {});
  Result<ModelLease> lease = acquire(r, "b");
  ASSERT_FALSE(lease.ok());
  EXPECT_EQ(lease.status().code(), StatusCode::kInternal);
  EXPECT_NE(lease.status().message().find("`b` failed to load"), std::string::npos)
      << lease.status().message();
  EXPECT_NE(lease.status().message().find("cannot read b.gguf"), std::string::npos);
  EXPECT_EQ(states(r)["b"], ModelState::kUnloaded);
  for (const ModelSnapshot& x : r.snapshot()) {
    if (x.name == "b") {
      EXPECT_NE(x.last_error.find("b.gguf"), std::string::npos);
    }
  }
  ASSERT_TRUE(acquire(r, "a").ok());  // the others are unaffected
  ASSERT_TRUE(acquire(r, "b").ok());  // and b loads on the next try
  EXPECT_EQ(m.loads, 3);
}

// ---- over HTTP ----

class MultiServer {
 public:
  MultiServer(Models& m, ModelRegistryOptions o, bool preload = false) {
    ServerConfig cfg;
    cfg.host = "127.0.0.1";
    cfg.port = 0;
    server_ = std::make_unique<HttpServer>(cfg, m.sources, std::move(o), preload);
    EXPECT_TRUE(server_->start().ok());
    port_ = server_->port();
  }
  ~MultiServer() {
    server_->request_stop();
    server_->wait();
  }
  RawResponse request(const std::string& raw) {
    RawClient c(port_);
    c.send(raw);
    return c.read_response(10s);
  }
  json models() { return json::parse(request(http_get("/v1/models")).body); }
  std::string status_of(const std::string& name) {
    const json list = models();
    for (const json& d : list["data"]) {
      if (d["id"] == name) return d.value("status", "");
    }
    return "";
  }

 private:
  std::unique_ptr<HttpServer> server_;
  uint16_t port_ = 0;
};

json completion(const std::string& model, int max_tokens = 6) {
  json body = {{"prompt", "hi"}, {"max_tokens", max_tokens}};
  if (!model.empty()) body["model"] = model;
  return body;
}

TEST(MultiModelServer, RoutesByModelAndListsStates) {
  Models m(2);
  MultiServer s(m, {});
  json list = s.models();
  ASSERT_EQ(list["data"].size(), 2u);
  EXPECT_EQ(s.status_of("a"), "unloaded");
  EXPECT_EQ(s.status_of("b"), "unloaded");
  EXPECT_TRUE(list["data"][0]["max_model_len"].is_null());
  EXPECT_EQ(m.loads, 0);

  // Each model answers from its own engine (the fake engines' scripts differ).
  RawResponse rb = s.request(http_post("/v1/completions", completion("b").dump()));
  ASSERT_EQ(rb.status, 200) << rb.body;
  EXPECT_EQ(json::parse(rb.body)["choices"][0]["text"], "bbb bb");
  EXPECT_EQ(json::parse(rb.body)["model"], "b");
  EXPECT_EQ(s.status_of("a"), "unloaded");
  EXPECT_EQ(s.status_of("b"), "loaded");
  RawResponse ra = s.request(http_post("/v1/completions", completion("a").dump()));
  ASSERT_EQ(ra.status, 200) << ra.body;
  EXPECT_EQ(json::parse(ra.body)["choices"][0]["text"], "aaa aa");
  // No model: the first one.
  RawResponse rd = s.request(http_post("/v1/completions", completion("").dump()));
  ASSERT_EQ(rd.status, 200) << rd.body;
  EXPECT_EQ(json::parse(rd.body)["choices"][0]["text"], "aaa aa");
  EXPECT_EQ(m.loads, 2);
  EXPECT_EQ(json::parse(s.request(http_get("/v1/models/b")).body)["status"], "loaded");

  // OpenAI's unknown-model error.
  RawResponse rn = s.request(http_post(
      "/v1/chat/completions",
      json{{"model", "gpt-nope"}, {"messages", json::array({{{"role", "user"}, {"content", "x"}}})}}
          .dump()));
  EXPECT_EQ(rn.status, 404);
  const json err = json::parse(rn.body)["error"];
  EXPECT_EQ(err["code"], "model_not_found");
  EXPECT_EQ(err["type"], "invalid_request_error");
  EXPECT_EQ(err["param"], "model");
  EXPECT_NE(err["message"].get<std::string>().find("gpt-nope"), std::string::npos);
  EXPECT_EQ(s.request(http_get("/v1/models/gpt-nope")).status, 404);
  // A non-string model is the request's fault.
  EXPECT_EQ(s.request(http_post("/v1/completions", R"({"model": 3, "prompt": "x"})")).status, 400);
  EXPECT_EQ(s.request(http_get("/health")).status, 200);
}

TEST(MultiModelServer, BusyModelsGet503AndAFailedLoadDoesNotStopTheServer) {
  Models m(2);
  m.tick_ms = 20;  // 40 tokens take ~0.8 s
  ModelRegistryOptions o;
  o.max_loaded_models = 1;
  MultiServer s(m, o);
  auto long_request = std::async(std::launch::async, [&s] {
    return s.request(http_post("/v1/completions", completion("a", 40).dump()));
  });
  for (int i = 0; i < 500 && s.status_of("a") != "loaded"; ++i)
    std::this_thread::sleep_for(5ms);
  std::this_thread::sleep_for(50ms);
  RawResponse busy = s.request(http_post("/v1/completions", completion("b").dump()));
  EXPECT_EQ(busy.status, 503) << busy.body;
  EXPECT_NE(busy.body.find("max-loaded-models"), std::string::npos) << busy.body;
  EXPECT_EQ(long_request.get().status, 200);
  // a is idle once the server has returned its lease (just after the response went out): b
  // replaces it. (Asking at once raced that release and got 503 on a loaded machine.)
  m.fail_next = true;
  RawResponse failed;
  for (int i = 0; i < 400; ++i) {
    failed = s.request(http_post("/v1/completions", completion("b").dump()));
    if (failed.status != 503) break;
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(failed.status, 500) << failed.body;
  EXPECT_NE(failed.body.find("`b` failed to load"), std::string::npos) << failed.body;
  EXPECT_EQ(s.request(http_get("/health")).status, 200);
  RawResponse ok = s.request(http_post("/v1/completions", completion("b").dump()));
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(s.status_of("a"), "unloaded");
  EXPECT_EQ(s.status_of("b"), "loaded");
  EXPECT_EQ(*m.live, 1);
}

TEST(MultiModelServer, MetricsCarryOneSeriesPerModel) {
  Models m(2);
  MultiServer s(m, {});
  ASSERT_EQ(s.request(http_post("/v1/completions", completion("b").dump())).status, 200);
  const std::string text = s.request(http_get("/metrics")).body;
  EXPECT_NE(text.find("pagoda:model_loaded{engine=\"0\",model_name=\"b\"} 1"), std::string::npos)
      << text;
  EXPECT_NE(text.find("pagoda:model_loaded{engine=\"0\",model_name=\"a\"} 0"), std::string::npos);
  EXPECT_NE(
      text.find(
          "vllm:request_success_total{engine=\"0\",finished_reason=\"length\",model_name=\"b\"} 1"),
      std::string::npos);
  EXPECT_NE(
      text.find(
          "vllm:request_success_total{engine=\"0\",finished_reason=\"length\",model_name=\"a\"} 0"),
      std::string::npos);
  EXPECT_NE(text.find("process_resident_memory_bytes "), std::string::npos);
  // An unloaded model that loads on demand is not an alert (PagodaReplicaDown); a failed load is.
  EXPECT_NE(text.find("pagoda:engine_ready{engine=\"0\",model_name=\"a\"} 1"), std::string::npos);
  m.fail_next = true;
  EXPECT_EQ(s.request(http_post("/v1/completions", completion("a").dump())).status, 500);
  const std::string after = s.request(http_get("/metrics")).body;
  EXPECT_NE(after.find("pagoda:engine_ready{engine=\"0\",model_name=\"a\"} 0"), std::string::npos)
      << after;
  EXPECT_NE(after.find("pagoda:engine_ready{engine=\"0\",model_name=\"b\"} 1"), std::string::npos);
}

}  // namespace
}  // namespace pagoda::server
